"""Builder for case 007 `convtranspose_grouped`: a Q/DQ grouped or depthwise ConvTranspose (a decoder's upsampler)."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import dequantize, make_model, node, quantize, value_info
from generators.qdq_parts import X_SCALE, activations, conv_transpose, int8_weights, pow2_scale, qdq_pair, weight_dq
from generators.reproducer import Reproducer

CHANNELS = 16
SPATIAL = 6
W_SCALE = 2.0**-5


def attributes(groups: int, kernel: int) -> dict:
    """Stride 2 upsampling: kernel 4 with pads 1 (CenterNet's IDAUp) or kernel 2 with no pads; both double H, W."""
    pad = (kernel - 2) // 2
    return {"group": groups, "kernel_shape": [kernel, kernel], "strides": [2, 2], "pads": [pad] * 4}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> ConvTranspose(group, INT8 per-tensor weights) -> [Q/DQ] -> y."""
    groups, kernel = int(params["groups"]), int(params["kernel"])
    attrs = attributes(groups, kernel)
    x = activations(rng, (1, CHANNELS, SPATIAL, SPATIAL))
    w = int8_weights(rng, (CHANNELS, CHANNELS // groups, kernel, kernel))
    pad = attrs["pads"][0]
    up = conv_transpose(x, w.astype(np.float32) * np.float32(W_SCALE), groups, 2, pad)

    nodes, inits = qdq_pair("x", X_SCALE, "x")
    w_nodes, w_inits = weight_dq("w", w, np.float32(W_SCALE))
    nodes, inits = nodes + w_nodes, inits + w_inits
    y_scale = None
    if params["output_qdq"]:
        y_scale = pow2_scale(float(np.max(np.abs(up))))
        y_nodes, y_inits = qdq_pair("up", y_scale, "up", output="y")
        nodes += [node("ConvTranspose", ["x_dq", "w_dq"], ["up"], **attrs)] + y_nodes
        inits += y_inits
    else:
        nodes.append(node("ConvTranspose", ["x_dq", "w_dq"], ["y"], **attrs))
    model = make_model(
        "convtranspose_grouped", nodes, [value_info("x", np.float32, x.shape)],
        [value_info("y", np.float32, up.shape)], inits,
    )

    def reference(inputs: dict) -> dict:
        zero = np.int8(0)
        x_dq = dequantize(quantize(inputs["x"], np.float32(X_SCALE), zero), np.float32(X_SCALE), zero)
        y = conv_transpose(x_dq, w.astype(np.float32) * np.float32(W_SCALE), groups, 2, pad)
        if y_scale is not None:
            y = dequantize(quantize(y, y_scale, zero), y_scale, zero)
        return {"y": y}

    return Reproducer(
        model=model,
        reference=reference,
        reference_why="onnx.reference mishandles a grouped ConvTranspose (group > 1): one reference for every variant",
        inputs={"x": x},
        target_nodes=("node_of_up" if params["output_qdq"] else "node_of_y",),
        output_steps={"y": float(y_scale) if y_scale is not None else None},
        trt={"int8": True},
        notes=f"ConvTranspose {CHANNELS} channels in {groups} groups, {kernel}x{kernel} stride 2, "
        "per-tensor INT8 weights",
    )
