"""Builder for case 015 `fp8_qdq`: FP8 E4M3 Q/DQ on MatMul, Gemm and Conv, per tensor or per channel (opset 19)."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, channel_scales
from generators.reproducer import Reproducer
from generators.typed_qdq import FP8_E4M3, small_integers, typed_qdq, typed_weight_dq

OPSET = 19  # QuantizeLinear-19/DequantizeLinear-19: float8e4m3fn, per tensor or per axis (`axis`, a 1-D scale)
SEQ, K, N = 8, 32, 16
CHANNELS, OUT_CHANNELS, SPATIAL = 8, 16, 6
W_SCALE = 2.0**-5
W_RANGE = 8  # whole numbers up to 8 are exact in E4M3 (3 mantissa bits), and so is x / X_SCALE (at most 8)
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
FP8_ZERO = np.array(0, FP8_E4M3)  # opset 19 has no output_dtype: the zero point's type makes the Q output FP8
TRT = {"strongly_typed": True, "int8": False, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the operator and the weight granularity."""
    return _OPS[params["op"]](rng, params["weights"] == "per_channel")


def _fp8_weights(rng: np.random.Generator, shape: tuple, per_channel: bool, count: int, axis: int):
    """FP8 weights (whole numbers in [-8, 8]) -> DQ, per tensor (2^-5) or per output channel (2^-4 .. 2^-7)."""
    w = small_integers(rng, shape, -W_RANGE, W_RANGE, FP8_E4M3)
    scale = channel_scales(rng, count) if per_channel else np.array(W_SCALE, np.float32)
    zero_point = np.zeros(scale.shape, FP8_E4M3)
    return typed_weight_dq("w", w, scale, zero_point, axis=axis if per_channel else None)


def _matmul(rng: np.random.Generator, per_channel: bool) -> Reproducer:
    """x -> FP8 Q/DQ -> MatMul(x, DQ(FP8 w[K, N], axis 1)) -> y."""
    x = activations(rng, (1, SEQ, K))
    nodes, inits = typed_qdq("x", np.array(X_SCALE, np.float32), FP8_ZERO, "x")
    w_nodes, w_inits = _fp8_weights(rng, (K, N), per_channel, N, axis=1)
    nodes += w_nodes + [node("MatMul", ["x_dq", "w_dq"], ["y"])]
    model = make_model("fp8_matmul", nodes, [value_info("x", np.float32, x.shape)],
                       [value_info("y", np.float32, (1, SEQ, N))], inits + w_inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT, notes=f"FP8 E4M3 MatMul {K}->{N} on {SEQ} tokens")


def _gemm(rng: np.random.Generator, per_channel: bool) -> Reproducer:
    """x -> FP8 Q/DQ -> Gemm(x, DQ(FP8 w[N, K], axis 0), transB=1) -> y."""
    x = activations(rng, (SEQ, K))
    nodes, inits = typed_qdq("x", np.array(X_SCALE, np.float32), FP8_ZERO, "x")
    w_nodes, w_inits = _fp8_weights(rng, (N, K), per_channel, N, axis=0)
    nodes += w_nodes + [node("Gemm", ["x_dq", "w_dq"], ["y"], transB=1)]
    model = make_model("fp8_gemm", nodes, [value_info("x", np.float32, x.shape)],
                       [value_info("y", np.float32, (SEQ, N))], inits + w_inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT, notes=f"FP8 E4M3 Gemm(transB=1) {K}->{N}")


def _conv(rng: np.random.Generator, per_channel: bool) -> Reproducer:
    """x -> FP8 Q/DQ -> Conv 3x3 (DQ(FP8 w), axis 0) -> y."""
    x = activations(rng, (1, CHANNELS, SPATIAL, SPATIAL))
    nodes, inits = typed_qdq("x", np.array(X_SCALE, np.float32), FP8_ZERO, "x")
    w_nodes, w_inits = _fp8_weights(rng, (OUT_CHANNELS, CHANNELS, 3, 3), per_channel, OUT_CHANNELS, axis=0)
    nodes += w_nodes + [node("Conv", ["x_dq", "w_dq"], ["y"], **CONV)]
    model = make_model("fp8_conv", nodes, [value_info("x", np.float32, x.shape)],
                       [value_info("y", np.float32, (1, OUT_CHANNELS, SPATIAL, SPATIAL))], inits + w_inits,
                       opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"FP8 E4M3 3x3 Conv {CHANNELS}->{OUT_CHANNELS}")


_OPS = {"matmul": _matmul, "gemm": _gemm, "conv": _conv}
