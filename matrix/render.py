"""Write the merged matrix as reports: matrix.md, matrix.html, matrix.json and junit.xml."""

from __future__ import annotations

import datetime as _dt
import json
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from cases.cell import VERDICTS, Cell
from cases.verdict import UNEXPECTED
from matrix.merge import Column, MergeResult, Row, column_key
from matrix.safe import clean, md_cell

REPORT_SCHEMA = "qdq-matrix/report/1"
TEMPLATES = Path(__file__).resolve().parent / "templates"
# The stage that failed, from the last stage a cell completed (cells record the last one completed).
FAILED_STAGE = {"": "load", "load": "build", "build": "run", "run": "compare", "compare": "compare"}


def write_reports(result: MergeResult, out: Path, generated: Optional[str] = None,
                  node_reports: Sequence[Dict[str, Any]] = ()) -> List[Path]:
    """Write the four reports into out (linking the per-node reports given: bundle, md, html); return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    view = build_view(result, generated)
    view["node_reports"] = [{"bundle": n["bundle"], "md": _relative(n["md"], out), "html": _relative(n["html"], out)}
                            for n in node_reports]
    written = {
        "matrix.md": render_template("matrix.md.j2", view, html=False),
        "matrix.html": render_template("matrix.html.j2", view, html=True),
        "matrix.json": json.dumps(report_json(result, view), indent=1, sort_keys=True, default=str) + "\n",
    }
    paths = []
    for name, text in written.items():
        (out / name).write_text(text, encoding="utf-8")
        paths.append(out / name)
    junit = out / "junit.xml"
    junit.write_bytes(junit_xml(result))
    return paths + [junit]


def render_template(name: str, view: Dict[str, Any], html: bool) -> str:
    """Render one template with the whole view in a single render call (control characters made visible)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)), autoescape=html, undefined=StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, finalize=clean,
    )
    env.filters["md"] = md_escape
    return env.get_template(name).render(report=view)


def build_view(result: MergeResult, generated: Optional[str] = None) -> Dict[str, Any]:
    """Everything the templates show, computed once."""
    grid = result.grid()
    columns = [_column_view(c, i) for i, c in enumerate(result.columns)]
    cases = []
    for case_id in dict.fromkeys(r.case for r in result.rows):
        info = result.cases.get(case_id)
        rows = [r for r in result.rows if r.case == case_id]
        cases.append({
            "id": case_id, "seed": info.seed if info else "", "title": info.title if info else "",
            "links": list(info.links) if info else [],
            "rows": [_row_view(r, result.columns, grid) for r in rows],
        })
    return {
        "generated": generated or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "columns": columns,
        "cases": cases,
        "summary": summary(result),
        "verdicts": list(VERDICTS),
        "problems": [{"text": str(p), "level": p.level} for p in result.problems],
        "files": list(result.files),
        "totals": _totals(result),
    }


def summary(result: MergeResult) -> List[Dict[str, Any]]:
    """Counts per verdict and per status for each column."""
    out = []
    for col in result.columns:
        cells = [c for c in result.cells if _in(c, col)]
        out.append({
            "column": col.id, "heading": col.heading, "hardware": col.hardware, "provenance": col.provenance,
            "verdicts": {v: sum(c.verdict == v for c in cells) for v in VERDICTS},
            "statuses": _count(c.status for c in cells),
            "unexpected": sum(c.verdict in UNEXPECTED for c in cells),
            "cells": len(cells),
        })
    return out


def cell_label(cell: Cell) -> Tuple[str, str, str]:
    """(symbol, short status, css class) as a reader sees the cell."""
    if cell.status == "pass":
        if cell.fused is True:
            return "✅", "fused", "pass"
        return "✅", "pass (not fused)" if cell.fused is False else "pass", "pass"
    if cell.status == "fail":
        return "❌", FAILED_STAGE.get(cell.stage, cell.stage or "fail"), "fail"
    if cell.status == "crashed":
        return "💥", "crashed", "crashed"
    if cell.status == "not_applicable":
        return "⊘", "not applicable" + (f": {first_line(cell.reason)}" if cell.reason else ""), "notrun"
    word = "skipped" if cell.status == "skipped" else "not run"
    return "⏭", word + (f": {first_line(cell.reason)}" if cell.reason else ""), "notrun"


def cell_text(cell: Cell) -> str:
    """The one-line Markdown text of a cell: "❌ build · as documented (sig: ...)"."""
    symbol, label, _ = cell_label(cell)
    text = f"{symbol} {label}"
    if cell.verdict not in ("not run", "not applicable"):
        text += f" · {cell.verdict}"
    if cell.signature:
        text += f" (sig: {cell.signature})"
    elif cell.status == "crashed" and cell.reason:
        text += f" ({first_line(cell.reason)})"
    return text


