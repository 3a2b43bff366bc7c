"""Case 020 `nvfp4_two_level_scales`: NVFP4 with two-level scales (pytorch/TensorRT#4196, Model-Optimizer#2333)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cases import slug
from cases.nvfp4_two_level_scales import CASE
from generators import write
from generators.typed_qdq import FP4_GRID
from tests.cases.per_case.helpers import assert_the_target_ends_the_graph, initializers

TRT_OPS = {"TRT_FP4DynamicQuantize"}  # TensorRT's custom op (trt domain) that neither onnx.reference nor ORT runs


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_the_target_is_the_compute_node_that_ends_the_graph(params):
    rep = write.build(CASE, params)
    assert_the_target_ends_the_graph(rep)
    assert {n.op_type for n in rep.model.graph.node if n.domain == "trt"} <= TRT_OPS


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_nvfp4_weights_have_fp8_block_scales_under_a_second_level_scale(params):
    rep = write.build(CASE, params)
    init = initializers(rep.model)
    assert init["w"].dtype == np.dtype(ml_dtypes.float4_e2m1fn) and init["w"].shape == (32, 64)
    assert init["w_scale_fp8"].dtype == np.dtype(ml_dtypes.float8_e4m3fn) and init["w_scale_fp8"].shape == (32, 4)
    assert init["w_scale_2"].dtype == np.dtype(params["double_scale"])
    ops = [n.op_type for n in rep.model.graph.node]
    assert ("Cast" in ops) is (params["double_scale"] == "float32")  # #513: float32 DQ outputs, then float16
    dynamic = params["activations"] == "dynamic"
    assert ("TRT_FP4DynamicQuantize" in ops) is dynamic
    if dynamic:  # each block of 16 holds +-6 times its power of two: NVFP4's dynamic quantization keeps it exactly
        blocks = rep.inputs["x"].astype(np.float64).reshape(-1, 16)
        unit = np.max(np.abs(blocks), axis=1, keepdims=True) / 6
        assert np.all(np.log2(unit) == np.round(np.log2(unit))) and set(np.unique(blocks / unit)) <= set(FP4_GRID)


def test_architecture_expectations_follow_the_rtx_quantized_types_page():
    dyn = {"double_scale": "float16", "activations": "dynamic"}
    assert CASE.expectation_for("tensorrt-rtx", "1.5.0.114", dyn, {"target": "SM86"}).stage == "build"


def test_tensorrt_expectations_say_what_the_threads_say():
    dyn = {"double_scale": "float16", "activations": "dynamic"}
    assert CASE.expectation_for("tensorrt", "10.13.3.9", dyn).signature == "double_quant_scale_fp32"
    assert CASE.expectation_for("tensorrt", "10.16.1.11", dyn).signature == "myelin_pw_vtx_analyzer"
    assert CASE.expectation_for("tensorrt", "10.8.0.43", dyn).source.endswith("Model-Optimizer/pull/2333")
    assert CASE.expectation_for("tensorrt", "11.0.0.114", dyn) is None
