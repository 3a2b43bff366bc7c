"""Builder for case 005 `convtranspose_q_fusion`: a Q/DQ Conv or ConvTranspose and what follows it."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import W_RANGE, X_SCALE, activations, float_op, int8_weights, pow2_scale, qdq_pair, weight_dq
from generators.reproducer import Reproducer

CHANNELS = 8
SPATIAL = 6
W_SCALE = 2.0**-5
# Conv: 3x3, pads 1 (same size); ConvTranspose: 2x2, stride 2 (twice the size), as in a decoder's upsampling.
OPS = {
    "conv": ("Conv", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}, 1),
    "conv_transpose": ("ConvTranspose", {"kernel_shape": [2, 2], "strides": [2, 2]}, 2),
}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> op(INT8 weights) -> [Q/DQ | Concat with a Q/DQ Conv branch, then Q/DQ] -> y."""
    op_type, attrs, upscale = OPS[params["op"]]
    k = attrs["kernel_shape"][0]
    out_spatial = SPATIAL * upscale
    x = activations(rng, (1, CHANNELS, SPATIAL, SPATIAL))
    # Conv weights are [out, in, k, k]; ConvTranspose weights are [in, out, k, k]: both CHANNELS x CHANNELS here.
    w = int8_weights(rng, (CHANNELS, CHANNELS, k, k))
    up_float = float_op(op_type, [x, w.astype(np.float32) * W_SCALE], **attrs)

    nodes, inits = qdq_pair("x", X_SCALE, "x")
    more_nodes, more_inits = weight_dq("w", w, np.float32(W_SCALE))
    nodes, inits = nodes + more_nodes, inits + more_inits
    inputs = {"x": x}
    follower = params["follower"]
    up_name = "y" if follower == "none" else "up"
    nodes.append(node(op_type, ["x_dq", "w_dq"], [up_name], **attrs))
    peak = float(np.max(np.abs(up_float)))

    if follower == "q":
        y_scale = pow2_scale(peak)
        q_nodes, q_inits = qdq_pair("up", y_scale, "up", output="y")
        nodes += q_nodes
        inits += q_inits
    elif follower == "concat_q":
        # #2597: Concat(ConvTranspose, conv1, conv2) -> Q; here one Conv branch on its own Q/DQ input.
        side_x = activations(rng, (1, CHANNELS, out_spatial, out_spatial))
        side_w = int8_weights(rng, (CHANNELS, CHANNELS, 3, 3))
        side_attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
        side_float = float_op("Conv", [side_x, side_w.astype(np.float32) * W_SCALE], **side_attrs)
        peak = max(peak, float(np.max(np.abs(side_float))))
        y_scale = pow2_scale(peak)
        s_nodes, s_inits = qdq_pair("side_x", X_SCALE, "side_x")
        sw_nodes, sw_inits = weight_dq("side_w", side_w, np.float32(W_SCALE))
        c_nodes, c_inits = qdq_pair("cat", y_scale, "cat", output="y")
        nodes += s_nodes + sw_nodes + [
            node("Conv", ["side_x_dq", "side_w_dq"], ["side"], **side_attrs),
            node("Concat", ["up", "side"], ["cat"], axis=1),
        ] + c_nodes
        inits += s_inits + sw_inits + c_inits
        inputs["side_x"] = side_x
    else:
        y_scale = None

    out_channels = CHANNELS * (2 if follower == "concat_q" else 1)
    graph_inputs = [value_info(n, np.float32, a.shape) for n, a in inputs.items()]
    model = make_model(
        "convtranspose_q_fusion", nodes, graph_inputs,
        [value_info("y", np.float32, (1, out_channels, out_spatial, out_spatial))], inits,
    )
    target = "node_of_y" if follower == "none" else "node_of_up"
    return Reproducer(
        model=model,
        inputs=inputs,
        target_nodes=(target,),
        output_steps={"y": float(y_scale) if y_scale is not None else None},
        trt={"int8": True},
        notes=f"{op_type} {CHANNELS}->{CHANNELS} channels, {k}x{k} kernel, per-tensor INT8 weights (|w| <= {W_RANGE}); "
        "INT8 output of the target layer means the following Q was fused into it",
    )
