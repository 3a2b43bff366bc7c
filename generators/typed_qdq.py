"""Q/DQ building blocks for the opset 19, 21, 23 and 24 types: float16 scales, FP8 E4M3, INT4/UINT4, FP4 E2M1, E8M0.

DequantizeLinear-19: "'x_scale' determines the output type" (float, float16, bfloat16), and its input may be
float8e4m3fn; QuantizeLinear-19 takes a scale of the input's own type. DequantizeLinear-21 adds int4/uint4 inputs and
blocked quantization (`block_size`, a scale of the input's rank); DequantizeLinear-23 adds float4e2m1 and a scale type
apart from the output type (`output_dtype`); DequantizeLinear-24 adds float8e8m0 scales (MXFP8). The 4- and 8-bit float
and integer arrays are ml_dtypes arrays, which onnx's numpy_helper (onnx >= 1.19) writes as FLOAT8E4M3FN, INT4, UINT4,
FLOAT4E2M1 and FLOAT8E8M0 initializers.
"""

from __future__ import annotations

from typing import Optional, Sequence

import ml_dtypes
import numpy as np

from generators.onnx_util import const, node
from generators.qdq_parts import Graph

FP8_E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
INT4 = np.dtype(ml_dtypes.int4)
UINT4 = np.dtype(ml_dtypes.uint4)
FP4_E2M1 = np.dtype(ml_dtypes.float4_e2m1fn)
E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
FP8_MAX = 448.0  # the largest finite float8e4m3fn
# Every finite float4e2m1 value but -0: whole and half numbers, so x * 2^-k stays exact in float16.
FP4_GRID = (-6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def typed_qdq(source: str, scale: np.ndarray, zero_point: np.ndarray, prefix: str, output: str = "") -> Graph:
    """source -> Q -> DQ -> `output` (default `<prefix>_dq`): the scale's dtype is the input's and the output's,
    the zero point's dtype the quantized type (int8 or float8e4m3fn)."""
    inits = [const(f"{prefix}_scale", scale), const(f"{prefix}_zero_point", zero_point)]
    scale_zp = [f"{prefix}_scale", f"{prefix}_zero_point"]
    nodes = [
        node("QuantizeLinear", [source, *scale_zp], [f"{prefix}_q"]),
        node("DequantizeLinear", [f"{prefix}_q", *scale_zp], [output or f"{prefix}_dq"]),
    ]
    return nodes, inits


def typed_weight_dq(name: str, w: np.ndarray, scale: np.ndarray, zero_point: Optional[np.ndarray] = None,
                    axis: Optional[int] = None, block_size: int = 0) -> Graph:
    """A quantized initializer `name` -> DequantizeLinear -> `<name>_dq`, per tensor, per axis or blocked."""
    inits = [const(name, w), const(f"{name}_scale", scale)]
    inputs = [name, f"{name}_scale"]
    if zero_point is not None:
        inits.append(const(f"{name}_zero_point", zero_point))
        inputs.append(f"{name}_zero_point")
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if block_size:
        attrs["block_size"] = block_size
    return [node("DequantizeLinear", inputs, [f"{name}_dq"], **attrs)], inits


def small_integers(rng: np.random.Generator, shape: Sequence[int], low: int, high: int, dtype: np.dtype) -> np.ndarray:
    """Whole numbers in [low, high] of a quantized dtype; for float8e4m3fn, |v| <= 16 is exact."""
    return rng.integers(low, high + 1, size=tuple(shape)).astype(np.float32 if dtype == FP8_E4M3 else np.int32) \
        .astype(dtype)


def fp4_values(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """float4e2m1 values drawn from its whole grid (|v| <= 6)."""
    return rng.choice(np.array(FP4_GRID, np.float32), size=tuple(shape)).astype(FP4_E2M1)
