"""Builder for case 013 `fp16_scale_qdq`: INT8 Q/DQ with float16 scales on float16 activations (opset 19)."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import const, make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, channel_scales, int8_weights
from generators.reproducer import Reproducer
from generators.typed_qdq import typed_qdq, typed_weight_dq

OPSET = 19  # DequantizeLinear-19: "'x_scale' determines the output type", float16 among them
F16 = np.float16
CHANNELS, SPATIAL = 8, 6
SEQ, K, N = 8, 32, 16
W_SCALE = 2.0**-5
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
# #4832's chain between the activation Q and its DQ: Reshape, Transpose, Reshape, Slice.
CHAIN_IN = (1, 16, 8, 8)
TOKENS = np.array([1, 16, 64], dtype=np.int64)
GRID = np.array([1, 8, 8, 16], dtype=np.int64)
KEPT = 8  # channels the Slice keeps of the last axis
# float16 activations and scales; strongly typed where the version has it (#4832 built with --stronglyTyped),
# INT8 and FP16 precision flags where it does not.
TRT = {"strongly_typed": True, "int8": True, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the graph (Conv, MatMul, or #4832's DQ after Reshape/Transpose/Reshape/Slice) and its weights."""
    return _GRAPHS[params["graph"]](rng, params["weights"] == "per_channel")


def _weight_scale(rng: np.random.Generator, per_channel: bool, count: int) -> np.ndarray:
    return channel_scales(rng, count).astype(F16) if per_channel else np.array(W_SCALE, F16)


def _conv(rng: np.random.Generator, per_channel: bool) -> Reproducer:
    """x(f16) -> Q/DQ (f16 scale) -> Conv 3x3 (INT8 weights -> DQ, f16 scale, axis 0) -> y(f16)."""
    shape = (1, CHANNELS, SPATIAL, SPATIAL)
    x = activations(rng, shape).astype(F16)  # whole multiples of X_SCALE: exact in float16
    w = int8_weights(rng, (CHANNELS, CHANNELS, 3, 3))
    nodes, inits = typed_qdq("x", np.array(X_SCALE, F16), np.int8(0), "x")
    w_nodes, w_inits = typed_weight_dq("w", w, _weight_scale(rng, per_channel, CHANNELS), np.zeros(
        CHANNELS if per_channel else (), np.int8), axis=0 if per_channel else None)
    nodes += w_nodes + [node("Conv", ["x_dq", "w_dq"], ["y"], **CONV)]
    model = make_model("fp16_scale_conv", nodes, [value_info("x", F16, shape)], [value_info("y", F16, shape)],
                       inits + w_inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"3x3 Conv {CHANNELS}->{CHANNELS} in float16, INT8 Q/DQ with float16 scales")


def _matmul(rng: np.random.Generator, per_channel: bool) -> Reproducer:
    """x(f16) -> Q/DQ (f16 scale) -> MatMul (INT8 weights [K, N] -> DQ, f16 scale, axis 1) -> y(f16)."""
    x = activations(rng, (1, SEQ, K)).astype(F16)
    w = int8_weights(rng, (K, N))
    nodes, inits = typed_qdq("x", np.array(X_SCALE, F16), np.int8(0), "x")
    w_nodes, w_inits = typed_weight_dq("w", w, _weight_scale(rng, per_channel, N), np.zeros(
        N if per_channel else (), np.int8), axis=1 if per_channel else None)
    nodes += w_nodes + [node("MatMul", ["x_dq", "w_dq"], ["y"])]
    model = make_model("fp16_scale_matmul", nodes, [value_info("x", F16, x.shape)],
                       [value_info("y", F16, (1, SEQ, N))], inits + w_inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"MatMul {K}->{N} on {SEQ} tokens in float16, INT8 Q/DQ with float16 scales")


def _dq_cast_after_reshape_slice(rng: np.random.Generator, _per_channel: bool) -> Reproducer:
    """x(f16) -> Q (f16 scale) -> Reshape -> Transpose -> Reshape -> Slice -> DQ (scalar f16 scale) -> Cast(f32) -> y.

    #4832's Myelin node: a dequantize of an i8[] that went through Reshape/Transpose/Reshape/Slice, a scalar f16
    scale, an f32 output; here the f32 comes from a Cast after the DQ (DequantizeLinear-19 outputs the scale's type).
    """
    x = activations(rng, CHAIN_IN).astype(F16)
    scale = np.array(X_SCALE, F16)
    inits = [const("x_scale", scale), const("x_zero_point", np.int8(0)), const("tokens", TOKENS), const("grid", GRID),
             const("starts", np.array([0], np.int64)), const("ends", np.array([KEPT], np.int64)),
             const("axes", np.array([3], np.int64))]
    nodes = [
        node("QuantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_q"]),
        node("Reshape", ["x_q", "tokens"], ["x_tokens"]),
        node("Transpose", ["x_tokens"], ["x_t"], perm=[0, 2, 1]),
        node("Reshape", ["x_t", "grid"], ["x_grid"]),
        node("Slice", ["x_grid", "starts", "ends", "axes"], ["x_slice"]),
        node("DequantizeLinear", ["x_slice", "x_scale", "x_zero_point"], ["x_dq"]),
        node("Cast", ["x_dq"], ["y"], to=1),  # FLOAT
    ]
    out_shape = (1, 8, 8, KEPT)
    model = make_model("fp16_scale_dq_after_reshape_slice", nodes, [value_info("x", F16, CHAIN_IN)],
                       [value_info("y", np.float32, out_shape)], inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_x_dq",), output_steps={"y": X_SCALE}, trt=TRT,
                      notes="#4832's pattern: an INT8 activation through Reshape/Transpose/Reshape/Slice, then a DQ "
                      "with a scalar float16 scale and a Cast to float32")


_GRAPHS = {"conv": _conv, "matmul": _matmul, "dq_cast_after_reshape_slice": _dq_cast_after_reshape_slice}
