"""Columns that cannot run on this machine, written in one pass: every bundle a "not run: why" cell.

    python -m engines.idle --engine tensorrt --version 8.5.1.7 --version 8.6.0 [--bundles DIR]

A GPU engine on a machine without a GPU has nothing to run, so starting pytest once per version only to
write "not run" is waste: this asks the engine's own adapter why it cannot run (its probe, the same
answer the pytest cells would get), then writes the cells through the same results files, lock and
resume rules (an unchanged not-run cell already in the file is not written again). An engine that
can run here is refused: its cells come from the cell runner (`python -m engines.run`), never from this.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from cases import get_case
from core.cli import ArgumentParser
from core.engines import ENGINES, spec
from core.portable import portable_command
from engines import get_engine
from engines.base import EngineInfo
from engines.cells import not_run_cell
from engines.results import (
    NotAResultsFile,
    ResultsBusy,
    ResultsUnwritable,
    ResultsWriter,
    default_path,
    info_key,
    same_not_run,
    stored_cells,
)
from generators.bundle import Bundle, bundle_ids, bundles_root


class Refused(Exception):
    """The engine can run here, or nothing can be written: exit status 2 with the reason."""


def idle_info(engine: str, version: str) -> EngineInfo:
    """The engine's own probe for one version; Refused where it could really run here."""
    kwargs = {"version": version} if spec(engine).family == "tensorrt" else {}
    adapter = get_engine(engine, **kwargs)
    try:
        info = adapter.probe()
    finally:
        getattr(adapter, "close", lambda: None)()
    if info.available:
        raise Refused(f"{engine} {info.version} can run here ({info.hardware}): run its cells with "
                      f"`python -m engines.run --engine {engine}`")
    return info


def run_record(engine: str, argv: Sequence[str]) -> Dict[str, Any]:
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": portable_command(["python", "-m", "engines.idle", *argv]), "source": "local",
        "python": platform.python_version(), "cell_options": dict(sorted(spec(engine).defaults().items())),
    }


def write_column(info: EngineInfo, bundles: List[Bundle], run: Dict[str, Any], path: Optional[Path] = None,
                 wait: float = 0.0) -> Dict[str, int]:
    """Every bundle as a not-run cell of this column; returns counts of cells written and left as they were. Where
    the file is as this column left it last time, for the same bundles and reason, it is not read at all (its stamp,
    `.<file>.idle`, says so)."""
    path = path or default_path(info)
    if _stamp(info, bundles, run, path) == _stamp_of(path):
        return {"written": 0, "unchanged": len(bundles), "path": str(path)}
    writer = ResultsWriter(path, info, run, wait=wait)
    if writer.notice:
        print(f"engines.idle: {writer.notice}", file=sys.stderr)
    try:
        stored = stored_cells(writer.path, writer.resume_offset)
        written = unchanged = 0
        cases: Dict[str, Any] = {}  # each case looked up once, not once per bundle
        for bundle in bundles:
            name = bundle.meta["case"]
            case = cases[name] if name in cases else cases.setdefault(name, get_case(name))
            cell = not_run_cell(case, bundle, info, run)
            if same_not_run(cell, stored.get(info_key(info, bundle.id, cell.digest, run["cell_options"]))):
                unchanged += 1
                continue
            writer.write(cell)
            written += 1
    finally:
        writer.close()
    try:
        _stamp_path(writer.path).write_text(_stamp(info, bundles, run, writer.path), encoding="utf-8")
    except OSError:  # no stamp: the next run reads the file, as it always could
        pass
    return {"written": written, "unchanged": unchanged, "path": str(writer.path)}


def _stamp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.idle")


def _stamp_of(path: Path) -> str:
    try:
        return _stamp_path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


def _stamp(info: EngineInfo, bundles: List[Bundle], run: Dict[str, Any], path: Path) -> str:
    """What an idle column's cells are made of (its engine, version, hardware, variant, reason and options, every
    bundle's id and digest: a not-run cell stands while its status and reason do) and the results file's bytes."""
    try:
        data = path.read_bytes()
    except OSError:
        return "missing"
    key = {"engine": info.name, "version": info.version, "hardware": info.hardware, "variant": info.variant,
           "status": info.unavailable_status, "reason": info.reason, "options": run.get("cell_options"),
           "bundles": [[b.id, b.meta.get("digest")] for b in bundles]}
    h = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8"))
    h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def catalogue_bundles(root: Path) -> List[Bundle]:
    """The bundles under root, from their case.json alone (a not-run cell never reads the model)."""
    found = []
    for bid in bundle_ids(root):
        meta = json.loads((root / bid / "case.json").read_text(encoding="utf-8"))
        found.append(Bundle(path=root / bid, meta=meta))
    return found


def main(argv: Optional[Sequence[str]] = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = ArgumentParser(prog="python -m engines.idle", description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", required=True, choices=[n for n, s in ENGINES.items() if s.device != "cpu"])
    parser.add_argument("--version", action="append", required=True, help="engine version (repeatable)")
    parser.add_argument("--bundles", type=Path, default=None, help="bundle folder (default $QDQ_BUNDLES or .bundles)")
    parser.add_argument("--results-wait", type=float, default=0.0, help="seconds to wait for a busy results file")
    parser.add_argument("--because", default="", help="why the engine is not here, added to the probe's own reason")
    args = parser.parse_args(args_list)
    root = args.bundles or bundles_root()
    start = time.perf_counter()
    try:
        bundles = catalogue_bundles(root)
        if not bundles:
            raise Refused(f"no bundles under {root}: run `python -m generators write` first")
        run = run_record(args.engine, args_list)
        for version in args.version:
            info = idle_info(args.engine, version)
            if args.because:
                info = replace(info, reason=f"{args.because}; {info.reason}" if info.reason else args.because)
            counts = write_column(info, bundles, run, wait=args.results_wait)
            print(f"{args.engine} {info.version} [{info.hardware}]: {len(bundles)} cells {info.unavailable_status} "
                  f"({info.reason}); {counts['written']} written, {counts['unchanged']} unchanged -> {counts['path']}")
    except (Refused, ResultsBusy, NotAResultsFile, ResultsUnwritable, OSError, ValueError, KeyError) as e:
        print(f"engines.idle: {e}", file=sys.stderr)
        return 2
    print(f"engines.idle: {len(args.version)} columns in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
