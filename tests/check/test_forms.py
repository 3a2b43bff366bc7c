"""A model quantized by onnxruntime's quantize_dynamic, or in the QOperator format, is named for what it is, with the
catalogue case or source that says what TensorRT does with it and the fix; never "a float model". A dynamic model's
TensorRT-family cells are judged by seed 002's expectations where they speak."""

from __future__ import annotations

import pytest

from cases import get_case
from cases.common import OPERATORS_MD
from cases.dynamic_quantize import ISSUE_3963, ORT_15888
from cases.verdict import rejudge
from check.bundle import bundle_from_model
from core.cell import Cell
from matrix.nodes import node_report
from matrix.render import render_template
from tests.check.models import float_convnet, qdq_conv, quantize_dynamic, quantize_qoperator

CASE = get_case("user_model")
FLOAT_WORDS = "a float model"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A float convnet, and its quantize_dynamic and QOperator copies, each as a bundle."""
    folder = tmp_path_factory.mktemp("forms")
    floats = float_convnet(folder / "convnet.onnx")
    models = {"dynamic": quantize_dynamic(floats, folder / "dynamic.onnx"),
              "qoperator": quantize_qoperator(floats, folder / "qop.onnx"), "float": floats,
              "qdq": qdq_conv(folder / "qdq.onnx")}
    return {k: bundle_from_model(m, folder / "b") for k, m in models.items()}


def _cell(bundle, engine: str, version: str, status: str, **fields) -> Cell:
    """A cell of the bundle as an engine would hand it back, judged against the catalogue as it is."""
    cell = Cell(bundle=bundle.id, case="user_model", params=dict(bundle.meta["params"]), digest=bundle.meta["digest"],
                engine=engine, engine_version=version, hardware="here", status=status, verdict="undocumented",
                last_stage="" if status == "fail" else "compare", **fields)
    return rejudge(cell, CASE)


def test_quantize_dynamic_is_named_with_seed_002_and_the_fix(made):
    meta = made["dynamic"].meta
    assert meta["quantization"]["form"] == "dynamic"
    form, = meta["quantization"]["forms"]
    assert form["ops"] == {"DynamicQuantizeLinear": 2, "ConvInteger": 2} and form["case"] == "dynamic_quantize"
    like = {"like_case": "dynamic_quantize", "like_variant": "ort_dynamic_conv"}
    assert meta["params"] == {"model": "dynamic.onnx", **like}, "the seed 002 reproducer the model matches"
    assert [d["op"] for d in meta["target_details"].values() if d["kind"] == "compute"] == ["ConvInteger"] * 2
    cells = [_cell(made["dynamic"], "tensorrt-rtx", "1.7.1.116", "fail", error="ONNX parse failed: false"),
             _cell(made["dynamic"], "onnxruntime", "1.32.0", "pass",
                   precision={t: {"precision": "int8"} for t in meta["target_nodes"]})]
    report = node_report(cells, meta)
    assert not report["float_model"] and report["form"] == "dynamic" and report["compute"] == 2
    summaries = [c["summary"] for c in report["columns"]]
    assert summaries == ["dynamic quantization (quantize_dynamic): 2 of 2 quantized compute nodes ran in INT8",
                         "dynamic quantization (quantize_dynamic): no per-node evidence: fail"]
    said, = report["forms"]
    assert (said["seed"], said["case"], said["like"]) == ("002", "dynamic_quantize", "variant=ort_dynamic_conv")
    assert not said["rtx"], "seed 002 documents nothing for TensorRT-RTX: its report says so, never 'as documented'"
    assert said["rtx_baseline"] == "1.7.1.116", "its committed TensorRT-RTX cells are a baseline, said as one"
    md = render_template("nodes.md.j2", report, html=False)
    assert "earlier run of the reproducer on TensorRT-RTX 1.7.1.116 (a baseline" in md
    assert "Seed 002 (`dynamic_quantize`" in md and "Fix: onnxruntime.quantization.quantize_static(..., " \
        "quant_format=QuantFormat.QDQ)" in md
    assert FLOAT_WORDS not in md and "no Q/DQ" not in md


def test_a_dynamic_models_cells_are_judged_by_seed_002_where_it_speaks(made):
    bundle = made["dynamic"]
    parse = "ONNX parse failed: false [node x_QuantizeLinear (DynamicQuantizeLinear), checkDynamicQuantizeLinear]"
    trt = _cell(bundle, "tensorrt", "8.6.0", "fail", error=parse)
    assert (trt.verdict, trt.expectation["source"]) == ("as documented", OPERATORS_MD)
    assert _cell(bundle, "tensorrt", "8.6.1.6", "fail", error=parse).expectation["source"] == ISSUE_3963
    assert _cell(bundle, "tensorrt", "8.6.0", "pass").verdict == "fixed", "a TensorRT that parsed it would be news"
    ort = _cell(bundle, "onnxruntime", "1.31.1", "pass")
    assert (ort.verdict, ort.expectation["source"]) == ("fixed", ORT_15888), "seed 002's uint8 x int8 ConvInteger"
    # TensorRT-RTX 1.7.1.116: seed 002's own committed cells are a baseline, said as one, never "as documented".
    rtx = _cell(bundle, "tensorrt-rtx", "1.7.1.116", "fail", error=parse)
    assert (rtx.verdict, rtx.expectation["basis"]) == ("as observed before", "baseline")
    # Where seed 002 says nothing (TensorRT-RTX 1.6, TensorRT 10.16 on), nothing is invented.
    assert _cell(bundle, "tensorrt-rtx", "1.6.1.120", "fail", error=parse).verdict == "new failure"
    assert _cell(bundle, "tensorrt", "10.16.1.11", "fail", error=parse).verdict == "new failure"
    other = _cell(made["qdq"], "tensorrt", "8.6.0", "fail", error=parse)
    assert other.verdict == "new failure" and not other.expectation, "a Q/DQ model names no case: no expectation"


def test_the_qoperator_format_is_named_with_what_the_sources_say(made):
    meta = made["qoperator"].meta
    assert meta["quantization"]["form"] == "qoperator" and meta["params"] == {"model": "qop.onnx"}
    compute = [d["op"] for d in meta["target_details"].values() if d["kind"] == "compute"]
    assert compute == ["QLinearConv"] * 2
    report = node_report([_cell(made["qoperator"], "onnxruntime", "1.32.0", "pass")], meta)
    said, = report["forms"]
    assert said["case"] == "" and said["source"] == OPERATORS_MD
    assert said["detail"].startswith("No catalogue case reproduces TensorRT with QLinearConv or QLinearMatMul")
    assert "QuantFormat.QDQ" in said["fix"]
    assert report["columns"][0]["summary"].startswith("QOperator format: ")


def test_a_float_model_and_a_qdq_model_read_as_before(made):
    floats = node_report([_cell(made["float"], "onnxruntime", "1.32.0", "pass")], made["float"].meta)
    assert floats["float_model"] and floats["forms"] == []
    assert floats["columns"][0]["summary"] == "no Q/DQ in the model: a float model (TensorRT builds it in float)"
    qdq = made["qdq"].meta
    assert qdq["quantization"]["form"] == "qdq" and qdq["params"] == {"model": "qdq.onnx"}
    cell = _cell(made["qdq"], "onnxruntime", "1.32.0", "pass", precision={t: {"precision": "int8"}
                                                                          for t in qdq["target_nodes"]})
    assert node_report([cell], qdq)["columns"][0]["summary"] == "1 of 1 quantized compute nodes ran in INT8"
