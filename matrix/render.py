"""Write the merged matrix as reports: matrix.md, matrix.html, matrix.json and junit.xml, with their side files:
plots.html (each seed's outcome per column), every cell whole in cells/ (one JSONL file per column), the page's
details in cells/details.js, the full grid in Markdown in cells/grid.md, and each adjacent pair's diff in diff/."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import xml.etree.ElementTree as ET
from dataclasses import MISSING, asdict, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from cases import all_cases
from cases.verdict import cites_itself
from core.cell import VERDICTS, Cell
from core.words import JUNIT, STATUS_WORDS, UNEXPECTED, clip, many
from matrix.causes import cause_of, root_causes
from matrix.cellfiles import DETAILS, FOLDER, GRID_MD, column_file, write_columns, write_details
from matrix.conformance import conformance_view, split
from matrix.conformance import headline as conformance_headline
from matrix.diff import regressions
from matrix.grid import collapsed_columns, grid_view
from matrix.merge import MergeResult, Problem
from matrix.models import models_view
from matrix.plots import plots_view
from matrix.safe import clean, md_cell, md_code, md_with_code
from matrix.targets import documented_view, target_view
from matrix.upgrade import DIFFS, upgrade_view

# 3: a cell is an index record (verdict, error, signature, its root cause); the whole cell is in its column's file
REPORT_SCHEMA = "qdq-matrix/report/3"
# conformance.json: every conformance entry (node test, opset, engine version: its word, steps, stage, and its reason as
# the number of a text in "texts"), the summary per engine version and opset, and the numbered reasons
# (matrix/conformance.py)
CONFORMANCE_SCHEMA = "qdq-matrix/conformance/1"
TEMPLATES = Path(__file__).resolve().parent / "templates"
# What matrix.json keeps of a cell: what a reader judges it by. The rest (log, listing, evidence, options, timings)
# is in cells/<column>.jsonl, named by the column's "cells".
INDEX_FIELDS = ("bundle", "status", "verdict", "last_stage", "signature", "warnings", "fused", "max_error_steps",
                "tolerance_steps")
TEXT_FIELDS = ("error", "reason", "explanation")  # said once in "texts", a cell holds the text's number


def write_reports(result: MergeResult, out: Path, generated: Optional[str] = None,
                  node_reports: Sequence[Dict[str, Any]] = (),
                  conformance_manifest: Optional[Dict[str, Any]] = None) -> List[Path]:
    """Write the four reports into out (with the per-node reports given, matrix.nodes.write_all's records, as the
    "Your models" table) and their side folders cells/ and diff/, and the conformance page (conformance.md, .html and
    .json: the conformance cells, taken out of every other view, and the bundles' manifest where given); return the
    reports' and the folders' paths."""
    out = Path(out)
    for folder in (out / FOLDER, out / DIFFS):
        folder.mkdir(parents=True, exist_ok=True)
    result, conformance_cells = split(result)
    view = build_view(result, generated)
    view["models"] = models_view([_node_model(n, out) for n in node_reports])
    view["conformance"] = conformance_page(conformance_cells, conformance_manifest or {})
    written = {
        "matrix.md": render_template("matrix.md.j2", view, html=False),
        "matrix.html": render_template("matrix.html.j2", view, html=True),
        "plots.html": render_template("plots.html.j2", view, html=True),
        "matrix.json": json.dumps(report_json(result, view), separators=(",", ":"), sort_keys=True,
                                  default=str) + "\n",
        GRID_MD: render_template("grid.md.j2", view, html=False),
        **{name: render_template(f"{name}.j2", view, html=name.endswith(".html")) for name in MODEL_PAGES},
        **conformance_files(view),
    }
    for e in view["upgrade"]:
        for p in e["pairs"]:
            if p.get("file"):
                written.update(diff_files(p["report"], p["file"]))
    for name, text in written.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")
    write_columns(result, out)
    write_details(view["grid"]["details"], out)
    junit = out / "junit.xml"
    junit.write_bytes(junit_xml(result))
    reports = [out / n for n in ("matrix.md", "matrix.html", "matrix.json", "plots.html", *MODEL_PAGES,
                                 *CONFORMANCE_FILES)]
    return reports + [junit, out / FOLDER, out / DIFFS]


DIFF_BUDGET = 100_000  # bytes of one pair's file under diff/; past it, its long tables go to a file of their own
ROWS = "rows"  # diff/rows/: those tables, a file per pair


def diff_files(report: Any, name: str) -> Dict[str, str]:
    """One pair's diff as its file under diff/: whole, or, past DIFF_BUDGET, its long tables (every reproducer of a
    folded group, every rewording) in a file of their own beside it, which it links."""
    text = report.markdown() + "\n"
    if len(text.encode("utf-8")) <= DIFF_BUDGET:
        return {name: text}
    rest = Path(name).parent / ROWS / Path(name).name  # diff/rows/<the pair's file name>
    return {name: report.markdown(tables=f"{ROWS}/{rest.name}") + "\n",
            rest.as_posix(): report.tables_markdown() + "\n"}


CONFORMANCE_FILES = ("conformance.md", "conformance.html", "conformance.json")
MODEL_PAGES = ("models.md", "models.html")  # every checked model by every engine version; matrix.* summarise them
# What each decision page may weigh, in bytes (docs/reports.md): `matrix report` warns on stdout past it.
BUDGETS = {"matrix.md": 100_000, "matrix.html": 400_000, "matrix.json": 5_000_000}


def over_budget(out: Path) -> List[str]:
    """A warning per report in out that weighs more than its budget."""
    sizes = {name: (Path(out) / name).stat().st_size for name in BUDGETS if (Path(out) / name).is_file()}
    return [f"{name} is {size:,} bytes, over its budget of {BUDGETS[name]:,} (docs/reports.md): the page grew with "
            "what it summarises; what it leaves out is in its side files" for name, size in sizes.items()
            if size > BUDGETS[name]]


def conformance_page(cells: Sequence[Cell], manifest: Dict[str, Any]) -> Dict[str, Any]:
    """The conformance view (matrix.conformance) with its headline."""
    view = conformance_view(cells, manifest)
    return dict(view, headline=conformance_headline(view))


def conformance_files(view: Dict[str, Any]) -> Dict[str, str]:
    """conformance.md, .html and .json from a report view that holds the conformance view."""
    page = {"generated": view["generated"], "conformance": view["conformance"]}
    texts: Dict[str, int] = {}  # each reason once: an entry names its number
    entries = [dict(e, reason=texts.setdefault(e["reason"], len(texts))) if e["reason"] else e
               for e in view["conformance"]["entries"]]
    record = {"schema": CONFORMANCE_SCHEMA, "generated": view["generated"], "texts": list(texts),
              **{k: v for k, v in view["conformance"].items() if k not in ("ops", "entries")}, "entries": entries}
    return {"conformance.md": render_template("conformance.md.j2", page, html=False),
            "conformance.html": render_template("conformance.html.j2", page, html=True),
            "conformance.json": json.dumps(record, separators=(",", ":"), sort_keys=True, default=str) + "\n"}


def render_template(name: str, view: Dict[str, Any], html: bool) -> str:
    """Render one template with the whole view in a single render call (control characters made visible)."""
    return template_environment(html).get_template(name).render(report=view)


@functools.lru_cache(maxsize=2)
def template_environment(html: bool) -> Any:
    """The Jinja environment of the HTML or the Markdown templates, made once per process: each template is compiled
    once, not once per report (a check with many models renders two node reports per model)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined
    from markupsafe import Markup

    def finalize(value: Any) -> Any:  # a macro's output is markup made from values already cleaned
        return value if isinstance(value, Markup) else clean(value)

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)), autoescape=html, undefined=StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, finalize=finalize,
    )
    env.filters["md"] = md_escape
    env.filters["mdcode"] = md_code
    env.filters["mdspans"] = md_with_code
    env.filters["many"] = many
    return env


