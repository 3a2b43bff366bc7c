"""Merging results files: good files, corrupt and foreign files, cut-off tails, duplicates, hardware columns."""

from __future__ import annotations

import json
from pathlib import Path

from core.cell import Cell
from matrix.merge import load_results

H200, A100 = "NVIDIA H200 (sm_90)", "NVIDIA A100 (sm_80)"


def test_good_files_merge_into_rows_and_columns(make_cell, write_results):
    a = write_results("trt.jsonl", [make_cell("grouped_conv/g=2"), make_cell("q_output_type/out=int8")])
    write_results("ort.jsonl", [make_cell("q_output_type/out=int8", engine="onnxruntime", engine_version="1.23.2",
                                          hardware="cpu")])
    result = load_results([a.parent])
    assert len(result.cells) == 3
    assert result.problems == ()
    assert [c.heading for c in result.columns] == ["onnxruntime@1.23.2", "tensorrt@10.3.0"]
    # rows in seed order: q_output_type (000) before grouped_conv (003)
    assert [r.bundle for r in result.rows][:2] == ["q_output_type/out=int8", "grouped_conv/g=2"]


def test_catalogue_bundles_without_cells_still_get_a_row(make_cell, write_results):
    path = write_results("trt.jsonl", [make_cell("q_output_type/out=int8")])
    result = load_results([path], catalogue=["q_output_type/out=int8", "q_output_type/out=uint8"])
    assert {r.bundle for r in result.rows} >= {"q_output_type/out=int8", "q_output_type/out=uint8"}


def test_garbage_line_refuses_the_file_by_name_and_line_and_keeps_other_files(make_cell, write_results):
    good = write_results("good.jsonl", [make_cell("q_output_type/out=int8")])
    bad = write_results("bad.jsonl", [make_cell("q_output_type/out=uint8")] * 2)
    lines = bad.read_text().splitlines()
    bad.write_text("\n".join([lines[0], "this is {not json", lines[1]]) + "\n")
    result = load_results([good, bad])
    assert [c.bundle for c in result.cells] == ["q_output_type/out=int8"]
    [problem] = result.errors
    assert str(problem).startswith(f"{problem.file}:2: error: not JSON")
    assert problem.file.endswith("bad.jsonl") and "file refused" in problem.message


def test_foreign_json_is_refused_clearly(tmp_path):
    path = tmp_path / "report.jsonl"
    path.write_text(json.dumps({"schema": "pytest-reportlog/1", "nodeid": "x"}) + "\n")
    result = load_results([path])
    assert result.cells == ()
    [problem] = result.errors
    assert problem.line == 1
    assert "not a qdq-matrix record" in problem.message and "pytest-reportlog/1" in problem.message


def test_record_with_missing_fields_is_refused(make_cell, tmp_path):
    record = json.loads(make_cell().to_json())
    del record["engine"]
    path = tmp_path / "partial.jsonl"
    path.write_text(json.dumps(record) + "\n")
    [problem] = load_results([path]).errors
    assert "'engine' is a required property" in problem.message


def test_cut_off_last_line_keeps_earlier_cells_with_a_warning(make_cell, write_results):
    path = write_results("crashed.jsonl", [make_cell("q_output_type/out=int8")],
                         tail=make_cell("q_output_type/out=uint8").to_json()[:40])
    result = load_results([path])
    assert [c.bundle for c in result.cells] == ["q_output_type/out=int8"]
    assert result.errors == ()
    [warning] = result.problems
    assert warning.level == "warning" and warning.line == 2 and "cut off" in warning.message


def test_duplicate_cells_keep_the_newest_and_say_so(make_cell, write_results):
    old = make_cell(fused=False, run={"date": "2026-01-01T00:00:00Z"})  # the same status, another run
    new = make_cell(run={"date": "2026-02-01T00:00:00Z"})
    write_results("b-new.jsonl", [new])
    path = write_results("a-old.jsonl", [old])
    result = load_results([path.parent])
    [kept] = result.cells
    assert kept.status == "pass" and kept.fused is True
    [note] = result.problems
    assert note.level == "note" and "duplicate cell" in note.message and "b-new.jsonl" in note.message


def test_same_version_on_two_gpus_makes_two_columns(make_cell, write_results):
    write_results("h200.jsonl", [make_cell()])
    path = write_results("a100.jsonl", [make_cell(hardware=A100)])
    result = load_results([path.parent])
    assert len(result.cells) == 2
    assert sorted(c.hardware for c in result.columns) == [A100, H200]


