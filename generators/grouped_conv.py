"""Builder for case 003 `grouped_conv`: a Q/DQ grouped Conv with INT8 weights."""

from __future__ import annotations

from typing import List, Tuple

import numpy as np
import onnx

from generators.onnx_util import const, dequantize, make_model, node, value_info
from generators.reproducer import Reproducer

CHANNELS = 48  # the least common multiple of every swept cpg, so only the group size changes
SPATIAL = 8
KERNEL = 3
# Powers of two keep every product and sum exact in float32: x and the weights are integer multiples
# of their scales, so the input Q is exact and the Conv output is an integer multiple of x_scale * w_scale.
X_SCALE = 2.0**-4
W_SCALE = 2.0**-6  # per tensor; per channel draws 2^-5 .. 2^-7
X_RANGE = 8  # |x| <= X_RANGE steps
W_RANGE = 8  # |w| <= W_RANGE, far inside [-127, 127]
Y_HEADROOM = 100.0  # the largest |y| lands at or below this many output steps: no saturation
ZERO_POINT = {"int8": np.int8(0), "uint8": np.uint8(128)}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: Q/DQ input, DQ INT8 weights, grouped Conv, optional epilogue and output Q/DQ."""
    cpg, groups = int(params["cpg"]), CHANNELS // int(params["cpg"])
    zero_point = ZERO_POINT[params["activation"]]
    x = (rng.integers(-X_RANGE, X_RANGE + 1, size=(1, CHANNELS, SPATIAL, SPATIAL)) * X_SCALE).astype(np.float32)
    w = rng.integers(-W_RANGE, W_RANGE + 1, size=(CHANNELS, cpg, KERNEL, KERNEL)).astype(np.int8)
    w_scale = _weight_scale(params["weights"], rng)

    y_float = _epilogue(_conv_float(x, dequantize(w, w_scale, np.zeros_like(w_scale, np.int8), 0), groups), params)
    y_scale = _output_scale(y_float)

    nodes, initializers, body_out = _body(params, groups, w, w_scale, zero_point)
    if params["output_qdq"]:
        initializers += [const("y_scale", y_scale), const("y_zero_point", zero_point)]
        nodes += [
            node("QuantizeLinear", [body_out, "y_scale", "y_zero_point"], ["y_q"]),
            node("DequantizeLinear", ["y_q", "y_scale", "y_zero_point"], ["y"]),
        ]
    model = make_model(
        "grouped_conv",
        nodes,
        [value_info("x", np.float32, x.shape)],
        [value_info("y", np.float32, y_float.shape)],
        initializers,
    )
    conv_node = "node_of_y" if body_out == "y" else "node_of_conv"
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=(conv_node,),
        output_steps={"y": float(y_scale) if params["output_qdq"] else None},
        trt={"int8": True},
        notes=f"{CHANNELS} channels in {groups} groups of {cpg}; {KERNEL}x{KERNEL} kernel, pads 1",
    )


def _output_scale(y: np.ndarray) -> np.float32:
    """The power of two that puts the largest |y| at or below Y_HEADROOM steps."""
    return np.float32(2.0 ** np.ceil(np.log2(np.max(np.abs(y)) / Y_HEADROOM)))


def _weight_scale(granularity: str, rng: np.random.Generator) -> np.ndarray:
    if granularity == "per_channel":
        return (2.0 ** -rng.integers(5, 8, size=CHANNELS)).astype(np.float32)
    return np.array(W_SCALE, dtype=np.float32)


def _body(
    params: dict, groups: int, w: np.ndarray, w_scale: np.ndarray, zero_point: np.generic
) -> Tuple[List[onnx.NodeProto], List[onnx.TensorProto], str]:
    """Nodes and initializers up to the epilogue, and the name of the tensor that ends them."""
    last_is_conv = params["epilogue"] == "none"
    conv_out = "y" if last_is_conv and not params["output_qdq"] else "conv"
    initializers = [
        const("x_scale", np.float32(X_SCALE)),
        const("x_zero_point", zero_point),
        const("w", w),
        const("w_scale", w_scale),
        const("w_zero_point", np.zeros_like(w_scale, dtype=np.int8)),
    ]
    nodes = [
        node("QuantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_q"]),
        node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["x_dq"]),
        node("DequantizeLinear", ["w", "w_scale", "w_zero_point"], ["w_dq"], axis=0),
        node(
            "Conv",
            ["x_dq", "w_dq"],
            [conv_out],
            group=groups,
            kernel_shape=[KERNEL, KERNEL],
            pads=[1, 1, 1, 1],
            strides=[1, 1],
            dilations=[1, 1],
        ),
    ]
    if params["epilogue"] == "relu":
        nodes.append(node("Relu", [conv_out], ["act"]))
        return nodes, initializers, "act"
    if params["epilogue"] == "swish":
        nodes += [node("Sigmoid", [conv_out], ["sigmoid"]), node("Mul", [conv_out, "sigmoid"], ["act"])]
        return nodes, initializers, "act"
    return nodes, initializers, conv_out


def _epilogue(y: np.ndarray, params: dict) -> np.ndarray:
    if params["epilogue"] == "relu":
        return np.maximum(y, 0.0).astype(np.float32)
    if params["epilogue"] == "swish":
        return (y / (1.0 + np.exp(-y))).astype(np.float32)
    return y


def _conv_float(x: np.ndarray, w: np.ndarray, groups: int) -> np.ndarray:
    """A float NCHW grouped Conv, stride 1, padding KERNEL // 2, in float64 then float32."""
    c = x.shape[1]
    k = w.shape[-1]
    pad = k // 2
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    # windows[n, c, i, j, kh, kw]
    windows = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    cpg, per_group = c // groups, w.shape[0] // groups
    outs = [
        np.einsum(
            "ncijxy,ocxy->noij",
            windows[:, g * cpg : (g + 1) * cpg],
            w[g * per_group : (g + 1) * per_group].astype(np.float64),
        )
        for g in range(groups)
    ]
    return np.concatenate(outs, axis=1).astype(np.float32)