def build_view(result: MergeResult, generated: Optional[str] = None) -> Dict[str, Any]:
    """Everything the templates show, computed once."""
    regressed = regressions(result.cells)
    causes = root_causes(result.cells, regressed)
    return {
        "generated": generated or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "upgrade": upgrade_view(result.cells),
        "targets": target_view(result.cells),
        "documented_targets": documented_view(all_cases()),
        "grid": grid_view(result, regressed),
        "plots": plots_view(result, idle=collapsed_columns(result)),
        "summary": [dict(s, index=i + 1) for i, s in enumerate(summary(result, regressed))],
        "causes": causes,
        "regressed": regressed,  # matrix.diff.regressions: the grid's, the columns' and the causes' one answer
        "verdicts": [v for v in VERDICTS if any(c.verdict == v for c in result.cells)],  # the columns table's
        "builds": builds_view(result),
        "problems": [_problem_view(p) for p in result.problems if p.level != "note"],
        # the results files that gave no cell at all (a digest mismatch, a schema break): every answer is without them
        "refused_files": sorted({p.file for p in result.problems if p.refuses_file}),
        "notes": group_notes([p for p in result.problems if p.level == "note"]),
        "files": list(result.files),
        "totals": dict(_totals(result), causes=len(causes)),
        "models": models_view([]),
        "conformance": conformance_page([], {}),  # write_reports sets the conformance cells' own
        "side": {"folder": FOLDER, "details": DETAILS, "grid": GRID_MD},
    }


