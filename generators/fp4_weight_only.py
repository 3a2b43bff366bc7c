"""Builder for case 019 `fp4_weight_only`: FP4 E2M1 weight Q/DQ into a Conv or MatMul, W4A16 or W4A4 (opset 23)."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.reproducer import Reproducer
from generators.typed_qdq import FP4_E2M1, fp4_values, typed_qdq, typed_weight_dq

OPSET = 23  # DequantizeLinear-23: float4e2m1 inputs; IR 11 carries the type
BLOCK = 16  # NVFP4's block size, and the only one TensorRT's FP4 DynamicQuantize takes
CHANNELS, OUT_CHANNELS, SPATIAL = 16, 32, 8
SEQ, K, N = 8, 64, 32
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
X_SCALE = np.float16(2.0**-3)  # activations on the FP4 grid times 2^-3: an FP4 Q/DQ of them is exact
FP4_ZERO = np.array(0, FP4_E2M1)  # the zero point's type makes the Q output FP4
TRT = {"strongly_typed": True, "int8": False, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the operator, the weight scale's granularity, W4A16 or W4A4."""
    return _OPS[params["op"]](rng, params["weights"] == "blocked", params["activations"] == "w4a4")


def _activations(rng: np.random.Generator, shape: tuple, w4a4: bool):
    """float16 activations on the FP4 grid (times 2^-3); with W4A4 an FP4 Q/DQ per tensor in front."""
    x = (fp4_values(rng, shape).astype(np.float32) * np.float32(X_SCALE)).astype(np.float16)
    if not w4a4:
        return x, [], [], "x"
    nodes, inits = typed_qdq("x", np.array(X_SCALE, np.float16), FP4_ZERO, "x")
    return x, nodes, inits, "x_dq"


def _fp4_weights(rng: np.random.Generator, shape: tuple, axis: int, blocked: bool):
    """FP4 weights -> DQ with a float16 scale: one per tensor (2^-4), or one per block of 16 along `axis`."""
    w = fp4_values(rng, shape)
    if not blocked:
        return typed_weight_dq("w", w, np.array(2.0**-4, np.float16))
    scale_shape = list(shape)
    scale_shape[axis] = shape[axis] // BLOCK
    scale = (2.0 ** -rng.integers(3, 6, size=scale_shape)).astype(np.float16)
    return typed_weight_dq("w", w, scale, axis=axis, block_size=BLOCK)


def _conv(rng: np.random.Generator, blocked: bool, w4a4: bool) -> Reproducer:
    """x -> [FP4 Q/DQ] -> Conv 3x3 (DQ(FP4 w[32, 16, 3, 3]), per tensor or blocked on axis 1) -> y."""
    x, nodes, inits, source = _activations(rng, (1, CHANNELS, SPATIAL, SPATIAL), w4a4)
    w_nodes, w_inits = _fp4_weights(rng, (OUT_CHANNELS, CHANNELS, 3, 3), 1, blocked)
    nodes = nodes + w_nodes + [node("Conv", [source, "w_dq"], ["y"], **CONV)]
    model = make_model("fp4_conv", nodes, [value_info("x", np.float16, x.shape)],
                       [value_info("y", np.float16, (1, OUT_CHANNELS, SPATIAL, SPATIAL))], inits + w_inits,
                       opset=OPSET)
    kind = f"blocked by {BLOCK} along the input channels" if blocked else "per tensor"
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"FP4 3x3 Conv {CHANNELS}->{OUT_CHANNELS}, weights {kind}, "
                      f"{'W4A4' if w4a4 else 'W4A16'}")


def _matmul(rng: np.random.Generator, blocked: bool, w4a4: bool) -> Reproducer:
    """x[1, 8, 64] -> [FP4 Q/DQ] -> MatMul(x, DQ(FP4 w[64, 32], per tensor or blocked on axis 0)) -> y."""
    x, nodes, inits, source = _activations(rng, (1, SEQ, K), w4a4)
    w_nodes, w_inits = _fp4_weights(rng, (K, N), 0, blocked)
    nodes = nodes + w_nodes + [node("MatMul", [source, "w_dq"], ["y"])]
    model = make_model("fp4_matmul", nodes, [value_info("x", np.float16, x.shape)],
                       [value_info("y", np.float16, (1, SEQ, N))], inits + w_inits, opset=OPSET)
    kind = f"blocked by {BLOCK} along K" if blocked else "per tensor"
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"FP4 MatMul {K}->{N} on {SEQ} tokens, weights {kind}, {'W4A4' if w4a4 else 'W4A16'}")


_OPS = {"conv": _conv, "matmul": _matmul}
