"""Reproducers for seed 002 (cases/dynamic_quantize.py): DynamicQuantizeLinear, by hand and by quantize_dynamic."""

from __future__ import annotations

import logging
import os
import tempfile
from typing import Optional

import numpy as np
import onnx

from generators.onnx_util import const, ir_version_for, make_model, node, value_info
from generators.reproducer import Reproducer

MATMUL_X, MATMUL_W = (2, 4), (4, 3)
CONV_X, CONV_W = (1, 2, 4, 4), (3, 2, 3, 3)
TRT = {"int8": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant of the sweep."""
    return _VARIANTS[params["variant"]](rng)


def _dql_alone(rng: np.random.Generator) -> Reproducer:
    nodes = [node("DynamicQuantizeLinear", ["x"], ["x_q", "x_scale", "x_zero_point"])]
    outputs = [
        value_info("x_q", np.uint8, MATMUL_X),
        value_info("x_scale", np.float32, []),
        value_info("x_zero_point", np.uint8, []),
    ]
    model = make_model("dql_alone", nodes, [value_info("x", np.float32, MATMUL_X)], outputs)
    return Reproducer(model, {"x": _x(rng, MATMUL_X)}, ("node_of_x_q",), trt=TRT)


def _dql_matmulinteger(rng: np.random.Generator) -> Reproducer:
    w = rng.integers(-127, 128, MATMUL_W).astype(np.int8)
    nodes = [
        node("DynamicQuantizeLinear", ["x"], ["x_q", "x_scale", "x_zero_point"]),
        node("MatMulInteger", ["x_q", "w_q", "x_zero_point", "w_zero_point"], ["y"]),
    ]
    model = make_model(
        "dql_matmulinteger", nodes, [value_info("x", np.float32, MATMUL_X)],
        [value_info("y", np.int32, (MATMUL_X[0], MATMUL_W[1]))],
        [const("w_q", w), const("w_zero_point", np.int8(0))],
    )
    return Reproducer(model, {"x": _x(rng, MATMUL_X)}, ("node_of_x_q", "node_of_y"), trt=TRT)


def _dql_convinteger(rng: np.random.Generator) -> Reproducer:
    w = rng.integers(-127, 128, CONV_W).astype(np.int8)
    nodes = [
        node("DynamicQuantizeLinear", ["x"], ["x_q", "x_scale", "x_zero_point"]),
        node("ConvInteger", ["x_q", "w_q", "x_zero_point", "w_zero_point"], ["y"], kernel_shape=[3, 3]),
    ]
    model = make_model(
        "dql_convinteger", nodes, [value_info("x", np.float32, CONV_X)],
        [value_info("y", np.int32, (1, CONV_W[0], 2, 2))],
        [const("w_q", w), const("w_zero_point", np.int8(0))],
    )
    return Reproducer(model, {"x": _x(rng, CONV_X)}, ("node_of_x_q", "node_of_y"), trt=TRT)


def _ort_dynamic_matmul(rng: np.random.Generator) -> Reproducer:
    w = rng.standard_normal(MATMUL_W).astype(np.float32)
    float_model = make_model(
        "float_matmul", [node("MatMul", ["x", "w"], ["y"])], [value_info("x", np.float32, MATMUL_X)],
        [value_info("y", np.float32, (MATMUL_X[0], MATMUL_W[1]))], [const("w", w)],
    )
    return _quantized(float_model, _x(rng, MATMUL_X), "MatMulInteger")


def _ort_dynamic_conv(rng: np.random.Generator) -> Reproducer:
    w = rng.standard_normal(CONV_W).astype(np.float32)
    float_model = make_model(
        "float_conv", [node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])], [value_info("x", np.float32, CONV_X)],
        [value_info("y", np.float32, (1, CONV_W[0], 2, 2))], [const("w", w)],
    )
    return _quantized(float_model, _x(rng, CONV_X), "ConvInteger")


def _quantized(float_model: onnx.ModelProto, x: np.ndarray, integer_op: str) -> Reproducer:
    """What onnxruntime's quantize_dynamic really emits, with its node names, IR re-pinned."""
    model = quantize_dynamic(float_model)
    targets = tuple(n.name for n in model.graph.node if n.op_type in ("DynamicQuantizeLinear", integer_op))
    return Reproducer(
        model, {"x": x}, targets, trt=TRT,
        notes="onnxruntime.quantization.quantize_dynamic output (weight_type QInt8), as #3963 used",
    )


def quantize_dynamic(float_model: onnx.ModelProto, extra_options: Optional[dict] = None) -> onnx.ModelProto:
    """Run onnxruntime's dynamic quantizer (weight_type QInt8, `extra_options`) on a model through temporary files."""
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as ort_quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # it advises pre-processing on the root logger at WARNING
    try:
        with tempfile.TemporaryDirectory() as tmp:
            source, target = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "quantized.onnx")
            onnx.save(float_model, source)
            ort_quantize_dynamic(source, target, weight_type=QuantType.QInt8, extra_options=extra_options)
            model = onnx.load(target)
    finally:
        root.setLevel(level)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    model.ir_version = ir_version_for(opset)  # ONNX Runtime 1.16 rejects IR 10
    return model


def _x(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


_VARIANTS = {
    "dql_alone": _dql_alone,
    "dql_matmulinteger": _dql_matmulinteger,
    "dql_convinteger": _dql_convinteger,
    "ort_dynamic_matmul": _ort_dynamic_matmul,
    "ort_dynamic_conv": _ort_dynamic_conv,
}
