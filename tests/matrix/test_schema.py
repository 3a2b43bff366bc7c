"""Schema-checked results: a bad file is refused whole and named before anything renders,
the reports are swapped in together, and a run never resumes a file the schema refuses."""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path

import pytest

from core import cell as cell_module
from core.cell import Cell
from core.schema import SCHEMA_FILES, check_lines, problems
from engines.base import EngineInfo
from engines.results import ResultsWriter, stored_cells
from matrix.__main__ import main
from matrix.inputs import STAMP

REPORTS = ("matrix.md", "matrix.html", "matrix.json", "junit.xml")
CONFORMANCE = ("conformance.md", "conformance.html", "conformance.json")


def schema() -> dict:
    return json.loads(SCHEMA_FILES[cell_module.SCHEMA].read_text(encoding="utf-8"))


def test_the_schema_names_every_cell_field_and_the_same_words_as_the_code():
    props = schema()["properties"]
    assert set(props) == {f.name for f in fields(Cell)}  # a new Cell field is one more entry in the schema
    assert tuple(props["status"]["enum"]) == cell_module.STATUSES
    assert tuple(props["verdict"]["enum"]) == cell_module.VERDICTS + tuple(cell_module.LEGACY_VERDICTS)
    assert tuple(props["precision"]["additionalProperties"]["properties"]["precision"]["enum"]) == \
        (*cell_module.QUANTIZED_PRECISIONS, "float", "unknown")


@pytest.mark.parametrize("field, value, where", [
    ("precision", {"n": "int8"}, "precision.n: 'int8' is not of type 'object'"),
    ("timings", {"cell": "fast"}, "timings.cell: 'fast' is not of type 'number'"),
    ("warnings", "abc", "warnings: 'abc' is not of type 'array'"),
    ("status", "passed", "status: 'passed' is not one of"),
])
def test_a_wrong_field_type_is_named(make_cell, field, value, where):
    record = json.loads(make_cell().to_json())
    record[field] = value
    [found] = problems(record)
    assert found.startswith(where)


