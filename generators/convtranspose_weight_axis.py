"""Builder for case 006 `convtranspose_weight_axis`: ConvTranspose INT8 weights quantized per tensor or per axis."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
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

IN_CHANNELS = 8
OUT_CHANNELS = {"equal": 8, "different": 4}
SPATIAL = 5
W_SCALE = 2.0**-5
ATTRS = {"kernel_shape": [2, 2], "strides": [2, 2]}
AXIS = {"axis0": 0, "axis1": 1}  # ConvTranspose weights are [in, out, kH, kW]: axis 0 = input, 1 = output channels


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> ConvTranspose(INT8 weights -> DQ on the swept axis) -> Q/DQ -> y."""
    out_channels = OUT_CHANNELS[params["channels"]]
    x = activations(rng, (1, IN_CHANNELS, SPATIAL, SPATIAL))
    w = int8_weights(rng, (IN_CHANNELS, out_channels, 2, 2))
    axis = AXIS.get(params["weights"], 0)
    scale = channel_scales(rng, w.shape[axis]) if params["weights"] in AXIS else np.float32(W_SCALE)
    up = float_op("ConvTranspose", [x, dequantized(w, scale, axis)], **ATTRS)
    y_scale = pow2_scale(float(np.max(np.abs(up))))

    nodes, inits = qdq_pair("x", X_SCALE, "x")
    w_nodes, w_inits = weight_dq("w", w, scale, axis)
    y_nodes, y_inits = qdq_pair("up", y_scale, "up", output="y")
    nodes += w_nodes + [node("ConvTranspose", ["x_dq", "w_dq"], ["up"], **ATTRS)] + y_nodes
    model = make_model(
        "convtranspose_weight_axis", nodes, [value_info("x", np.float32, x.shape)],
        [value_info("y", np.float32, up.shape)], inits + w_inits + y_inits,
    )
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=("node_of_up",),
        output_steps={"y": float(y_scale)},
        trt={"int8": True},
        notes=f"ConvTranspose {IN_CHANNELS}->{out_channels} channels, 2x2 stride 2; weights {params['weights']} "
        "(per-axis scales 2^-4..2^-7, so a scale read on the wrong axis is off by many output steps)",
    )
