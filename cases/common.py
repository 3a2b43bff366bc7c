"""Symptoms that several cases share: one declaration, one source."""

from __future__ import annotations

from typing import Mapping, Tuple

from cases.base import Expectation, Signature

OPERATORS_MD = "https://github.com/onnx/onnx-tensorrt/blob/main/docs/operators.md"
ZERO_POINT_ASSERT = "https://github.com/onnx/onnx-tensorrt/blob/10.1-GA/onnxOpImporters.cpp"

NONZERO_ZERO_POINT = Signature(
    name="nonzero_zero_point",
    # The ONNX parser's check on Q/DQ zero points: 8.x prints the failed assertion
    # "shiftIsAllZeros(zeroPoint) && ...", 8.6 and 10.x say "TensorRT only supports symmetric
    # quantization. The zero point for the QuantizeLinear/DequantizeLinear operator must be all zeros."
    pattern=r"shiftIsAllZeros\(zeroPoint\)|TensorRT only supports symmetric quantization",
    kind="error",
    source=ZERO_POINT_ASSERT,
)


def nonzero_zero_point_fails(where: Mapping[str, Tuple]) -> Expectation:
    """TensorRT's parser refuses a Q/DQ with a non-zero zero point (uint8 activations at 128)."""
    return Expectation(
        engine="tensorrt",
        versions=">=8.0",
        outcome="fail",
        stage="load",
        signature=NONZERO_ZERO_POINT.name,
        source=OPERATORS_MD,
        where=dict(where),
        note="operators.md: QuantizeLinear `y_zero_point` must be 0, DequantizeLinear `x_zero_point` "
        "must be zero; the parser asserts it (onnx-tensorrt 8.0-GA to 10.1-GA); 10.x first warns "
        "that UINT8 zero points are read as INT8",
    )
