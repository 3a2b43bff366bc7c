"""Conformance: onnx's node tests for the quantization operators (github.com/onnx/onnx, onnx/backend/test/case/node).

Not a seed and not a sweep (`external=True`): its bundles are written at run time from the installed onnx package
(`generators.onnx_node_tests`), each node test at its own opset and converted to every opset the engines read, with
the test's inputs and ONNX's expected outputs. It documents nothing about any engine (no expectations): what an
engine version does with each operator form is the conformance table's answer (docs/conformance.md), in its own words
(right, wrong by N steps, refused with the engine's reason, built only), not a verdict against a source.
"""

from __future__ import annotations

from cases.base import Case

ID = "onnx_node_tests"
# The operators whose node tests are taken: quantize and dequantize, and the integer (QOperator) forms.
OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger",
       "MatMulInteger")
# The opsets the engines here read, newest first: each node test is converted to every one of them that the converter
# and the checker allow (TensorRT 11.5 reads up to 25; ONNX Runtime 1.16 up to 19, TensorRT 8.x up to 17).
OPSETS = (25, 23, 21, 19, 13)
SOURCE = "https://github.com/onnx/onnx/tree/main/onnx/backend/test/case/node"

CASE = Case(
    id=ID,
    seed="",
    title="conformance: the onnx package's node tests for the quantization operators, per opset",
    links=(SOURCE,),
    axes={},
    target_nodes=(),  # per bundle: the nodes of the operator under test
    signatures=(),
    expectations=(),
    builder="generators.onnx_node_tests:write_all",
    external=True,
    one_node=True,
)
# The quantized types whose TensorRT-RTX support the GPU architecture decides (its support matrix: FP8 from SM89, FP4
# from SM120, INT4 weights from SM80; docs/tensorrt-rtx.md): a form of these types is built once per target at the
# first opset that has the type (case.json trt.per_target), and, like every other form, for the default target set at
# every opset.
PER_TARGET_TYPES = ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "int4", "uint4")
