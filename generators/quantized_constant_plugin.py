"""Builder for case 004 `quantized_constant_plugin`: an INT8 initializer fed into a plugin."""

from __future__ import annotations

from typing import Dict, List

import numpy as np
import onnx

from cases.quantized_constant_plugin import PLUGIN_DOMAIN, PLUGIN_OPS
from generators.onnx_util import const, dequantize, make_model, node, value_info
from generators.reproducer import Reproducer

SHAPE = (1, 8, 4, 4)
# Powers of two: x + dequantized w is exact in float32 (and float16).
X_SCALE = 2.0**-4
W_SCALE = np.float32(2.0**-5)
W_RANGE = 64  # |w| <= W_RANGE, inside the weight range [-127, 127]


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One form: the INT8 constant goes through a plugin (V3 or V2) or through a DequantizeLinear."""
    form = params["form"]
    x = (rng.integers(-16, 17, size=SHAPE) * X_SCALE).astype(np.float32)
    w = rng.integers(-W_RANGE, W_RANGE + 1, size=SHAPE).astype(np.int8)
    initializers = [const("w", w), const("w_scale", W_SCALE), const("w_zero_point", np.int8(0))]
    tail = [
        node("DequantizeLinear", ["w_id" if form in PLUGIN_OPS else "w", "w_scale", "w_zero_point"], ["w_dq"]),
        node("Add", ["x", "w_dq"], ["y"]),
    ]
    if form in PLUGIN_OPS:
        op, api = PLUGIN_OPS[form]
        model = _model([_plugin_node(op)] + tail, initializers, extra_opsets={PLUGIN_DOMAIN: 1})
        # The custom op has no schema, so nothing infers its output; say it: INT8, the constant's shape.
        model.graph.value_info.append(value_info("w_id", np.int8, SHAPE))
        trt = {"int8": True, "plugins": [f"{PLUGIN_DOMAIN}::{op}"], "plugin_api": api}
        targets = ("node_of_w_id",)
    else:
        model = _model(tail, initializers)
        trt, targets = {"int8": True}, ("node_of_y",)
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=targets,
        output_steps={"y": None},
        trt=trt,
        reference=lambda inputs: _reference(inputs, w),
        reference_why="" if form in PLUGIN_OPS else "one reference for all its forms, the custom-op ones included",
        notes="plugin: identity over one INT8 linear tensor" if form in PLUGIN_OPS else "",
    )


def _plugin_node(op: str) -> onnx.NodeProto:
    """The custom op, named so that TensorRT's ONNX parser finds the plugin creator qdq_matrix::<op> v1."""
    return node(op, ["w"], ["w_id"], domain=PLUGIN_DOMAIN, plugin_namespace=PLUGIN_DOMAIN, plugin_version="1")


def _model(nodes: List[onnx.NodeProto], initializers: List[onnx.TensorProto], **kwargs) -> onnx.ModelProto:
    return make_model(
        "quantized_constant_plugin",
        nodes,
        [value_info("x", np.float32, SHAPE)],
        [value_info("y", np.float32, SHAPE)],
        initializers,
        **kwargs,
    )


def _reference(inputs: Dict[str, np.ndarray], w: np.ndarray) -> Dict[str, np.ndarray]:
    """y = x + dequantize(w): every form computes this (the plugins are identities)."""
    return {"y": (inputs["x"] + dequantize(w, W_SCALE, np.int8(0))).astype(np.float32)}
