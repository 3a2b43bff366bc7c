"""Cases 003 `grouped_conv` and 004 `quantized_constant_plugin`: declarations and built reproducers."""

from __future__ import annotations

import importlib
from typing import List, Tuple

import numpy as np
import onnx
import pytest

from cases import slug
from cases.base import Case
from cases.grouped_conv import CASE as GROUPED_CONV
from cases.quantized_constant_plugin import CASE as QUANTIZED_CONSTANT_PLUGIN
from generators.grouped_conv import build as build_grouped_conv
from generators.quantized_constant_plugin import build as build_quantized_constant_plugin
from generators.reproducer import Reproducer
from tests.generators.helpers import initializers as _initializers, run_onnxruntime as _run_onnxruntime

BUILDERS = {GROUPED_CONV.id: build_grouped_conv, QUANTIZED_CONSTANT_PLUGIN.id: build_quantized_constant_plugin}
VARIANTS: List[Tuple[Case, dict]] = [(c, p) for c in (GROUPED_CONV, QUANTIZED_CONSTANT_PLUGIN) for p in c.variants()]
IDS = [f"{c.id}/{slug(p)}" for c, p in VARIANTS]


def _build(case: Case, params: dict) -> Reproducer:
    return BUILDERS[case.id](dict(params), np.random.default_rng(0))




def _grouped_conv_float(x: np.ndarray, w: np.ndarray, groups: int) -> np.ndarray:
    """A float 3x3 pad-1 grouped Conv written as a dense Conv with a block-diagonal kernel."""
    c_out, cpg, k, _ = w.shape
    dense = np.zeros((c_out, cpg * groups, k, k))
    per_group = c_out // groups
    for o in range(c_out):
        g = o // per_group
        dense[o, g * cpg : (g + 1) * cpg] = w[o]
    h, wd = x.shape[2:]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    taps = [(i, j) for i in range(k) for j in range(k)]
    y = sum(np.einsum("oc,nchw->nohw", dense[:, :, i, j], xp[:, :, i : i + h, j : j + wd]) for i, j in taps)
    return y.astype(np.float32)


def _grouped_conv_expected(rep: Reproducer, params: dict) -> np.ndarray:
    """What the graph computes, from its own initializers: float Conv, epilogue, output Q/DQ."""
    init = _initializers(rep.model)
    conv = next(n for n in rep.model.graph.node if n.op_type == "Conv")
    groups = next(a.i for a in conv.attribute if a.name == "group")
    scale = init["w_scale"].reshape(-1, 1, 1, 1) if init["w_scale"].ndim else init["w_scale"]
    y = _grouped_conv_float(rep.inputs["x"], init["w"].astype(np.float32) * scale, groups)
    if params["epilogue"] == "relu":
        y = np.maximum(y, 0)
    elif params["epilogue"] == "swish":
        y = y / (1 + np.exp(-y))
    if params["output_qdq"]:
        s, zp = float(init["y_scale"]), int(init["y_zero_point"])
        info = np.iinfo(init["y_zero_point"].dtype)
        y = (np.clip(np.rint(y / s) + zp, info.min, info.max) - zp) * s
    return y.astype(np.float32)


def test_each_case_cites_its_upstream_threads_first():
    for case, seed in ((GROUPED_CONV, "003"), (QUANTIZED_CONSTANT_PLUGIN, "004")):
        first_line = importlib.import_module(f"cases.{case.id}").__doc__.splitlines()[0]
        assert "https://github.com/NVIDIA/TensorRT/issues/" in first_line
        assert case.seed == seed and case.builder == f"generators.{case.id}:build"
        assert all(e.source.startswith("https://") for e in case.expectations)


def test_sweeps_have_the_documented_sizes():
    assert len(list(GROUPED_CONV.variants())) == 96  # 6 cpg x 2 weights x 2 activations x (2 + 2 epilogues)
    assert [p["form"] for p in QUANTIZED_CONSTANT_PLUGIN.variants()] == list(QUANTIZED_CONSTANT_PLUGIN.axes["form"])


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_model_passes_the_full_checker(case, params):
    rep = _build(case, params)
    assert not (rep.intentionally_invalid or case.intentionally_invalid)
    onnx.checker.check_model(rep.model, full_check=True)
    assert rep.model.ir_version == 8
    assert rep.target_nodes and set(rep.target_nodes) <= {n.name for n in rep.model.graph.node}
    assert set(rep.target_nodes) <= set(case.target_nodes)


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_two_builds_are_byte_identical(case, params):
    a, b = _build(case, params), _build(case, params)
    assert a.model.SerializeToString() == b.model.SerializeToString()
    assert a.inputs.keys() == b.inputs.keys()
    for name in a.inputs:
        assert a.inputs[name].dtype == b.inputs[name].dtype
        assert a.inputs[name].tobytes() == b.inputs[name].tobytes()


