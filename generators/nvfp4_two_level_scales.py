"""Builder for case 020 `nvfp4_two_level_scales`: NVFP4 MatMul with FP8 block scales under a second-level scale."""

from __future__ import annotations

from typing import Dict

import numpy as np
import onnx

from generators.onnx_util import const, make_model, node, value_info
from generators.reproducer import Reproducer
from generators.typed_qdq import FP4_GRID, FP8_E4M3, fp4_values

OPSET = 23  # float4e2m1 in DequantizeLinear
TRT_DOMAIN = "trt"  # TensorRT's custom ONNX ops (TRT_FP4DynamicQuantize), as ModelOpt writes them
BLOCK = 16
SEQ, K, N = 8, 64, 32
W_SCALE_2 = 2.0**-6  # the weights' second-level (per-tensor) scale
X_SCALE_2 = 2.0**-6  # the activations' double-quantization scale
TRT = {"strongly_typed": True, "int8": False, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the second-level scale's type, weight-only or dynamically quantized activations."""
    scale_type = np.dtype(params["double_scale"])
    dynamic = params["activations"] == "dynamic"
    x = _exact_activations(rng)
    nodes, inits, w_dense = _nvfp4_weights(rng, scale_type)
    source = "x"
    if dynamic:
        x_nodes, x_inits = _dynamic_activations(scale_type)
        nodes, inits, source = x_nodes + nodes, x_inits + inits, "x_dq16"
    nodes += [node("Transpose", ["w_dq16"], ["w_t"], perm=[1, 0]), node("MatMul", [source, "w_t"], ["y"])]
    extra = {TRT_DOMAIN: 1} if dynamic else None
    model = make_model("nvfp4_matmul", nodes, [value_info("x", np.float16, x.shape)],
                       [value_info("y", np.float16, (1, SEQ, N))], inits, opset=OPSET, extra_opsets=extra)
    if dynamic:
        model.graph.value_info.extend(_dynamic_outputs())
    reference = _float_matmul(w_dense) if dynamic else None
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT, reference=reference,
                      notes=f"NVFP4 MatMul {K}->{N}, second-level scales {scale_type}, "
                      f"{'TRT_FP4DynamicQuantize activations' if dynamic else 'float16 activations (weight-only)'}")


def _nvfp4_weights(rng: np.random.Generator, scale_type: np.dtype):
    """FP4 w[N, K] <- DQ(FP8 block scales, second-level scale) in blocks of 16 along K; then float16 (`w_dq16`)."""
    w = fp4_values(rng, (N, K))
    block_scales = (2.0 ** rng.integers(-2, 3, size=(N, K // BLOCK))).astype(np.float32).astype(FP8_E4M3)
    second = np.array(W_SCALE_2, scale_type)
    nodes = [node("DequantizeLinear", ["w_scale_fp8", "w_scale_2"], ["w_scale"]),
             node("DequantizeLinear", ["w", "w_scale"], [_dq_output("w", scale_type)], axis=-1, block_size=BLOCK)]
    nodes += _to_float16("w", scale_type)
    inits = [const("w", w), const("w_scale_fp8", block_scales), const("w_scale_2", second)]
    dense = w.astype(np.float64) * np.repeat(block_scales.astype(np.float64) * W_SCALE_2, BLOCK, axis=1)
    return nodes, inits, dense


def _dynamic_activations(scale_type: np.dtype):
    """x -> TRT_FP4DynamicQuantize -> (FP4 x, FP8 block scales) -> two-level DQ -> float16 (`x_dq16`)."""
    fp8 = onnx.helper.np_dtype_to_tensor_dtype(FP8_E4M3)
    nodes = [
        node("TRT_FP4DynamicQuantize", ["x", "x_scale_2"], ["x_fp4", "x_scale_fp8"], domain=TRT_DOMAIN, axis=-1,
             block_size=BLOCK, scale_type=fp8),
        node("DequantizeLinear", ["x_scale_fp8", "x_scale_2"], ["x_scale"]),
        node("DequantizeLinear", ["x_fp4", "x_scale"], [_dq_output("x", scale_type)], axis=-1, block_size=BLOCK),
    ]
    return nodes + _to_float16("x", scale_type), [const("x_scale_2", np.array(X_SCALE_2, scale_type))]


def _dynamic_outputs():
    """The custom op's output types, so that the checker can infer the DequantizeLinear nodes after it."""
    fp4, fp8 = (onnx.helper.np_dtype_to_tensor_dtype(np.dtype(t)) for t in ("float4_e2m1fn", FP8_E4M3))
    return [onnx.helper.make_tensor_value_info("x_fp4", fp4, [1, SEQ, K]),
            onnx.helper.make_tensor_value_info("x_scale_fp8", fp8, [1, SEQ, K // BLOCK])]


def _dq_output(prefix: str, scale_type: np.dtype) -> str:
    """The DQ's output: already float16 (`<prefix>_dq16`) with float16 scales, else float32 (`<prefix>_dq`)."""
    return f"{prefix}_dq16" if scale_type == np.float16 else f"{prefix}_dq"


def _to_float16(prefix: str, scale_type: np.dtype):
    """A float32 DQ output gets a Cast to float16 (#513's form) into `<prefix>_dq16`; a float16 one needs none."""
    if scale_type == np.float16:
        return []
    return [node("Cast", [f"{prefix}_dq"], [f"{prefix}_dq16"], to=onnx.TensorProto.FLOAT16)]


def _exact_activations(rng: np.random.Generator) -> np.ndarray:
    """float16 activations that NVFP4's dynamic quantization keeps exactly: per block of 16, FP4 grid values times
    one power of two (2^-4 .. 2^-2), with a +-6 in each block so that the block's scale is that power of two."""
    grid = np.array(FP4_GRID, np.float32)
    x = rng.choice(grid, size=(1, SEQ, K // BLOCK, BLOCK))
    x[..., 0] = rng.choice(np.array([-6.0, 6.0], np.float32), size=x.shape[:-1])
    unit = 2.0 ** rng.integers(-4, -1, size=(1, SEQ, K // BLOCK, 1))
    return (x * unit).reshape(1, SEQ, K).astype(np.float16)


def _float_matmul(w_dense: np.ndarray):
    """The reference: x @ dequantized(w)^T in float64, as float16 (the dynamic quantization is exact here)."""

    def reference(inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        return {"y": (inputs["x"].astype(np.float64) @ w_dense.T).astype(np.float16)}

    return reference
