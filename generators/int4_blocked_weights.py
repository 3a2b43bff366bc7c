"""Builder for case 014 `int4_blocked_weights`: weight-only INT4/UINT4 MatMul and Gemm, blocked along K (opset 21)."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import activations
from generators.reproducer import Reproducer
from generators.typed_qdq import INT4, UINT4, small_integers, typed_weight_dq

OPSET = 21  # DequantizeLinear-21: int4/uint4 inputs and block_size; IR 10 carries the 4-bit types
SEQ, K, N = 4, 256, 32  # K holds two blocks of the largest block size
UINT4_ZERO_POINTS = (6, 9)  # uint4's per-block zero points: around the middle of [0, 15], never 0
# Weight-only: float activations, 4-bit weights. Strongly typed where the version has it; FP16 where it does not.
TRT = {"strongly_typed": True, "int8": False, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: MatMul or Gemm(transB=1), int4 or uint4 weights, the block size, the activation type."""
    return _OPS[params["op"]](rng, params["weights"], int(params["block_size"]), np.dtype(params["activation"]))


def _blocked_weights(rng: np.random.Generator, shape: tuple, axis: int, block: int, kind: str, dtype: np.dtype):
    """4-bit weights, one power-of-two scale per block of `block` along `axis` (2^-4 .. 2^-7), and uint4 zero points."""
    scale_shape = list(shape)
    scale_shape[axis] = shape[axis] // block
    scale = (2.0 ** -rng.integers(4, 8, size=scale_shape)).astype(dtype)
    if kind == "int4":
        return small_integers(rng, shape, -7, 7, INT4), scale, None
    zero_point = small_integers(rng, scale_shape, *UINT4_ZERO_POINTS, UINT4)
    return small_integers(rng, shape, 0, 15, UINT4), scale, zero_point


def _matmul(rng: np.random.Generator, kind: str, block: int, dtype: np.dtype) -> Reproducer:
    """x[1, SEQ, K] -> MatMul(x, DQ(w[K, N], blocked on axis 0)) -> y: what ModelOpt's INT4 AWQ writes for a Linear."""
    x = activations(rng, (1, SEQ, K)).astype(dtype)
    w, scale, zero_point = _blocked_weights(rng, (K, N), 0, block, kind, dtype)
    nodes, inits = typed_weight_dq("w", w, scale, zero_point, axis=0, block_size=block)
    nodes.append(node("MatMul", ["x", "w_dq"], ["y"]))
    model = make_model("int4_blocked_matmul", nodes, [value_info("x", dtype, x.shape)],
                       [value_info("y", dtype, (1, SEQ, N))], inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"MatMul {K}->{N}, {kind} weights in blocks of {block} along K (axis 0), "
                      f"{dtype} activations")


def _gemm(rng: np.random.Generator, kind: str, block: int, dtype: np.dtype) -> Reproducer:
    """x[SEQ, K] -> Gemm(x, DQ(w[N, K], blocked on axis 1), transB=1) -> y."""
    x = activations(rng, (SEQ, K)).astype(dtype)
    w, scale, zero_point = _blocked_weights(rng, (N, K), 1, block, kind, dtype)
    nodes, inits = typed_weight_dq("w", w, scale, zero_point, axis=1, block_size=block)
    nodes.append(node("Gemm", ["x", "w_dq"], ["y"], transB=1))
    model = make_model("int4_blocked_gemm", nodes, [value_info("x", dtype, x.shape)],
                       [value_info("y", dtype, (SEQ, N))], inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"Gemm(transB=1) {K}->{N}, {kind} weights in blocks of {block} along K (axis 1), "
                      f"{dtype} activations")


_OPS = {"matmul": _matmul, "gemm": _gemm}
