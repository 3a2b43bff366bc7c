"""The model's fault is the model's: a model onnx.checker (full_check) refuses or whose weights hold 0 bytes is an
invalid model that no engine judges, and the engines' cells of a model the reference cannot run (a declared 0
dimension, indices out of range) blame nobody ("no reference"), with no bug bundle unless asked."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from check.__main__ import main
from tests.check.models import qdq_conv


def weightless(path: Path) -> Path:
    """The Q/DQ conv with its int8 weight's raw_data of 0 bytes (saved without its weights)."""
    model = onnx.load(str(qdq_conv(path)))
    next(i for i in model.graph.initializer if i.name == "w_q").raw_data = b""
    onnx.save(model, str(path))
    return path


def duplicate_outputs(path: Path) -> Path:
    """The Q/DQ conv with two nodes writing one tensor name: not in SSA form, which full_check refuses."""
    model = onnx.load(str(qdq_conv(path)))
    model.graph.node[1].output[0] = model.graph.node[0].output[0]
    onnx.save(model, str(path))
    return path


def zero_batch(path: Path) -> Path:
    """The Q/DQ conv with its batch declared 0: a size (the input is empty), not an open dimension."""
    model = onnx.load(str(qdq_conv(path)))
    for value in (model.graph.input[0], model.graph.output[0]):
        value.type.tensor_type.shape.dim[0].dim_value = 0
    onnx.save(model, str(path))
    return path


