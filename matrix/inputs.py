"""What a report is made of, as one digest: `python -m matrix report` renders only when it moved.

The inputs: every results file the merge reads (`*.jsonl` under each --results path) and the observations'
MANIFEST.json, every bundle's case.json, what every layer shares (core/: the cell record, its schemas, the results
reader, the vocabulary), the catalogue (cases/), the report code and its templates (matrix/), and uv.lock (the
versions of what renders). The digest, the files written from it and the run's exit status and summary are kept in
<out>/.report-inputs.json; a report whose digest is unchanged and whose files are all there as they were written is
not rendered again. Standard library only: the noxfile reads it too, to know whether to start the report session at
all.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
STAMP = ".report-inputs.json"
CODE = ("core", "cases", "matrix")  # what every layer shares, the catalogue, the merge and renderers, their templates
CODE_SUFFIXES = (".py", ".json", ".j2", ".css", ".js")


def input_files(results: Iterable[Path], bundles: Iterable[Path]) -> List[Path]:
    """Every file a report depends on, in a stable order."""
    found: List[Path] = []
    for root in results:
        root = Path(root)
        if root.is_file():
            found.append(root)
        elif root.is_dir():
            found += sorted(p for p in root.rglob("*") if p.is_file() and (p.suffix == ".jsonl"
                                                                              or p.name == "MANIFEST.json"))
    for root in bundles:
        found += sorted(Path(root).glob("*/*/case.json")) if Path(root).is_dir() else []
    for folder in CODE:
        found += sorted(p for p in (REPO / folder).rglob("*") if p.is_file() and p.suffix in CODE_SUFFIXES
                        and "__pycache__" not in p.parts)
    lock = REPO / "uv.lock"
    return found + ([lock] if lock.is_file() else [])


def digest(results: Iterable[Path], bundles: Iterable[Path]) -> Dict[str, Any]:
    """{"sha256": over every input's name and bytes, "files": how many}."""
    h = hashlib.sha256()
    files = input_files(results, bundles)
    for path in files:
        h.update(os.fsencode(_name(path)) + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return {"sha256": h.hexdigest(), "files": len(files)}


def unchanged(out: Path, key: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The stamp of the reports in out where they were rendered from these inputs and are all still there as
    written; None where the report must be rendered."""
    try:
        stamp = json.loads((Path(out) / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("sha256") != key["sha256"]:
        return None
    for name, sha in (stamp.get("outputs") or {}).items():
        path = Path(out) / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != sha:
            return None
    return stamp if stamp.get("outputs") else None


def remember(out: Path, key: Dict[str, Any], written: Sequence[Path], status: int, summary: Sequence[str]) -> None:
    """Keep the digest beside the reports it made, with each written file's sha256, the exit status and summary."""
    outputs = {}
    for path in written:
        path = Path(path)
        if path.is_file():
            outputs[path.resolve().relative_to(Path(out).resolve()).as_posix()] = hashlib.sha256(
                path.read_bytes()).hexdigest()
    stamp = dict(key, outputs=outputs, status=status, summary=list(summary),
                 date=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    tmp = Path(out) / (STAMP + ".tmp")
    tmp.write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, Path(out) / STAMP)


def _name(path: Path) -> str:
    """A file's name in the digest: repository-relative where it lies inside, so a clone's digest is a clone's."""
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return path.resolve().as_posix()