def summary(result: MergeResult, regressed: Any = None) -> List[Dict[str, Any]]:
    """Counts per verdict and per status for each column, and its regressions (matrix.diff.regressions)."""
    regressed = regressions(result.cells) if regressed is None else regressed
    out = []
    by_column = result.by_column()
    for col in result.columns:
        cells = by_column[col.key]
        out.append({
            "column": col.id, "heading": col.heading, "provenance": col.provenance,
            "regressions": sum(key == col.key for key, _ in regressed),
            "baseline_itself": sum(cites_itself(c) for c in cells),
            # a version that never ran has no hardware: its cells stand in for it where it could not be installed
            "hardware": "—" if col.never_run else col.setting, "build": col.build,
            "verdicts": {v: sum(c.verdict == v for c in cells) for v in VERDICTS},
            "statuses": _count(c.status for c in cells),
            "unexpected": sum(c.verdict in UNEXPECTED for c in cells),
            "cells": len(cells),
            "file": column_file(col),
        })
    return out


def builds_view(result: MergeResult) -> List[Dict[str, str]]:
    """Each version whose build its cells do not record, once: its build and the pin table's source for it."""
    found = {(c.engine, c.engine_version): {"heading": c.heading, "build": c.build, "source": c.build_source}
             for c in result.columns if c.build and c.build_source != "its cells"}
    return list(found.values())


def cell_details(cell: Cell) -> List[Tuple[str, str]]:
    """(label, value) pairs shown in a cell's tooltip or <details>."""
    verdict = f"{cell.verdict}: {cell.explanation}" if cell.explanation else cell.verdict
    out: List[Tuple[str, str]] = [("verdict", verdict)]
    if cell.reason:
        out.append(("reason", cell.reason))
    if cell.error:
        out.append(("error", clip(cell.error, 600)))
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
        where = ", on ".join(x for x in (e.get("source", ""), e.get("hardware", "")) if x)
        label = "baseline (observed before)" if e.get("basis") == "baseline" else "expectation"
        out.append((label, f"{said} — {where}".strip(" —")))
    else:
        out.append(("expectation", "no source documents this cell"))
    run = cell.run
    out.append(("run", ", ".join(x for x in (run.get("source", ""), run.get("date", ""), run.get("file", "")) if x)))
    return out