@pytest.mark.parametrize("params", list(GROUPED_CONV.variants()), ids=[slug(p) for p in GROUPED_CONV.variants()])
def test_grouped_conv_onnxruntime_matches_a_float_conv(params):
    rep = _build(GROUPED_CONV, params)
    expected = _grouped_conv_expected(rep, params)
    actual = _run_onnxruntime(rep)["y"]
    step = rep.output_steps["y"] or float(np.max(np.abs(expected))) / 127
    assert np.max(np.abs(actual - expected)) <= rep.tolerance_steps * step


@pytest.mark.parametrize("params", list(GROUPED_CONV.variants()), ids=[slug(p) for p in GROUPED_CONV.variants()])
def test_grouped_conv_shape_and_quantization(params):
    rep = _build(GROUPED_CONV, params)
    init = _initializers(rep.model)
    (conv,) = [n for n in rep.model.graph.node if n.op_type == "Conv"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in conv.attribute}
    assert attrs["kernel_shape"] == [3, 3] and attrs["pads"] == [1, 1, 1, 1]
    assert attrs["group"] * params["cpg"] == 48
    assert conv.name in rep.target_nodes
    assert init["w"].dtype == np.int8 and init["w"].shape == (48, params["cpg"], 3, 3)
    assert init["w_scale"].shape == ((48,) if params["weights"] == "per_channel" else ())
    zero_point = init["x_zero_point"]
    assert (zero_point.dtype, int(zero_point)) == ((np.int8, 0) if params["activation"] == "int8" else (np.uint8, 128))
    # the input Q is exact: x holds whole multiples of its scale
    x_steps = rep.inputs["x"] / init["x_scale"]
    assert np.array_equal(x_steps, np.rint(x_steps))
    if params["output_qdq"]:
        assert rep.output_steps["y"] == float(init["y_scale"])
        assert init["y_zero_point"].dtype == zero_point.dtype
        # no saturation: the float output before the output Q peaks well inside the 8-bit range
        peak = np.max(np.abs(_grouped_conv_expected(rep, dict(params, output_qdq=False))))
        assert 0 < peak / rep.output_steps["y"] <= 100
    else:
        assert rep.output_steps["y"] is None
    assert rep.trt == {"int8": True}


@pytest.mark.parametrize("form", QUANTIZED_CONSTANT_PLUGIN.axes["form"])
def test_plugin_forms_name_a_registrable_plugin(form):
    rep = _build(QUANTIZED_CONSTANT_PLUGIN, {"form": form})
    init = _initializers(rep.model)
    assert init["w"].dtype == np.int8
    consumers = [n for n in rep.model.graph.node if "w" in n.input]
    assert len(consumers) == 1
    (first,) = consumers
    if form == "int8_const_dq_op":
        assert first.op_type == "DequantizeLinear" and rep.trt == {"int8": True}
        assert rep.target_nodes == ("node_of_y",)
        return
    op = {"int8_const_to_plugin_v3": "Int8IdentityV3", "int8_const_to_plugin_v2": "Int8IdentityV2"}[form]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in first.attribute}
    assert (first.op_type, first.domain, first.name) == (op, "qdq_matrix", "node_of_w_id")
    assert attrs == {"plugin_namespace": b"qdq_matrix", "plugin_version": b"1"}
    assert {(o.domain, o.version) for o in rep.model.opset_import} == {("", 13), ("qdq_matrix", 1)}
    assert rep.trt["plugins"] == [f"qdq_matrix::{op}"] and rep.trt["plugin_api"] == form[-2:] and rep.trt["int8"] is True
    assert rep.target_nodes == ("node_of_w_id",)


