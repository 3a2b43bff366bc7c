"""NVIDIA/TensorRT#4833 (2026-08, open): FP4 E2M1 weight-only Q/DQ (W4A16) builds but silently computes in float.

#4833, TensorRT 10.16 and still 11.2.1: "Feeding a genuine FLOAT4E2M1 weight-QDQ graph to TensorRT: W4A4 fails loudly
('type not supported yet') ... W4A16 succeeds and silently realizes FP32"; the builder neither warns nor refuses. The
thread names no GPU; its "realized precisions FP32, INT8" come from the reporter's own device payload. The ask is a
warning or a refusal, "exactly as it already refuses W4A4", so the per-node precision of the Conv is the evidence.

TensorRT-RTX: "FP4 is only supported for matrix multiplications on Blackwell or later architectures (compute
capability 10.0 or later)" (quantized types page); the support matrix has "FP4 GEMM" Yes on 12.0 only. Its
IDequantizeLayer blocks only "the last or second to last dimension", so an FP4 Conv weight blocked along its input
channels (axis 1 of four) is refused in the parser. What the builds with no GPU show (1.5.0.114 to 1.7.1.116; 1.4.0.76
needs a GPU for the default and SM120 builds): every FP4 graph is refused for SM75 to SM89 ("HW-specific datatypes:
fp4_e2m1"), the Conv included, which the documents do not say; for SM120 and the default set the W4A16 MatMul and Conv
build with a separate kernel that dequantizes the FP4 weights to float16 and a float16 GEMM or convolution: #4833's
silent float, on TensorRT-RTX too (no source says so: no expectation; the lint says it from these cells). W4A4 (FP4 Q/DQ
on the activations, per tensor) is refused in Myelin: the Conv by the same cuDNN type check as INT8 convolutions on 1.4
to 1.6 (and 1.7), the MatMul blocked by "CHECK(is_constant())", the per-tensor MatMul by a crash of the builder
(SIGSEGV) on every version; the documents speak of FP4 GEMMs, not of how their activations are quantized (NVFP4 uses
TensorRT's dynamic quantizer: seed 020), so the SM120 expectation is for W4A16 only.

TensorRT 8.x parses no 4-bit type. ONNX Runtime 1.16.3 reads IR 10 at most; later versions have no float4e2m1
DequantizeLinear kernel on the CPU (both "fail", no source: undocumented columns).

The sweep: a 3x3 Conv 16->32 (weights per tensor, or blocked by 16 along the input channels) and a MatMul 64->32
(per tensor, or blocked by 16 along K, the second to last dimension), float16 activations with no Q/DQ (W4A16) or with
an FP4 Q/DQ per tensor (W4A4). Opset 23, IR 11. Target: the Conv or MatMul.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Signature
from cases.common import DEQUANTIZE_LINEAR, RTX_QUANTIZED_TYPES, RTX_SUPPORT_MATRIX
from cases.low_precision import (
    RTX_2026_LOGS,
    RTX_BLOCK_AXIS,
    RTX_DEQUANTIZE_LAYER,
    RTX_HW_SPECIFIC,
    RTX_TARGET_ARCH_KIND,
    rtx_fp4_gemm,
    trt8_cannot_parse,
)
from cases.pattern import Graph, Match, Pattern, attr, matches, weight_dequantize

ISSUE_4833 = "https://github.com/NVIDIA/TensorRT/issues/4833"

FP4_TYPE_NOT_SUPPORTED = Signature(
    name="fp4_type_not_supported",
    pattern=r"type not supported yet",  # #4833's W4A4 refusal, as the thread quotes it
    kind="error",
    source=ISSUE_4833,
    short="FP4 type not supported yet",
)
RTX_NOT_CONSTANT = Signature(
    name="rtx_fp4_activation_not_constant",
    # TensorRT-RTX's Myelin on an FP4 MatMul whose activations come through a static Q/DQ (W4A4).
    pattern=r"operand\.h:\d+: CHECK\(is_constant\(\)\) failed",
    kind="error",
    source=RTX_2026_LOGS,
    basis="baseline",
    short="FP4 activations not a constant",
)
W4A16_CONV = {"op": ("conv",), "weights": ("per_tensor",), "activations": ("w4a16",)}
W4A4_CONV = {"op": ("conv",), "weights": ("per_tensor",), "activations": ("w4a4",)}


def fp4_weights(g: Graph, n: Any) -> Any:
    """The DequantizeLinear of a Conv's or MatMul's FP4 E2M1 weights, or None."""
    dq = weight_dequantize(g, n.input[1]) if len(n.input) > 1 else None
    return dq if dq is not None and g.dtype(dq.input[0]).startswith("float4") else None


def two_level(g: Graph, dq: Any) -> bool:
    """The DQ's scale is itself a DequantizeLinear of an FP8 initializer (NVFP4's block scales)."""
    scale = g.producer.get(dq.input[1])
    return scale is not None and scale.op_type == "DequantizeLinear" and "float8" in g.dtype(scale.input[0])


def match_fp4(g: Graph, n: Any) -> List[Match]:
    """FP4 weights with one scale level (two levels are seed 020's): per tensor or blocked, W4A16 or W4A4."""
    dq = fp4_weights(g, n)
    if dq is None or two_level(g, dq):
        return []
    x = g.producer.get(n.input[0])
    w4a4 = x is not None and x.op_type == "DequantizeLinear" and len(x.input) > 2 and g.dtype(x.input[2]).startswith(
        "float4")
    params = {"op": n.op_type.lower(), "weights": "blocked" if attr(dq, "block_size") else "per_tensor",
              "activations": "w4a4" if w4a4 else "w4a16"}
    return matches(n, params, target="node_of_y")


PATTERN = Pattern(rules={"fp4_weight_only": "FP4 weights"}, ops=("Conv", "MatMul"), match=match_fp4,
                  also_matches=("float_qdq_types",))


CASE = Case(
    id="fp4_weight_only",
    seed="019",
    title="FP4 E2M1 weight-only (W4A16) and W4A4 Q/DQ into a Conv or MatMul, per tensor or blocked (opset 23)",
    links=(ISSUE_4833, RTX_QUANTIZED_TYPES, RTX_SUPPORT_MATRIX, RTX_DEQUANTIZE_LAYER, DEQUANTIZE_LINEAR),
    axes={"op": ("conv", "matmul"), "weights": ("per_tensor", "blocked"), "activations": ("w4a16", "w4a4")},
    target_nodes=("node_of_y",),
    signatures=(RTX_HW_SPECIFIC, RTX_TARGET_ARCH_KIND, RTX_BLOCK_AXIS, RTX_NOT_CONSTANT,
                FP4_TYPE_NOT_SUPPORTED),
    expectations=(
        *rtx_fp4_gemm({"op": ("matmul",)}, {"op": ("matmul",), "activations": ("w4a16",)}),
        Expectation(
            "tensorrt-rtx", "", "fail", RTX_DEQUANTIZE_LAYER, stage="load", signature=RTX_BLOCK_AXIS.name,
            where={"op": ("conv",), "weights": ("blocked",)},
            note="a Conv weight [32, 16, 3, 3] blocked along axis 1: 'blocking occurs' only in the last or second to "
            "last dimension",
        ),
        Expectation(
            "tensorrt", ">=10.16", "not_int8", ISSUE_4833, where=W4A16_CONV,
            note="W4A16 'succeeds and silently realizes FP32' on 10.16, 'still observed on 11.2.1'; open",
        ),
        Expectation(
            "tensorrt", ">=10.16", "fail", ISSUE_4833, signature=FP4_TYPE_NOT_SUPPORTED.name, where=W4A4_CONV,
            note="W4A4 'fails loudly (type not supported yet)'; the thread does not say at which stage",
        ),
        trt8_cannot_parse("FP4"),
    ),
    builder="generators.fp4_weight_only:build",
    arch_dependent=True,
    opset=23,
    pattern=PATTERN,
)
