"""Builder for case 030 `dq_blocked_axis`: DequantizeLinear-21 blocked by 2 along axis 0, 1 or 2 (OpenVINO's PR)."""

from __future__ import annotations

import numpy as np

from cases.dq_blocked_axis import SHAPES
from generators.onnx_util import const, make_model, node, value_info
from generators.reproducer import Reproducer

OPSET = 21  # DequantizeLinear-21: block_size
BLOCK = 2
X_VALUE = 9  # the PR's input: every element 9
PR_PARAMETERS = np.array([1, 2, 3, 4])  # the PR's scales and zero points, in the order of its example
TRT = {"strongly_typed": True, "int8": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the blocked axis; the data is the PR's (x all 9, scales and zero points 1..4)."""
    axis = int(params["axis"])
    shape, scale_shape = SHAPES[axis]
    x = np.full(shape, X_VALUE, np.int8)
    # Along axis 0 the PR's [2, 4] example is transposed, so the same blocks meet the same scales.
    order = PR_PARAMETERS.reshape(2, 2).T if axis == 0 else PR_PARAMETERS.reshape(scale_shape)
    scale, zero_point = order.astype(np.float32).reshape(scale_shape), order.astype(np.int8).reshape(scale_shape)
    nodes = [node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["y"], axis=axis, block_size=BLOCK)]
    model = make_model("dq_blocked_axis", nodes, [value_info("x", np.int8, shape)],
                       [value_info("y", np.float32, shape)],
                       [const("x_scale", scale), const("x_zero_point", zero_point)], opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"DequantizeLinear-21 of an int8 input {list(shape)} (every element {X_VALUE}), blocks of "
                      f"{BLOCK} along axis {axis}, scales and zero points {list(scale.ravel())}")
