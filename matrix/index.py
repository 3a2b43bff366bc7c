"""matrix.json: the machine-readable report, an index record per cell (what it is judged by); the whole cells are in
cells/<column>.jsonl (matrix.cellfiles)."""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, fields
from typing import Any, Dict, Iterable, List, Sequence

from core.cell import Cell
from core.words import UNEXPECTED
from matrix.causes import cause_of
from matrix.cellfiles import column_file
from matrix.merge import MergeResult

# 3: a cell is an index record (verdict, error, signature, its root cause); the whole cell is in its column's file
REPORT_SCHEMA = "qdq-matrix/report/3"
# What matrix.json keeps of a cell: what a reader judges it by. The rest (log, listing, evidence, options, timings)
# is in cells/<column>.jsonl, named by the column's "cells".
INDEX_FIELDS = ("bundle", "status", "verdict", "last_stage", "signature", "warnings", "fused", "max_error_steps",
                "tolerance_steps")
TEXT_FIELDS = ("error", "reason", "explanation")  # said once in "texts", a cell holds the text's number


def report_json(result: MergeResult, view: Dict[str, Any]) -> Dict[str, Any]:
    """The machine-readable report: columns, rows, summary, upgrade answer, root causes, problems, and an index
    record per merged cell (what it is judged by); each column names the file under cells/ with its cells whole.

    A cell names its column by index and its root cause by number; the context its column's cells all share is
    stored once, in that column's "shared"; error, reason and explanation are numbers of texts in "texts". The whole
    cells are in the column files each column names, one JSON line each (matrix.cellfiles).
    """
    keys = [c.key for c in result.columns]
    by_column = result.by_column()
    causes = {(k["engine"], k["did"], k["symptom"]): k["index"] for k in view["causes"]}
    texts: Dict[str, int] = {}
    cells = []
    compact = {k: [compact_cell(c, READ) for c in by_column[k]] for k in keys}
    for index, key in enumerate(keys):
        for cell, whole in zip(by_column[key], compact[key]):
            record = dict({k: whole[k] for k in INDEX_FIELDS if k in whole}, column=index)  # written sort_keys
            record.update({k: texts.setdefault(getattr(cell, k), len(texts))
                           for k in TEXT_FIELDS if getattr(cell, k)})
            if cell.verdict in UNEXPECTED:
                record["cause"] = causes[cause_of(cell, view["regressed"])]
            cells.append(record)
    shared = {k: _shared(compact[k]) for k in keys}
    return {
        "schema": REPORT_SCHEMA,
        "generated": view["generated"],
        "columns": [dict(asdict(c), variant=c.variant_label, id=c.id, provenance=c.provenance, shared=shared[c.key],
                         cells=column_file(c)) for c in result.columns],
        "rows": [dict(asdict(r), slug=r.slug) for r in result.rows],
        "summary": view["summary"],
        "upgrade": [{"engine": e["engine"], "pairs": [{k: p[k] for k in ("from", "to", "headline", "counts")}
                                                      for p in e["pairs"]]} for e in view["upgrade"]],
        "causes": [{k: c[k] for k in ("engine", "did", "symptom", "signature", "n", "bundles", "versions", "where",
                                      "verdicts", "example")} for c in view["causes"]],
        "problems": [asdict(p) for p in result.problems],
        "files": list(result.files),
        "texts": list(texts),
        "cells": cells,
    }


SHARED = ("schema", "engine", "engine_version", "hardware", "hardware_detail", "versions", "options", "run")


def _shared(cells: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The context fields with one value (present) in every cell of a column."""
    out = {}
    for key in SHARED:
        if cells and all(key in c for c in cells) and _one_value(c[key] for c in cells):
            out[key] = cells[0][key]
    return out


def _one_value(values: Iterable[Any]) -> bool:
    """Whether every value is the same as JSON says it (sort_keys), read up to the first that differs; two strings say
    the same exactly when they are equal, so a string is compared as it is, not written out first."""
    first: Any = _NOTHING
    said = ""
    for value in values:
        if first is _NOTHING:
            first, said = value, "" if type(value) is str else json.dumps(value, sort_keys=True)
        elif type(value) is str and type(first) is str:
            if value != first:
                return False
        elif json.dumps(value, sort_keys=True) != (said or json.dumps(first, sort_keys=True)):
            return False
    return True


_NOTHING = object()  # _one_value before its first value


# Cell's fields that have a default, with it (compact_cell leaves those at it out).
CELL_DEFAULTS = {f.name: (f.default if f.default is not MISSING else f.default_factory())
                 for f in fields(Cell) if f.default is not MISSING or f.default_factory is not MISSING}


def compact_cell(cell: Cell, names: Sequence[str] = ()) -> Dict[str, Any]:
    """A cell as a dict without the fields at their default value: Cell.from_dict gives the same cell back. names:
    only those fields (what matrix.json reads of each cell, READ)."""
    items = ((k, getattr(cell, k)) for k in names) if names else cell.as_dict().items()
    return {k: v for k, v in items if k not in CELL_DEFAULTS or v != CELL_DEFAULTS[k] or k == "schema"}


READ = INDEX_FIELDS + SHARED  # what report_json reads of a cell's compact form
