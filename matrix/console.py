"""The console summary of `matrix report`: a line of totals, then a line per column, read from the report's view
(matrix.view.build_view), never computed again."""

from __future__ import annotations

from typing import Any, Dict, List

from core.words import many


def summary_lines(view: Dict[str, Any]) -> List[str]:
    """What `matrix report` prints: cells, files, reproducers, columns, unexpected cells and their root causes,
    harness errors and conformance cells; then each column's verdict counts."""
    totals = view["totals"]
    unexpected = totals["unexpected"]
    causes = f" from {many(totals['causes'], 'root cause')}" if unexpected else ""
    harness = totals["harness_errors"]
    conformance = totals["conformance"]
    lines = [f"{many(totals['cells'], 'cell')} from {many(len(view['files']), 'file')}, "
             f"{totals['rows_said']}, {many(totals['columns'], 'column')}, {unexpected} unexpected"
             f"{causes}" + (f", {many(harness, 'harness error')} (the suite's own code failed)" if harness else "")
             + (f"; {many(conformance, 'conformance cell')} (conformance.md)" if conformance else "")]
    for s in view["summary"]:
        counts = ", ".join(f"{n} {v}" for v, n in s["verdicts"].items() if n)
        lines.append(f"  {s['heading']} [{s['hardware']}] ({s['provenance']}): {counts}")
    return lines
