"""onnxsim/onnxsim#749 (2026-08, open): ONNX Runtime's MatMulNBitsFusion changes blocked INT4 MatMul/Gemm results.

#749, "tested against onnxruntime 1.29.0": a DequantizeLinear(axis=0, block_size) of INT4 weights [K, N] feeding a plain
MatMul or Gemm (not transB=1) gives other results at ONNX Runtime's default optimization level (ORT_ENABLE_EXTENDED and
up) than with ORT_DISABLE_ALL or ORT_ENABLE_BASIC, which match the float model; the axis=1 (Gemm transB=1) path and
onnxsim's workaround (DQ axis=1 -> Transpose -> MatMul) are unaffected "at every level". The thread blames a layout
mix-up in the fusion into com.microsoft.MatMulNBits.

What our sweep of ONNX Runtime 1.16.3 to 1.32.0 shows (docs/low-precision.md): the fusion happens, but the layout
is right; the difference is the fused node's `accuracy_level` 4, which ONNX Runtime's session-options header documents
as the default for DQ + MatMul -> MatMulNBits ("If not provided, default is 4"): MatMulNBits then quantizes the
activations to int8, about 0.5% of the output's peak here, and `session.qdq_matmulnbits_accuracy_level=0` (or 1) makes
the fused node exact. A float32 MatMul is fused from 1.19.2 (DQ -> MatMul to MatMulNBits, microsoft/onnxruntime#21342),
a float16 MatMul and a plain Gemm from 1.25.1 (#27769 added Gemm); 1.16.3 reads IR 10 at most, 1.17 and 1.18 have no
int4. The ONNX Runtime column is then not a reference for such a model: a deviation it shows may be its own.

The reproducer: an INT4 weight-only MatMul or Gemm 128->32 on 4 tokens (blocks of 32 along K, power-of-two scales,
activations on a 1/16 grid) whose float result is exact, so the reproducer's tolerance is a quarter step (steps of
max|y|/127): an exact engine differs by 0, the fused int8 activations by about half a step. The forms: #749's two
axis-0 forms, the transB=1 Gemm and onnxsim's workaround; float32 or float16 activations. Target: the MatMul or Gemm.
TensorRT-RTX and TensorRT 8.x: seed 014's INT4 weight-only GEMM facts (support matrix, operators.md).
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.common import RTX_SUPPORT_MATRIX
from cases.low_precision import RTX_HW_SPECIFIC, RTX_TARGET_ARCH_KIND, trt8_cannot_parse
from cases.pattern import Graph, Match, Pattern, attr, matches, weight_dequantize

ONNXSIM_749 = "https://github.com/onnxsim/onnxsim/issues/749"
ORT_21342 = "https://github.com/microsoft/onnxruntime/pull/21342"
ORT_27769 = "https://github.com/microsoft/onnxruntime/pull/27769"
ORT_CONFIG_KEYS = ("https://github.com/microsoft/onnxruntime/blob/main/include/onnxruntime/core/session/"
                   "onnxruntime_session_options_config_keys.h")

AXIS0 = {"form": ("matmul_axis0", "gemm_axis0")}
AXIS1 = {"form": ("gemm_transb_axis1", "matmul_axis1_transpose")}
INT4_NOTE = ("support matrix, 'INT4 WoQ GEMM': Yes on 12.0 (and 12.1 from 1.5), 8.9 and 8.6, No on 7.5 Turing "
             "(seed 014)")


def match_nbits(g: Graph, n: Any) -> List[Match]:
    """Blocked INT4 weights into a MatMul or Gemm, by the layout ONNX Runtime's MatMulNBits fusion reads."""
    dq = weight_dequantize(g, n.input[1]) if len(n.input) > 1 else None
    if dq is None or g.dtype(dq.input[0]) not in ("int4", "uint4") or not attr(dq, "block_size"):
        return []
    if n.op_type == "Gemm":
        form = "gemm_transb_axis1" if attr(n, "transB", 0) == 1 else "gemm_axis0"
    else:
        form = "matmul_axis1_transpose" if g.op(n.input[1]) == "Transpose" else "matmul_axis0"
    return matches(n, {"form": form}, target="node_of_y")


PATTERN = Pattern(rules={"int4_matmulnbits": "blocked INT4 weights (MatMulNBits form)"}, ops=("MatMul", "Gemm"),
                  match=match_nbits,
                  also_matches=("int4_blocked_weights",))


CASE = Case(
    id="int4_matmulnbits_fusion",
    seed="022",
    title="Blocked INT4 weight-only MatMul/Gemm that ONNX Runtime fuses into MatMulNBits at its default level "
          "(axis 0, transB=1, and onnxsim's workaround)",
    links=(ONNXSIM_749, ORT_21342, ORT_27769, ORT_CONFIG_KEYS, RTX_SUPPORT_MATRIX),
    axes={"form": ("matmul_axis0", "gemm_axis0", "gemm_transb_axis1", "matmul_axis1_transpose"),
          "activation": ("float32", "float16")},
    target_nodes=("node_of_y",),
    signatures=(RTX_HW_SPECIFIC, RTX_TARGET_ARCH_KIND,),
    expectations=(
        Expectation(
            "onnxruntime", ">=1.29", "fail", ONNXSIM_749, stage="compare", where=AXIS0,
            note="axis-0 blocked INT4 DQ -> plain MatMul/Gemm: the default level's result differs from "
            "ORT_DISABLE_ALL's (tested on 1.29.0; open)",
        ),
        Expectation(
            "onnxruntime", ">=1.29", "pass", ONNXSIM_749, where=AXIS0,
            when={"graph_optimization_level": ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC")},
            note="ORT_DISABLE_ALL and ORT_ENABLE_BASIC match the float model",
        ),
        Expectation(
            "onnxruntime", ">=1.29", "pass", ONNXSIM_749, where=AXIS1,
            note="'the axis = 1 -- Gemm transB=1 -- path is unaffected at every level'; the workaround's DQ(axis=1) "
            "-> Transpose -> MatMul is 'numerically identical with graph optimizations enabled or disabled'",
        ),
        Expectation("tensorrt-rtx", "", "fail", RTX_SUPPORT_MATRIX, stage="build", when={"target": ("SM75",)},
                    note=INT4_NOTE),
        Expectation("tensorrt-rtx", "", "pass", RTX_SUPPORT_MATRIX,
                    when={"target": ("SM86", "SM89", "SM120", "SM121")}, note=INT4_NOTE),
        trt8_cannot_parse("INT4"),
    ),
    builder="generators.int4_matmulnbits_fusion:build",
    arch_dependent=True,
    opset=21,
    pattern=PATTERN,
)
