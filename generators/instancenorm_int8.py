"""Reproducers for seed 001 (cases/instancenorm_int8.py): Conv -> InstanceNormalization -> Slice."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import const, make_model, node, value_info
from generators.reproducer import Reproducer

IN_SHAPE = (1, 2, 4, 4)
CHANNELS = 4
OUT_SHAPE = (1, CHANNELS - 1, 4, 4)
INT64_MAX = np.iinfo(np.int64).max


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """The same float model for both values of the NATIVE_INSTANCENORM parser flag."""
    x = rng.standard_normal(IN_SHAPE).astype(np.float32)
    weights = [
        const("conv_w", rng.standard_normal((CHANNELS, IN_SHAPE[1], 3, 3)).astype(np.float32) * 0.3),
        const("conv_b", rng.standard_normal(CHANNELS).astype(np.float32) * 0.1),
        const("norm_scale", rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32)),
        const("norm_bias", rng.standard_normal(CHANNELS).astype(np.float32) * 0.1),
        # Drop channel 0: ends = INT64_MAX means "to the end", and lies outside INT32 range.
        const("slice_starts", np.array([1], dtype=np.int64)),
        const("slice_ends", np.array([INT64_MAX], dtype=np.int64)),
        const("slice_axes", np.array([1], dtype=np.int64)),
    ]
    nodes = [
        node("Conv", ["x", "conv_w", "conv_b"], ["conv"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("InstanceNormalization", ["conv", "norm_scale", "norm_bias"], ["norm"], epsilon=1e-5),
        node("Slice", ["norm", "slice_starts", "slice_ends", "slice_axes"], ["y"]),
    ]
    model = make_model(
        "instancenorm_int8", nodes, [value_info("x", np.float32, IN_SHAPE)],
        [value_info("y", np.float32, OUT_SHAPE)], weights,
    )
    native = params["native_instancenorm"]
    # Set or clear the flag explicitly: its default is off in 8.6 and on from 10.0.
    flag = "NATIVE_INSTANCENORM" if native else "-NATIVE_INSTANCENORM"
    trt = {"int8": True, "calibrator": None, "parser_flags": [flag]}
    if not native:
        trt["needs_cudnn"] = "the InstanceNormalization_TRT plugin calls cuDNN"
    if params["int8_ranges"] == "trtexec":
        trt["int8_ranges"] = "trtexec"
    return Reproducer(
        model, {"x": x}, ("node_of_conv", "node_of_norm"), {"y": None}, trt=trt,
        notes="INT8 build with no calibrator and no Q/DQ: no tensor has a scale"
        + ("; dummy dynamic ranges as `trtexec --int8` sets them" if params["int8_ranges"] == "trtexec" else ""),
    )
