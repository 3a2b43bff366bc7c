"""matrix report renders only when one of its inputs moved, and says so when none did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cell import SCHEMA as CELL_SCHEMA
from matrix import inputs
from matrix.__main__ import main

REPORTS = ("matrix.md", "matrix.html", "matrix.json", "junit.xml")


@pytest.fixture
def report(write_results, make_cell, tmp_path):
    """`python -m matrix report` on one results file, into tmp_path/out; returns how to run it again."""
    results = write_results("r.jsonl", [make_cell()])
    out = tmp_path / "out"

    def run(*extra: str) -> int:
        return main(["report", "--results", str(results), "--out", str(out), "--bundles", str(tmp_path), *extra])

    return run, results, out


def written(out: Path) -> dict:
    return {n: (out / n).stat().st_mtime_ns for n in REPORTS}


def test_nothing_moved_nothing_is_rendered_and_it_says_so(report, capsys):
    run, _, out = report
    assert run() == 0
    before, first = written(out), capsys.readouterr().out
    assert run() == 0
    said = capsys.readouterr().out
    assert "report: nothing changed since" in said and "wrote" not in said, said
    assert said.splitlines()[1] == first.splitlines()[0]  # the summary line of the render it stands for
    assert written(out) == before
    assert run("--force") == 0 and "wrote" in capsys.readouterr().out


def test_a_changed_results_file_or_a_missing_report_renders_again(report, make_cell, capsys):
    run, results, out = report
    assert run() == 0
    results.write_text(results.read_text() + make_cell(bundle="q_output_type/out=int8").to_json() + "\n")
    assert run() == 0 and "wrote" in capsys.readouterr().out
    (out / "matrix.html").unlink()
    assert run() == 0 and (out / "matrix.html").is_file()
    (out / "matrix.md").write_text("edited by hand")
    assert run() == 0 and (out / "matrix.md").read_text() != "edited by hand"


def test_a_refused_file_keeps_its_exit_status_when_nothing_moved(report, tmp_path, capsys):
    _, results, out = report
    (results.parent / "bad.jsonl").write_text(json.dumps({"schema": CELL_SCHEMA, "bundle": 1}) + "\n")
    argv = ["report", "--results", str(results.parent), "--out", str(out), "--bundles", str(tmp_path)]
    assert main(argv) == 1
    assert main(argv) == 1 and "nothing changed" in capsys.readouterr().out


def test_the_catalogue_and_the_templates_are_inputs(tmp_path):
    names = {p.relative_to(inputs.REPO).as_posix() for p in inputs.input_files([], [])}
    assert "cases/fp4_weight_only.py" in names and "matrix/templates/matrix.html.j2" in names
    assert "uv.lock" in names and not any("__pycache__" in n for n in names)
