"""The compact grid: a short code per cell, repeated texts said once as numbered notes, idle columns collapsed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from cases.cell import VERDICTS, Cell
from cases.outcome import outcome
from cases.verdict import UNEXPECTED
from matrix.merge import Column, MergeResult, column_key
from matrix.words import say_list

IDLE = ("skipped", "not_run")
# Code letter, css class and meaning per state; a letter reads without colour and without an emoji font.
STATES = (
    ("8", "k8", "pass, quantized nodes fused in INT8"),
    ("P", "kp", "pass (fusion not reported)"),
    ("f", "kf", "pass, but a quantized node ran in float"),
    ("A", "ka", "built ahead of time, quantized nodes in INT8 (or FP8, INT4) kernels; not run here"),
    ("a", "kf", "built ahead of time, but a quantized node is computed in float; not run here"),
    ("b", "kb", "built ahead of time (fusion not reported); not run here"),
    ("L", "kx", "fails at load (parse)"),
    ("B", "kx", "fails at build"),
    ("R", "kx", "fails at run"),
    ("C", "kx", "fails the output comparison"),
    ("X", "kc", "crashed (the engine process died)"),
    ("-", "kn", "not run"),
    ("s", "kn", "skipped"),
    ("/", "kn", "not applicable"),
)
# The letter of each outcome (cases.outcome's kind) but a failure, whose letter is its failed stage's first.
LETTERS = {"int8": "8", "passes": "P", "float": "f", "built-int8": "A", "built-float": "a", "built": "b",
           "crashed": "X", "not_run": "-", "skipped": "s", "not_applicable": "/"}
# A mark after the letter for the verdicts a reader must not miss.
MARKS = {"regressed": "!", "new failure": "*", "fixed": "+", "undocumented": "?"}
TEXT_INLINE = 48  # texts shorter than this stay in the cell; longer repeated ones become numbered notes
ERROR_CLIP = 400  # matrix.json keeps every text whole
EVIDENCE_CLIP = 160


@dataclass(frozen=True)
class Collapsed:
    """A column whose every cell is idle for one reason: shown as one line instead of a column."""

    column: Column
    cells: int
    status: str
    reason: str


def cell_code(cell: Cell) -> Tuple[str, str]:
    """(short text, css classes) of one cell, e.g. ("B!", "kx v2 vu")."""
    said = outcome(cell)
    if said.status == "fail":
        letter = said.failed_stage[0].upper()
    else:
        letter = LETTERS.get(said.kind, "-")
    css = next(c for code, c, _ in STATES if code == letter)
    verdict = VERDICTS.index(cell.verdict) if cell.verdict in VERDICTS else 0
    classes = f"{css} v{verdict}" + (" vu" if cell.verdict in UNEXPECTED else "")
    return letter + MARKS.get(cell.verdict, ""), classes


def legend() -> List[Dict[str, str]]:
    """The code letters and marks, for the key above the grid."""
    out = [{"code": code, "css": css, "meaning": meaning} for code, css, meaning in STATES]
    out += [{"code": mark, "css": "mark", "meaning": f"verdict: {verdict}"} for verdict, mark in MARKS.items()]
    return out


def collapsed_columns(result: MergeResult) -> Dict[Tuple[str, str, str, str], Collapsed]:
    """Columns where every cell is idle (not run or skipped) for one and the same reason."""
    by_column: Dict[Any, List[Cell]] = {}
    for c in result.cells:
        by_column.setdefault(column_key(c), []).append(c)
    out = {}
    for col in result.columns:
        cells = by_column.get(col.key, [])
        reasons = {(c.status, c.reason) for c in cells}
        if cells and len(reasons) == 1 and all(c.status in IDLE for c in cells):
            status, reason = next(iter(reasons))
            out[col.key] = Collapsed(col, len(cells), status.replace("_", " "), reason)
    return out


class Notes:
    """Texts said once and referenced by number: a reason repeated in 100 cells is one note."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.counts: Dict[str, int] = {}
        for t in texts:
            self.counts[t] = self.counts.get(t, 0) + 1
        self.numbers: Dict[str, int] = {}

    def ref(self, text: str) -> Dict[str, Any]:
        """{"text": ...} to show in place, or {"note": n} for a repeated long text."""
        if len(text) < TEXT_INLINE or self.counts.get(text, 0) < 2:
            return {"text": text}
        if text not in self.numbers:
            self.numbers[text] = len(self.numbers) + 1
        return {"note": self.numbers[text]}

    def listing(self) -> List[Dict[str, Any]]:
        """Every numbered note with the number of places that refer to it."""
        return [{"note": n, "text": t, "uses": self.counts[t]} for t, n in self.numbers.items()]


