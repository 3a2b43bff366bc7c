"""Builder for case 008 `resize_qdq`: Conv -> [Q/DQ] -> Resize x2 -> [Q/DQ] -> Conv, Q/DQ placed around the Resize."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import const, make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, float_op, int8_weights, pow2_scale, qdq_pair, weight_dq
from generators.reproducer import Reproducer

CHANNELS = 8
SPATIAL = 6
W_SCALE = 2.0**-5
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
# nearest: what nn.Upsample exports by default; linear: bilinear with align_corners=False.
MODES = {
    "nearest": {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
    "linear": {"mode": "linear", "coordinate_transformation_mode": "half_pixel"},
}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> Conv1 -> [Q/DQ] -> Resize -> [Q/DQ] -> Q/DQ-less Conv2 input or its DQ -> y (float)."""
    x = activations(rng, (1, CHANNELS, SPATIAL, SPATIAL))
    w1 = int8_weights(rng, (CHANNELS, CHANNELS, 3, 3))
    w2 = int8_weights(rng, (CHANNELS, CHANNELS, 3, 3))
    conv1 = float_op("Conv", [x, w1.astype(np.float32) * W_SCALE], **CONV)
    scale = pow2_scale(float(np.max(np.abs(conv1))))  # Resize never exceeds its input's range: one scale for both

    nodes, inits = qdq_pair("x", X_SCALE, "x")
    for name, w in (("w1", w1), ("w2", w2)):
        more_nodes, more_inits = weight_dq(name, w, np.float32(W_SCALE))
        nodes, inits = nodes + more_nodes, inits + more_inits
    nodes.append(node("Conv", ["x_dq", "w1_dq"], ["c1"], **CONV))
    resize_in = "c1"
    if params["qdq_before"]:
        more_nodes, more_inits = qdq_pair("c1", scale, "c1")
        nodes, inits, resize_in = nodes + more_nodes, inits + more_inits, "c1_dq"
    inits.append(const("rs_scales", np.array([1, 1, 2, 2], dtype=np.float32)))
    nodes.append(node("Resize", [resize_in, "", "rs_scales"], ["rs"], **MODES[params["mode"]]))
    conv2_in = "rs"
    if params["qdq_after"]:
        more_nodes, more_inits = qdq_pair("rs", scale, "rs")
        nodes, inits, conv2_in = nodes + more_nodes, inits + more_inits, "rs_dq"
    nodes.append(node("Conv", [conv2_in, "w2_dq"], ["y"], **CONV))
    model = make_model(
        "resize_qdq", nodes, [value_info("x", np.float32, x.shape)],
        [value_info("y", np.float32, (1, CHANNELS, 2 * SPATIAL, 2 * SPATIAL))], inits,
    )
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=("node_of_rs",),
        output_steps={"y": None},
        trt={"int8": True},
        notes=f"Resize x2 ({params['mode']}) between two 3x3 Convs with INT8 weights; Q/DQ before it: "
        f"{params['qdq_before']}, after it: {params['qdq_after']}; y is Conv2's float output",
    )
