"""The reports of one check run: a name of its own for each model's report, and reports/check/index.md listing them.

Two models of one file name in different folders (three `ext_weights.onnx` with their own external data) keep
their own reports: a checked model's report is named by its bundle (`<name>-<digest>`, `-2` where an earlier model of
the run has that id), an unusable model's by `<name>-<digest>-unusable` (`-2` ...), a name no checked report has.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, List, Sequence

ModelCheck = Any  # check.__main__.ModelCheck, which imports this module

INDEX = "index.md"
UNUSABLE = "unusable"


def unusable_stem(model: str, taken: Sequence[str]) -> str:
    """The report stem of a model that could not be used: its id (its name alone where it cannot be read) and
    "-unusable", with -2, -3 ... where another unusable model of the run has it."""
    from cases.user_model import model_id, model_slug

    try:
        stem = f"{model_id(model)}-{UNUSABLE}"
    except OSError:  # not readable at all: its name alone
        stem = f"{model_slug(model)}-{UNUSABLE}"
    name, n = stem, 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}"
    return name


def unusable_stems(checks: Sequence[ModelCheck]) -> List[ModelCheck]:
    """The checks with each unusable model's report stem set, each its own."""
    found: List[ModelCheck] = []
    for o in checks:
        if o.unusable and not o.report:
            o = replace(o, report=unusable_stem(o.model, [f.report for f in found]))
        found.append(o)
    return found


def report_stem(result: ModelCheck) -> str:
    """The file stem of a model's report in reports/check/: its bundle's slug, or its unusable stem."""
    return result.bundle.split("/", 1)[1] if result.bundle else result.report


def write_index(checks: Sequence[ModelCheck], reports: Path, not_run: str = "") -> Path:
    """reports/check/index.md: a line per model of this run, the model as given, what became of it, its report;
    first what the run did not run at all (`not_run`: check.__main__.trt_not_run)."""
    from core.portable import scrub

    lines = ["# Models of the last check", "", *([f"**{scrub(not_run)}**", ""] if not_run else []),
             "| model | result | report |", "|---|---|---|"]
    for o in checks:
        stem = report_stem(o)
        said = f"unusable: {o.unusable}" if o.unusable else "; ".join(o.cells) or "no cell"
        files = f"[{stem}.md]({stem}.md)" + ("" if o.unusable else f", [html]({stem}.html)")
        lines.append(f"| {_cell(scrub(o.model))} | {_cell(scrub(said))} | {files} |")
    reports.mkdir(parents=True, exist_ok=True)
    path = reports / INDEX
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())
