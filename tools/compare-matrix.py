"""Compare two reports/matrix.json cell by cell: status, verdict, whether every target ran quantized, and each
target node's precision where the report's cells/ folder is beside it.

    python3 tools/compare-matrix.py OLD/reports/matrix.json NEW/reports/matrix.json

A cell is keyed by its bundle and its column's id (engine@version [hardware · setting] (source)), so two runs of the
same commit on the same machine compare equal whatever order they wrote their files in. Two user models can share a
bundle id in one column (each reduction is named "reduced"); matrix.json does not tell them apart, so such a key holds
the cells of both, compared as a set, and each is counted. matrix.json holds an index
record per cell; the per-node precision is in the column's file under cells/, which a copy of matrix.json alone
(tools/matrix-benchmark.py keeps one) does not have: then it is not compared, and the summary line says so. Prints
how many cells each has, how many differ (how many of them are in the first report only, in the second only, or in
both and changed) and the first differences; exits 1 when any cell differs or is in one
report only. Standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

SHOWN = 20  # differences printed


def cells(path: Path) -> Tuple[Dict[Tuple[str, str], Dict[str, Any]], bool, int]:
    """(bundle, column id) -> what is compared, for every cell of a report (the cells under one key as a sorted list,
    so that two user models of one bundle id are both kept); whether its cells/ files were here; how many cells."""
    report = json.loads(path.read_text(encoding="utf-8"))
    columns = report["columns"]
    precision: Dict[Tuple[int, str], List[str]] = {}  # (column index, bundle) -> each cell's node -> precision
    whole = all((path.parent / c["cells"]).is_file() for c in columns)
    for index, column in enumerate(columns if whole else []):
        for line in (path.parent / column["cells"]).read_text(encoding="utf-8").splitlines():
            if line.strip():
                cell = json.loads(line)
                nodes = {n: p.get("precision") for n, p in sorted((cell.get("precision") or {}).items())}
                precision.setdefault((index, cell["bundle"]), []).append(json.dumps(nodes, sort_keys=True))
    found: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for cell in report["cells"]:
        key = (cell["bundle"], columns[cell["column"]]["id"])
        record = found.setdefault(key, {"cells": [], "precision": sorted(precision.get((cell["column"],
                                                                                         cell["bundle"]), []))})
        record["cells"] = sorted(record["cells"] + [json.dumps(
            {"status": cell["status"], "verdict": cell["verdict"], "fused": cell.get("fused")}, sort_keys=True)])
    return found, whole, len(report["cells"])


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    (old, old_whole, old_n), (new, new_whole, new_n) = (cells(Path(p)) for p in argv)
    if not (old_whole and new_whole):  # one side has no per-node precision: compare what both have
        for found in (old, new):
            for record in found.values():
                record.pop("precision")
    lines: List[str] = []
    kinds = {"only in the first": 0, "only in the second": 0, "changed": 0}
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            lines.append(f"{key[1]} {key[0]}: {old.get(key)} -> {new.get(key)}")
            kinds["only in the second" if key not in old else "only in the first" if key not in new else "changed"] += 1
    compared = "status, verdict, fused, per-node precision" if old_whole and new_whole else \
        "status, verdict, fused; per-node precision not compared: a report's cells/ folder is not beside it"
    split = f": {', '.join(f'{n} {k}' for k, n in kinds.items())}" if lines else ""
    print(f"{old_n} cells in {argv[0]}, {new_n} in {argv[1]}; {len(lines)} differ{split} ({compared})")
    for line in lines[:SHOWN]:
        print("  " + line)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
