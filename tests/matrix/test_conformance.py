"""The conformance table: each conformance cell in its own word, on a page of its own, out of the catalogue's views,
and in the version diff."""

from __future__ import annotations

import json
from typing import Any

from matrix.conformance import conformance_view, diff_markdown, entry_of
from matrix.merge import build

CPU = "cpu: Intel(R) Xeon(R) (avx512_vnni)"


def conf(make_cell: Any, test: str = "quantizelinear_axis", opset: int = 21, **fields: Any):
    """A conformance cell of one node test at one opset (ONNX Runtime 1.31.1 unless said)."""
    base = dict(case="onnx_node_tests", params={"op": "QuantizeLinear", "form": "per-axis uint8", "test": test,
                                                 "opset": opset},
                engine="onnxruntime", engine_version="1.31.1", hardware=CPU, verdict="undocumented",
                expectation={}, precision={}, fused=None)
    base.update(fields)
    return make_cell(f"onnx_node_tests/{test}-opset{opset}", **base)


def refused_at_load(make_cell: Any, **fields: Any):
    return conf(make_cell, status="fail", verdict="new failure", last_stage="", max_error_steps=None,
                error="[ONNXRuntimeError] : 1 : FAIL : Load model from /x/model.onnx failed:Unsupported model IR "
                      "version: 10, max supported IR version: 9", **fields)


def test_each_status_has_its_word(make_cell):
    assert entry_of(conf(make_cell)).text == "right"
    wrong = conf(make_cell, status="fail", last_stage="run", max_error_steps=3.0,
                 error="output 'y' differs from the reference by 3 steps (tolerance 0.5)")
    assert entry_of(wrong).text == "wrong by 3 steps"
    refused = entry_of(refused_at_load(make_cell))
    assert (refused.text, refused.reason) == ("refused at load",
                                              "Unsupported model IR version: 10, max supported IR version: 9")
    at_run = conf(make_cell, status="fail", last_stage="build", max_error_steps=None,
                  error="No corresponding Numpy type for Tensor Type. Int4x2")
    assert entry_of(at_run).text == "refused at run"
    assert entry_of(conf(make_cell, status="built", last_stage="build", engine="tensorrt-rtx")).text == "built only"
    idle = entry_of(conf(make_cell, status="not_run", reason="no NVIDIA GPU", engine="tensorrt"))
    assert (idle.text, idle.reason) == ("not run", "no NVIDIA GPU")


def test_a_model_newer_than_the_version_reads_is_not_applicable_and_never_a_change(make_cell):
    why = "the model's ONNX IR version 10 is newer than this version reads (IR 9 at most)"
    old = [conf(make_cell, engine_version="1.16.3", status="not_applicable", verdict="not applicable", reason=why,
                last_stage="", opset=o) for o in (21, 23)]
    assert (entry_of(old[0]).text, entry_of(old[0]).reason) == ("not applicable", why)
    new = [conf(make_cell, opset=21), refused_at_load(make_cell, opset=23)]
    assert diff_markdown(old + new, "onnxruntime", "1.16.3", "1.31.1") == ""  # nothing compared, nothing said


def test_conformance_cells_leave_the_catalogue_views(make_cell):
    catalogue = make_cell("q_output_type/out=uint8", engine="onnxruntime", engine_version="1.31.1", hardware=CPU)
    result = build([catalogue, conf(make_cell), refused_at_load(make_cell, engine_version="1.16.3")],
                   catalogue=["q_output_type/out=uint8", "onnx_node_tests/quantizelinear_axis-opset21"])
    assert [c.bundle for c in result.cells] == ["q_output_type/out=uint8"]
    assert [r.bundle for r in result.rows] == ["q_output_type/out=uint8"]
    assert [c.key[:2] for c in result.columns] == [("onnxruntime", "1.31.1")]  # 1.16.3 ran conformance cells only
    assert len(result.conformance) == 2 and "onnx_node_tests" not in result.cases


