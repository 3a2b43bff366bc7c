"""Builder for case 016 `fp8_conv_stack`: three FP8 E4M3 Q/DQ Convs (3->64->64->3) with ReLU, as in TensorRT-RTX#35."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, channel_scales, float_op
from generators.reproducer import Reproducer
from generators.typed_qdq import FP8_E4M3, FP8_MAX, small_integers, typed_qdq, typed_weight_dq

OPSET = 19
CHANNELS = (3, 64, 64, 3)  # the thread's Conv 3->64, Conv 64->64, Conv 64->3
SPATIAL = 16  # the thread's profile runs 64x64 to 512x512; the build does not depend on it, the reference's time does
W_SCALE = 2.0**-6
W_RANGE = 8
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}
TRT = {"strongly_typed": True, "int8": False, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> FP8 Q/DQ -> Conv -> ReLU -> FP8 Q/DQ -> Conv -> ReLU -> FP8 Q/DQ -> Conv -> y; float16 or float32 x, y."""
    dtype = np.dtype(params["activation"])
    per_channel = params["weights"] == "per_channel"
    x = activations(rng, (1, CHANNELS[0], SPATIAL, SPATIAL)).astype(dtype)
    weights = []
    for k in range(3):
        c_in, c_out = CHANNELS[k], CHANNELS[k + 1]
        w = small_integers(rng, (c_out, c_in, 3, 3), -W_RANGE, W_RANGE, FP8_E4M3)
        scale = channel_scales(rng, c_out) if per_channel else np.array(W_SCALE, np.float32)
        weights.append((w, scale.astype(dtype)))
    scales = _activation_scales(x, weights, dtype)

    nodes, inits = [], []
    source = "x"
    for k, ((w, w_scale), a_scale) in enumerate(zip(weights, scales), start=1):
        q_nodes, q_inits = typed_qdq(source, a_scale, np.array(0, FP8_E4M3), f"a{k}")
        w_nodes, w_inits = typed_weight_dq(f"w{k}", w, w_scale, np.zeros(w_scale.shape, FP8_E4M3),
                                           axis=0 if per_channel else None)
        conv_out = "y" if k == 3 else f"c{k}"
        nodes += q_nodes + w_nodes + [node("Conv", [f"a{k}_dq", f"w{k}_dq"], [conv_out], **CONV)]
        inits += q_inits + w_inits
        if k < 3:
            nodes.append(node("Relu", [conv_out], [f"r{k}"]))
            source = f"r{k}"
    shape = (1, CHANNELS[-1], SPATIAL, SPATIAL)
    model = make_model("fp8_conv_stack", nodes, [value_info("x", dtype, x.shape)], [value_info("y", dtype, shape)],
                       inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_c1", "node_of_c2", "node_of_y"), trt=TRT,
                      notes=f"Conv {'->'.join(map(str, CHANNELS))} with ReLU after the first two, {SPATIAL}x{SPATIAL}; "
                      f"FP8 E4M3 activations per tensor, FP8 weights {params['weights']}; {dtype} outside")


def _activation_scales(x: np.ndarray, weights: list, dtype: np.dtype) -> list:
    """Power-of-two scales that put each Conv input's float peak at or below FP8_MAX / 2 (sized on the float chain)."""
    scales, h = [np.array(X_SCALE, dtype)], x.astype(np.float32)
    for w, scale in weights[:-1]:
        shaped = scale.astype(np.float32).reshape(-1, 1, 1, 1) if scale.ndim else scale.astype(np.float32)
        h = np.maximum(float_op("Conv", [h, w.astype(np.float32) * shaped], **CONV), 0)
        peak = max(float(np.max(np.abs(h))), 1e-6)
        scales.append(np.array(2.0 ** np.ceil(np.log2(peak / (FP8_MAX / 2))), dtype))
    return scales