def cell_details(cell: Cell) -> List[Tuple[str, str]]:
    """(label, value) pairs shown in a cell's tooltip or <details>."""
    verdict = f"{cell.verdict}: {cell.explanation}" if cell.explanation else cell.verdict
    out: List[Tuple[str, str]] = [("verdict", verdict)]
    if cell.reason:
        out.append(("reason", cell.reason))
    if cell.error:
        out.append(("error", _clip(cell.error, 600)))
    if cell.signature:
        out.append(("matched signature", cell.signature))
    if cell.warnings:
        out.append(("warnings", ", ".join(cell.warnings)))
    if cell.max_error_steps is not None:
        tol = f" (tolerance {cell.tolerance_steps:g})" if cell.tolerance_steps is not None else ""
        out.append(("max error", f"{cell.max_error_steps:.3g} steps{tol}"))
    for node, p in sorted(cell.precision.items()):
        evidence = p.get("evidence", "")
        out.append((f"precision {node}", p.get("precision", "unknown") + (f" — {evidence}" if evidence else "")))
    if cell.expectation:
        e = cell.expectation
        said = " ".join(x for x in (e.get("outcome", ""), e.get("versions", "")) if x)
        out.append(("expectation", f"{said} — {e.get('source', '')}".strip(" —")))
    else:
        out.append(("expectation", "no source documents this cell"))
    run = cell.run
    out.append(("run", ", ".join(x for x in (run.get("source", ""), run.get("date", ""), run.get("file", "")) if x)))
    return out


def report_json(result: MergeResult, view: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The machine-readable report: columns, rows, summary, problems and every merged cell."""
    view = view or build_view(result)
    return {
        "schema": REPORT_SCHEMA,
        "generated": view["generated"],
        "columns": [dict(asdict(c), id=c.id, provenance=c.provenance) for c in result.columns],
        "rows": [dict(asdict(r), slug=r.slug) for r in result.rows],
        "summary": view["summary"],
        "problems": [asdict(p) for p in result.problems],
        "files": list(result.files),
        "cells": [asdict(c) for c in result.cells],
    }


def junit_xml(result: MergeResult) -> bytes:
    """JUnit XML: a testsuite per column, a testcase per cell; unexpected verdicts fail, not-run cells skip."""
    root = ET.Element("testsuites", name="qdq-matrix")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for col in result.columns:
        cells = sorted((c for c in result.cells if _in(c, col)), key=lambda c: c.bundle)
        suite = ET.SubElement(root, "testsuite", name=col.id, hostname=col.hardware, timestamp=col.date)
        counts = {"tests": len(cells), "failures": 0, "skipped": 0}
        for cell in cells:
            kind = _junit_case(suite, cell)
            if kind:
                counts[kind] += 1
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
        suite.set("errors", "0")
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("errors", "0")
    for node in root.iter():  # XML 1.0 has no escape for most control characters: make them visible text
        node.text = clean(node.text)
        for k, v in node.attrib.items():
            node.set(k, clean(v))
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _junit_kind(cell: Cell) -> str:
    if cell.verdict in UNEXPECTED:
        return "failures"
    if cell.status in ("skipped", "not_run", "not_applicable"):
        return "skipped"
    return ""


def _junit_case(suite: ET.Element, cell: Cell) -> str:
    case = ET.SubElement(suite, "testcase", classname=cell.case, name=cell.bundle.split("/", 1)[-1],
                         time=f"{sum(cell.timings.values()):.3f}")
    kind = _junit_kind(cell)
    if kind == "failures":
        node = ET.SubElement(case, "failure", message=f"{cell.verdict}: {cell.explanation}", type=cell.verdict)
        node.text = "\n".join(f"{k}: {v}" for k, v in cell_details(cell))
    elif kind == "skipped":
        ET.SubElement(case, "skipped", message=cell.reason or cell.status)
    return kind


def md_escape(text: Any) -> str:
    """Text safe inside a Markdown table cell: no raw HTML, no cell break, one line."""
    return md_cell(text)


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _column_view(col: Column, index: int) -> Dict[str, Any]:
    return {"id": col.id, "anchor": f"col{index}", "heading": col.heading, "hardware": col.hardware,
            "source": col.source, "provenance": col.provenance, "engine": col.engine,
            "version": col.engine_version}


def _row_view(row: Row, columns: Tuple[Column, ...], grid: Dict[Any, Cell]) -> Dict[str, Any]:
    cells = []
    for col in columns:
        cell = grid.get((row.bundle, col.key))
        if cell is None:
            cells.append(None)
            continue
        symbol, label, css = cell_label(cell)
        details = cell_details(cell)
        cells.append({
            "symbol": symbol, "label": label, "css": css, "verdict": cell.verdict,
            "unexpected": cell.verdict in UNEXPECTED, "text": cell_text(cell), "details": details,
            "title": "\n".join(f"{k}: {first_line(v)}" for k, v in details),
        })
    return {"bundle": row.bundle, "slug": row.slug, "params": row.params, "cells": cells}


def _totals(result: MergeResult) -> Dict[str, int]:
    return {"cells": len(result.cells), "rows": len(result.rows), "columns": len(result.columns),
            "unexpected": sum(c.verdict in UNEXPECTED for c in result.cells),
            "errors": len(result.errors)}


def _in(cell: Cell, col: Column) -> bool:
    return column_key(cell) == col.key


def _count(values: Any) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _relative(path: Any, base: Path) -> str:
    """A link from a report in base to path."""
    import os

    return Path(os.path.relpath(Path(path), base)).as_posix()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " …"
