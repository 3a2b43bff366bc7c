"""Reproducers for seed 000 (cases/q_output_type.py): Q/DQ chains and an INT8 identity plugin."""

from __future__ import annotations

from typing import Dict

import numpy as np
from onnx import helper

from cases.q_output_type import PLUGIN_NAMESPACE, PLUGIN_OPS, PLUGIN_VERSION, plugin_id
from generators.onnx_util import NP_TO_ONNX, const, dequantize, make_model, node, quantize, value_info
from generators.reproducer import Reproducer

# Four channels: the smallest tensor an INT8 kCHW4 plugin format fits without padding.
SHAPE = (1, 4, 2, 2)
# A power of two, so that dequantized values are exact.
SCALE = np.float32(1.0 / 32.0)
ZERO_POINT = {"int8": 0, "uint8": 128}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the graph params["variant"], activations params["activation"], plugin API params["plugin"]."""
    zp = np.array(ZERO_POINT[params["activation"]], dtype=params["activation"])
    # Standard normal values: 16 of them stay well inside +-127 steps of 1/32.
    x = rng.standard_normal(SHAPE).astype(np.float32)
    if params["variant"] in _PLUGIN_VARIANTS:
        return _PLUGIN_VARIANTS[params["variant"]](x, zp, params["plugin"])
    return _VARIANTS[params["variant"]](x, zp)


def _q_dq_chain(x: np.ndarray, zp: np.ndarray) -> Reproducer:
    nodes = [
        node("QuantizeLinear", ["x", "scale", "zero_point"], ["x_q"]),
        node("DequantizeLinear", ["x_q", "scale", "zero_point"], ["y"]),
    ]
    model = _model("q_dq_chain", nodes, zp, "y", np.float32)
    return Reproducer(
        model, {"x": x}, ("node_of_x_q",), {"y": float(SCALE)}, trt={"int8": True},
        notes="#3844: the network definition reports x_q, the Q layer's output, as FLOAT",
    )


def _q_graph_output(x: np.ndarray, zp: np.ndarray) -> Reproducer:
    nodes = [node("QuantizeLinear", ["x", "scale", "zero_point"], ["x_q"])]
    model = _model("q_graph_output", nodes, zp, "x_q", zp.dtype)
    return Reproducer(model, {"x": x}, ("node_of_x_q",), {"x_q": float(SCALE)}, trt={"int8": True})


def _plugin_qdq_around(x: np.ndarray, zp: np.ndarray, api: str) -> Reproducer:
    # #3055: input -> Q -> DQ -> Plugin -> Q -> DQ -> output
    nodes = [
        node("QuantizeLinear", ["x", "scale", "zero_point"], ["x_q"]),
        node("DequantizeLinear", ["x_q", "scale", "zero_point"], ["x_dq"]),
        _plugin(api, "x_dq", "p"),
        node("QuantizeLinear", ["p", "scale", "zero_point"], ["p_q"]),
        node("DequantizeLinear", ["p_q", "scale", "zero_point"], ["y"]),
    ]
    model = _model("plugin_qdq_around", nodes, zp, "y", np.float32, plugin_output=np.float32)
    return _plugin_reproducer(model, x, zp, api, "#3055's failing form: Q/DQ pairs on both sides of the plugin")


def _plugin_q_direct(x: np.ndarray, zp: np.ndarray, api: str) -> Reproducer:
    # #3055 workaround: input -> Q -> Plugin -> DQ -> output
    nodes = [
        node("QuantizeLinear", ["x", "scale", "zero_point"], ["x_q"]),
        _plugin(api, "x_q", "p"),
        node("DequantizeLinear", ["p", "scale", "zero_point"], ["y"]),
    ]
    model = _model("plugin_q_direct", nodes, zp, "y", np.float32, plugin_output=zp.dtype)
    return _plugin_reproducer(model, x, zp, api, "#3055's working form: the plugin takes and gives INT8 directly")


def _plugin(api: str, source: str, output: str):
    return node(
        PLUGIN_OPS[api], [source], [output], domain=PLUGIN_NAMESPACE,
        plugin_version=PLUGIN_VERSION, plugin_namespace=PLUGIN_NAMESPACE,
    )


def _plugin_reproducer(model, x: np.ndarray, zp: np.ndarray, api: str, notes: str) -> Reproducer:
    def reference(inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        # The plugin is an identity, so every variant computes DQ(Q(x)).
        return {"y": dequantize(quantize(inputs["x"], SCALE, zp), SCALE, zp)}

    return Reproducer(
        model, {"x": x}, ("node_of_p",), {"y": float(SCALE)},
        trt={"int8": True, "plugins": [plugin_id(api)], "plugin_api": api}, reference=reference, notes=notes,
    )


def _model(name: str, nodes: list, zp: np.ndarray, output: str, output_dtype, plugin_output=None):
    model = make_model(
        name, nodes, [value_info("x", np.float32, SHAPE)], [value_info(output, output_dtype, SHAPE)],
        [const("scale", SCALE), const("zero_point", zp)],
        extra_opsets={PLUGIN_NAMESPACE: 1} if plugin_output is not None else None,
    )
    if plugin_output is not None:
        # Shape inference cannot see through the custom op: declare its output for readers and tools.
        model.graph.value_info.append(helper.make_tensor_value_info("p", NP_TO_ONNX[np.dtype(plugin_output)], SHAPE))
    return model


_VARIANTS = {"q_dq_chain": _q_dq_chain, "q_graph_output": _q_graph_output}
_PLUGIN_VARIANTS = {"plugin_qdq_around": _plugin_qdq_around, "plugin_q_direct": _plugin_q_direct}