def test_the_view_groups_opsets_by_word_and_says_each_reason_once(make_cell):
    cells = [conf(make_cell, opset=o) for o in (13, 19)] + [refused_at_load(make_cell, opset=o) for o in (21, 23)]
    manifest = {"libraries": {"onnx": "1.23.2"}, "entries": [
        {"test": "quantizelinear_axis", "op": "QuantizeLinear", "form": "per-axis uint8", "opset": o,
         "bundle": f"onnx_node_tests/quantizelinear_axis-opset{o}", "refused": ""} for o in (13, 19, 21, 23)] + [
        {"test": "quantizelinear_axis", "op": "QuantizeLinear", "form": "per-axis uint8", "opset": 25, "bundle": "",
         "refused": "converter: no"}]}
    view = conformance_view(cells, manifest)
    row = view["ops"][0]["rows"][0]
    parts = row["entries"][0]["parts"]
    assert [(p["text"], p["opsets"]) for p in parts] == [("right", [13, 19]), ("refused at load", [21, 23])]
    reasons = {r["ref"]: r["text"] for r in view["reasons"]}
    assert reasons[parts[1]["ref"]].startswith("Unsupported model IR version: 10")
    assert row["not_converted"][0]["opset"] == 25 and reasons[row["not_converted"][0]["ref"]] == "converter: no"
    assert view["summary"][0]["all"]["text"] == "2 right, 2 refused"


def test_columns_that_ran_nothing_are_one_line(make_cell):
    idle = [conf(make_cell, engine="tensorrt", engine_version=v, hardware="no NVIDIA GPU", status="not_run",
                 reason="no NVIDIA GPU") for v in ("8.6.0", "10.8.0.43")]
    view = conformance_view(idle + [conf(make_cell)], {})
    # 8.6.0 could run on a GPU machine; 10.8.0.43 never ran anywhere (its wheel is on NVIDIA's index): each says so
    assert view["idle"] == [{"reason": "no NVIDIA GPU", "columns": ["TensorRT 8.6.0"]},
                            {"reason": "never run: its builder wheel is not reachable from here (NVIDIA's index)",
                             "columns": ["TensorRT 10.8.0.43"]}]
    assert [r["column"] for r in view["summary"]] == ["ONNX Runtime 1.31.1"]


def test_the_report_has_a_conformance_page_and_section(make_cell, write_results, tmp_path):
    from matrix.__main__ import main

    cells = [make_cell("q_output_type/out=uint8", engine="onnxruntime", engine_version="1.31.1", hardware=CPU),
             conf(make_cell), refused_at_load(make_cell, opset=23)]
    path = write_results("ort.jsonl", cells)
    out = tmp_path / "reports"
    assert main(["report", "--results", str(path), "--out", str(out), "--bundles", str(tmp_path / "none")]) == 0
    page = (out / "conformance.md").read_text()
    assert "| quantizelinear_axis | per-axis uint8 |" in page and "refused at load [1]: 23" in page
    assert "1. `Unsupported model IR version: 10, max supported IR version: 9`" in page
    assert "## Conformance" in (out / "matrix.md").read_text()
    assert 'href="conformance.html"' in (out / "matrix.html").read_text()
    record = json.loads((out / "conformance.json").read_text())
    assert {e["word"] for e in record["entries"]} == {"right", "refused"}
    refused = next(e for e in record["entries"] if e["word"] == "refused")
    assert record["texts"][refused["reason"]].startswith("Unsupported model IR version: 10")
    matrix = json.loads((out / "matrix.json").read_text())
    assert not [r for r in matrix["rows"] if r["case"] == "onnx_node_tests"]  # not in the catalogue's grid


def test_the_diff_says_what_each_form_does_differently(make_cell, write_results, capsys):
    from matrix.__main__ import main

    old = [make_cell("q_output_type/out=uint8", engine="onnxruntime", engine_version="1.16.3", hardware=CPU)]
    old += [refused_at_load(make_cell, engine_version="1.16.3", opset=o) for o in (21, 23)]
    new = [make_cell("q_output_type/out=uint8", engine="onnxruntime", engine_version="1.31.1", hardware=CPU)]
    new += [conf(make_cell, opset=21), refused_at_load(make_cell, opset=23)]
    text = diff_markdown(old + new, "onnxruntime", "1.16.3", "1.31.1")
    assert "**1 entry changed of 2 compared" in text
    assert "- **1 × refused at load → right**: quantizelinear_axis at 21" in text
    assert "  - was: `Unsupported model IR version: 10, max supported IR version: 9`" in text
    path = write_results("ort.jsonl", old + new)
    assert main(["diff", "onnxruntime", "1.16.3", "1.31.1", "--results", str(path)]) == 0
    out = capsys.readouterr().out
    assert "## onnxruntime 1.16.3 → 1.31.1" in out and "## Conformance: onnxruntime 1.16.3 → 1.31.1" in out
    assert "no changes between onnxruntime 1.16.3 and 1.31.1" in out  # the catalogue's diff: its one reproducer


