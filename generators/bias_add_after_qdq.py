"""Builder for case 018 `bias_add_after_qdq`: a Q/DQ MatMul or Conv, then a bias Add (float, or INT8 -> DQ)."""

from __future__ import annotations

from typing import Dict, Tuple

import numpy as np
import onnx

from generators.onnx_util import const, make_model, node, value_info
from generators.qdq_parts import (
    X_SCALE,
    activations,
    channel_scales,
    dequantized,
    float_op,
    int8_weights,
    pow2_scale,
    qdq_pair,
    weight_dq,
)
from generators.reproducer import Reproducer

SEQ, K, N = 8, 32, 16
CHANNELS, SPATIAL = 8, 6
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
BIAS_SCALE = 2.0**-6  # the INT8 bias's per-tensor scale, as quantize_static gives an Add's constant input


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> MatMul or Conv (INT8 weights, per channel) -> [Q/DQ] -> Add(bias) -> [Q/DQ] -> y."""
    return _OPS[params["op"]](rng, params["bias"], bool(params["output_qdq"]))


def _matmul(rng: np.random.Generator, bias: str, output_qdq: bool) -> Reproducer:
    """MatMul(x[1, SEQ, K], DQ(w[K, N], axis 1)) + bias[N]: an nn.Linear exported as MatMul and Add."""
    x = activations(rng, (1, SEQ, K))
    w, w_scale = int8_weights(rng, (K, N)), channel_scales(rng, N)
    product = x.astype(np.float64) @ dequantized(w, w_scale, 1)
    nodes, inits = qdq_pair("x", X_SCALE, "x")
    w_nodes, w_inits = weight_dq("w", w, w_scale, axis=1)
    nodes += w_nodes + [node("MatMul", ["x_dq", "w_dq"], ["mm"])]
    return _bias_add(rng, "mm", product, (N,), bias, output_qdq, nodes, inits + w_inits,
                     value_info("x", np.float32, x.shape), {"x": x}, f"MatMul {K}->{N} on {SEQ} tokens")


def _conv(rng: np.random.Generator, bias: str, output_qdq: bool) -> Reproducer:
    """Conv(x, DQ(w, axis 0)) with no bias input, then + bias[C, 1, 1]: the bias as an Add of its own."""
    x = activations(rng, (1, CHANNELS, SPATIAL, SPATIAL))
    w, w_scale = int8_weights(rng, (CHANNELS, CHANNELS, 3, 3)), channel_scales(rng, CHANNELS)
    product = float_op("Conv", [x, dequantized(w, w_scale, 0)], **CONV).astype(np.float64)
    nodes, inits = qdq_pair("x", X_SCALE, "x")
    w_nodes, w_inits = weight_dq("w", w, w_scale, axis=0)
    nodes += w_nodes + [node("Conv", ["x_dq", "w_dq"], ["mm"], **CONV)]
    return _bias_add(rng, "mm", product, (CHANNELS, 1, 1), bias, output_qdq, nodes, inits + w_inits,
                     value_info("x", np.float32, x.shape), {"x": x}, f"3x3 Conv {CHANNELS}->{CHANNELS}")


def _bias_add(rng: np.random.Generator, source: str, product: np.ndarray, bias_shape: Tuple[int, ...], bias: str,
              output_qdq: bool, nodes: list, inits: list, x_info: onnx.ValueInfoProto, inputs: Dict[str, np.ndarray],
              what: str) -> Reproducer:
    """The bias Add after `source`: a float constant straight after the op, or onnxruntime's form (the op's output
    through Q/DQ, the bias an INT8 initializer -> DQ); then an output Q/DQ or none."""
    values = rng.integers(-32, 33, size=bias_shape)
    if bias == "float":
        inits.append(const("bias", (values * BIAS_SCALE).astype(np.float32)))
        addend, left = "bias", source
    else:
        mm_nodes, mm_inits = qdq_pair(source, pow2_scale(float(np.max(np.abs(product)))), source)
        b_nodes, b_inits = weight_dq("bias", values.astype(np.int8), np.float32(BIAS_SCALE))
        nodes += mm_nodes + b_nodes
        inits += mm_inits + b_inits
        addend, left = "bias_dq", f"{source}_dq"
    total = product + values * BIAS_SCALE
    y_scale = pow2_scale(float(np.max(np.abs(total)))) if output_qdq else None
    add_out = "sum" if output_qdq else "y"
    nodes.append(node("Add", [left, addend], [add_out]))
    if y_scale is not None:
        y_nodes, y_inits = qdq_pair("sum", y_scale, "sum", output="y")
        nodes, inits = nodes + y_nodes, inits + y_inits
    shape = list(product.shape)
    model = make_model("bias_add_after_qdq", nodes, [x_info], [value_info("y", np.float32, shape)], inits)
    return Reproducer(
        model=model,
        inputs=inputs,
        target_nodes=("node_of_mm", f"node_of_{add_out}"),
        output_steps={"y": float(y_scale) if y_scale is not None else None},
        trt={"int8": True},
        notes=f"{what}, then Add of a {'float' if bias == 'float' else 'INT8 -> DQ'} bias"
        f"{' (the op output through Q/DQ first)' if bias != 'float' else ''}; output Q/DQ: {output_qdq}",
    )


_OPS = {"matmul": _matmul, "conv": _conv}
