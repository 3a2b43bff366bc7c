"""A 0-d INT8 constant -> DQ -> Mul/Add, refused by TensorRT-RTX ("Quantized constant", NVIDIA/TensorRT#3919).

onnxruntime's `quantize_static` with TensorRT settings quantizes an elementwise op's constant operand like any other
input: BERT's exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)), gets its 0.5 (and its 1) as a 0-d INT8 initializer ->
DequantizeLinear -> Mul (Add). TensorRT-RTX 1.7.1.116 refuses that model at build: "Quantized constant
(encoder.layer.0.intermediate.intermediate_act_fn.half_quantized) is only allowed before DQ or PLUGIN_V2 or kPLUGIN_V3
node", though the constant does feed a DequantizeLinear; the same model's shaped INT8 weights and biases build.

Why: the ONNX parser reshapes a 0-d Q/DQ input to 1-D before the layer ("TRT does not support scalar data input for
Q/DQ layers, convert 0-D tensor to 1-D first", onnx-tensorrt's QuantDequantLinearHelper from 9.0 on; 8.6-GA has no such
step), so the network has Constant (INT8, 0-d) -> Shuffle (ONNXTRT_reshapeTensor) -> Dequantize, and the builder's
quantized-constant check (the one #3919 met with an IPluginV3 on TensorRT 10.0.1) sees a Shuffle after the constant.
A [1]-shaped constant, the same value, goes straight into the Dequantize layer and builds.

TensorRT-RTX 1.4 to 1.6 never get that far: their parser refuses the 0-d DequantizeLinear itself ("Axis must be in
the range [0, nbDims (0)]. Provided axis is: 1": it takes the opset-13 default axis 1 on a 0-d input). So every
TensorRT-RTX version refuses quantize_static's GELU constant, at parse before 1.7 and at build on 1.7.1.116, for every
target; the [1]-shaped constant builds on 1.5 to 1.7 (1.4 needs a GPU to build it).

Sources: no NVIDIA document or thread states either refusal. The committed no-GPU TensorRT-RTX 1.7.1.116 cells
(reports/observed/no-gpu/check/) show the build refusal on the producer transformer, whose 1/sqrt(d) is
quantize_static's 0-d constant into a Mul ("Quantized constant (inv_sqrt_d_quantized) ..."): that is the one
expectation. 1.4-1.6, the Add and every target are our runs' to say (tests/data/trt/rtx-2026-archs.json keeps their
errors); TensorRT 10.x, whose 10.1-GA parser reshapes the same way, is a GPU round's to observe. Their cells read
"undocumented" or "new failure" until a source speaks.

TensorRT 8.5.1.7 to 8.6.0 (observed on an H100 and an H200, 2026-11-24, equal cell for cell): every form builds and
runs within a step of the reference, the Mul or Add in INT8, 0-d constant or not: 8.x's parser has no 0-d reshape.

The reproducer: x [1, 8, 16] (a BERT hidden state) -> Q/DQ -> Mul by 0.5 or Add of 1.0, the constant an INT8
initializer (32 steps of 2^-6 or 2^-5) -> DequantizeLinear, 0-d ("scalar", as quantize_static writes it) or of shape
[1] ("one_element"), -> Q/DQ -> y. Every value is exact in its steps. Target: the Mul or Add.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Signature
from cases.bias_add_after_qdq import ORT_QUANTIZE_PY
from cases.common import ONNX_OP_IMPORTERS_10_1
from cases.pattern import Graph, Match, Pattern, activation_dq, matches, quantized_after
from cases.quantized_constant_plugin import ISSUE_3919, int8_dq_constant, quantized_producer, scalar_int8_dq

# ONNX_OP_IMPORTERS_10_1 (onnx-tensorrt's QuantDequantLinearHelper): a 0-d data input is reshaped to [1] before the
# Q/DQ layer.

# Baselines (our own observed cells, not documentation): TensorRT-RTX 1.7.1.116 with no GPU on the producer models
# (python -m check).
OBSERVED_RTX_17 = "reports/observed/no-gpu/check/tensorrt-rtx-1.7.1.116.jsonl"
# This reproducer on TensorRT 8.5.1.7-8.6.0, an H100 (the H200's cells in nvidia-h200/seeds-024-025/ are the same).
OBSERVED_8X = "reports/observed/nvidia-h100/seeds-024-025/trt-8.6.0.jsonl"
# Real parse and build errors of this repository's TensorRT-RTX runs of seeds 024-025 with no GPU, kept as test data.
RTX_ARCH_LOGS = "tests/data/trt/rtx-2026-archs.json"

RTX_SCALAR_DQ_AXIS = Signature(
    name="rtx_scalar_dq_axis",
    # TensorRT-RTX 1.4.0.76 to 1.6.1.120's parser on a 0-d DequantizeLinear input: "Assertion failed: (axis >= 0 && axis
    # <= nbDims): Axis must be in the range [0, nbDims (0)]. Provided axis is: 1 [node node_of_c_dq (DequantizeLinear),
    # convertAxis]".
    pattern=r"Axis must be in the range \[0, nbDims \(0\)\]",
    kind="error",
    short="axis out of range on a 0-d DQ input",
    source=RTX_ARCH_LOGS,
    basis="baseline",
)
RTX_QUANTIZED_CONSTANT = Signature(
    name="rtx_quantized_constant",
    # TensorRT-RTX 1.7.1.116: "Error Code 4: API Usage Error (Quantized constant (inv_sqrt_d_quantized) is only allowed
    # before DQ or PLUGIN_V2 or kPLUGIN_V3 node. If this constant is not intended as a quantized floating-point value,
    # consider using other data types such as kBOOL, kINT32, or kINT64 instead. In matchQuantizedConstantPluginOrDQ".
    pattern=r"Quantized constant \([^)]*\) is only allowed before DQ or PLUGIN_V2",
    kind="error",
    short="quantized constant not before a DQ",
    source=OBSERVED_RTX_17,
    basis="baseline",
)


_OPS = {"Mul": ("mul", "node_of_product"), "Add": ("add", "node_of_sum")}
FIX_SCALAR_CONSTANT = ('onnxruntime.quantization.quantize_static(..., nodes_to_exclude=["<this node>"]) keeps the '
                       "constant in float; or give its INT8 initializer the shape [1] instead of 0-d")


def match_scalar(g: Graph, n: Any) -> List[Match]:
    """A Mul or Add of a 0-d INT8 initializer -> DequantizeLinear (quantize_static's GELU 0.5 and 1); the one-element
    control where it is an Add between Q/DQ (observed INT8)."""
    op, target = _OPS[n.op_type]
    if any(scalar_int8_dq(g, i) for i in n.input):
        return matches(n, {"constant": "scalar", "op": op}, target=target, fix=FIX_SCALAR_CONSTANT)
    consts = [i for i in n.input if int8_dq_constant(g, i)]
    other = [i for i in n.input if i not in consts]
    if op == "add" and consts and other and activation_dq(g, other[0]) is not None \
            and quantized_after(g, n.output[0]) is not None and not quantized_producer(g, other[0]):
        return matches(n, {"constant": "one_element", "op": op}, rule="dq_constant_into_add", target=target)
    return []


PATTERN = Pattern(
    rules={"scalar_quantized_constant": "0-d quantized constant into Mul/Add", "dq_constant_into_add":
           "DQ constant into Add"},
    ops=tuple(_OPS),
    match=match_scalar,
    controls=({"constant": ("one_element",), "op": ("mul",)},),
)


CASE = Case(
    id="scalar_quantized_constant",
    seed="025",
    title="A 0-d INT8 constant -> DequantizeLinear -> Mul or Add, as quantize_static writes GELU's 0.5 and 1",
    links=(ISSUE_3919, ONNX_OP_IMPORTERS_10_1, ORT_QUANTIZE_PY),
    axes={"constant": ("scalar", "one_element"), "op": ("mul", "add")},
    target_nodes=("node_of_product", "node_of_sum"),
    signatures=(RTX_SCALAR_DQ_AXIS, RTX_QUANTIZED_CONSTANT),
    expectations=(
        Expectation(
            "tensorrt-rtx", "==1.7.1.116", "fail", OBSERVED_RTX_17, stage="build",
            signature=RTX_QUANTIZED_CONSTANT.name, where={"constant": ("scalar",), "op": ("mul",)},
            hardware="no GPU: ahead-of-time build for the default targets", basis="baseline",
            note="observed on the producer transformer quantized by quantize_static (s8, per channel, float bias): "
            "its 0-d 1/sqrt(d) -> DequantizeLinear -> Mul is refused at build ('Quantized constant "
            "(inv_sqrt_d_quantized) is only allowed before DQ or PLUGIN_V2 or kPLUGIN_V3 node')",
        ),
        Expectation(
            "tensorrt", ">=8.5,<8.7", "int8", OBSERVED_8X, hardware="NVIDIA H100 and H200", basis="baseline",
            note="observed on 8.5.1.7, 8.5.2.2, 8.5.3.1 and 8.6.0 (the folder's four files, H100 and H200): every form "
            "builds, the Mul or Add in INT8, within a step of the reference",
        ),
    ),
    builder="generators.scalar_quantized_constant:build",
    pattern=PATTERN,
)