def report_json(result: MergeResult, view: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The machine-readable report: columns, rows, summary, upgrade answer, root causes, problems, and an index
    record per merged cell (what it is judged by); each column names the file under cells/ with its cells whole.

    A cell names its column by index and its root cause by number; the context its column's cells all share is
    stored once, in that column's "shared"; error, reason and explanation are numbers of texts in "texts". The whole
    cells are in the column files each column names, one JSON line each (matrix.cellfiles).
    """
    view = view or build_view(result)
    keys = [c.key for c in result.columns]
    by_column = result.by_column()
    causes = {(k["engine"], k["did"], k["symptom"]): k["index"] for k in view["causes"]}
    texts: Dict[str, int] = {}
    cells = []
    compact = {k: [compact_cell(c) for c in by_column[k]] for k in keys}
    for index, key in enumerate(keys):
        for cell, whole in zip(by_column[key], compact[key]):
            record = dict({k: v for k, v in whole.items() if k in INDEX_FIELDS}, column=index)
            record.update({k: texts.setdefault(getattr(cell, k), len(texts))
                           for k in TEXT_FIELDS if getattr(cell, k)})
            if cell.verdict in UNEXPECTED:
                record["cause"] = causes[cause_of(cell, view["regressed"])]
            cells.append(record)
    shared = {k: _shared(compact[k]) for k in keys}
    return {
        "schema": REPORT_SCHEMA,
        "generated": view["generated"],
        "columns": [dict(asdict(c), id=c.id, provenance=c.provenance, shared=shared[c.key], cells=column_file(c))
                    for c in result.columns],
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
        values = [json.dumps(c.get(key), sort_keys=True) for c in cells]
        if cells and all(key in c for c in cells) and len(set(values)) == 1:
            out[key] = cells[0][key]
    return out


# Cell's fields that have a default, with it (compact_cell leaves those at it out).
CELL_DEFAULTS = {f.name: (f.default if f.default is not MISSING else f.default_factory())
                 for f in fields(Cell) if f.default is not MISSING or f.default_factory is not MISSING}


def compact_cell(cell: Cell) -> Dict[str, Any]:
    """A cell as a dict without the fields at their default value: Cell.from_dict gives the same cell back."""
    return {k: v for k, v in cell.as_dict().items() if k not in CELL_DEFAULTS or v != CELL_DEFAULTS[k] or k == "schema"}


def junit_xml(result: MergeResult) -> bytes:
    """JUnit XML: a testsuite per column, a testcase per cell; unexpected verdicts fail (naming the column file
    under cells/ with the whole cell), a harness error is an error (the suite's, with its traceback), not-run cells
    skip."""
    root = ET.Element("testsuites", name="qdq-matrix")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    by_column = result.by_column()
    for col in result.columns:
        cells = sorted(by_column[col.key], key=lambda c: c.bundle)
        suite = ET.SubElement(root, "testsuite", name=col.id, hostname=col.setting, timestamp=col.date)
        counts = {"tests": len(cells), "failures": 0, "errors": 0, "skipped": 0}
        for cell in cells:
            kind = _junit_case(suite, cell, column_file(col), col.provenance if col.never_run else "")
            if kind:
                counts[kind] += 1
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
    for k, v in totals.items():
        root.set(k, str(v))
    for node in root.iter():  # XML 1.0 has no escape for most control characters: make them visible text
        node.text = clean(node.text)
        for k, v in node.attrib.items():
            node.set(k, clean(v))
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _junit_kind(cell: Cell) -> str:
    return JUNIT[cell.verdict]


def _junit_case(suite: ET.Element, cell: Cell, whole: str, never_run: str = "") -> str:
    case = ET.SubElement(suite, "testcase", classname=cell.case, name=cell.bundle.split("/", 1)[-1],
                         time=f"{sum(cell.timings.values()):.3f}")
    kind, status = _junit_kind(cell), STATUS_WORDS[cell.status]
    if kind == "failures":
        node = ET.SubElement(case, "failure", message=f"{cell.verdict}: {cell.explanation}", type=cell.verdict)
        node.text = "\n".join(f"{k}: {v}" for k, v in cell_details(cell) + [("whole cell", whole)])
    elif kind == "errors":
        node = ET.SubElement(case, "error", message=f"{cell.verdict}: {cell.reason}", type=cell.status)
        node.text = cell.log
    elif kind == "skipped":
        ET.SubElement(case, "skipped", message=never_run or cell.reason or status)
    return kind


def md_escape(text: Any) -> str:
    """Text safe inside a Markdown table cell: no raw HTML, no cell break, one line."""
    return md_cell(text)


def _node_model(node: Dict[str, Any], out: Path) -> Dict[str, Any]:
    """A user model's per-node report (given, or read from its JSON; {} where neither is at hand) and its links."""
    report = node.get("report")
    if report is None:
        try:
            report = json.loads(Path(node["json"]).read_text(encoding="utf-8")) if node.get("json") else {}
        except (OSError, ValueError):
            report = {}
    return {"bundle": node["bundle"], "report": report if isinstance(report, dict) else {},
            "md": _relative(node["md"], out), "html": _relative(node["html"], out)}


def group_notes(notes: Sequence[Problem]) -> List[Dict[str, Any]]:
    """Merge notes as the reports list them: duplicate cells counted per (kept file, dropped file), one example."""
    out: List[Dict[str, Any]] = []
    groups: Dict[Tuple[str, ...], Dict[str, Any]] = {}
    for p in notes:
        d = p.duplicate
        if d is None:
            out.append(_problem_view(p))
            continue
        key = (d.column, d.kept, d.kept_date, d.dropped, d.dropped_date)
        if key not in groups:
            groups[key] = {"file": d.dropped, "line": 0, "level": "note", "where": d.dropped, "n": 0,
                           "bundle": d.bundle}
            out.append(groups[key])
        groups[key]["n"] += 1
    for (column, kept, new, dropped, old), g in groups.items():
        many = f"{g['n']} duplicate cells" if g["n"] > 1 else "a duplicate cell"
        g["message"] = (f"{many} in {column} (e.g. {g.pop('bundle')}): kept {kept} ({new or 'no date'}), "
                        f"dropped {dropped} ({old or 'no date'})")
    return out


def _problem_view(p: Problem) -> Dict[str, Any]:
    return {"file": p.file, "line": p.line, "level": p.level, "message": p.message,
            "where": f"{p.file}:{p.line}" if p.line else p.file}


def _totals(result: MergeResult) -> Dict[str, int]:
    return {"cells": len(result.cells), "rows": len(result.rows), "columns": len(result.columns),
            "unexpected": sum(c.verdict in UNEXPECTED for c in result.cells),
            "baseline": sum(c.verdict == "as observed before" and not cites_itself(c) for c in result.cells),
            "baseline_itself": sum(cites_itself(c) for c in result.cells),
            "harness_errors": sum(c.status == "harness_error" for c in result.cells),
            "errors": len(result.errors)}


def _count(values: Any) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _relative(path: Any, base: Path) -> str:
    """A link from a report in base to path, percent-encoded (a bundle id is text from a results file)."""
    import os
    from urllib.parse import quote

    return quote(Path(os.path.relpath(Path(path), base)).as_posix())
