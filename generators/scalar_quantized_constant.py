"""Builder for case 025 `scalar_quantized_constant`: x -> Q/DQ -> Mul/Add(INT8 constant -> DQ) -> Q/DQ -> y."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, pow2_scale, qdq_pair, weight_dq
from generators.reproducer import Reproducer

SHAPE = (1, 8, 16)  # [batch, sequence, hidden], as BERT's GELU sees it
STEPS = 32  # the constant in steps: |w| <= 63 keeps it clear of u8s8 saturation on any x86 CPU
# GELU's 0.5 and 1 (x * 0.5 * (1 + erf(...))), each 32 steps of a power of two, so every product and sum is exact.
CONSTANTS = {"mul": ("Mul", "product", 0.5), "add": ("Add", "sum", 1.0)}
SHAPES = {"scalar": (), "one_element": (1,)}  # 0-d as quantize_static writes it, or [1]


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the constant 0-d or [1], multiplied or added."""
    op, out, value = CONSTANTS[params["op"]]
    x = activations(rng, SHAPE)
    c = np.full(SHAPES[params["constant"]], STEPS, np.int8)
    y = x.astype(np.float64) * value if op == "Mul" else x.astype(np.float64) + value
    y_step = float(pow2_scale(float(np.max(np.abs(y)))))
    nodes, inits = qdq_pair("x", X_SCALE, "x")
    c_nodes, c_inits = weight_dq("c", c, np.float32(value / STEPS))
    y_nodes, y_inits = qdq_pair(out, y_step, out, output="y")
    nodes += c_nodes + [node(op, ["x_dq", "c_dq"], [out])] + y_nodes
    model = make_model("scalar_quantized_constant", nodes, [value_info("x", np.float32, SHAPE)],
                       [value_info("y", np.float32, SHAPE)], inits + c_inits + y_inits)
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=(f"node_of_{out}",),
        output_steps={"y": y_step},
        trt={"int8": True},
        notes=f"{op} by {value}: an INT8 initializer of shape {list(c.shape)} ({STEPS} steps of {value / STEPS:g}) "
        "-> DequantizeLinear",
    )
