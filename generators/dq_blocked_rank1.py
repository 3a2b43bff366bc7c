"""Builder for case 026 `dq_blocked_rank1`: DequantizeLinear-21 blocked along axis 0 of a 1-D (or 2-D) int8 input."""

from __future__ import annotations

import numpy as np

from cases.dq_blocked_rank1 import SHAPES
from generators.onnx_util import const, make_model, node, value_info
from generators.reproducer import Reproducer
from generators.typed_qdq import small_integers

OPSET = 21  # DequantizeLinear-21: block_size
# #32730's minimal case, word for word.
THREAD_X = np.array([10, 20, 30, 40, 50, 60, 70, 80], np.int8)
THREAD_SCALE = np.array([0.5, 2.0], np.float32)
THREAD_ZERO_POINT = np.array([0, 10], np.int8)
TRT = {"strongly_typed": True, "int8": True}
ZERO_POINTS = {True: "int8 zero points as in the thread", False: "no zero point"}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the input shape and block size, with the thread's zero points or none."""
    shape, block = SHAPES[params["shape"]]
    with_zero_point = params["zero_point"] == "thread"
    scale_shape = (shape[0] // block, *shape[1:])
    if params["shape"] == "8_block4":
        x, scale, zero_point = THREAD_X, THREAD_SCALE, THREAD_ZERO_POINT
    else:
        x = small_integers(rng, shape, -100, 100, np.dtype(np.int8))
        scale = (2.0 ** -rng.integers(-1, 4, size=scale_shape)).astype(np.float32)  # 2 .. 1/8, power-of-two
        zero_point = small_integers(rng, scale_shape, -9, 9, np.dtype(np.int8))
    inputs, inits = ["x", "x_scale"], [const("x_scale", scale)]
    if with_zero_point:
        inputs.append("x_zero_point")
        inits.append(const("x_zero_point", zero_point))
    nodes = [node("DequantizeLinear", inputs, ["y"], axis=0, block_size=block)]
    model = make_model("dq_blocked_rank1", nodes, [value_info("x", np.int8, shape)],
                       [value_info("y", np.float32, shape)], inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"DequantizeLinear-21 of an int8 input {list(shape)}, blocks of {block} along axis 0 "
                      f"(scale {list(scale_shape)}), {ZERO_POINTS[with_zero_point]}")
