"""Builder for case 010 `concat_requant`: Concat of two Q/DQ inputs with equal or different scales."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, int8_weights, qdq_pair, weight_dq
from generators.reproducer import Reproducer

CHANNELS = 4  # per input; the Concat has twice as many
SPATIAL = 6
W_SCALE = 2.0**-5
# (a, b, Concat output) scales. "different": a Q at 2s after inputs at s and 4s requantizes both, and
# a's odd steps land on ties (round half to even).
SCALES = {"equal": (X_SCALE, X_SCALE, X_SCALE), "different": (X_SCALE, 4 * X_SCALE, 2 * X_SCALE)}
CONV = {"kernel_shape": [1, 1], "pads": [0, 0, 0, 0], "strides": [1, 1]}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """a, b -> Q/DQ each -> Concat -> [Q/DQ] -> [1x1 Conv] -> y."""
    sa, sb, s_out = SCALES[params["scales"]]
    a = activations(rng, (1, CHANNELS, SPATIAL, SPATIAL), scale=sa)
    b = activations(rng, (1, CHANNELS, SPATIAL, SPATIAL), scale=sb)
    nodes, inits = qdq_pair("a", sa, "a")
    b_nodes, b_inits = qdq_pair("b", sb, "b")
    nodes, inits = nodes + b_nodes, inits + b_inits
    conv = params["consumer"] == "conv"
    cat_name = "cat" if (conv or params["output_qdq"]) else "y"
    nodes.append(node("Concat", ["a_dq", "b_dq"], [cat_name], axis=1))
    step = None
    last = cat_name
    if params["output_qdq"]:
        c_nodes, c_inits = qdq_pair("cat", s_out, "cat", output="" if conv else "y")
        nodes, inits = nodes + c_nodes, inits + c_inits
        last, step = ("cat_dq" if conv else "y"), (None if conv else float(s_out))
    if conv:
        w = int8_weights(rng, (2 * CHANNELS, 2 * CHANNELS, 1, 1))
        w_nodes, w_inits = weight_dq("w", w, np.float32(W_SCALE))
        nodes, inits = nodes + w_nodes + [node("Conv", [last, "w_dq"], ["y"], **CONV)], inits + w_inits
    model = make_model(
        "concat_requant", nodes,
        [value_info("a", np.float32, a.shape), value_info("b", np.float32, b.shape)],
        [value_info("y", np.float32, (1, 2 * CHANNELS, SPATIAL, SPATIAL))], inits,
    )
    return Reproducer(
        model=model,
        inputs={"a": a, "b": b},
        target_nodes=("node_of_cat" if cat_name == "cat" else "node_of_y",),
        output_steps={"y": step},
        trt={"int8": True},
        notes=f"input scales {sa:g} and {sb:g}; Concat Q/DQ scale {s_out:g} "
        f"({'present' if params['output_qdq'] else 'absent'}); consumer: {params['consumer']}",
    )

