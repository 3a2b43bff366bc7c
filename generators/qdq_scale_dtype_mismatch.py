"""Builder for case 023 `qdq_scale_dtype_mismatch`: opset-23 INT8 Q/DQ on float16 data, float16 or float32 scales."""

from __future__ import annotations

import numpy as np
import onnx

from generators.onnx_util import const, make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, int8_weights
from generators.reproducer import Reproducer

OPSET = 23  # a scale type apart from the data type (DequantizeLinear-23 `output_dtype`)
SEQ, K, N = 8, 64, 32
CHANNELS, OUT_CHANNELS, SPATIAL = 8, 16, 6
W_SCALE = 2.0**-5
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
TRT = {"strongly_typed": True, "int8": False, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: MatMul or Conv, float16 (matching) or float32 (mixed) scales."""
    scale_type = np.dtype(params["scale"])
    if params["op"] == "matmul":
        x_shape, w_shape, y_shape = (1, SEQ, K), (K, N), (1, SEQ, N)
    else:
        x_shape, w_shape = (1, CHANNELS, SPATIAL, SPATIAL), (OUT_CHANNELS, CHANNELS, 3, 3)
        y_shape = (1, OUT_CHANNELS, SPATIAL, SPATIAL)
    x = activations(rng, x_shape).astype(np.float16)
    nodes = _qdq("x", scale_type) + _weight_dq(scale_type)
    op = node("MatMul", ["x_dq", "w_dq"], ["y"]) if params["op"] == "matmul" else \
        node("Conv", ["x_dq", "w_dq"], ["y"], **CONV)
    inits = [const("x_scale", np.array(X_SCALE, scale_type)), const("x_zero_point", np.array(0, np.int8)),
             const("w", int8_weights(rng, w_shape)), const("w_scale", np.array(W_SCALE, scale_type))]
    model = make_model(f"qdq23_{params['op']}", nodes + [op], [value_info("x", np.float16, x_shape)],
                       [value_info("y", np.float16, y_shape)], inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"INT8 Q/DQ {params['op']} on float16 data with {scale_type} scales (opset 23)")


def _output_type(scale_type: np.dtype) -> dict:
    """float32 scales: DequantizeLinear-23 outputs float16 only when told (`output_dtype`)."""
    return {} if scale_type == np.float16 else {"output_dtype": onnx.TensorProto.FLOAT16}


def _qdq(name: str, scale_type: np.dtype):
    """float16 x -> QuantizeLinear (int8) -> DequantizeLinear -> float16 `x_dq`, scales of `scale_type`."""
    inputs = [name, f"{name}_scale", f"{name}_zero_point"]
    return [node("QuantizeLinear", inputs, [f"{name}_q"]),
            node("DequantizeLinear", [f"{name}_q", *inputs[1:]], [f"{name}_dq"], **_output_type(scale_type))]


def _weight_dq(scale_type: np.dtype):
    """INT8 weights -> DequantizeLinear (per tensor) -> float16 `w_dq`."""
    return [node("DequantizeLinear", ["w", "w_scale"], ["w_dq"], **_output_type(scale_type))]
