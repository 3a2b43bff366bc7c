"""Builder for case 011 `matmul_per_channel`: MatMul or Gemm(transB=1) on INT8 weights, per channel or per tensor."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import (
    X_SCALE,
    activations,
    channel_scales,
    dequantized,
    int8_weights,
    pow2_scale,
    qdq_pair,
    weight_dq,
)
from generators.reproducer import Reproducer

SEQ = 8
K = 32  # input features
N = 16  # output features: the per-channel axis
W_SCALE = 2.0**-5


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> MatMul(x, DQ(w[K, N]), axis 1) or Gemm(x, DQ(w[N, K]), axis 0, transB=1) -> [Q/DQ] -> y."""
    gemm = params["op"] == "gemm_transb"
    x_shape = (SEQ, K) if gemm else (1, SEQ, K)
    x = activations(rng, x_shape)
    w = int8_weights(rng, (N, K) if gemm else (K, N))
    axis = 0 if gemm else 1  # the output-channel axis of the stored weight
    per_channel = params["weights"] == "per_channel"
    scale = channel_scales(rng, N) if per_channel else np.float32(W_SCALE)
    w_float = dequantized(w, scale, axis)
    total = x.astype(np.float64) @ (w_float.T if gemm else w_float)

    nodes, inits = qdq_pair("x", X_SCALE, "x")
    w_nodes, w_inits = weight_dq("w", w, scale, axis=axis)
    nodes, inits = nodes + w_nodes, inits + w_inits
    y_scale = pow2_scale(float(np.max(np.abs(total)))) if params["output_qdq"] else None
    mm_out = "mm" if params["output_qdq"] else "y"
    if gemm:
        nodes.append(node("Gemm", ["x_dq", "w_dq"], [mm_out], transB=1))
    else:
        nodes.append(node("MatMul", ["x_dq", "w_dq"], [mm_out]))
    if y_scale is not None:
        y_nodes, y_inits = qdq_pair("mm", y_scale, "mm", output="y")
        nodes, inits = nodes + y_nodes, inits + y_inits
    y_shape = (SEQ, N) if gemm else (1, SEQ, N)
    model = make_model(
        "matmul_per_channel", nodes, [value_info("x", np.float32, x_shape)],
        [value_info("y", np.float32, y_shape)], inits,
    )
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=(f"node_of_{mm_out}",),
        output_steps={"y": float(y_scale) if y_scale is not None else None},
        trt={"int8": True},
        notes=f"{params['op']} {K}->{N} on {SEQ} tokens; weights {params['weights']} on axis {axis}",
    )
