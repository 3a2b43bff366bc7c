"""A model whose quantized operators ONNX Runtime runs itself (QOperator, dynamic, com.microsoft) is referenced by
onnx.reference, never by ONNX Runtime; every quantized operator is counted, and only compute operators in the compute
count."""

from __future__ import annotations

from pathlib import Path
from typing import List

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from check.bundle import bundle_from_model
from core.cell import Cell
from matrix.nodes import node_report
from matrix.render import render_template
from tests.check.models import float_convnet, quantize_qoperator

RNG = np.random.default_rng(0)


def _save(path: Path, nodes: List, inputs: List, outputs: List, inits: List, microsoft: bool = False,
          opset: int = 13) -> Path:
    graph = helper.make_graph(nodes, "m", inputs, outputs, initializer=inits)
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if microsoft else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _const(name: str, value: np.ndarray):
    return numpy_helper.from_array(value, name)


def _cell(bundle, precision: str = "int8") -> Cell:
    return Cell(bundle=bundle.id, case="user_model", params=dict(bundle.meta["params"]), digest=bundle.meta["digest"],
                engine="onnxruntime", engine_version="1.32.0", hardware="here", status="pass", verdict="undocumented",
                last_stage="compare", precision={t: {"precision": precision} for t in bundle.meta["target_nodes"]})


def test_a_qoperator_models_reference_is_onnx_reference_never_onnxruntime(tmp_path, monkeypatch):
    """The reference runs with ONNX Runtime's InferenceSession broken: it is not ONNX Runtime; the report names it,
    and the float twin of the model's QLinearConvs gives the quantization loss the fragile rule reads."""
    import onnxruntime

    model = quantize_qoperator(float_convnet(tmp_path / "convnet.onnx"), tmp_path / "qop.onnx")
    real = onnxruntime.InferenceSession

    def refuse(path, *args, **kwargs):
        if "qdq-twin-" not in str(path):  # the float twin has no integer op: ONNX Runtime may run it
            raise AssertionError(f"ONNX Runtime asked to compute the reference of {path}")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    bundle = bundle_from_model(model, tmp_path / "b")
    meta = bundle.meta
    assert meta["reference_error"] == "" and meta["reference_engine"]["engine"] == "onnx.reference"
    assert meta["reference"] == f"onnx.reference {onnx.__version__}"
    assert meta["float_twin"]["rewritten"]["QLinearConv"] == 2 and meta["float_twin"]["error"] == ""
    assert "loss" in meta["float_reference"], "float outputs: the fragile rule can judge an engine against them"
    md = render_template("nodes.md.j2", node_report([_cell(bundle)], meta), html=False)
    assert f"Reference: onnx.reference {onnx.__version__} (onnx's own operator definitions)" in md
    assert "never an engine under test" in md


def test_qoperator_reference_matches_onnxruntime_within_the_line_not_by_identity(tmp_path):
    """The reference and ONNX Runtime's integer kernels are two implementations: both close, neither the other."""
    from cases import get_case
    from engines import get_engine
    from engines.cells import judge_observation

    bundle = bundle_from_model(quantize_qoperator(float_convnet(tmp_path / "c.onnx"), tmp_path / "q.onnx"),
                               tmp_path / "b")
    engine = get_engine("onnxruntime")
    cell = judge_observation(get_case("user_model"), bundle, engine.probe(), engine.run(bundle), {"source": "local"})
    assert cell.status == "pass", cell.error


def _dynamic_lstm_model(path: Path) -> Path:
    """x [seq 4, batch 1, 8] -> DynamicQuantizeLSTM (hidden 6) -> Reshape -> DynamicQuantizeMatMul (int8 [6, 5])."""
    hidden, size = 6, 8
    nodes = [helper.make_node("DynamicQuantizeLSTM", ["x", "w", "r", "", "", "", "", "", "ws", "wz", "rs", "rz"],
                              ["h"], name="lstm", domain="com.microsoft", hidden_size=hidden),
             helper.make_node("Reshape", ["h", "shape"], ["h2"]),
             helper.make_node("DynamicQuantizeMatMul", ["h2", "b", "bs", "bz"], ["y"], name="head",
                              domain="com.microsoft")]
    inits = [_const("w", RNG.integers(-100, 100, (1, size, 4 * hidden)).astype(np.int8)),
             _const("r", RNG.integers(-100, 100, (1, hidden, 4 * hidden)).astype(np.int8)),
             _const("ws", np.array([0.01], np.float32)), _const("wz", np.array([0], np.int8)),
             _const("rs", np.array([0.01], np.float32)), _const("rz", np.array([0], np.int8)),
             _const("shape", np.array([4, hidden], np.int64)),
             _const("b", RNG.integers(-100, 100, (hidden, 5)).astype(np.int8)),
             _const("bs", np.array(0.02, np.float32)), _const("bz", np.array(0, np.int8))]
    return _save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1, size])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])], inits, microsoft=True)


