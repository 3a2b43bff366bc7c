"""The compact grid: a short code per cell, idle columns collapsed, each cell's details said once in a side file."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from cases.base import slug
from cases.common import BUILT_IS_NOT_RUNNING, RTX_ISSUE_35
from core.cell import VERDICTS, Cell
from core.engines import ENGINES
from core.outcome import outcome
from core.words import (
    GRID_LETTERS,
    GRID_STATES,
    NOT_TRIED,
    REGRESSION_MARK,
    STATUS_WORDS,
    UNEXPECTED,
    VERDICT_MARKS,
    say_list,
)
from matrix.cellfiles import column_file
from matrix.details import cell_details
from matrix.diff import Change, regression_words, regressions
from matrix.merge import Column, ColumnKey, MergeResult, Row, column_key
from matrix.safe import clean

COLLAPSIBLE = NOT_TRIED  # a column idle for one of these, every cell for one reason, is one line
# A shown cell is one character of the row's string (two past this many looks); "." is an empty cell.
SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%()*+,-/:;=?@[]^_{|}~"
EMPTY = "."
NEVER_RUN = "never run"  # a collapsed line's status for the columns of versions no machine here could install


@dataclass(frozen=True)
class Collapsed:
    """A column whose every cell is idle for one reason: shown as one line instead of a column."""

    column: Column
    cells: int
    status: str
    reason: str


Regressed = Dict[Tuple[Tuple[str, ...], str], Tuple[str, Change]]  # matrix.diff.regressions


def cell_code(cell: Cell, regressed: bool = False) -> Tuple[str, str]:
    """(short text, css classes) of one cell, e.g. ("B!", "kx v2 vu"), with the regression mark where it regressed."""
    letter = GRID_LETTERS[outcome(cell).kind]
    css = next(c for code, c, _ in GRID_STATES if code == letter)
    classes = f"{css} v{VERDICTS.index(cell.verdict)}" + (" vu" if cell.verdict in UNEXPECTED else "")
    return letter + VERDICT_MARKS[cell.verdict] + (REGRESSION_MARK if regressed else ""), classes


def legend() -> List[Dict[str, str]]:
    """The code letters and marks, for the key above the grid."""
    out = [{"code": code, "css": css, "meaning": meaning} for code, css, meaning in GRID_STATES]
    out += [{"code": mark, "css": "mark", "meaning": f"verdict: {verdict}"}
            for verdict, mark in VERDICT_MARKS.items() if mark]
    return out + [{"code": REGRESSION_MARK, "css": "mark", "meaning": "regression: passed, built or fused on the "
                   "engine's version before on this hardware; fails, crashes or lost fusion here"}]


def built_note() -> Dict[str, str]:
    """What a built cell (`A`, `a`, `b`) is not, said once under the key: its words and their source."""
    return {"codes": "".join(code for code, _, meaning in GRID_STATES if meaning.startswith("built")),
            "text": BUILT_IS_NOT_RUNNING, "source": RTX_ISSUE_35}


def collapsed_columns(result: MergeResult) -> Dict[ColumnKey, Collapsed]:
    """Columns where every cell is idle (not run or skipped) for one and the same reason."""
    by_column: Dict[Any, List[Cell]] = {}
    for c in result.cells:
        by_column.setdefault(column_key(c), []).append(c)
    out = {}
    for col in result.columns:
        cells = by_column.get(col.key, [])
        reasons = {(c.status, c.reason) for c in cells}
        if cells and len(reasons) == 1 and all(c.status in COLLAPSIBLE for c in cells):
            status, reason = next(iter(reasons))
            out[col.key] = Collapsed(col, len(cells), STATUS_WORDS[status], reason)
    return out


def bugs_options(column: Column) -> str:
    """`--engine E --version V --hardware "H" --variant X`: what names one cell of this column besides its bundle, for
    the page's bug-bundle command (`nox -s bugs -- --cell BUNDLE ...`; matrix.bugbundle.select finds exactly one)."""
    return (f"--engine {column.engine} --version {column.engine_version} --hardware {_shell_quoted(column.hardware)} "
            f"--variant {_shell_quoted(column.variant_label or 'default')}")


def _shell_quoted(text: str) -> str:
    """text as one shell word: as it is where that is safe, in double quotes where nothing in it means anything there
    ("NVIDIA H200 (sm_90)"), else in single quotes."""
    if text and all(ch.isalnum() or ch in "._=+-,/:@" for ch in text):
        return text
    return shlex.quote(text) if any(ch in '"$`\\!' for ch in text) else f'"{text}"'


