"""Builder for case 021 `mxfp8_block_scales`: an MXFP8 MatMul in ONNX's opset-24 form or ModelOpt's TRT_MXFP8 ops."""

from __future__ import annotations

from typing import Dict

import numpy as np
import onnx

from generators.onnx_util import const, make_model, node, value_info
from generators.reproducer import Reproducer
from generators.typed_qdq import E8M0, FP8_E4M3, small_integers

ONNX_OPSET = 24  # DequantizeLinear-24: float8e8m0 scales
TRT_OPSET = 21  # ModelOpt's MXFP8 export: opset 21 plus TensorRT's custom ops
TRT_DOMAIN = "trt"
BLOCK = 32  # MXFP8's block
SEQ, K, N = 8, 64, 32
E8M0_BIAS = 127
TRT = {"strongly_typed": True, "int8": False, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: ONNX's or ModelOpt's form, weight-only or dynamically quantized activations."""
    trt_form = params["form"] == "trt_custom"
    dynamic = params["activations"] == "dynamic"
    x = _exact_activations(rng)
    w = small_integers(rng, (N, K), -8, 8, FP8_E4M3)
    exponents = rng.integers(-6, -3, size=(N, K // BLOCK))  # block scales 2^-6 .. 2^-4
    nodes, inits = (_trt_weights if trt_form else _onnx_weights)(w, exponents)
    source = "x"
    if dynamic:
        nodes = _dynamic_activations() + nodes
        source = "x_dq"
    nodes += [node("Transpose", ["w_dq"], ["w_t"], perm=[1, 0]), node("MatMul", [source, "w_t"], ["y"])]
    model = make_model("mxfp8_matmul", nodes, [value_info("x", np.float16, x.shape)],
                       [value_info("y", np.float16, (1, SEQ, N))], inits,
                       opset=TRT_OPSET if trt_form else ONNX_OPSET, extra_opsets={TRT_DOMAIN: 1} if trt_form else None)
    dense = w.astype(np.float64) * np.repeat(2.0 ** exponents, BLOCK, axis=1)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT, reference=_float_matmul(dense) if trt_form else None,
                      notes=f"MXFP8 MatMul {K}->{N}, {'ModelOpt TRT_MXFP8 ops' if trt_form else 'ONNX opset 24'}, "
                      f"{'MXFP8 dynamic activations' if dynamic else 'float16 activations (weight-only)'}")


def _onnx_weights(w: np.ndarray, exponents: np.ndarray):
    """FP8 w[N, K] -> DequantizeLinear-24 with float8e8m0 block scales along K -> float16 (`w_dq`)."""
    scale = (2.0 ** exponents).astype(np.float32).astype(E8M0)
    return ([node("DequantizeLinear", ["w", "w_scale"], ["w_dq"], axis=-1, block_size=BLOCK,
                  output_dtype=onnx.TensorProto.FLOAT16)],
            [const("w", w), const("w_scale", scale)])


def _trt_weights(w: np.ndarray, exponents: np.ndarray):
    """FP8 w[N, K] -> TRT_MXFP8DequantizeLinear with the E8M0 scales as uint8 bits (ModelOpt's export) -> `w_dq`."""
    bits = (exponents + E8M0_BIAS).astype(np.uint8)
    return ([node("TRT_MXFP8DequantizeLinear", ["w", "w_scale"], ["w_dq"], domain=TRT_DOMAIN, axis=-1,
                  block_size=BLOCK, output_dtype=onnx.TensorProto.FLOAT16)],
            [const("w", w), const("w_scale", bits)])


def _dynamic_activations():
    """x -> TRT_MXFP8DynamicQuantize -> (FP8 x, E8M0 scales) -> TRT_MXFP8DequantizeLinear -> float16 `x_dq`."""
    return [
        node("TRT_MXFP8DynamicQuantize", ["x"], ["x_fp8", "x_scale"], domain=TRT_DOMAIN, axis=-1, block_size=BLOCK,
             output_dtype=onnx.TensorProto.FLOAT8E4M3FN),
        node("TRT_MXFP8DequantizeLinear", ["x_fp8", "x_scale"], ["x_dq"], domain=TRT_DOMAIN, axis=-1,
             block_size=BLOCK, output_dtype=onnx.TensorProto.FLOAT16),
    ]


def _exact_activations(rng: np.random.Generator) -> np.ndarray:
    """float16 whole numbers in [-7, 7] times 2^-3: exact in E4M3 under any power-of-two block scale in range."""
    return (rng.integers(-7, 8, size=(1, SEQ, K)) * 2.0**-3).astype(np.float16)


def _float_matmul(dense: np.ndarray):
    """The reference for the custom ops: x @ dequantized(w)^T in float64, as float16."""

    def reference(inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        return {"y": (inputs["x"].astype(np.float64) @ dense.T).astype(np.float16)}

    return reference