def test_dynamic_quantize_lstm_and_matmul_are_quantized_compute_nodes_with_their_weights(tmp_path):
    bundle = bundle_from_model(_dynamic_lstm_model(tmp_path / "lstm.onnx"), tmp_path / "b")
    meta = bundle.meta
    details = meta["target_details"]
    assert {n: (d["op"], d["kind"], d.get("weights")) for n, d in details.items()} == {
        "lstm": ("DynamicQuantizeLSTM", "compute", 8 * 24 + 6 * 24), "head": ("DynamicQuantizeMatMul", "compute", 30)}
    assert meta["graph"]["quantized_weights"] == 8 * 24 + 6 * 24 + 30
    assert meta["quantization"]["form"] == "dynamic" and meta["params"] == {"model": "lstm.onnx"}
    assert meta["reference_engine"]["rewritten"] == {"DynamicQuantizeLSTM": 1, "DynamicQuantizeMatMul": 1}
    assert meta["reference_error"] == "" and meta["reference_engine"]["engine"] == "onnx.reference"
    report = node_report([_cell(bundle)], meta)
    assert report["columns"][0]["summary"].endswith("2 of 2 quantized compute nodes ran in INT8")
    assert [(w["op"], w["nodes"], w["weights"]) for w in report["weights"]] == [
        ("DynamicQuantizeLSTM", 1, 336), ("DynamicQuantizeMatMul", 1, 30)]
    md = render_template("nodes.md.j2", report, html=False)
    assert "Quantized weights (366 values in the model): 1 DynamicQuantizeLSTM holds 336 (91.8%)" in md
    assert "its activations are not quantized" in md, "the LSTM's reference says what it leaves out"


def _dq(name: str, shape, nodes: List, inits: List) -> str:
    """An int8 initializer of the shape behind a DequantizeLinear; returns the float tensor's name."""
    inits += [_const(f"{name}_q", RNG.integers(-100, 100, shape).astype(np.int8)),
              _const(f"{name}_s", np.array(0.01, np.float32)), _const(f"{name}_z", np.array(0, np.int8))]
    nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [name]))
    return name


def test_a_bert_style_graphs_compute_count_is_its_matmuls_and_gemms_only(tmp_path):
    """Gather of a quantized embedding, LayerNormalization with quantized gamma, BatchNormalization with quantized
    scale: quantized nodes, counted apart; the compute count is the two MatMuls and the Gemm."""
    nodes: List = []
    inits: List = []
    table, gamma = _dq("table", (10, 8), nodes, inits), _dq("gamma", (8,), nodes, inits)
    w1, w2, w3 = _dq("w1", (8, 8), nodes, inits), _dq("w2", (8, 8), nodes, inits), _dq("w3", (8, 8), nodes, inits)
    scale = _dq("bn_scale", (8,), nodes, inits)
    inits += [_const("beta", np.zeros(8, np.float32)), _const("mean", np.zeros(8, np.float32)),
              _const("var", np.ones(8, np.float32)), _const("bn_b", np.zeros(8, np.float32)),
              _const("as", np.array(0.05, np.float32)), _const("az", np.array(0, np.int8))]
    nodes += [helper.make_node("Gather", [table, "ids"], ["e"], name="embed"),
              helper.make_node("LayerNormalization", ["e", gamma, "beta"], ["n"], name="norm", axis=-1),
              helper.make_node("QuantizeLinear", ["n", "as", "az"], ["nq"]),
              helper.make_node("DequantizeLinear", ["nq", "as", "az"], ["nd"]),
              helper.make_node("MatMul", ["nd", w1], ["m1"], name="mm1"),
              helper.make_node("MatMul", ["m1", w2], ["m2"], name="mm2"),
              helper.make_node("Gemm", ["m2", w3], ["g"], name="gemm"),
              helper.make_node("BatchNormalization", ["g", scale, "bn_b", "mean", "var"], ["y"], name="bn")]
    path = _save(tmp_path / "bert.onnx", nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], inits, opset=17)  # LayerNormalization
    bundle = bundle_from_model(path, tmp_path / "b")
    kinds = {d["op"]: d["kind"] for d in bundle.meta["target_details"].values()}
    assert kinds == {"Gather": "other", "LayerNormalization": "other", "MatMul": "compute", "Gemm": "compute",
                     "BatchNormalization": "other"}
    report = node_report([_cell(bundle)], bundle.meta)
    assert report["compute"] == 3
    assert report["columns"][0]["summary"].startswith("3 of 3 quantized compute nodes ran in INT8; other quantized")


