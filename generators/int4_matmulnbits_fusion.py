"""Builder for case 022 `int4_matmulnbits_fusion`: blocked INT4 weight-only MatMul/Gemm in four layouts (opset 21)."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import activations
from generators.reproducer import Reproducer
from generators.typed_qdq import INT4, small_integers, typed_weight_dq

OPSET = 21  # DequantizeLinear-21: int4 and block_size
TOKENS, K, N, BLOCK = 4, 128, 32, 32
# The float result is exact (power-of-two scales, activations on a 1/16 grid): an exact engine differs by 0 steps,
# MatMulNBits' int8 activations (accuracy level 4) by about half a step of max|y|/127.
TOLERANCE_STEPS = 0.25
TRT = {"strongly_typed": True, "int8": False, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the weight layout and operator, the activation type."""
    form, dtype = params["form"], np.dtype(params["activation"])
    x = activations(rng, (TOKENS, K)).astype(dtype)
    w = small_integers(rng, (K, N), -7, 7, INT4)  # [K, N]: the plain MatMul layout
    scale = (2.0 ** -rng.integers(3, 7, size=(K // BLOCK, N))).astype(dtype)
    nodes, inits = _FORMS[form](w, scale)
    model = make_model(f"int4_{form}", nodes, [value_info("x", dtype, x.shape)], [value_info("y", dtype, (TOKENS, N))],
                       inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT, tolerance_steps=TOLERANCE_STEPS,
                      notes=f"INT4 {form.replace('_', ' ')} {K}->{N}, blocks of {BLOCK} along K, {dtype} activations")


def _matmul_axis0(w: np.ndarray, scale: np.ndarray):
    """#749's form: DQ(w[K, N], axis 0) -> MatMul(x, .)."""
    nodes, inits = typed_weight_dq("w", w, scale, axis=0, block_size=BLOCK)
    return nodes + [node("MatMul", ["x", "w_dq"], ["y"])], inits


def _gemm_axis0(w: np.ndarray, scale: np.ndarray):
    """#749's form for a plain Gemm: DQ(w[K, N], axis 0) -> Gemm(x, .) with transB=0."""
    nodes, inits = typed_weight_dq("w", w, scale, axis=0, block_size=BLOCK)
    return nodes + [node("Gemm", ["x", "w_dq"], ["y"])], inits


def _gemm_transb_axis1(w: np.ndarray, scale: np.ndarray):
    """The same weights stored [N, K]: DQ(axis 1) -> Gemm(x, ., transB=1)."""
    nodes, inits = typed_weight_dq("w", np.ascontiguousarray(w.T), np.ascontiguousarray(scale.T), axis=1,
                                   block_size=BLOCK)
    return nodes + [node("Gemm", ["x", "w_dq"], ["y"], transB=1)], inits


def _matmul_axis1_transpose(w: np.ndarray, scale: np.ndarray):
    """onnxsim's workaround: DQ(w[N, K], axis 1) -> Transpose -> MatMul(x, .)."""
    nodes, inits = typed_weight_dq("w", np.ascontiguousarray(w.T), np.ascontiguousarray(scale.T), axis=1,
                                   block_size=BLOCK)
    return nodes + [node("Transpose", ["w_dq"], ["w_kn"], perm=[1, 0]), node("MatMul", ["x", "w_kn"], ["y"])], inits


_FORMS = {"matmul_axis0": _matmul_axis0, "gemm_axis0": _gemm_axis0, "gemm_transb_axis1": _gemm_transb_axis1,
          "matmul_axis1_transpose": _matmul_axis1_transpose}
