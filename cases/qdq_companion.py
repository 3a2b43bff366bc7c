"""Conformance companion: int8 Q/DQ forms per opset, from onnx's reference (github.com/onnx/onnx, onnx/reference).

onnx 1.23.2 ships no int8 Q/DQ node test with a zero zero point (its integer tests are uint8, 16-, 4- and 2-bit, nearly
all with non-zero zero points), so the TensorRT family, which takes symmetric quantization only, refuses nearly every
node test (cases.onnx_node_tests). This set asks the forms it does take: symmetric int8 per tensor and per axis,
blocked int8, uint8 with zero point 0, float8 e4m3fn and int4 with zero point 0, each QuantizeLinear and
DequantizeLinear at every operator version where the form exists, scales and zero points constants (initializers).
Not a seed and not a sweep (`external=True`): its bundles are written at run time (`generators.qdq_companion`), and
like the node tests it documents nothing about any engine: the conformance table says what each version does with
each form (docs/conformance.md).
"""

from __future__ import annotations

from typing import Dict, NamedTuple

from cases.base import Case

ID = "qdq_companion"
# Every operator version of QuantizeLinear and DequantizeLinear (onnx/defs/quantization): a form is written at each one
# from its first, so a change between two versions is one row of the table.
OPSETS = (10, 13, 19, 21, 23, 24, 25)


class Form(NamedTuple):
    """A companion form: its quantized type, its granularity and the first opset that has both."""

    quantized: str  # the ml_dtypes / numpy name of the quantized type
    granularity: str  # "per-tensor", "per-axis" or "blocked"
    first_opset: int


FORMS: Dict[str, Form] = {
    "int8_per_tensor": Form("int8", "per-tensor", 10),
    "int8_per_axis": Form("int8", "per-axis", 13),  # axis came with opset 13
    "blocked": Form("int8", "blocked", 21),  # block_size came with opset 21
    "uint8_zp0": Form("uint8", "per-tensor", 10),
    "e4m3fn": Form("float8_e4m3fn", "per-tensor", 19),  # float8 came with opset 19
    "int4_zp0": Form("int4", "per-tensor", 21),  # int4 came with opset 21
}
# How the operator meets the graph's edge: QuantizeLinear alone (a quantized graph output), QuantizeLinear followed by a
# DequantizeLinear of the same scale and zero point (a float round trip, the pair TensorRT 8.x takes inside a float
# network), DequantizeLinear alone (its quantized input a graph input where numpy has the type, else a constant).
SHAPES = {"QuantizeLinear": ("", "pair"), "DequantizeLinear": ("",)}
SOURCE = "https://github.com/onnx/onnx/blob/main/onnx/reference/ops/op_quantize_linear.py"

CASE = Case(
    id=ID,
    seed="",
    title="conformance companion: symmetric int8, blocked, uint8, float8 e4m3fn and int4 Q/DQ forms, per opset",
    links=(SOURCE,),
    axes={},
    target_nodes=(),  # per bundle: its QuantizeLinear and DequantizeLinear nodes
    signatures=(),
    expectations=(),
    builder="generators.qdq_companion:write_all",
    external=True,
    one_node=True,  # one-node bundles: batched per engine process (engines.run --batch)
)
# The quantized types whose TensorRT-RTX support the GPU architecture decides (cases.onnx_node_tests.PER_TARGET_TYPES):
# their forms are built once per target at their first opset.
PER_TARGET_TYPES = ("float8_e4m3fn", "int4")