@pytest.mark.parametrize("field, value", [("precision", {"n": "int8"}), ("timings", {"cell": "fast"})])
def test_report_refuses_the_file_whole_names_it_and_exits_1(make_cell, write_results, tmp_path, capsys, field,
                                                            value):
    """The issue's two crashes (AttributeError in grid.py, TypeError in render.py): now a named refusal."""
    write_results("good.jsonl", [make_cell()])
    bad = write_results("bad.jsonl", [make_cell(bundle="q_output_type/out=int8")])
    record = json.loads(bad.read_text())
    record[field] = value
    bad.write_text(json.dumps(record) + "\n")
    out = tmp_path / "out"
    assert main(["report", "--results", str(bad.parent), "--out", str(out), "--bundles", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"bad.jsonl:1: error: {field}." in err and "file refused" in err
    data = json.loads((out / "matrix.json").read_text())
    assert [c["bundle"] for c in data["cells"]] == ["q_output_type/out=uint8"]
    assert any(p["file"].endswith("bad.jsonl") for p in data["problems"])


def test_reports_are_swapped_in_together_or_not_at_all(make_cell, write_results, tmp_path, monkeypatch):
    path = write_results("good.jsonl", [make_cell()])
    out = tmp_path / "out"
    assert main(["report", "--results", str(path), "--out", str(out), "--bundles", str(tmp_path)]) == 0
    before = {n: (out / n).read_bytes() for n in REPORTS}
    [before_cells] = [p.name for p in (out / "cells").glob("*.jsonl")]
    write_results("good.jsonl", [make_cell(status="fail", verdict="fails against expectation", fused=None)])
    import matrix.render as render

    def broken(result):
        raise RuntimeError("junit failed to render")

    monkeypatch.setattr(render, "junit_xml", broken)
    with pytest.raises(RuntimeError):
        main(["report", "--results", str(path), "--out", str(out), "--bundles", str(tmp_path)])
    assert {n: (out / n).read_bytes() for n in REPORTS} == before  # markdown and html were not swapped in alone
    names = sorted(REPORTS + ("plots.html", "models.md", "models.html", "cells", "diff", STAMP, *CONFORMANCE))
    assert sorted(p.name for p in out.iterdir()) == names  # no staging
    assert [p.name for p in (out / "cells").glob("*.jsonl")] == [before_cells]  # the side files were not swapped


def info() -> EngineInfo:
    return EngineInfo(name="onnxruntime", version="1.31.1", hardware="cpu: x (avx2)", available=True)


def test_a_run_never_resumes_a_file_the_schema_refuses(make_cell, tmp_path):
    path = tmp_path / "onnxruntime-1.31.1.jsonl"
    good = make_cell(engine="onnxruntime", engine_version="1.31.1", hardware="cpu: x (avx2)")
    bad = json.loads(good.to_json())
    bad["precision"] = {"n": "int8"}
    header = {"schema": "qdq-matrix/session/2", "kind": "session", "engine": "onnxruntime"}
    text = "".join(json.dumps(r) + "\n" for r in (header, json.loads(good.to_json()), bad))
    path.write_text(text)
    writer = ResultsWriter(path, info(), {"date": "2026-11-24T00:00:00Z", "command": "pytest"})
    try:
        assert "is refused by its schema (line 3: precision.n" in writer.notice and "starts the file again" in \
            writer.notice
        assert writer.resume_offset == 0 and stored_cells(path, writer.resume_offset) == {}
    finally:
        writer.close()
    [aside] = tmp_path.glob("onnxruntime-1.31.1.jsonl.refused-*")
    assert aside.read_text() == text  # kept whole for a look, under a name no merge reads
    assert path.read_text() == ""  # started again; a run that wrote no cell writes no header either


def test_a_local_file_of_the_older_schema_is_set_aside_and_run_again(make_cell, tmp_path):
    """cell/2 and session/1 (cell_options a string of JSON, no symptom): the committed observations were migrated; a
    local file of them is never resumed, and never refused as "not a results file" either."""
    path = tmp_path / "onnxruntime-1.31.1.jsonl"
    old = dict(json.loads(make_cell(engine="onnxruntime", engine_version="1.31.1", hardware="cpu: x (avx2)").to_json()),
               schema="qdq-matrix/cell/2", run={"cell_options": "{}"})
    old.pop("symptom")
    header = {"schema": "qdq-matrix/session/1", "kind": "session", "engine": "onnxruntime", "cell_options": "{}"}
    path.write_text("".join(json.dumps(r) + "\n" for r in (header, old)))
    writer = ResultsWriter(path, info(), {"date": "2026-11-24T00:00:00Z", "command": "pytest"})
    try:
        assert "line 1: a qdq-matrix/session/1 line: this suite reads qdq-matrix/session/2 only" in writer.notice
        assert "tools/migrate-observed.py" in writer.notice and "starts the file again" in writer.notice
        assert stored_cells(path, writer.resume_offset) == {}
    finally:
        writer.close()


def test_a_good_file_is_resumed_as_before(make_cell, tmp_path):
    path = tmp_path / "r.jsonl"
    first = ResultsWriter(path, info(), {"date": "2026-11-24T00:00:00Z"})
    first.write(make_cell(engine="onnxruntime", engine_version="1.31.1", hardware="cpu: x (avx2)"))
    first.close()
    second = ResultsWriter(path, info(), {"date": "2026-11-24T00:00:01Z"})
    second.close()
    assert second.notice == "" and second.resume_offset > 0 and len(stored_cells(path, second.resume_offset)) == 1


def test_every_committed_line_passes_its_schema():
    observed = Path(__file__).resolve().parents[2] / "reports" / "observed"
    for path in sorted(observed.rglob("*.jsonl")):
        assert check_lines(path.read_text(encoding="utf-8")).bad == (), path


def test_a_clean_check_is_remembered_and_a_changed_line_is_found_again(make_cell, tmp_path, monkeypatch):
    from core import schema

    monkeypatch.setenv(schema.CACHE_ENV, str(tmp_path / "cache"))
    path = tmp_path / "r.jsonl"
    good = [make_cell(bundle=f"q_output_type/out=n{i}").to_json() for i in range(3)]
    path.write_text("".join(line + "\n" for line in good))
    assert schema.file_problems(path, path.read_text()) == ()
    calls = []
    monkeypatch.setattr(schema, "problems", lambda record: calls.append(record) or [])
    grown = path.read_text() + good[0] + "\n"
    assert schema.check_file(path, grown).bad == () and len(calls) == 1  # only the new line is checked again
    monkeypatch.undo()
    monkeypatch.setenv(schema.CACHE_ENV, str(tmp_path / "cache"))
    bad = json.loads(good[1])
    bad["precision"] = {"n": "int8"}
    edited = "\n".join([good[0], json.dumps(bad), good[2]]) + "\n"  # inside the part found clean before
    assert [n for n, _ in schema.file_problems(path, edited)] == [2]


def test_a_cache_rewritten_by_another_process_is_read_again(make_cell, tmp_path, monkeypatch):
    from core import schema

    monkeypatch.setenv(schema.CACHE_ENV, str(tmp_path / "cache"))
    path = tmp_path / "r.jsonl"
    path.write_text(make_cell().to_json() + "\n")
    assert schema.check_file(path, path.read_text()).bad == ()
    assert schema._checked(path, path.read_text()) > 0  # remembered clean
    cache = tmp_path / "cache" / "schema-checked.json"
    other = tmp_path / "other.json"
    other.write_text("{}")
    os.replace(other, cache)  # another run swaps its own table in (as _save_table does)
    assert schema._checked(path, path.read_text()) == 0  # the table as it is now, not as this process read it first
