"""Case 023 `qdq_scale_dtype_mismatch`: opset-23 Q/DQ whose scale type differs from the output's (onnxruntime#32719)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.qdq_scale_dtype_mismatch import CASE
from generators import write
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import assert_the_target_ends_the_graph, attrs, initializers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_the_target_is_the_compute_node_that_ends_the_graph(params):
    assert_the_target_ends_the_graph(write.build(CASE, params))


def test_opset_23_and_ir_11_carry_a_scale_type_apart_from_the_data_type():
    model = write.build(CASE, {"op": "matmul", "scale": "float32"}).model
    assert (model.opset_import[0].version, model.ir_version) == (23, 11)


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_mixed_scales_are_float32_with_an_output_dtype_and_compute_the_exact_product(params):
    """Either scale type gives the same numbers: the activations are whole multiples of their scale, so the Q/DQ is
    exact and the MatMul is x @ (w * 2^-5)."""
    rep = write.build(CASE, params)
    init = initializers(rep.model)
    mixed = params["scale"] == "float32"
    assert init["x_scale"].dtype == init["w_scale"].dtype == np.dtype(params["scale"])
    dqs = [n for n in rep.model.graph.node if n.op_type == "DequantizeLinear"]
    assert all(("output_dtype" in attrs(n)) is mixed for n in dqs)
    got = expected_outputs(rep)[0]["y"]
    assert got.dtype == np.float16
    if params["op"] == "matmul":
        want = rep.inputs["x"].astype(np.float64) @ (init["w"].astype(np.float64) * 2.0**-5)
        assert np.allclose(got.astype(np.float64), want, rtol=2.0**-10, atol=2.0**-12)


def test_onnxruntime_expectations_cover_the_documented_versions_only():
    fp32 = {"op": "matmul", "scale": "float32"}
    assert CASE.expectation_for("onnxruntime", "1.31.1", fp32).stage == "run"
    assert CASE.expectation_for("onnxruntime", "1.16.3", fp32) is None
    assert CASE.expectation_for("onnxruntime", "1.31.1", dict(fp32, scale="float16")) is None