def test_the_manifest_gives_the_source_and_a_cell_its_own_date(make_cell, make_header, write_results):
    """A cell carries its run (the controller writes it): the merge fills nothing in from the session header."""
    from matrix import observed as manifest

    observed = make_cell(run={"date": "2026-11-22T10:00:00Z"})
    path = write_results("trt-10.3.jsonl", [observed], head=make_header(source="observed", date="2030-01-01T00:00:00Z"))
    listed = manifest.add(manifest.Manifest(path.parent), [path], "an H200", "pytest tests/cells")
    result = load_results([path], manifest=listed)
    [cell] = result.cells
    assert cell.run["source"] == "observed" and cell.run["date"] == "2026-11-22T10:00:00Z"
    assert result.columns[0].provenance == f"observed on {H200}, 2026-11-22"


def test_missing_path_is_a_problem_not_a_crash(tmp_path):
    result = load_results([tmp_path / "nope"])
    assert result.cells == () and "no such file" in result.problems[0].message


def test_matrix_imports_no_engine(make_cell, write_results):
    import subprocess
    import sys

    path = write_results("trt.jsonl", [make_cell()])
    code = (
        "import sys; from matrix.__main__ import main; from matrix import diff, render; "
        f"main(['report', '--results', {str(path)!r}, '--out', {str(path.parent / 'out')!r}]); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('onnx', 'onnxruntime', 'openvino', 'tensorrt', 'tensorrt_rtx', 'engines')))"
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo)
    # results files are read by core.results, the one reader: nothing of engines/ (an adapter, an engine, not even
    # the engines' message formats, engines.reasons: a failure's symptom is the cell's field)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_stored_cells_are_judged_against_the_catalogue_as_it_is_now(make_cell, write_results, tmp_path):
    """A verdict written before an expectation existed is re-read: the observation stays, the verdict moves."""
    old = make_cell(
        bundle="q_output_type/variant=q_dq_chain+activation=uint8+plugin=none", case="q_output_type",
        params={"variant": "q_dq_chain", "activation": "uint8", "plugin": "none"}, engine="tensorrt",
        engine_version="8.6.0", status="fail", verdict="new failure", last_stage="",
        error='ONNX parse failed: Assertion failed: shiftIsAllZeros(zeroPoint) && "TensorRT only supports symmetric"',
    )
    path = write_results("old.jsonl", [old])
    (cell,) = load_results([path]).cells
    assert (cell.verdict, cell.signature) == ("as documented", "nonzero_zero_point")
    assert cell.expectation["source"].endswith("operators.md")


