"""Case 014 `int4_blocked_weights`: weight-only INT4 MatMul and Gemm with opset-21 blocked quantization (onnx#5812)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cases import slug
from cases.int4_blocked_weights import CASE
from generators import write
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import attrs, blocked, float_values, initializers, only


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_int4_weights_are_blocked_along_k_and_the_reference_matches_numpy(params):
    """The DQ is blocked on the K axis with the swept block size; onnx.reference's output equals a numpy
    x @ dequantized(w) with every block scale (and uint4 zero point) repeated block_size times."""
    rep = write.build(CASE, params)
    init = initializers(rep.model)
    dq = only(rep.model, "DequantizeLinear")
    gemm, block = params["op"] == "gemm", params["block_size"]
    axis = 1 if gemm else 0
    assert attrs(dq) == {"axis": axis, "block_size": block}
    w = init["w"]
    assert w.dtype == (ml_dtypes.int4 if params["weights"] == "int4" else ml_dtypes.uint4)
    assert init["w_scale"].shape[axis] == w.shape[axis] // block
    assert init["w_scale"].dtype == np.dtype(params["activation"])
    zero_point = init.get("w_zero_point")
    assert (zero_point is None) is (params["weights"] == "int4")
    values = float_values(w) - (float_values(blocked(zero_point, axis, block)) if zero_point is not None else 0)
    dense = values * blocked(init["w_scale"], axis, block).astype(np.float64)
    want = rep.inputs["x"].astype(np.float64) @ (dense.T if gemm else dense)
    got = expected_outputs(rep)[0]["y"].astype(np.float64)
    assert np.max(np.abs(got - want)) <= 2.0**-10 * max(1.0, float(np.max(np.abs(want))))


def test_architecture_expectations_name_a_target_and_cite_the_rtx_pages():
    """INT4 WoQ GEMM: not on SM75; nothing for the default target."""
    rtx = [e for e in CASE.expectations if e.engine == "tensorrt-rtx"]
    assert rtx and all(e.when.get("target") and "default" not in e.when["target"] for e in rtx)
    assert all(e.source.startswith("https://docs.nvidia.com/deeplearning/tensorrt-rtx/") for e in rtx)
    sm75 = CASE.expectation_for("tensorrt-rtx", "1.7.1.116", next(iter(CASE.variants())), {"target": "SM75"})
    assert sm75 is not None and sm75.outcome == "fail"
    assert CASE.expectation_for("tensorrt-rtx", "1.7.1.116", next(iter(CASE.variants())), {"target": "default"}) is None