def grid_view(result: MergeResult, regressed: Optional[Regressed] = None) -> Dict[str, Any]:
    """Columns shown, collapsed columns, rows grouped by case with a code per cell, each row's codes as one string
    for the page, and every cell's details (said once per distinct text) for the page's side file."""
    regressed = regressions(result.cells) if regressed is None else regressed
    collapsed = collapsed_columns(result)
    shown = [c for c in result.columns if c.key not in collapsed]
    grid = result.grid()
    cells_shown = [grid.get((r.bundle, c.key)) for r in result.rows for c in shown]
    engines = list(dict.fromkeys(c.engine for c in shown))
    hardware = list(dict.fromkeys(c.setting for c in shown))
    columns = [{"heading": c.heading, "engine": c.engine, "version": c.engine_version, "hardware": c.setting,
                "provenance": c.provenance, "id": c.id, "nth": i + 2, "index": result.columns.index(c) + 1,
                "e": engines.index(c.engine), "h": hardware.index(c.setting), "file": column_file(c),
                "bugs": bugs_options(c), "label": column_label(c), "build": c.build}
               for i, c in enumerate(shown)]
    details = Details()
    palette: Dict[Tuple[str, str], int] = {}
    groups = []
    case_ids = list(dict.fromkeys(r.case for r in result.rows))
    for index, case_id in enumerate(case_ids):
        info = result.cases.get(case_id)
        rows = []
        mine = [r for r in result.rows if r.case == case_id]
        labels = row_labels(mine)
        for row in mine:
            cells = [_cell_view(grid.get((row.bundle, c.key)), details, palette, regressed.get((c.key, row.bundle)))
                     for c in shown]
            rows.append({"slug": row.slug, "bundle": row.bundle, "label": labels[row.bundle], "cells": cells})
        groups.append({"index": index, "id": case_id, "seed": info.seed if info else "",
                       "title": info.title if info else "", "rows": rows})
    width = 1 if len(palette) < len(SYMBOLS) else 2
    symbols = {key: _symbol(n, width) for key, n in palette.items()}
    for g in groups:
        for r in g["rows"]:
            r["codes"] = "".join(symbols[(c["code"], c["css"])] if c else EMPTY * width for c in r["cells"])
    present = sorted({VERDICTS.index(c.verdict) for c in cells_shown if c})
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
        "built_note": built_note(),
        "width": len(columns) + 1,
        "symbols": {symbols[key]: list(key) for key in palette},
        "symbol_width": width,
        "details": details.data(),
    }


def column_label(column: Column) -> str:
    """A grid column's head in one line, what tells it apart first: "rtx 1.7.1.116 target=SM75 · no GPU: ...";
    the page shows it upright and cut to fit, the whole label on hover."""
    short = ENGINES[column.engine].short if column.engine in ENGINES else column.engine
    return " ".join(x for x in (short, column.engine_version, column.variant_label) if x) + f" · {column.hardware}"


def row_labels(rows: Sequence[Row]) -> Dict[str, str]:
    """bundle -> its row's label within its case: only the axes whose values differ between the case's reproducers
    ("cpg=2 · weights=per_channel"), which tell each row apart in a few words; a row's whole slug where they do not
    (a lone reproducer, a row without params, two rows alike)."""
    keys = list(dict.fromkeys(k for r in rows for k in r.params))
    varying = [k for k in keys if len({slug({k: r.params[k]}) if k in r.params else "" for r in rows}) > 1]
    labels = {r.bundle: " · ".join(slug({k: r.params[k]}) for k in varying if k in r.params) or r.slug
              for r in rows}
    counts: Dict[str, int] = {}
    for label in labels.values():
        counts[label] = counts.get(label, 0) + 1
    return {b: label if counts[label] == 1 else next(r.slug for r in rows if r.bundle == b)
            for b, label in labels.items()}


class Details:
    """Every shown cell's details for the page's side file: each distinct text once, each distinct set of
    (label, text) once, and per cell (in the grid's reading order) the number of its set."""

    def __init__(self) -> None:
        self.texts: Dict[str, int] = {}
        self.sets: Dict[Tuple[Any, ...], int] = {}
        self.order: List[int] = []

    def add(self, cell: Cell, regression: str = "") -> None:
        """Record one cell's details, in reading order."""
        items: List[Any] = [self._text(cell.verdict)]
        for label, text in cell_details(cell, regression):
            items += [self._text(label), self._text(text)]
        self.order.append(self.sets.setdefault(tuple(items), len(self.sets)))

    def _text(self, text: str) -> int:
        return self.texts.setdefault(clean(text), len(self.texts))

    def data(self) -> Dict[str, Any]:
        """{"texts": [...], "sets": [[verdict, label, text, label, text, ...] as text numbers], "order": [...]}."""
        return {"texts": list(self.texts), "sets": [list(s) for s in self.sets], "order": self.order}


def collapsed_view(result: MergeResult, collapsed: Sequence[Collapsed]) -> List[Dict[str, Any]]:
    """Idle columns as lines: columns idle on the same hardware for the same reason share one line, and so do the
    columns of versions that never ran (their cells only stand in for them: no hardware, no date, no count)."""
    groups: Dict[Tuple[str, str, int, str, str], List[Column]] = {}
    for k in collapsed:
        key = ("", "", 0, NEVER_RUN, k.column.never_run) if k.column.never_run else \
            (k.column.setting, k.column.provenance, k.cells, k.status, k.reason)
        groups.setdefault(key, []).append(k.column)
    out = []
    for (hardware, provenance, cells, status, reason), cols in groups.items():
        numbers = [result.columns.index(c) + 1 for c in cols]
        engines = list(dict.fromkeys(c.engine for c in cols))
        heading = (say_list([c.heading for c in cols]) if len(engines) > 1 or len(cols) == 1 else
                   f"{engines[0]} " + say_list([c.engine_version for c in cols]))
        out.append({"index": say_list([str(n) for n in numbers]), "heading": heading, "hardware": hardware,
                    "provenance": provenance, "cells": cells, "status": status, "reason": reason,
                    "columns": len(cols), "never_run": status == NEVER_RUN})
    return out


def _cell_view(cell: Optional[Cell], details: Details, palette: Dict[Tuple[str, str], int],
               regression: Optional[Tuple[str, Change]] = None) -> Optional[Dict[str, str]]:
    """A cell's code and classes; its details go to the side file, its look to the page's palette."""
    if cell is None:
        return None
    code, css = cell_code(cell, regression is not None)
    details.add(cell, regression_words(*regression) if regression else "")
    palette.setdefault((code, css), len(palette))
    return {"code": code, "css": css}


def _symbol(n: int, width: int) -> str:
    """The n-th palette entry as `width` characters of SYMBOLS."""
    return "".join(SYMBOLS[n // len(SYMBOLS) ** i % len(SYMBOLS)] for i in reversed(range(width)))
