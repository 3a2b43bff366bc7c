"""reports/cells/: every merged cell whole, one JSONL file per column, beside the reports that summarize them.

The reports keep what a reader judges a cell by (status, verdict, error, signature); the log, the layer listing, the
per-node evidence and the options live here, one line per cell, as the results files hold them, so that nothing is
lost and no report carries 20 MB. The HTML page loads its per-cell details from details.js on demand.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Dict, List

from core.words import COLUMNS, file_name
from matrix.merge import Column, MergeResult

FOLDER = "cells"
DETAILS = f"{FOLDER}/details.js"  # the HTML page's per-cell details: qdqDetails({...}), read by a <script> on demand
GRID_MD = f"{FOLDER}/grid.md"  # the grid in Markdown, too wide for a job summary


def safe_name(text: str, limit: int = 80) -> str:
    """A file name from any text: letters, digits and . = + - kept, the rest "_", a hash of the text appended so
    that two texts never share a name."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{file_name(text, COLUMNS)[:limit]}_{digest}"


def column_file(column: Column) -> str:
    """The column's file, relative to the reports folder: "cells/tensorrt-rtx_1.7.1.116_target=SM75_local_….jsonl"."""
    parts = [column.engine, column.engine_version, column.variant_label, column.source]
    return f"{FOLDER}/{safe_name('_'.join(p for p in parts if p) + ' ' + column.hardware[:24])}.jsonl"


def write_columns(result: MergeResult, out: Path) -> List[Path]:
    """One JSONL file per column under out/cells/, each cell whole, in row order; return the paths."""
    rows = {r.bundle: i for i, r in enumerate(result.rows)}
    by_column = result.by_column()
    paths = []
    for column in result.columns:
        cells = sorted(by_column[column.key], key=lambda c: (rows.get(c.bundle, len(rows)), c.bundle))
        path = out / column_file(column)
        path.write_text("".join(c.to_json() + "\n" for c in cells), encoding="utf-8")
        paths.append(path)
    return paths


def write_details(data: Dict[str, Any], out: Path) -> Path:
    """The page's per-cell details as a script that hands them to the page (a page opened from disk may load a
    script beside it, but not fetch a JSON file)."""
    path = out / DETAILS
    path.write_text("qdqDetails(" + json.dumps(data, separators=(",", ":")) + ");\n", encoding="utf-8")
    return path
