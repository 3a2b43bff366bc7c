"""Builder for case 028 `resize_linear_qdq_drop`: Q -> DQ -> Resize (linear or nearest) -> Q -> DQ."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import const, make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, qdq_pair
from generators.reproducer import Reproducer

# #28448's model: scale 1.0, int8 zero point 0, sizes [1, 1, 1, 6]; an input whose quantized values give its outputs.
THREAD_X = np.array([2.0, 7.0, 4.0], np.float32).reshape(1, 1, 1, 3)
THREAD_SCALE = 1.0
UPSAMPLE_IN = (1, 4, 8, 8)
MODES = {
    "linear": {"mode": "linear", "coordinate_transformation_mode": "half_pixel"},
    "nearest": {"mode": "nearest", "coordinate_transformation_mode": "half_pixel"},
}
TOLERANCE_STEPS = 0.5  # interpolated whole steps land on quarter steps: an int8 Resize that truncates is off by one
TRT = {"int8": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the thread's 1x3 input or an 8x8 upsample, linear or nearest."""
    if params["input"] == "thread_1x3":
        x, scale = THREAD_X, THREAD_SCALE
    else:
        x, scale = activations(rng, UPSAMPLE_IN), X_SCALE
    n, c, h, w = x.shape
    out_shape = (n, c, h, 2 * w) if params["input"] == "thread_1x3" else (n, c, 2 * h, 2 * w)
    nodes, inits = qdq_pair("x", scale, "x")
    inits.append(const("sizes", np.array(out_shape, np.int64)))
    nodes.append(node("Resize", ["x_dq", "", "", "sizes"], ["r"], **MODES[params["mode"]]))
    out_nodes, out_inits = qdq_pair("r", scale, "y", output="y")
    model = make_model("resize_linear_qdq_drop", nodes + out_nodes, [value_info("x", np.float32, x.shape)],
                       [value_info("y", np.float32, out_shape)], inits + out_inits)
    return Reproducer(model, {"x": x}, ("node_of_r",), output_steps={"y": float(scale)},
                      tolerance_steps=TOLERANCE_STEPS, trt=TRT,
                      notes=f"Q/DQ -> Resize {list(x.shape)} -> {list(out_shape)} ({params['mode']}, half_pixel) -> "
                      f"Q/DQ, scale {scale}")
