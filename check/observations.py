"""The TensorRT-family cells the lint reads: the committed observations it learns from (reports/observed, each file
listed in MANIFEST.json at its digest) and the results files a user hands it to compare a model's findings with.

Every file is read by core.results; an observation is one only where the manifest lists it (matrix.observed). The
lint's rules and its output are check.lint's; this module only reads cells.
"""

from __future__ import annotations

import functools
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from core.results import read_results
from matrix.predict import ENGINES

REPO = Path(__file__).resolve().parent.parent
OBSERVED = REPO / "reports" / "observed"


class ResultsFileError(Exception):
    """A results file the lint was given that it cannot read: missing, refused by core.results, or changed since the
    manifest listed it."""


def observed_cells(root: Optional[Path]) -> List[Dict[str, Any]]:
    """Every TensorRT and TensorRT-RTX cell record under reports/observed in its default setting (the cells of option
    or target sweeps skipped), read by core.results: a file it refuses gives none, and so does a file that root's
    MANIFEST.json does not list at the digest it has (matrix.observed: only a listed file is an observation)."""
    if root is None or not Path(root).is_dir():
        return []
    from matrix import observed

    try:
        listed = {rel: e.sha256 for rel, e in observed.load(Path(root)).entries.items()}
    except observed.ManifestError:
        return []
    paths = sorted(Path(root).glob("*/trt-*.jsonl")) + sorted(Path(root).glob("*/rtx-*.jsonl"))
    return [dict(c, _file=shown) for path in paths for shown in [_shown(path)]
            for c in _engine_records(path, os.stat(path).st_mtime_ns, listed.get(path.relative_to(root).as_posix()))
            if not c.get("variant")]


@functools.lru_cache(maxsize=None)
def _engine_records(path: Path, mtime: int, listed: Optional[str]) -> Tuple[Dict[str, Any], ...]:
    """The TensorRT-family cells of one results file as records; () where core.results refuses it or its bytes
    are not the sha256 the manifest lists (None: not listed). Read once per file version: the lint runs per model."""
    from matrix.observed import sha256

    found = read_results(path)
    if found.refused or sha256(found.data) != listed:
        return ()
    return tuple(asdict(c.cell) for c in found.cells if c.cell.engine in ENGINES)


def _shown(path: Path) -> str:
    """A results file as the repository names it (absolute outside the repository)."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def model_cells(paths: Sequence[Path], model: Path) -> List[Dict[str, Any]]:
    """The TensorRT and TensorRT-RTX cells of this model's bundle (cases.user_model.bundle_ids_for) in results files."""
    from cases.user_model import bundle_ids_for

    cells = engine_cells(paths)
    return [c for bundle in bundle_ids_for(model) for c in cells.get(bundle, [])]


def engine_cells(paths: Sequence[Path]) -> Dict[str, List[Dict[str, Any]]]:
    """The TensorRT and TensorRT-RTX cells in results files, by bundle id: each file read once, by core.results;
    ResultsFileError for a file that is missing or that it refuses."""
    cells: Dict[str, List[Dict[str, Any]]] = {}
    for path in paths:
        if not Path(path).is_file():
            raise ResultsFileError(f"no such results file: {path}")
        found = read_results(path)
        if found.refused:
            raise ResultsFileError(f"{path} is not a results file this suite reads ({found.why_refused})")
        changed = _manifest().refusal(Path(path), found.data)
        if changed:
            raise ResultsFileError(f"{path}: {changed}")
        for c in found.cells:
            if c.cell.engine in ENGINES:
                cells.setdefault(c.cell.bundle, []).append(asdict(c.cell))
    return cells


def _manifest() -> Any:
    """reports/observed/MANIFEST.json (one with no entries where it cannot be read: nothing is then refused here; the
    merge says why)."""
    from matrix import observed

    try:
        return observed.load(observed.OBSERVED)
    except observed.ManifestError:
        return observed.Manifest(observed.OBSERVED)