def detail_texts(cell: Cell) -> List[Tuple[str, str, bool]]:
    """(label, text, may be a note) for one cell's details, in reading order."""
    out: List[Tuple[str, str, bool]] = []  # the verdict comes from the cell's class (v0..v6)
    if cell.explanation and cell.verdict in UNEXPECTED:  # otherwise the verdict and the expectation say it
        out.append(("why", cell.explanation, False))  # rare (unexpected cells only) and the point: said in place
    if cell.reason:
        out.append(("reason", cell.reason, True))
    if cell.error:
        out.append(("error", _clip(cell.error.strip(), ERROR_CLIP), True))
    if cell.signature:
        out.append(("signature", cell.signature, False))
    if cell.warnings:
        out.append(("warnings", ", ".join(cell.warnings), True))
    if cell.max_error_steps is not None:
        tol = f" of {cell.tolerance_steps:g}" if cell.tolerance_steps is not None else ""
        out.append(("max error", f"{cell.max_error_steps:.3g}{tol} steps", False))
    for node, p in sorted(cell.precision.items()):
        evidence = p.get("evidence", "")
        if p.get("precision", "unknown") == "unknown" and evidence in ("", "not reported"):
            continue
        evidence = _clip(evidence, EVIDENCE_CLIP)
        out.append((f"{node}", p.get("precision", "unknown") + (f": {evidence}" if evidence else ""), True))
    e = cell.expectation
    if e:
        said = " ".join(x for x in (e.get("outcome", ""), e.get("versions", "")) if x)
        source = " ".join(x for x in (e.get("note", ""), e.get("source", "")) if x)
        out.append(("expected", f"{said}: {source}".strip(": "), True))
    return out



def grid_view(result: MergeResult, notes: Optional[Notes] = None) -> Dict[str, Any]:
    """Columns shown, collapsed columns, rows grouped by case with a code and details per cell, and the notes."""
    collapsed = collapsed_columns(result)
    shown = [c for c in result.columns if c.key not in collapsed]
    grid = result.grid()
    cells_shown = [grid.get((r.bundle, c.key)) for r in result.rows for c in shown]
    if notes is None:
        notes = Notes([t for c in cells_shown if c for _, t, long in detail_texts(c) if long])
    engines = list(dict.fromkeys(c.engine for c in shown))
    hardware = list(dict.fromkeys(c.setting for c in shown))
    columns = [{"heading": c.heading, "engine": c.engine, "version": c.engine_version, "hardware": c.setting,
                "provenance": c.provenance, "id": c.id, "nth": i + 2, "index": result.columns.index(c) + 1,
                "e": engines.index(c.engine), "h": hardware.index(c.setting)} for i, c in enumerate(shown)]
    groups = []
    sets: Dict[Tuple[Any, ...], int] = {}  # each distinct details text once; cells refer to it by number
    case_ids = list(dict.fromkeys(r.case for r in result.rows))
    for index, case_id in enumerate(case_ids):
        info = result.cases.get(case_id)
        rows = []
        for row in (r for r in result.rows if r.case == case_id):
            rows.append({"slug": row.slug, "bundle": row.bundle,
                         "cells": [_cell_view(grid.get((row.bundle, c.key)), notes, sets) for c in shown]})
        groups.append({"index": index, "id": case_id, "seed": info.seed if info else "",
                       "title": info.title if info else "", "rows": rows})
    present = sorted({VERDICTS.index(c.verdict) for c in cells_shown if c and c.verdict in VERDICTS})
    return {
        "columns": columns,
        "collapsed": collapsed_view(result, collapsed.values()),
        "groups": groups,
        "engines": [{"index": i, "name": e, "hide": [c["nth"] for c in columns if c["e"] != i]}
                    for i, e in enumerate(engines)],
        "hardware": [{"index": i, "name": h, "hide": [c["nth"] for c in columns if c["h"] != i]}
                     for i, h in enumerate(hardware)],
        "verdicts": [{"index": v, "name": VERDICTS[v]} for v in present],
        "all_verdicts": [{"index": i, "name": v} for i, v in enumerate(VERDICTS)],
        "legend": legend(),
        "notes": notes.listing(),
        "width": len(columns) + 1,
        "details": [{"verdict": key[0], "items": [dict(zip(("label", "kind", "value"), d)) for d in key[1:]]}
                    for key in sets],
        "order": [c["d"] for g in groups for r in g["rows"] for c in r["cells"] if c],
    }


def collapsed_view(result: MergeResult, collapsed: Sequence[Collapsed]) -> List[Dict[str, Any]]:
    """Idle columns as lines: columns idle on the same hardware for the same reason share one line."""
    groups: Dict[Tuple[str, str, int, str, str], List[Column]] = {}
    for k in collapsed:
        groups.setdefault((k.column.setting, k.column.provenance, k.cells, k.status, k.reason), []).append(k.column)
    out = []
    for (hardware, provenance, cells, status, reason), cols in groups.items():
        numbers = [result.columns.index(c) + 1 for c in cols]
        engines = list(dict.fromkeys(c.engine for c in cols))
        heading = (say_list([c.heading for c in cols]) if len(engines) > 1 or len(cols) == 1 else
                   f"{engines[0]} " + say_list([c.engine_version for c in cols]))
        out.append({"index": say_list([str(n) for n in numbers]), "heading": heading, "hardware": hardware,
                    "provenance": provenance, "cells": cells, "status": status, "reason": reason,
                    "columns": len(cols)})
    return out


def _cell_view(cell: Optional[Cell], notes: Notes, sets: Dict[Tuple[Any, ...], int]) -> Optional[Dict[str, Any]]:
    """A cell's code, classes and the number of its details text (cells with the same details share one)."""
    if cell is None:
        return None
    code, css = cell_code(cell)
    items = []
    for label, text, long in detail_texts(cell):
        ref = notes.ref(text) if long else {"text": text}
        items.append((label, "note", ref["note"]) if "note" in ref else (label, "text", ref["text"]))
    key = (cell.verdict, *items)
    return {"code": code, "css": css, "d": sets.setdefault(key, len(sets))}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."
