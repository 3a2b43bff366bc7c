"""Builder for case 029 `fp16_quantize_rounding`: float16 QuantizeLinear (float16 scale) to int8, opset 19."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import const, make_model, node, value_info
from generators.reproducer import Reproducer

OPSET = 19  # QuantizeLinear-19: a float16 input takes a float16 scale
F16 = np.float16
# #32452's minimal case.
THREAD_X = np.array([0.050018310546875, -0.050018310546875], F16)
SCALE = F16(0.0999755859375)
SPREAD = 256
STEPS = 120  # |x| < 121 steps, inside int8
FRACTIONS = (0.25, 0.75)  # a quarter step from a whole one: rounding is clear-cut, truncation misses every 0.75
TOLERANCE_STEPS = 0.5  # truncation toward zero is one step off
TRT = {"strongly_typed": True, "int8": True, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the PR's two values or a spread of 256, and the int8 or dequantized output."""
    if params["values"] == "thread":
        x = THREAD_X
    else:
        whole = rng.integers(-STEPS, STEPS + 1, size=SPREAD) + rng.choice(FRACTIONS, size=SPREAD)
        x = (whole * np.float32(SCALE)).astype(F16)
    inits = [const("x_scale", SCALE), const("x_zero_point", np.int8(0))]
    nodes = [node("QuantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_q"])]
    if params["output"] == "int8":
        output, dtype, step = "x_q", np.int8, None
    else:
        nodes.append(node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["y"]))
        output, dtype, step = "y", F16, float(SCALE)
    model = make_model("fp16_quantize_rounding", nodes, [value_info("x", F16, x.shape)],
                       [value_info(output, dtype, x.shape)], inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_x_q",), output_steps={output: step},
                      tolerance_steps=TOLERANCE_STEPS, trt=TRT,
                      notes=f"float16 QuantizeLinear of {x.size} values, scale {float(SCALE)} (float16), output "
                      f"{'int8' if step is None else 'dequantized to float16'}")
