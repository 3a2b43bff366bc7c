"""Builder for case 033 `zero_scale_qdq`: a Q/DQ Conv whose weight scale has a zero channel, or its input scale 0."""

from __future__ import annotations

import numpy as np

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

C_IN, C_OUT, HW = 8, 8, 8
DEAD = 1  # the dead output channel: its INT8 weights are all 0, and so is its scale
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
BIAS_SCALE = 2.0**-6  # the float bias is whole multiples of this


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> Conv (INT8 weights -> per-channel DQ, float bias) -> Q/DQ -> y, with a zero in one scale."""
    x = activations(rng, (1, C_IN, HW, HW))
    x[x == 0] = X_SCALE  # no zero input: a zero activation scale divides each value, and 0 / 0 has no int8 value
    w, w_scale = int8_weights(rng, (C_OUT, C_IN, 3, 3)), channel_scales(rng, C_OUT)
    bias = (rng.integers(-8, 9, size=C_OUT) * BIAS_SCALE).astype(np.float32)
    x_scale = X_SCALE
    if params["zero"] == "weight_channel":
        w[DEAD], w_scale[DEAD] = 0, 0.0
    else:
        x_scale = 0.0
    seen = x if x_scale else np.zeros_like(x)  # what the Conv reads: a zero scale dequantizes to 0
    conv = float_op("Conv", [seen, dequantized(w, w_scale, 0), bias], **CONV)
    step = float(pow2_scale(float(np.max(np.abs(conv)))))
    nodes, inits = qdq_pair("x", x_scale, "x")
    w_nodes, w_inits = weight_dq("w", w, w_scale, axis=0)
    y_nodes, y_inits = qdq_pair("c", step, "c", output="y")
    nodes += w_nodes + [node("Conv", ["x_dq", "w_dq", "b"], ["c"], **CONV)] + y_nodes
    model = make_model("zero_scale_qdq", nodes, [value_info("x", np.float32, x.shape)],
                       [value_info("y", np.float32, conv.shape)], inits + w_inits + [const("b", bias)] + y_inits)
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=("node_of_c",),
        output_steps={"y": step},
        trt={"int8": True},
        notes=("per-channel weight scale 0 on dead output channel 1 (its INT8 weights all 0)"
               if params["zero"] == "weight_channel" else "per-tensor input scale 0 (non-zero inputs: Q saturates)")
        + f"; 3x3 Conv {C_IN}->{C_OUT} on {HW}x{HW}, output Q/DQ",
    )
