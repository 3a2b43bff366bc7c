"""Case 019 `fp4_weight_only`: FP4 E2M1 weight-only Q/DQ (W4A16) builds but silently runs in FP32 (#4833)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cases import slug
from cases.fp4_weight_only import CASE
from generators import write
from generators.reference import expected_outputs
from generators.typed_qdq import FP4_GRID
from tests.cases.per_case.helpers import assert_the_target_ends_the_graph, attrs, blocked, float_values, initializers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_the_target_is_the_compute_node_that_ends_the_graph(params):
    assert_the_target_ends_the_graph(write.build(CASE, params))


def test_opset_23_and_ir_11_carry_float4e2m1():
    model = write.build(CASE, {"op": "conv", "weights": "per_tensor", "activations": "w4a16"}).model
    assert (model.opset_import[0].version, model.ir_version) == (23, 11)


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_fp4_weights_are_float4e2m1_and_the_reference_is_the_dequantized_op(params):
    """The weights are FP4 E2M1 on its grid; W4A16 has no Q/DQ on the activations, W4A4 an FP4 one; onnx.reference's
    MatMul equals x @ dequantized(w) computed in numpy."""
    rep = write.build(CASE, params)
    init = initializers(rep.model)
    w = init["w"]
    assert w.dtype == np.dtype(ml_dtypes.float4_e2m1fn) and set(np.unique(float_values(w))) <= set(FP4_GRID)
    dq = next(n for n in rep.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w")
    assert ("block_size" in attrs(dq)) is (params["weights"] == "blocked")
    w4a4 = params["activations"] == "w4a4"
    assert ("QuantizeLinear" in {n.op_type for n in rep.model.graph.node}) is w4a4
    if params["op"] == "matmul":
        dense = float_values(w) * (blocked(init["w_scale"], 0, 16) if params["weights"] == "blocked"
                                   else float(init["w_scale"]))
        want = rep.inputs["x"].astype(np.float64) @ dense
        got = expected_outputs(rep)[0]["y"].astype(np.float64)
        assert np.max(np.abs(got - want)) <= 2.0**-8 * max(1.0, float(np.max(np.abs(want))))


def test_architecture_expectations_follow_the_rtx_quantized_types_page():
    """FP4 GEMMs: refused below Blackwell, built on SM120."""
    w4a16 = {"op": "matmul", "weights": "per_tensor", "activations": "w4a16"}
    w4a4 = dict(w4a16, activations="w4a4")
    assert CASE.expectation_for("tensorrt-rtx", "1.7.1.116", w4a16, {"target": "SM89"}).outcome == "fail"
    assert CASE.expectation_for("tensorrt-rtx", "1.7.1.116", w4a16, {"target": "SM120"}).outcome == "pass"
    assert CASE.expectation_for("tensorrt-rtx", "1.7.1.116", w4a4, {"target": "SM120"}) is None
    assert CASE.expectation_for("tensorrt-rtx", "1.7.1.116", w4a16, {"target": "default"}) is None


def test_tensorrt_expectations_say_what_the_threads_say():
    conv = {"op": "conv", "weights": "per_tensor", "activations": "w4a16"}
    assert CASE.expectation_for("tensorrt", "10.16.1.11", conv).outcome == "not_int8"  # #4833: silently FP32
    assert CASE.expectation_for("tensorrt", "11.2.1.2", dict(conv, activations="w4a4")).signature == \
        "fp4_type_not_supported"
    assert CASE.expectation_for("tensorrt", "8.6.0", conv).stage == "load"
