"""Case 015 `fp8_qdq`: float8e4m3fn in Q/DQ (opset 19, onnx#4805) and TensorRT-RTX's FP8 GEMM rule (SM89 on)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cases import slug
from cases.fp8_qdq import CASE
from generators import write
from tests.cases.per_case.helpers import float_values, initializers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_fp8_q_dq_carry_float8e4m3fn_and_exact_values(params):
    rep = write.build(CASE, params)
    init = initializers(rep.model)
    fp8 = np.dtype(ml_dtypes.float8_e4m3fn)
    assert init["w"].dtype == fp8 and init["x_zero_point"].dtype == fp8 and init["w_zero_point"].dtype == fp8
    assert np.array_equal(float_values(init["w"]), np.rint(float_values(init["w"])))  # whole numbers: exact in E4M3
    assert np.all(np.abs(rep.inputs["x"] / init["x_scale"]) <= 8)  # x / scale is a whole number <= 8: exact too
    per_channel = params["weights"] == "per_channel"
    assert (init["w_scale"].ndim == 1) is per_channel


def test_architecture_expectations_name_a_target_and_cite_the_rtx_pages():
    """FP8 GEMM: SM89 and later; nothing for the default target or for convolutions."""
    rtx = [e for e in CASE.expectations if e.engine == "tensorrt-rtx"]
    assert rtx and all(e.when.get("target") and "default" not in e.when["target"] for e in rtx)
    assert all(e.source.startswith("https://docs.nvidia.com/deeplearning/tensorrt-rtx/") for e in rtx)
    assert {e.when["target"] for e in rtx if e.outcome == "fail"} == {("SM75", "SM80", "SM86")}
    assert all(e.where == {"op": ("matmul", "gemm")} for e in rtx)
