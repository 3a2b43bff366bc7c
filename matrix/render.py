"""Write the merged matrix as reports: matrix.md, matrix.html, matrix.json and junit.xml, with their side files:
plots.html (each seed's outcome per column), every cell whole in cells/ (one JSONL file per column), the page's
details in cells/details.js, the full grid in Markdown in cells/grid.md, and each adjacent pair's diff in diff/.

This module renders the templates and writes the files; the view they show is matrix.view's (built once), the JSON
index matrix.index's, the JUnit XML matrix.junit's."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Dict, List

from core.words import many
from matrix.cellfiles import FOLDER, GRID_MD, write_columns, write_details
from matrix.index import report_json
from matrix.junit import junit_xml
from matrix.merge import MergeResult
from matrix.safe import clean, md_cell, md_code, md_with_code
from matrix.upgrade import DIFFS

# conformance.json: every conformance entry (node test, opset, engine version: its word, steps, stage, and its reason as
# the number of a text in "texts"), the summary per engine version and opset, and the numbered reasons
# (matrix/conformance.py)
CONFORMANCE_SCHEMA = "qdq-matrix/conformance/1"
TEMPLATES = Path(__file__).resolve().parent / "templates"


def write_cells(result: MergeResult, out: Path) -> None:
    """The parts that need no view: every cell whole under cells/ (a file per column) and junit.xml."""
    Path(out, FOLDER).mkdir(parents=True, exist_ok=True)
    write_columns(result, Path(out))
    Path(out, "junit.xml").write_bytes(junit_xml(result))


def write_diffs(upgrade: List[Dict[str, Any]], out: Path) -> None:
    """Each adjacent pair's diff under diff/ (matrix.upgrade.upgrade_view's pairs that name a file)."""
    Path(out, DIFFS).mkdir(parents=True, exist_ok=True)
    _write_texts({name: text for e in upgrade for p in e["pairs"] if p.get("file")
                  for name, text in diff_files(p["report"], p["file"]).items()}, Path(out))


def write_pages(result: MergeResult, view: Dict[str, Any], out: Path) -> List[Path]:
    """The pages of a view (matrix.view.build_view of result): matrix.md, .html, .json, plots, models, the conformance
    page and the grid's side files; return the reports' and the side folders' paths, junit.xml, cells/ and diff/ among
    them (write_cells and write_diffs write those)."""
    out = Path(out)
    for folder in (out / FOLDER, out / DIFFS):
        folder.mkdir(parents=True, exist_ok=True)
    _write_texts({
        "matrix.md": render_template("matrix.md.j2", view, html=False),
        "matrix.html": render_template("matrix.html.j2", view, html=True),
        "plots.html": render_template("plots.html.j2", view, html=True),
        "matrix.json": json.dumps(report_json(result, view), separators=(",", ":"), sort_keys=True,
                                  default=str) + "\n",
        GRID_MD: render_template("grid.md.j2", view, html=False),
        **{name: render_template(f"{name}.j2", view, html=name.endswith(".html")) for name in MODEL_PAGES},
        **conformance_files(view),
    }, out)
    write_details(view["grid"]["details"], out)
    reports = [out / n for n in ("matrix.md", "matrix.html", "matrix.json", "plots.html", *MODEL_PAGES,
                                 *CONFORMANCE_FILES)]
    return reports + [out / "junit.xml", out / FOLDER, out / DIFFS]


def _write_texts(texts: Dict[str, str], out: Path) -> None:
    """Each text in its file under out (UTF-8), its folder made where missing."""
    for name, text in texts.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")


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
        bytecode_cache=_compiled_templates("html" if html else "md"),
    )
    env.filters["md"] = md_escape
    env.filters["mdcode"] = md_code
    env.filters["mdspans"] = md_with_code
    env.filters["many"] = many
    return env


def _compiled_templates(kind: str) -> Any:
    """Jinja's cache of compiled templates in the suite's cache folder (core.schema.cache_dir), a folder per
    environment (the HTML one escapes, the Markdown one does not): each template is compiled again only where its
    source changed (Jinja keys each by its source's checksum), not in every report (a third of a second). A cache that
    cannot be written costs only the compiling."""
    from jinja2 import FileSystemBytecodeCache

    from core.schema import cache_dir

    class Cache(FileSystemBytecodeCache):  # type: ignore[misc]
        def load_bytecode(self, bucket: Any) -> None:
            try:
                super().load_bytecode(bucket)
            except OSError:
                bucket.reset()

        def dump_bytecode(self, bucket: Any) -> None:
            try:
                os.makedirs(self.directory, exist_ok=True)
                super().dump_bytecode(bucket)
            except OSError:
                pass

    return Cache(str(cache_dir() / "templates" / kind))


def md_escape(text: Any) -> str:
    """Text safe inside a Markdown table cell: no raw HTML, no cell break, one line."""
    return md_cell(text)
