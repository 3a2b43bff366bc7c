"""Case 021 `mxfp8_block_scales`: ModelOpt's MXFP8 ops (qdq_utils.py) against ONNX's opset-24 form."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from cases import slug
from cases.mxfp8_block_scales import CASE
from generators import write
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import assert_the_target_ends_the_graph, attrs, float_values, initializers, only

# TensorRT's custom ops (trt domain) that neither onnx.reference nor ONNX Runtime runs: a numpy reference.
TRT_OPS = {"TRT_MXFP8DequantizeLinear", "TRT_MXFP8DynamicQuantize"}


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_the_target_is_the_compute_node_that_ends_the_graph(params):
    rep = write.build(CASE, params)
    assert_the_target_ends_the_graph(rep)
    assert {n.op_type for n in rep.model.graph.node if n.domain == "trt"} <= TRT_OPS


def test_opset_24_carries_float8e8m0_and_modelopts_form_stays_on_21():
    """float8e8m0 needs opset 24 (IR 12); ModelOpt's custom-op form is written at opset 21 (IR 10)."""
    onnx_form = write.build(CASE, {"form": "onnx_e8m0", "activations": "weight_only"}).model
    modelopt = write.build(CASE, {"form": "trt_custom", "activations": "weight_only"}).model
    assert (onnx_form.opset_import[0].version, onnx_form.ir_version) == (24, 12)
    assert (modelopt.opset_import[0].version, modelopt.ir_version) == (21, 10)


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_mxfp8_scales_are_e8m0_in_onnx_and_uint8_bits_in_modelopts_form(params):
    rep = write.build(CASE, params)
    init = initializers(rep.model)
    assert init["w"].dtype == np.dtype(ml_dtypes.float8_e4m3fn) and init["w_scale"].shape == (32, 2)
    if params["form"] == "onnx_e8m0":
        assert init["w_scale"].dtype == np.dtype(ml_dtypes.float8_e8m0fnu)
        assert attrs(only(rep.model, "DequantizeLinear"))["block_size"] == 32
    else:  # 2^(bits - 127), as ModelOpt stores E8M0
        assert init["w_scale"].dtype == np.uint8 and set(np.unique(init["w_scale"])) <= {121, 122, 123}
        dense = float_values(init["w"]) * np.repeat(2.0 ** (init["w_scale"].astype(np.float64) - 127), 32, axis=1)
        want = (rep.inputs["x"].astype(np.float64) @ dense.T).astype(np.float16)
        assert np.array_equal(expected_outputs(rep)[0]["y"], want)


def test_architecture_expectations_follow_the_rtx_quantized_types_page():
    """ModelOpt's MXFP8 follows the FP8 GEMM rule (SM89 on)."""
    trt = {"form": "trt_custom", "activations": "weight_only"}
    assert CASE.expectation_for("tensorrt-rtx", "1.7.1.116", trt, {"target": "SM86"}).outcome == "fail"
    assert CASE.expectation_for("tensorrt-rtx", "1.7.1.116", trt, {"target": "SM89"}).outcome == "pass"
    assert CASE.expectation_for("tensorrt-rtx", "1.7.1.116", dict(trt, form="onnx_e8m0"), {"target": "SM89"}) is None


def test_the_e8m0_signature_asks_for_a_scale_initializer():
    said = ("ONNX parse failed: Failed to import initializer: In node -1 with name:  and operator:  (parseGraph): "
            "UNSUPPORTED_NODE: Assertion failed: ctx->getWeightsContext().convertOnnxWeights(initializer, &weights): "
            "Failed to import initializer: {}\n\n[WARNING] In JIT build, strongly typed is enabled by default.")
    e8m0 = CASE.signature("rtx_e8m0_initializer")
    assert e8m0.search(said.format("w_scale"))
    assert not e8m0.search(said.format("w"))  # TensorRT-RTX 1.4.0.76 on seed 020's uint4 weights
    assert not e8m0.search(said.format("x"))  # on ONNX's e5m2 DequantizeLinear node test's input