# ---- the int8 companion beside the node tests ---------------------------------------------------------------------


def companion(make_cell: Any, test: str = "quantizelinear_int8_per_tensor", opset: int = 13, form: str = "",
              **fields: Any):
    """A companion cell of one test at one opset (ONNX Runtime 1.31.1 unless said)."""
    op = "DequantizeLinear" if test.startswith("de") else "QuantizeLinear"
    name = form or test.split("_", 1)[1].removesuffix("_pair")
    base = dict(case="qdq_companion", params={"op": op, "form": name, "test": test, "opset": opset},
                engine="onnxruntime", engine_version="1.31.1", hardware=CPU, verdict="undocumented", expectation={},
                precision={}, fused=None)
    base.update(fields)
    return make_cell(f"qdq_companion/{test}-opset{opset}", **base)


def test_the_companion_stands_beside_the_node_tests_on_each_column(make_cell):
    # a companion test may share a node test's name (quantizelinear_e4m3fn): each set keeps its own entry
    cells = [conf(make_cell, test="quantizelinear_e4m3fn", opset=19),
             companion(make_cell, test="quantizelinear_e4m3fn", opset=19, status="fail", last_stage="run",
                       max_error_steps=2.0, error="output 'y' differs from the reference by 2 steps (tolerance 0.5)")]
    view = conformance_view(cells, {})
    assert view["side_by_side"] == [{"column": "ONNX Runtime 1.31.1",
                                     "node_tests": {"n": 1, "counts": {"right": 1}, "text": "1 right"},
                                     "companion": {"n": 1, "counts": {"wrong": 1}, "text": "1 wrong"}}]
    assert view["ops"][0]["rows"][0]["entries"][0]["parts"][0]["text"] == "right"
    assert view["companion"]["ops"][0]["rows"][0]["entries"][0]["parts"][0]["text"] == "wrong by 2 steps"
    assert view["companion"]["headline"].startswith("1 test of 6 forms at 1 opset (1 bundle)")
    assert {(e["set"], e["word"]) for e in view["entries"]} == {("onnx_node_tests", "right"),
                                                              ("qdq_companion", "wrong")}


def test_the_headline_says_which_int8_forms_each_tensorrt_version_builds_and_computes_right(make_cell):
    trt = dict(engine="tensorrt", engine_version="8.6.0", hardware="NVIDIA H200 (sm_90)")
    refused = dict(status="fail", last_stage="", max_error_steps=None,
                   error="In node 0 (importQuantizeLinear): UNSUPPORTED_NODE: Assertion failed: no int4")
    cells = [companion(make_cell, opset=o, **trt) for o in (10, 13)]
    cells += [companion(make_cell, test="quantizelinear_int8_per_tensor_pair", opset=13, status="fail",
                        last_stage="run", max_error_steps=1.0, error="output 'y' differs by 1 step", **trt)]
    cells += [companion(make_cell, test="quantizelinear_int4_zp0", opset=21, **refused, **trt)]
    cells += [companion(make_cell, test="quantizelinear_int8_per_axis", opset=13, engine="tensorrt-rtx",
                        engine_version="1.7.1.116", status="built", last_stage="build")]
    [rtx, gpu] = conformance_view(cells, {})["companion"]["forms"]
    assert gpu["column"] == "TensorRT 8.6.0" and gpu["text"] == (
        "builds and computes right: int8_per_tensor (2 of 3); builds and computes wrong: int8_per_tensor (1 of 3); "
        "refuses: int4_zp0 (1 of 1)")
    assert rtx["text"] == "builds (a plan only: no GPU here runs it): int8_per_axis (1 of 1)"


