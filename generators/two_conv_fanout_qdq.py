"""Builder for case 032 `two_conv_fanout_qdq`: the reduced detector graph, one Q/DQ activation into 1x1 Convs."""

from __future__ import annotations

from typing import Optional

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

# (channels in, channels out, height and width): the reduced detector's, and a small one.
SIZES = {"detector": (48, 24, 104), "small": (8, 4, 16)}
BIAS_SCALE = 2.0**-6  # the float bias (BatchNorm folded in) is whole multiples of this


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> one or two 1x1 Convs (INT8 weights -> DQ, float bias) -> [Q/DQ] -> one output per Conv."""
    c_in, c_out, hw = SIZES[params["size"]]
    convs = 2 if params["consumers"] == "two" else 1
    requant = params["output_qdq"] == "yes"
    x = activations(rng, (1, c_in, hw, hw))
    nodes, inits = qdq_pair("x", X_SCALE, "x")
    outputs, steps = [], {}  # type: List[str], Dict[str, Optional[float]]
    targets = []
    for k in range(convs):
        w, w_scale = int8_weights(rng, (c_out, c_in, 1, 1)), channel_scales(rng, c_out)
        bias = (rng.integers(-8, 9, size=c_out) * BIAS_SCALE).astype(np.float32)
        w_nodes, w_inits = weight_dq(f"w{k}", w, w_scale, axis=0)
        nodes, inits = nodes + w_nodes, inits + w_inits + [const(f"b{k}", bias)]
        out = f"y{k}"
        conv_out = f"c{k}" if requant else out
        nodes.append(node("Conv", ["x_dq", f"w{k}_dq", f"b{k}"], [conv_out], kernel_shape=[1, 1]))
        targets.append(f"node_of_{conv_out}")
        step: Optional[float] = None
        if requant:
            conv = float_op("Conv", [x, dequantized(w, w_scale, 0), bias], kernel_shape=[1, 1])
            step = float(pow2_scale(float(np.max(np.abs(conv)))))
            pair, pair_inits = qdq_pair(conv_out, step, conv_out, output=out)
            nodes, inits = nodes + pair, inits + pair_inits
        outputs.append(value_info(out, np.float32, (1, c_out, hw, hw)))
        steps[out] = step
    model = make_model("two_conv_fanout_qdq", nodes, [value_info("x", np.float32, (1, c_in, hw, hw))], outputs,
                       inits)
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=tuple(targets),
        output_steps=steps,
        tolerance_steps=1.0 if requant else 2.0,
        trt={"int8": True},
        notes=f"{convs} 1x1 Conv {c_in}->{c_out} on one Q/DQ input {hw}x{hw}"
        + ("; each output quantized again" if requant else "; float outputs"),
    )