def test_a_case_module_that_does_not_import_stops_the_report_by_name(make_cell, write_results, tmp_path,
                                                                     monkeypatch, capsys):
    """Cells are judged against the catalogue as it is now: a broken case module is never a silent pass with the
    verdicts the cells were written with, in the merge or in `matrix report` (exit 3, nothing written)."""
    import sys

    import pytest

    import cases
    from cases import CaseModuleError
    from matrix.__main__ import CATALOGUE_BROKEN, main

    (tmp_path / "broken_case_module.py").write_text("from cases.base import Case\nCASE = Case(id=undefined_name)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cases, "CASE_MODULES", (*cases.CASE_MODULES, "broken_case_module"))
    stale = make_cell("q_output_type/out=int8", verdict="fails against expectation",
                      explanation="written before the catalogue moved")
    path = write_results("trt.jsonl", [stale])
    with pytest.raises(CaseModuleError, match="broken_case_module .*NameError.*undefined_name") as raised:
        load_results([path])
    assert raised.value.module == "broken_case_module"
    out = tmp_path / "reports"
    assert main(["report", "--results", str(path), "--out", str(out), "--force"]) == CATALOGUE_BROKEN == 3
    said = capsys.readouterr().err
    assert "case module broken_case_module does not import: NameError" in said and "undefined_name" in said
    assert not (out / "matrix.html").exists() and not (out / "matrix.json").exists()
    sys.modules.pop("broken_case_module", None)


def test_a_column_where_nothing_ran_gives_way_to_one_that_ran(make_cell, write_results):
    here = make_cell(engine="tensorrt", engine_version="8.6.0", hardware="no NVIDIA GPU", status="not_run",
                     verdict="not run", reason="no NVIDIA GPU", fused=None)
    there = make_cell(engine="tensorrt", engine_version="8.6.0", hardware="NVIDIA H200 (sm_90)")
    alone = make_cell(engine="tensorrt", engine_version="8.5.1.7", hardware="no NVIDIA GPU", status="not_run",
                      verdict="not run", reason="no NVIDIA GPU", fused=None)
    result = load_results([write_results("a.jsonl", [here, there, alone])])
    assert {(c.engine_version, c.hardware) for c in result.columns} == {
        ("8.6.0", "NVIDIA H200 (sm_90)"), ("8.5.1.7", "no NVIDIA GPU")}
    assert any("left out" in p.message and p.level == "note" for p in result.problems)


def test_an_option_variant_is_a_column_of_its_own(make_cell, write_results):
    cpu = "cpu: AMD EPYC 7B13 (avx2)"
    base = make_cell("dynamic_quantize/variant=dql_matmulinteger", engine="onnxruntime", engine_version="1.31.1",
                     hardware=cpu)
    fixed = make_cell("dynamic_quantize/variant=dql_matmulinteger", engine="onnxruntime", engine_version="1.31.1",
                      hardware=cpu, variant={"x64quantprecision": "1"})
    path = write_results("ort.jsonl", [base, fixed])
    result = load_results([path])
    assert len(result.cells) == 2 and not [p for p in result.problems if "duplicate" in p.message]
    assert sorted(c.variant for c in result.columns) == [(), (("x64quantprecision", "1"),)]
    assert sorted(c.variant_label for c in result.columns) == ["", "x64quantprecision=1"]  # said at the edge
    assert {c.setting for c in result.columns} == {cpu, f"{cpu} · x64quantprecision=1"}


def test_a_test_doubles_source_never_reaches_a_report(make_cell, write_results):
    """run.source is a closed set: a stand-in's or a test's cells are refused, file and line named."""
    good = write_results("real.jsonl", [make_cell("grouped_conv/g=2")])
    for source in ("stand-in", "test", "made-up"):
        bad = write_results(f"{source}.jsonl", [make_cell("grouped_conv/g=4", run={"source": source})])
        result = load_results([good, bad])
        assert [c.bundle for c in result.cells] == ["grouped_conv/g=2"]
        [problem] = [p for p in result.problems if p.level == "error"]
        assert problem.file.endswith(f"{source}.jsonl") and problem.line == 1
        assert f"source {source!r} is not one of local, observed" in problem.message


def test_a_header_cannot_launder_a_stand_in_source(make_cell, make_header, write_results):
    path = write_results("trt.jsonl", [make_cell(run={})], head=make_header(source="stand-in"))
    result = load_results([path])
    assert not result.cells and result.errors


def test_a_cpu_column_without_a_level_keeps_its_label_and_says_what_it_means(make_cell, write_results):
    old = make_cell("dynamic_quantize/variant=dql_matmulinteger", engine="onnxruntime", engine_version="1.16.3",
                    hardware="cpu: AMD EPYC", hardware_detail={"isa": "avx2 avx512f avx512_vnni"})
    result = load_results([write_results("old.jsonl", [old])])
    assert [c.hardware for c in result.columns] == ["cpu: AMD EPYC"]
    [note] = [p for p in result.problems if "INT8 instruction-set level" in p.message]
    assert note.level == "note" and "avx2 avx512f avx512_vnni" in note.message


def test_a_local_results_file_of_an_older_version_is_a_warning_not_an_error(tmp_path):
    """After an upgrade, results/ still holds files an older version wrote: the report says so once and goes on (their
    cells run again with the next run); a committed observation of an older schema stays an error (migrate it)."""
    old = tmp_path / "results" / "onnxruntime-1.31.1-cpu.jsonl"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"schema": "qdq-matrix/session/1", "engine": "onnxruntime"}) + "\n"
                   + json.dumps({"schema": "qdq-matrix/cell/2", "bundle": "x/y"}) + "\n", encoding="utf-8")
    result = load_results([old])
    assert not result.cells
    said, = result.problems
    assert said.level == "warning" and "older version of this suite (qdq-matrix/session/1)" in said.message


def test_a_file_that_stores_the_old_verdict_word_regressed_still_reads(make_cell, write_results):
    """The committed 8.5.3.1 observations store "regressed" for a failure against an expectation: the file reads, and
    its cell says the word that verdict has now ("regressed" is an upgrade's word: matrix.diff)."""
    record = json.loads(make_cell(status="fail", verdict="fails against expectation", fused=None).to_json())
    path = write_results("old.jsonl", [])
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(dict(record, verdict="regressed")) + "\n")
    result = load_results([path])
    assert not [p for p in result.problems if p.level == "error"] and len(result.cells) == 1  # then judged again
    assert Cell.from_dict(dict(record, verdict="regressed")).verdict == "fails against expectation"
