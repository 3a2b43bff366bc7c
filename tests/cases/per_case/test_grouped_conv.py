"""Seed 003 `grouped_conv`: grouped and depthwise INT8 Conv (#4060, #3385), against a float Conv written in numpy."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.grouped_conv import CASE
from generators import write
from generators.reproducer import Reproducer
from tests.cases.per_case.helpers import attrs, initializers, run_onnxruntime

VARIANTS = list(CASE.variants())
IDS = [slug(p) for p in VARIANTS]


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
    init = initializers(rep.model)
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


@pytest.mark.parametrize("params", VARIANTS, ids=IDS)
def test_grouped_conv_onnxruntime_matches_a_float_conv(params):
    rep = write.build(CASE, params)
    expected = _grouped_conv_expected(rep, params)
    actual = run_onnxruntime(rep)["y"]
    step = rep.output_steps["y"] or float(np.max(np.abs(expected))) / 127
    assert np.max(np.abs(actual - expected)) <= rep.tolerance_steps * step


@pytest.mark.parametrize("params", VARIANTS, ids=IDS)
def test_grouped_conv_shape_and_quantization(params):
    rep = write.build(CASE, params)
    init = initializers(rep.model)
    (conv,) = [n for n in rep.model.graph.node if n.op_type == "Conv"]
    found = attrs(conv)
    assert found["kernel_shape"] == [3, 3] and found["pads"] == [1, 1, 1, 1]
    assert found["group"] * params["cpg"] == 48
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


def test_signatures_match_the_upstream_text():
    impl = CASE.signature("no_implementation")
    assert impl.search(
        "[optimizer.cpp::computeCosts::3897] Error Code 10: Internal Error (Could not find any implementation "
        "for node weights + node_of_weights_quantized + node_of_output.)"
    )
    assert impl.search(
        "[optimizer.cpp::computeCosts::3728] Error Code 10: Internal Error (Could not find any implementation "
        "for node w + node_of_dqconv.dwconv + PWN(node_of_swish.sigmoid, node_of_swish.mul).)"
    )
    # The same words of a node that is no convolution with its weights: another case's cause.
    assert not impl.search("Error Code 10: Internal Error (Could not find any implementation for node node_of_r.)")
    assert not impl.search("(Could not find any implementation for node PWN(PWN(node_of_sigmoid), PWN(node_of_act)).)")
    assert not impl.search("(Could not find any implementation for node {ForeignNode[b_fc1_quantized...y_Dequa]}.)")
    zp = CASE.signature("nonzero_zero_point")
    assert zp.search("Assertion failed: shiftIsAllZeros(zeroPoint) && \"TRT only supports symmetric quantization\"")
    assert zp.search("TensorRT only supports symmetric quantization. The zero point for the QuantizeLinear/...")


def test_documented_outcomes_by_version():
    depthwise = {"cpg": 1, "weights": "per_channel", "activation": "int8", "output_qdq": True}
    swish, relu, none = (dict(depthwise, epilogue=e) for e in ("swish", "relu", "none"))
    assert CASE.expectation_for("tensorrt", "8.5.2.2", swish).outcome == "fail"
    assert CASE.expectation_for("tensorrt", "8.5.2.2", relu).outcome == "pass"
    assert CASE.expectation_for("tensorrt", "8.6.11.4", none).outcome == "fail"
    assert CASE.expectation_for("tensorrt", "10.3.0", swish) is None
    assert CASE.expectation_for("tensorrt", "10.3.0", dict(none, cpg=3)) is None  # NvInfer.h: no outcome
    uint8 = CASE.expectation_for("tensorrt", "10.3.0", dict(none, activation="uint8", cpg=4))
    assert (uint8.outcome, uint8.stage, uint8.signature) == ("fail", "load", "nonzero_zero_point")
