"""Q/DQ building blocks shared by the cases added after the seeds (005 onwards): exact scales, pairs, weights."""

from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np
import onnx

from generators.onnx_util import const, node

# Powers of two keep every product and sum exact in float32: inputs and weights are whole multiples of
# their scales, so a Q of an input is exact and a Conv output is a whole multiple of x_scale * w_scale.
X_SCALE = 2.0**-4
X_RANGE = 8  # |x| <= X_RANGE steps
W_RANGE = 8  # |w| <= W_RANGE, far inside [-127, 127]
HEADROOM = 100.0  # the largest |value| a Q sees lands at or below this many steps: no saturation

Graph = Tuple[List[onnx.NodeProto], List[onnx.TensorProto]]


def activations(rng: np.random.Generator, shape: Sequence[int], scale: float = X_SCALE) -> np.ndarray:
    """Float32 activations that are whole multiples of `scale`, within +-X_RANGE steps."""
    return (rng.integers(-X_RANGE, X_RANGE + 1, size=tuple(shape)) * scale).astype(np.float32)


def int8_weights(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    return rng.integers(-W_RANGE, W_RANGE + 1, size=tuple(shape)).astype(np.int8)


def channel_scales(rng: np.random.Generator, count: int) -> np.ndarray:
    """Per-channel weight scales 2^-4 .. 2^-7: far enough apart that a scale on the wrong axis shows."""
    return (2.0 ** -rng.integers(4, 8, size=count)).astype(np.float32)


def pow2_scale(peak: float) -> np.float32:
    """The power of two that puts `peak` at or below HEADROOM steps."""
    return np.float32(2.0 ** np.ceil(np.log2(max(peak, 1e-6) / HEADROOM)))


def qdq_pair(source: str, scale: float, prefix: str, output: str = "") -> Graph:
    """source -> Q -> DQ -> `output` (default `<prefix>_dq`) with an int8 zero point of 0; nodes and initializers."""
    inits = [const(f"{prefix}_scale", np.float32(scale)), const(f"{prefix}_zero_point", np.int8(0))]
    nodes = [
        node("QuantizeLinear", [source, f"{prefix}_scale", f"{prefix}_zero_point"], [f"{prefix}_q"]),
        node("DequantizeLinear", [f"{prefix}_q", f"{prefix}_scale", f"{prefix}_zero_point"],
             [output or f"{prefix}_dq"]),
    ]
    return nodes, inits


def weight_dq(name: str, w: np.ndarray, scale: np.ndarray, axis: int = 0) -> Graph:
    """An INT8 initializer `name` -> DequantizeLinear -> `<name>_dq`, per tensor (scalar scale) or per axis."""
    scale = np.asarray(scale, dtype=np.float32)
    inits = [const(name, w), const(f"{name}_scale", scale), const(f"{name}_zero_point", np.zeros_like(scale, np.int8))]
    attrs = {"axis": axis} if scale.ndim else {}
    nodes = [node("DequantizeLinear", [name, f"{name}_scale", f"{name}_zero_point"], [f"{name}_dq"], **attrs)]
    return nodes, inits


def dequantized(w: np.ndarray, scale: np.ndarray, axis: int = 0) -> np.ndarray:
    """What weight_dq computes, in float64 for the builders' own range estimates."""
    scale = np.asarray(scale, dtype=np.float64)
    if scale.ndim:
        shape = [1] * w.ndim
        shape[axis] = -1
        scale = scale.reshape(shape)
    return w.astype(np.float64) * scale


def float_op(op: str, inputs: Sequence[np.ndarray], **attrs) -> np.ndarray:
    """One float32 ONNX op evaluated by onnx.reference: the builders size their output scales with it."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"i{k}" for k in range(len(inputs))]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["o"], **attrs)], "float_op",
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in names],
        [helper.make_tensor_value_info("o", onnx.TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    feeds = {n: np.asarray(a, dtype=np.float32) for n, a in zip(names, inputs)}
    return np.asarray(ReferenceEvaluator(model).run(None, feeds)[0])


def conv_transpose(x: np.ndarray, w: np.ndarray, group: int, stride: int, pad: int) -> np.ndarray:
    """A float ConvTranspose in numpy, float64 then float32 (onnx.reference mishandles group > 1)."""
    n, c_in, h, wd = x.shape
    per_in, per_out, k = c_in // group, w.shape[1], w.shape[2]
    full = np.zeros((n, per_out * group, (h - 1) * stride + k, (wd - 1) * stride + k))
    xd, wdbl = x.astype(np.float64), w.astype(np.float64)
    for g in range(group):
        xs, ws = xd[:, g * per_in : (g + 1) * per_in], wdbl[g * per_in : (g + 1) * per_in]
        for kh in range(k):
            for kw in range(k):
                contrib = np.einsum("nchw,co->nohw", xs, ws[:, :, kh, kw])
                rows, cols = slice(kh, kh + h * stride, stride), slice(kw, kw + wd * stride, stride)
                full[:, g * per_out : (g + 1) * per_out, rows, cols] += contrib
    out = full[:, :, pad : full.shape[2] - pad, pad : full.shape[3] - pad]
    return out.astype(np.float32)
