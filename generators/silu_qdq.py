"""Builder for case 024 `silu_qdq`: YOLOv8's stem Conv and its SiLU, Q/DQ placed as each producer places it."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np
import onnx

from cases.silu_qdq import QDQ_AFTER
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

IN_SHAPE = (1, 3, 64, 64)  # an RGB image, as YOLOv8's stem (/model.0/conv/Conv) sees it
OUT_CHANNELS = 16
OUT_SHAPE = (1, OUT_CHANNELS, 32, 32)
CONV = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}
BIAS_SCALE = 2.0**-6  # the float bias (BatchNorm folded in) is whole multiples of this
# A Sigmoid's output in steps moves by one where two engines' Sigmoids differ in the last bits, and the Mul and its
# output Q can each add a step: two steps for the Q/DQ forms. The implicit form is quantized by trtexec's dummy
# ranges (+-2 in, +-4 out), not by the data's, so its INT8 Conv may be a few max/127 steps off.
TOLERANCE_STEPS = {"implicit": 4.0}
DEFAULT_TOLERANCE = 2.0
TRT_IMPLICIT = {"int8": True, "calibrator": None, "int8_ranges": "trtexec"}  # trtexec --int8, no calibration cache


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One placement: x -> [Q/DQ] -> Conv (INT8 weights -> DQ, float bias) -> SiLU, Q/DQ where `form` puts them."""
    form = params["form"]
    x = activations(rng, IN_SHAPE)
    w, w_scale = int8_weights(rng, (OUT_CHANNELS, IN_SHAPE[1], 3, 3)), channel_scales(rng, OUT_CHANNELS)
    bias = (rng.integers(-8, 9, size=OUT_CHANNELS) * BIAS_SCALE).astype(np.float32)
    conv = float_op("Conv", [x, dequantized(w, w_scale, 0), bias], **CONV)
    sigmoid = 1.0 / (1.0 + np.exp(-conv.astype(np.float64)))
    scales = {"conv": pow2_scale(_peak(conv)), "sigmoid": pow2_scale(_peak(sigmoid)),
              "act": pow2_scale(_peak(conv * sigmoid))}
    if form == "implicit":
        nodes, inits = [], [const("w", dequantized(w, w_scale, 0).astype(np.float32))]
        conv_in, trt = ["x", "w", "bias"], TRT_IMPLICIT
    else:
        nodes, inits = qdq_pair("x", X_SCALE, "x")
        w_nodes, w_inits = weight_dq("w", w, w_scale, axis=0)
        nodes, inits = nodes + w_nodes, inits + w_inits
        conv_in, trt = ["x_dq", "w_dq", "bias"], {"int8": True}
    nodes.append(node("Conv", conv_in, ["conv"], **CONV))
    silu, silu_inits, y_step = _silu(form, scales)
    model = make_model("silu_qdq", nodes + silu, [value_info("x", np.float32, IN_SHAPE)],
                       [value_info("y", np.float32, OUT_SHAPE)], inits + [const("bias", bias)] + silu_inits)
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=("node_of_conv",),
        output_steps={"y": y_step},
        tolerance_steps=TOLERANCE_STEPS.get(form, DEFAULT_TOLERANCE),
        trt=trt,
        notes=f"3x3 Conv {IN_SHAPE[1]}->{OUT_CHANNELS}, stride 2, then SiLU; Q/DQ: {form}"
        + ("; dummy dynamic ranges as `trtexec --int8` sets them" if form == "implicit" else ""),
    )


def _silu(form: str, scales: Dict[str, np.float32]) \
        -> Tuple[List[onnx.NodeProto], List[onnx.TensorProto], Optional[float]]:
    """Sigmoid and Mul after `conv` (x * Sigmoid(x), as exporters write SiLU), with the form's Q/DQ; and the output's
    quantization step (None for a float output)."""
    nodes: List[onnx.NodeProto] = []
    inits: List[onnx.TensorProto] = []
    after_conv, after_sigmoid, after_mul = QDQ_AFTER.get(form, (False, False, False))

    def qdq(tensor: str) -> str:
        pair, pair_inits = qdq_pair(tensor, float(scales[tensor]), tensor)
        nodes.extend(pair)
        inits.extend(pair_inits)
        return f"{tensor}_dq"

    x = qdq("conv") if after_conv else "conv"
    nodes.append(node("Sigmoid", [x], ["sigmoid"]))
    gate = qdq("sigmoid") if after_sigmoid else "sigmoid"
    nodes.append(node("Mul", [x, gate], ["act" if after_mul else "y"]))
    if not after_mul:
        return nodes, inits, None
    pair, pair_inits = qdq_pair("act", float(scales["act"]), "act", output="y")
    return nodes + pair, inits + pair_inits, float(scales["act"])


def _peak(a: np.ndarray) -> float:
    return float(np.max(np.abs(a)))
