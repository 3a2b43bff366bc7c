"""Compare two reports/matrix.json cell by cell: status, verdict and each target node's precision.

    python3 tools/compare-matrix.py OLD/reports/matrix.json NEW/reports/matrix.json

A cell is keyed by its bundle and its column (engine, version, hardware, variant, source), so two runs of the same
commit on the same machine compare equal whatever order they wrote their files in. Prints how many cells each has,
how many differ and the first differences; exits 1 when any cell differs or is in one report only. Standard library
only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

SHOWN = 20  # differences printed


def cells(path: Path) -> Dict[Tuple[str, ...], Dict[str, Any]]:
    """(bundle, engine, version, hardware, variant, source) -> what is compared, for every cell of a report."""
    report = json.loads(path.read_text(encoding="utf-8"))
    columns = report["columns"]
    found = {}
    for cell in report["cells"]:
        column = columns[cell["column"]]
        key = (cell["bundle"], column["engine"], column["engine_version"], column["hardware"],
               json.dumps(column.get("variant") or {}, sort_keys=True), column.get("source", ""))
        found[key] = {"status": cell["status"], "verdict": cell["verdict"],
                      "precision": {n: p.get("precision") for n, p in sorted((cell.get("precision") or {}).items())}}
    return found


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    old, new = (cells(Path(p)) for p in argv)
    lines: List[str] = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            lines.append(f"{' / '.join(key[:3])} [{key[3]}] {key[4]} {key[5]}: {old.get(key)} -> {new.get(key)}")
    print(f"{len(old)} cells in {argv[0]}, {len(new)} in {argv[1]}; {len(lines)} differ "
          "(status, verdict, per-node precision)")
    for line in lines[:SHOWN]:
        print("  " + line)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