def gather(path: Path) -> Path:
    """A table of 10 rows indexed by an int64 input; its .npz beside it indexes row 12 (out of range)."""
    table = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["y"], name="gather")], "gather",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], initializer=[table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    np.savez(path.with_suffix(".npz"), ids=np.array([0, 12, 3], np.int64))
    return path


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The four models in one folder, checked on ONNX Runtime as a user runs it."""
    root = tmp_path_factory.mktemp("fault")
    models = root / "models"
    models.mkdir()
    for make, name in ((weightless, "weightless"), (duplicate_outputs, "duplicate"), (zero_batch, "zero"),
                       (gather, "gather")):
        make(models / f"{name}.onnx")
    printed = io.StringIO()
    with redirect_stdout(printed):
        status = main([str(models), "--engine", "onnxruntime", "--out", str(root / "b"), "--results",
                       str(root / "r"), "--reports", str(root / "rep")])
    summary = printed.getvalue().split("\nsummary: 4 models\n", 1)[1].splitlines()
    lines = {Path(line.strip().split(": ", 1)[0]).stem: line for line in summary[:4]}
    cells = [json.loads(x) for f in (root / "r").rglob("*.jsonl") for x in f.read_text().splitlines()]
    return root, status, lines, [c for c in cells if c.get("kind") != "session"]


def test_an_invalid_model_is_refused_before_any_engine_with_the_models_reason(checked):
    root, status, lines, cells = checked
    assert status == 4, "models that could not be checked: exit 4; a failure on a model with no reference " \
                        "blames no engine (no exit 1)"
    assert "unusable: invalid model: tensor 'w_q' declares 108 elements and holds 0 bytes" in lines["weightless"]
    assert "unusable: invalid model: onnx.checker (full_check) refuses it: " in lines["duplicate"]
    assert "single static assignment" in lines["duplicate"]
    ran = {c["params"]["model"] for c in cells}
    assert ran == {"zero.onnx", "gather.onnx"}, "no engine is asked about an invalid model"
    report = next((root / "rep").glob("weightless-*.md")).read_text()
    assert report.startswith("# weightless.onnx: invalid model") and "holds 0 bytes" in report


def test_a_model_the_reference_cannot_run_gets_no_reference_never_new_failure(checked):
    root, _, lines, cells = checked
    assert cells and not [c for c in cells if c["verdict"] == "new failure"]
    by_model = {c["params"]["model"]: c for c in cells}
    assert {c["verdict"] for c in by_model.values()} == {"no reference"}
    assert by_model["gather.onnx"]["status"] == "fail", "what the engine did is recorded"
    assert "input dimension x[0] = 0 (a size: the input is empty)" in lines["zero"]
    assert "the model's (or its inputs') fault" in by_model["zero.onnx"]["explanation"]
    assert "no reference, the model's (or its inputs') fault, no engine blamed: the reference (ONNX Runtime" in \
        lines["gather"] and "indices" in lines["gather"]
    for model in ("zero", "gather"):  # the model's report says it first, in both forms
        for form in ("md", "html"):
            report = next((root / "rep").glob(f"{model}-*.{form}")).read_text()
            assert "No reference, the model's (or its inputs') fault:" in report.split("Inputs:", 1)[0], (model, form)


def test_no_bug_bundle_for_a_model_the_reference_cannot_run_unless_asked(checked, tmp_path):
    from matrix.__main__ import main as matrix_main

    root = checked[0]
    common = ["bugs", "--results", str(root / "r"), "--user-bundles", str(root / "b")]
    assert matrix_main([*common, "--out", str(tmp_path / "none")]) == 0
    assert not list((tmp_path / "none").rglob("ISSUE.md")), "the model's fault is no engine bug to file"
    matrix_main([*common, "--out", str(tmp_path / "asked"), "--include-unreferenced"])
    issues = list((tmp_path / "asked").rglob("ISSUE.md"))
    assert issues and all(p.read_text().startswith("# The model's fault, do not file as an engine bug (")
                          for p in issues)


def test_an_external_data_file_of_0_bytes_is_an_invalid_model(tmp_path):
    """Weights saved beside the model, then emptied: the model names where they should be and holds none."""
    from check import CheckError
    from check.bundle import bundle_from_model

    model = onnx.load(str(qdq_conv(tmp_path / "conv.onnx")))
    onnx.save(model, str(tmp_path / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    (tmp_path / "ext.data").write_bytes(b"")
    with pytest.raises(CheckError, match="^invalid model: tensor '.*' declares 1 element and holds 0 bytes"):
        bundle_from_model(tmp_path / "ext.onnx", tmp_path / "out")


def test_a_parse_failure_of_a_model_without_a_reference_says_what_failed_not_no_reference(capsys):
    """TensorRT-RTX refusing a QOperator model at parse (com.microsoft ops its parser does not know) failed before any
    output: the summary says its stage, verdict and error, and the engine failure counts (exit 1 beside 4); "no engine
    blamed" stays for a model whose cells ran it."""
    from check.__main__ import EXIT_ENGINE_FAILED, EXIT_MODEL_UNUSABLE, ModelCheck, cell_words, summary
    from core.cell import Cell

    missing = ("no reference that is not an engine under test: onnx.reference cannot run it: NotImplementedError: "
               "Node type 'QLinearConcat' from domain 'com.microsoft' is unknown")
    refused = Cell(bundle="user_model/qop", case="user_model", params={}, digest="d", engine="tensorrt-rtx",
                   engine_version="1.7.1.116", hardware="", status="fail", verdict="new failure", last_stage="",
                   error="In node 3 (importModel): No importer registered for op: QLinearConcat\nmore")
    said = cell_words(refused, unreferenced=True)
    assert said == ("tensorrt-rtx@1.7.1.116: fail at load (new failure), before any output: In node 3 (importModel): "
                    "No importer registered for op: QLinearConcat")
    assert cell_words(refused, unreferenced=False) == "tensorrt-rtx@1.7.1.116: fail"
    # OpenVINO's error starts with where it was raised; the line that says why is the cell's engine_reason
    ov = Cell(bundle="user_model/qop", case="user_model", params={}, digest="d", engine="openvino",
              engine_version="2026.4.1", hardware="", status="fail", verdict="new failure", last_stage="",
              error="Exception from src/inference/src/cpp/core.cpp:84:\nModel wasn't fully converted.",
              error_line="Exception from src/inference/src/cpp/core.cpp:",
              engine_reason="No conversion rule found for operations: com.microsoft.QGemm")
    assert cell_words(ov, unreferenced=True).endswith(
        "before any output: No conversion rule found for operations: com.microsoft.QGemm")
    # ONNX Runtime ran it, and nothing judged its outputs: not a bare "pass"
    ort = Cell(bundle="user_model/qop", case="user_model", params={}, digest="d", engine="onnxruntime",
               engine_version="1.32.0", hardware="", status="pass", verdict="no reference", last_stage="run")
    assert cell_words(ort, unreferenced=True) == "onnxruntime@1.32.0: pass (no reference)"
    parse = ModelCheck(model="qop.onnx", bundle="user_model/qop", reference_error=missing, cells=(said,),
                       statuses=("fail",), verdicts=("new failure",))
    ran = ModelCheck(model="ran.onnx", bundle="user_model/ran", reference_error=missing,
                     cells=("onnxruntime@1.32.0: fail",), statuses=("fail",), verdicts=("no reference",))
    assert summary([parse]) == EXIT_ENGINE_FAILED | EXIT_MODEL_UNUSABLE
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  qop.onnx: "))
    assert "fail at load (new failure), before any output: In node 3" in line and "no engine blamed" not in line
    assert "a failure before any output needs none" in line
    assert summary([ran]) == EXIT_MODEL_UNUSABLE
    assert "no reference, the fault of the suite's reference (it lacks one of the model's operators), no engine " \
           "blamed: " in capsys.readouterr().out


def test_the_model_page_says_a_parse_failure_needs_no_reference(tmp_path):
    """The per-model page of a model without a reference: a cell that failed at parse names its stage, verdict and
    error instead of "each engine's cell blames nobody"; a cell that ran it still blames nobody."""
    from dataclasses import replace

    from core.cell import Cell
    from matrix.nodes import node_report, write_node_reports

    meta = {"reference_error": "onnx.reference cannot run it: NotImplementedError: Node type 'QLinearConcat' from "
                               "domain 'com.microsoft' is unknown", "params": {"model": "qop.onnx"}}
    refused = Cell(bundle="user_model/qop", case="user_model", params={}, digest="d", engine="tensorrt-rtx",
                   engine_version="1.7.1.116", hardware="", status="fail", verdict="new failure", last_stage="",
                   error="In node 3 (importModel): No importer registered for op: QLinearConcat")
    ran = replace(refused, engine="onnxruntime", engine_version="1.32.0", status="pass", verdict="no reference",
                  last_stage="run", error="")
    for cells, blameless in (([refused], False), ([refused, ran], True)):
        md, html, _ = write_node_reports(node_report(cells, meta), tmp_path, f"qop{len(cells)}")
        for text in (md.read_text(), html.read_text()):
            assert "tensorrt-rtx@1.7.1.116 failed at load, before any output, which needs no reference to be " \
                   "judged (" in text and "No importer registered for op: QLinearConcat" in text
            assert "Each engine's cell records what it did and blames nobody" not in text
            assert ("The cells that ran it record what the engine did and blame nobody" in text) is blameless
    built = replace(refused, status="built", verdict="undocumented", last_stage="build", error="")
    md, _, _ = write_node_reports(node_report([built], meta), tmp_path, "built")
    assert "blames nobody" not in md.read_text(), "a plan built ahead of time produced no output to leave unjudged"
