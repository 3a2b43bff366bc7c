"""Case 022 `int4_matmulnbits_fusion`: ONNX Runtime's MatMulNBitsFusion changes blocked INT4 results (onnxsim#749)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.int4_matmulnbits_fusion import CASE
from generators import write
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import (
    assert_the_target_ends_the_graph,
    attrs,
    blocked,
    float_values,
    initializers,
    only,
)


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_the_target_is_the_compute_node_that_ends_the_graph(params):
    assert_the_target_ends_the_graph(write.build(CASE, params))


def test_opset_21_and_ir_10_carry_int4():
    model = write.build(CASE, {"form": "matmul_axis0", "activation": "float32"}).model
    assert (model.opset_import[0].version, model.ir_version) == (21, 10)


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_int4_layouts_compute_the_same_product(params):
    """Every form is x @ w for the same int4 w[K, N]; only the layout (axis 0, transB, Transpose) differs."""
    rep = write.build(CASE, params)
    dq = only(rep.model, "DequantizeLinear")
    assert attrs(dq)["axis"] == (0 if params["form"].endswith("axis0") else 1) and attrs(dq)["block_size"] == 32
    assert rep.tolerance_steps < 1
    got = expected_outputs(rep)[0]["y"].astype(np.float64)
    init = initializers(rep.model)
    axis = attrs(dq)["axis"]
    dense = float_values(init["w"]) * blocked(init["w_scale"], axis, 32).astype(np.float64)
    w_kn = dense if axis == 0 else dense.T
    assert np.allclose(got, rep.inputs["x"].astype(np.float64) @ w_kn, rtol=0, atol=2.0**-8)


def test_onnxruntime_expectations_cover_the_documented_versions_only():
    axis0 = {"form": "matmul_axis0", "activation": "float32"}
    assert CASE.expectation_for("onnxruntime", "1.31.1", axis0).outcome == "fail"
    assert CASE.expectation_for("onnxruntime", "1.31.1", axis0, {"graph_optimization_level": "ORT_DISABLE_ALL"}
                                ).outcome == "pass"
    assert CASE.expectation_for("onnxruntime", "1.31.1", dict(axis0, form="gemm_transb_axis1")).outcome == "pass"
    assert CASE.expectation_for("onnxruntime", "1.16.3", axis0) is None  # IR 10 is beyond it: no source speaks
