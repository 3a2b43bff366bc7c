"""Reproducers for seed 000 (cases/q_output_type.py): Q/DQ chains, an INT8 identity plugin, TensorRT's SkipLayerNorm."""

from __future__ import annotations

from typing import Dict

import numpy as np
from onnx import helper

from cases.q_output_type import BUILTIN_DOMAIN, BUILTIN_PLUGINS, PLUGIN_NAMESPACE, PLUGIN_OPS, PLUGIN_VERSION, plugin_id
from generators.onnx_util import NP_TO_ONNX, const, dequantize, make_model, node, quantize, value_info
from generators.reproducer import Reproducer

# Four channels: the smallest tensor an INT8 kCHW4 plugin format fits without padding.
SHAPE = (1, 4, 2, 2)
# A power of two, so that dequantized values are exact.
SCALE = np.float32(1.0 / 32.0)
ZERO_POINT = {"int8": 0, "uint8": 128}
# CustomSkipLayerNormPluginDynamic: [S, B, hidden, 1, 1]; its INT8 kernel has hidden sizes 768 and 1024 only.
HIDDEN = 768
SKIP_SHAPE = (2, 1, HIDDEN, 1, 1)
TYPE_ID_INT8 = 2  # nvinfer1::DataType::kINT8, the creator's `type_id` field
# The plugin's output step: layer-normalized values reach about +-4, inside +-127 steps of 1/16.
OUT_SCALE = np.float32(1.0 / 16.0)


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the graph params["variant"], activations params["activation"], plugin API params["plugin"]."""
    zp = np.array(ZERO_POINT[params["activation"]], dtype=params["activation"])
    # Standard normal values: 16 of them stay well inside +-127 steps of 1/32.
    x = rng.standard_normal(SHAPE).astype(np.float32)
    if params["plugin"] in BUILTIN_PLUGINS:
        return _skip_layernorm(params["variant"], zp, rng)
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


def _skip_layernorm(variant: str, zp: np.ndarray, rng: np.random.Generator) -> Reproducer:
    """#3055's placements around TensorRT's own INT8 CustomSkipLayerNormPluginDynamic (TensorRT 8.x can host it)."""
    x = rng.standard_normal(SKIP_SHAPE).astype(np.float32)
    skip = rng.standard_normal(SKIP_SHAPE).astype(np.float32)
    gamma = rng.uniform(0.5, 1.0, HIDDEN).astype(np.float32)
    beta = rng.uniform(-0.25, 0.25, HIDDEN).astype(np.float32)
    bias = rng.uniform(-0.25, 0.25, HIDDEN).astype(np.float32)
    quantized = [node("QuantizeLinear", [t, "scale", "zero_point"], [f"{t}_q"]) for t in ("x", "skip")]
    if variant == "plugin_qdq_around":  # input -> Q -> DQ -> plugin -> Q -> DQ -> output
        nodes = quantized + [
            node("DequantizeLinear", [f"{t}_q", "scale", "zero_point"], [f"{t}_dq"]) for t in ("x", "skip")
        ]
        nodes += [
            _builtin_plugin("x_dq", "skip_dq", gamma, beta, bias),
            node("QuantizeLinear", ["p", "out_scale", "zero_point"], ["p_q"]),
            node("DequantizeLinear", ["p_q", "out_scale", "zero_point"], ["y"]),
        ]
        plugin_output, notes = np.float32, "#3055's failing form: Q/DQ pairs on both sides of the plugin"
    else:  # input -> Q -> plugin -> DQ -> output
        nodes = quantized + [
            _builtin_plugin("x_q", "skip_q", gamma, beta, bias),
            node("DequantizeLinear", ["p", "out_scale", "zero_point"], ["y"]),
        ]
        plugin_output, notes = zp.dtype, "#3055's working form: the plugin takes and gives INT8 directly"
    model = make_model(
        variant, nodes, [value_info("x", np.float32, SKIP_SHAPE), value_info("skip", np.float32, SKIP_SHAPE)],
        [value_info("y", np.float32, SKIP_SHAPE)],
        [const("scale", SCALE), const("out_scale", OUT_SCALE), const("zero_point", zp)],
        extra_opsets={BUILTIN_DOMAIN: 1},
    )
    model.graph.value_info.append(helper.make_tensor_value_info("p", NP_TO_ONNX[np.dtype(plugin_output)], SKIP_SHAPE))

    def reference(inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        h = sum(dequantize(quantize(inputs[t], SCALE, zp), SCALE, zp) for t in ("x", "skip"))
        p = skip_layernorm(h, gamma, beta, bias)
        return {"y": dequantize(quantize(p, OUT_SCALE, zp), OUT_SCALE, zp)}

    name, version = BUILTIN_PLUGINS["trt_skip_layernorm"]
    return Reproducer(
        model, {"x": x, "skip": skip}, ("node_of_p",), {"y": float(OUT_SCALE)},
        # The plugin computes in __half (skiplnDQQ); emulating that in numpy moved outputs by up to 1 step.
        tolerance_steps=2.0,
        trt={"int8": True, "plugins": [name], "plugin_api": "builtin"},
        reference=reference, notes=notes + f"; plugin: TensorRT's {name} v{version}, type_id kINT8, ld {HIDDEN}",
    )


def skip_layernorm(h: np.ndarray, gamma: np.ndarray, beta: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """CustomSkipLayerNormPluginDynamic's math over axis 2 (hidden) of h = input + skip; no epsilon, as in skiplnDQQ."""
    shape = (1, 1, -1, 1, 1)
    h = h.astype(np.float64) + bias.reshape(shape)
    mean = h.mean(axis=2, keepdims=True)
    var = (h * h).mean(axis=2, keepdims=True) - mean * mean
    out = gamma.reshape(shape) * (h - mean) / np.sqrt(var) + beta.reshape(shape)
    return out.astype(np.float32)


def _builtin_plugin(source: str, skip: str, gamma: np.ndarray, beta: np.ndarray, bias: np.ndarray):
    """The plugin node: op_type is the creator name; INT and FLOATS attributes become its PluginFields."""
    name, version = BUILTIN_PLUGINS["trt_skip_layernorm"]
    return node(
        name, [source, skip], ["p"], domain=BUILTIN_DOMAIN, plugin_version=version, plugin_namespace="",
        ld=HIDDEN, type_id=TYPE_ID_INT8, gamma=gamma.tolist(), beta=beta.tolist(), bias=bias.tolist(),
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
