"""NVIDIA/TensorRT#3963 and onnx-tensorrt operators.md: DynamicQuantizeLinear has no TensorRT importer.

#3963 quantizes a model with onnxruntime.quantization.quantize_dynamic, which inserts
DynamicQuantizeLinear, and TensorRT 8.6.1.6 (A4000) fails while parsing it with
"getPluginCreator could not find plugin: DynamicQuantizeLinear version: 1": the parser finds no
importer and tries a plugin of that name. onnx-tensorrt's operator support matrix lists
DynamicQuantizeLinear, MatMulInteger and ConvInteger as unsupported in the TensorRT 8.4 table
(commit 009d654), in the 10.1-GA table and in the TensorRT 10.15 table, which adds that TensorRT's IDynamicQuantize
can be composed from ONNX operators as a model local function (not what quantize_dynamic writes). No 11.x table
or release note read here says anything about it, so 10.16 and 11.x carry no expectation.

TensorRT for RTX has no operator table read here that names these operators. Its 1.7.1.116 parser, observed by this
project (ahead of time, on an H100 machine, 2026-11-23), refuses every variant at parse with a bare "false" from
`checkDynamicQuantizeLinear` (and `checkConvInteger`, `checkMatMulInteger` where they follow): a baseline, not a
document. 1.4 to 1.6 refuse them the same way on our runs, with no committed observation yet: "new failure".

Variants: the op alone; DynamicQuantizeLinear feeding MatMulInteger or ConvInteger; and what
quantize_dynamic really emits for a small float MatMul and a small float Conv.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Signature
from cases.common import FIX_STATIC_QDQ, OPERATORS_MD, OPERATORS_MD_10_1, OPERATORS_MD_10_15, ort_u8s8_saturation
from cases.pattern import Graph, Match, Pattern, matches

ISSUE_3963 = "https://github.com/NVIDIA/TensorRT/issues/3963"
# The cross-check column: ONNX Runtime's CPU ConvInteger has no kernel for uint8 activations with
# int8 weights, which is what quantize_dynamic emits for a Conv (1.12 in #12558, 1.14 in #15888).
ORT_12558 = "https://github.com/microsoft/onnxruntime/issues/12558"
ORT_15888 = "https://github.com/microsoft/onnxruntime/issues/15888"
# Observed (a baseline): TensorRT-RTX 1.7.1.116's parser on this case, ahead of time on an H100 machine.
OBSERVED_RTX_17 = "reports/observed/nvidia-h100/rtx-1.7.1.116.jsonl"


def match_dynamic(g: Graph, n: Any) -> List[Match]:
    """DynamicQuantizeLinear (by what reads it) and the integer ops ConvInteger, MatMulInteger: no TensorRT importer."""
    if n.op_type == "DynamicQuantizeLinear":
        users = {u.op_type for o in n.output for u in g.users(o)}
        variant = ("dql_matmulinteger" if "MatMulInteger" in users else
                   "dql_convinteger" if "ConvInteger" in users else "dql_alone")
        return matches(n, {"variant": variant})
    variant = "dql_matmulinteger" if n.op_type == "MatMulInteger" else "dql_convinteger"
    return matches(n, {"variant": variant}, rule="integer_op", target="node_of_y")


PATTERN = Pattern(
    rules={"dynamic_quantize_linear": "DynamicQuantizeLinear", "integer_op": "integer op (ConvInteger/MatMulInteger)"},
    ops=("DynamicQuantizeLinear", "ConvInteger", "MatMulInteger"),
    match=match_dynamic,
    fix=FIX_STATIC_QDQ,
    also_matches=("dynamic_quantize_asymmetric",),
)


CASE = Case(
    id="dynamic_quantize",
    seed="002",
    title="DynamicQuantizeLinear (onnxruntime quantize_dynamic) has no TensorRT importer",
    links=(ISSUE_3963, OPERATORS_MD),
    axes={
        "variant": (
            "dql_alone",
            "dql_matmulinteger",
            "dql_convinteger",
            "ort_dynamic_matmul",
            "ort_dynamic_conv",
        )
    },
    target_nodes=("node_of_x_q", "node_of_y"),  # quantize_dynamic variants name their own nodes
    signatures=(
        Signature(
            "dql_plugin_not_found",
            r"getPluginCreator could not find plugin: DynamicQuantizeLinear version: 1",
            "error",
            ISSUE_3963,
            short="no DynamicQuantizeLinear plugin",
        ),
        Signature(
            "rtx_check_dynamic_quantize_linear",
            # "ONNX parse failed: false [node x_QuantizeLinear (DynamicQuantizeLinear), checkDynamicQuantizeLinear]"
            r"\(DynamicQuantizeLinear\), checkDynamicQuantizeLinear\]",
            "error",
            OBSERVED_RTX_17,
            short="DynamicQuantizeLinear refused at parse",
            basis="baseline",
        ),
        Signature(
            "ort_convinteger_not_implemented",
            r"Could not find an implementation for ConvInteger\(10\) node",
            "error",
            ORT_12558,
            short="ConvInteger not implemented",
        ),
    ),
    expectations=(
        # Listed first: it wins the tie with the range below for 8.6.1.6.
        Expectation(
            "tensorrt", "==8.6.1.6", "fail", ISSUE_3963, stage="load", signature="dql_plugin_not_found",
            hardware="NVIDIA RTX A4000",
        ),
        Expectation(
            "tensorrt", ">=8.4,<10.0", "fail", OPERATORS_MD, stage="load",
            note="operators.md: DynamicQuantizeLinear, MatMulInteger and ConvInteger unsupported (8.4 table, 009d654)",
        ),
        Expectation(
            "tensorrt", ">=10.0,<10.2", "fail", OPERATORS_MD_10_1, stage="load",
            note="10.1-GA operators.md: DynamicQuantizeLinear, MatMulInteger and ConvInteger 'N'",
        ),
        Expectation(
            "tensorrt", ">=10.2,<10.16", "fail", OPERATORS_MD_10_15, stage="load",
            note="10.15 operators.md: DynamicQuantizeLinear 'N' (\"TensorRT's IDynamicQuantize can be composed from "
            "ONNX operators in the form of a model local function\"), MatMulInteger and ConvInteger 'N'; 10.2 to "
            "10.14 lie between two tables that agree",
        ),
        Expectation(
            "tensorrt-rtx", "==1.7.1.116", "fail", OBSERVED_RTX_17, stage="load",
            signature="rtx_check_dynamic_quantize_linear", basis="baseline",
            hardware="NVIDIA H100 (sm_90): ahead-of-time build for the default targets",
            note="observed on every variant: the parser's checkDynamicQuantizeLinear says 'false' (no reason given)",
        ),
        Expectation(
            "onnxruntime", ">=1.12", "fail", ORT_15888, stage="load", signature="ort_convinteger_not_implemented",
            where={"variant": ("dql_convinteger", "ort_dynamic_conv")},
            note="reported on 1.12 (#12558) and 1.14 (#15888), closed without a kernel for uint8 x int8",
        ),
        # The cross-check column's CPU: the same MatMulInteger saturates without VNNI (measured: 8770 steps on an
        # AVX2 level, ORT 1.16.3, 1.31.1 and 1.32.0; 0 with VNNI; 0 with session.x64quantprecision on AVX2).
        *ort_u8s8_saturation({"variant": ("dql_matmulinteger",)}),
    ),
    builder="generators.dynamic_quantize:build",
    pattern=PATTERN,
)