def test_gpu_cells_from_any_observed_folder_join_their_version_column(make_cell, tmp_path):
    from matrix import observed
    from matrix.merge import load_results

    root = tmp_path / "observed"
    run = {"source": "observed", "date": "2026-11-28T00:00:00Z"}
    gpu = dict(engine="tensorrt", engine_version="8.5.2.2", hardware="NVIDIA H200 (sm_90)", run=run)
    files = {"conformance/trt-8.5.2.2.jsonl": [refused_at_load(make_cell, **gpu)],
             "any-later-round/trt-8.5.2.2.jsonl": [companion(make_cell, **gpu)]}
    for name, cells in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("".join(c.to_json() + "\n" for c in cells), encoding="utf-8")
    listed = observed.add(observed.Manifest(root), [root / n for n in files], "an H200 (test)", "pytest")
    cells = list(load_results([root], manifest=listed).conformance)
    view = conformance_view(cells, {})
    [row] = view["side_by_side"]
    assert row["column"] == "TensorRT 8.5.2.2 · observed on NVIDIA H200 (sm_90)"
    assert (row["node_tests"]["text"], row["companion"]["text"]) == ("1 refused", "1 right")
    assert view["companion"]["forms"][0]["text"] == "builds and computes right: int8_per_tensor (1 of 1)"


def test_a_tensorrt_version_without_companion_cells_says_how_to_get_them(make_cell):
    view = conformance_view([refused_at_load(make_cell, engine="tensorrt", engine_version="8.5.1.7")], {})
    [said] = view["companion"]["forms"]
    assert said["text"].startswith("no companion cell yet (a GPU run: ONLY_CASES=qdq_companion tools/gpu-round.sh")


def test_the_page_shows_the_companion_beside_the_node_tests(make_cell, write_results, tmp_path):
    from matrix.__main__ import main

    cells = [conf(make_cell), companion(make_cell, test="dequantizelinear_int8_per_axis", opset=13)]
    path = write_results("ort.jsonl", cells)
    out = tmp_path / "reports"
    assert main(["report", "--results", str(path), "--out", str(out), "--bundles", str(tmp_path / "none")]) == 0
    page = (out / "conformance.md").read_text()
    assert "| engine version | onnx node tests | int8 companion |" in page
    assert "| ONNX Runtime 1.31.1 | 1 right | 1 right |" in page
    assert "## The int8 companion: DequantizeLinear" in page
    assert "| dequantizelinear_int8_per_axis | int8_per_axis | 13 | right |" in page
    assert "| ONNX Runtime 1.31.1 | 1 right | 1 right |" in (out / "matrix.md").read_text()
    html = (out / "conformance.html").read_text()
    assert 'id="companion-DequantizeLinear"' in html and "<th>int8 companion</th>" in html


def test_the_diff_keeps_a_companion_test_apart_from_the_node_test_of_its_name(make_cell):
    old = [refused_at_load(make_cell, test="quantizelinear_e4m3fn", opset=19, engine_version="1.16.3"),
           companion(make_cell, test="quantizelinear_e4m3fn", opset=19, engine_version="1.16.3")]
    new = [conf(make_cell, test="quantizelinear_e4m3fn", opset=19),
           companion(make_cell, test="quantizelinear_e4m3fn", opset=19)]
    text = diff_markdown(old + new, "onnxruntime", "1.16.3", "1.31.1")
    assert "**1 entry changed of 2 compared" in text
    assert "- **1 × refused at load → right**: quantizelinear_e4m3fn at 19" in text


def test_the_conformance_command_says_the_companion_per_tensorrt_version(make_cell, write_results, tmp_path, capsys):
    from matrix.__main__ import main

    cells = [conf(make_cell), companion(make_cell, test="quantizelinear_int8_per_axis", engine="tensorrt-rtx",
                                        engine_version="1.7.1.116", status="built", last_stage="build")]
    path = write_results("cells.jsonl", cells)
    assert main(["conformance", "--results", str(path), "--out", str(tmp_path / "out"),
                 "--bundles", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "int8 companion: 1 test of 6 forms at 1 opset (1 bundle)" in out
    assert "  TensorRT for RTX 1.7.1.116: builds (a plan only: no GPU here runs it): int8_per_axis (1 of 1)" in out