@pytest.mark.parametrize("op", ["QGemm", "QAttention", "MatMulIntegerToFloat", "QLinearConv", "ConvInteger"])
def test_every_quantized_compute_op_is_a_compute_node(op):
    from cases.user_model import COMPUTE_OPS
    from check.forms import quantized_op

    assert op in COMPUTE_OPS and quantized_op(op)


def _qgemm_model(path: Path, float_out: bool, trans_b: int, alpha: float) -> Path:
    """x [3, 8] -> QuantizeLinear (uint8) -> QGemm (int8 weights, per-column scales, int32 bias) -> y, quantized (then
    DequantizeLinear) or float."""
    w = RNG.integers(-127, 128, (5, 8) if trans_b else (8, 5)).astype(np.int8)
    inits = [_const("xs", np.array(0.02, np.float32)), _const("xz", np.array(128, np.uint8)),
             _const("w", w), _const("ws", (RNG.random(5) * 0.01 + 0.001).astype(np.float32)),
             _const("wz", np.zeros(5, np.int8)), _const("c", RNG.integers(-3000, 3000, 5).astype(np.int32)),
             _const("ys", np.array(0.07, np.float32)), _const("yz", np.array(120, np.uint8))]
    tail = [] if float_out else ["ys", "yz"]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("QGemm", ["xq", "xs", "xz", "w", "ws", "wz", "c", *tail], ["g"], name="gemm",
                              domain="com.microsoft", transB=trans_b, alpha=alpha)]
    if not float_out:
        nodes.append(helper.make_node("DequantizeLinear", ["g", "ys", "yz"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", ["g"], ["y"]))
    return _save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])], inits, microsoft=True, opset=19)


@pytest.mark.parametrize("float_out, trans_b, alpha", [(False, 1, 1.0), (False, 0, 0.5), (True, 1, 1.0),
                                                      (True, 0, 2.0)])
def test_qgemm_in_standard_operators_computes_what_onnxruntimes_kernel_does(tmp_path, float_out, trans_b, alpha):
    """A QOperator Gemm (quantize_static writes QGemm) gets onnx.reference as its reference, bit for bit what ONNX
    Runtime's integer kernel gives, requantized or float, with either weight layout and any alpha; and a float twin,
    so that its quantization loss is measured."""
    import onnxruntime
    from onnx.reference import ReferenceEvaluator

    from check.reference import standard_form

    path = _qgemm_model(tmp_path / "qgemm.onnx", float_out, trans_b, alpha)
    x = (RNG.standard_normal((3, 8)) * 1.5).astype(np.float32)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    kernel = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    rewritten, done = standard_form(onnx.load(str(path)))
    assert done == {"QGemm": 1}
    assert not [n.op_type for n in rewritten.graph.node if n.domain == "com.microsoft"]
    reference = ReferenceEvaluator(rewritten).run(None, {"x": x})[0]
    assert np.array_equal(reference, kernel), np.abs(reference - kernel).max()
    bundle = bundle_from_model(path, tmp_path / "b")
    assert bundle.meta["reference_error"] == "" and bundle.meta["reference_engine"]["engine"] == "onnx.reference"
    assert bundle.meta["reference_engine"]["rewritten"] == {"QGemm": 1}
    twin = bundle.meta["float_twin"]  # Q/DQ -> Gemm -> Q first: the twin undoes it, the loss is measured
    assert twin["rewritten"] == {"QGemm": 1} and twin["error"] == "", twin
    assert "loss" in bundle.meta["float_reference"]


def test_a_quantize_static_qoperator_gemm_is_referenced_and_judged(tmp_path):
    """onnxruntime's quantize_static in QOperator format turns a Gemm with its bias into a QGemm: the bundle gets
    onnx.reference and a float twin, and ONNX Runtime's own column passes against that reference."""
    from cases import get_case
    from engines import get_engine
    from engines.cells import judge_observation

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])
    inits = [_const("w", (RNG.standard_normal((10, 16)) * 0.3).astype(np.float32)),
             _const("b", (RNG.standard_normal(10) * 0.1).astype(np.float32))]
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="fc", transB=1),
                               helper.make_node("Relu", ["g"], ["y"], name="act")], "fc", [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "fc.onnx"))
    quantized = quantize_qoperator(tmp_path / "fc.onnx", tmp_path / "fc_q.onnx")
    assert "QGemm" in [n.op_type for n in onnx.load(str(quantized)).graph.node]
    bundle = bundle_from_model(quantized, tmp_path / "b")
    meta = bundle.meta
    assert meta["reference_error"] == "" and meta["reference_engine"]["rewritten"].get("QGemm") == 1
    assert meta["float_twin"]["error"] == "" and meta["float_twin"]["rewritten"].get("QGemm") == 1
    engine = get_engine("onnxruntime")
    cell = judge_observation(get_case("user_model"), bundle, engine.probe(), engine.run(bundle), {"source": "local"})
    assert cell.status == "pass", cell.error