@pytest.mark.parametrize("form", QUANTIZED_CONSTANT_PLUGIN.axes["form"])
def test_plugin_reference_is_x_plus_dequantized_constant(form):
    rep = _build(QUANTIZED_CONSTANT_PLUGIN, {"form": form})
    init = _initializers(rep.model)
    expected = rep.inputs["x"] + init["w"].astype(np.float32) * init["w_scale"]
    assert np.array_equal(rep.reference(rep.inputs)["y"], expected)
    if form == "int8_const_dq_op":  # the only form ONNX Runtime can run (no custom op)
        assert np.array_equal(_run_onnxruntime(rep)["y"], expected)


def test_plugin_forms_are_refused_by_onnxruntime():
    rep = _build(QUANTIZED_CONSTANT_PLUGIN, {"form": "int8_const_to_plugin_v3"})
    with pytest.raises(Exception, match="Int8IdentityV3"):
        _run_onnxruntime(rep)


def test_signatures_match_the_upstream_text():
    sig = QUANTIZED_CONSTANT_PLUGIN.signature("quantized_constant")
    assert sig.search(
        "Error[2]: [qdqGraphOptimizer.cpp::matchQuantizedConstantPluginOrDQ::4004] Error Code 2: Internal Error "
        "(L__self___conv1.weight: Quantized constant is only allowed before DQ or PLUGIN_V2 node)"
    )
    assert sig.search("Quantized constant is only allowed before DQ or PLUGIN_V2 or kPLUGIN_V3 node")
    impl = GROUPED_CONV.signature("no_implementation")
    assert impl.search(
        "[optimizer.cpp::computeCosts::3897] Error Code 10: Internal Error (Could not find any implementation "
        "for node weights + node_of_weights_quantized + node_of_output.)"
    )
    assert impl.search(
        "[optimizer.cpp::computeCosts::3728] Error Code 10: Internal Error (Could not find any implementation "
        "for node w + node_of_dqconv.dwconv + PWN(node_of_swish.sigmoid, node_of_swish.mul).)"
    )
    zp = GROUPED_CONV.signature("nonzero_zero_point")
    assert zp.search("Assertion failed: shiftIsAllZeros(zeroPoint) && \"TRT only supports symmetric quantization\"")
    assert zp.search("TensorRT only supports symmetric quantization. The zero point for the QuantizeLinear/...")


def test_documented_outcomes_by_version():
    v3, v2 = {"form": "int8_const_to_plugin_v3"}, {"form": "int8_const_to_plugin_v2"}
    assert QUANTIZED_CONSTANT_PLUGIN.expectation_for("tensorrt", "10.0.1.6", v3).outcome == "fail"
    assert QUANTIZED_CONSTANT_PLUGIN.expectation_for("tensorrt", "10.1.0.27", v3).outcome == "pass"
    assert QUANTIZED_CONSTANT_PLUGIN.expectation_for("tensorrt", "10.0.1.6", v2).outcome == "pass"
    assert QUANTIZED_CONSTANT_PLUGIN.expectation_for("tensorrt", "10.3.0", v2) is None
    assert QUANTIZED_CONSTANT_PLUGIN.expectation_for("tensorrt", "10.0.1.6", {"form": "int8_const_dq_op"}) is None

    depthwise = {"cpg": 1, "weights": "per_channel", "activation": "int8", "output_qdq": True}
    swish, relu, none = (dict(depthwise, epilogue=e) for e in ("swish", "relu", "none"))
    assert GROUPED_CONV.expectation_for("tensorrt", "8.5.2.2", swish).outcome == "fail"
    assert GROUPED_CONV.expectation_for("tensorrt", "8.5.2.2", relu).outcome == "pass"
    assert GROUPED_CONV.expectation_for("tensorrt", "8.6.11.4", none).outcome == "fail"
    assert GROUPED_CONV.expectation_for("tensorrt", "10.3.0", swish) is None
    assert GROUPED_CONV.expectation_for("tensorrt", "10.3.0", dict(none, cpg=3)) is None  # NvInfer.h: no outcome
    uint8 = GROUPED_CONV.expectation_for("tensorrt", "10.3.0", dict(none, activation="uint8", cpg=4))
    assert (uint8.outcome, uint8.stage, uint8.signature) == ("fail", "load", "nonzero_zero_point")
