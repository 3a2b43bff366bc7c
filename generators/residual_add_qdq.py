"""Builder for case 009 `residual_add_qdq`: Conv + residual Add, with or without Q/DQ on the residual branch."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, float_op, int8_weights, pow2_scale, qdq_pair, weight_dq
from generators.reproducer import Reproducer

CHANNELS = 8
SPATIAL = 6
W_SCALE = 2.0**-5
RESIDUAL_SCALE = 2.0 * X_SCALE  # "own_qdq": the residual branch's own Q/DQ, at a scale of its own
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> Conv; Add(Conv, residual x: float, the Conv's DQ, or its own Q/DQ) -> [Q/DQ] -> y."""
    # Residual x on a grid of RESIDUAL_SCALE, so that its own Q/DQ is exact too.
    x = activations(rng, (1, CHANNELS, SPATIAL, SPATIAL), scale=RESIDUAL_SCALE)
    w = int8_weights(rng, (CHANNELS, CHANNELS, 3, 3))
    conv = float_op("Conv", [x, w.astype(np.float32) * W_SCALE], **CONV)
    total = conv + x

    nodes, inits = qdq_pair("x", X_SCALE, "x")
    w_nodes, w_inits = weight_dq("w", w, np.float32(W_SCALE))
    nodes, inits = nodes + w_nodes + [node("Conv", ["x_dq", "w_dq"], ["conv"], **CONV)], inits + w_inits
    residual = {"float": "x", "shared_qdq": "x_dq", "own_qdq": "res_dq"}[params["residual"]]
    if params["residual"] == "own_qdq":
        r_nodes, r_inits = qdq_pair("x", RESIDUAL_SCALE, "res")
        nodes, inits = nodes + r_nodes, inits + r_inits
    y_scale = None
    if params["output_qdq"]:
        y_scale = pow2_scale(float(np.max(np.abs(total))))
        y_nodes, y_inits = qdq_pair("sum", y_scale, "sum", output="y")
        nodes += [node("Add", ["conv", residual], ["sum"])] + y_nodes
        inits += y_inits
    else:
        nodes.append(node("Add", ["conv", residual], ["y"]))
    model = make_model(
        "residual_add_qdq", nodes, [value_info("x", np.float32, x.shape)],
        [value_info("y", np.float32, x.shape)], inits,
    )
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=("node_of_sum" if params["output_qdq"] else "node_of_y",),
        output_steps={"y": float(y_scale) if y_scale is not None else None},
        trt={"int8": True},
        notes=f"3x3 Conv {CHANNELS}->{CHANNELS} plus the block input; residual branch: {params['residual']}",
    )
