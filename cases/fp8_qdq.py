"""onnx/onnx#4805 (float8e4m3fn in Q/DQ, opset 19) and TensorRT-RTX's quantized types: FP8 GEMMs need SM 8.9 or later.

TensorRT-RTX: "FP8 is only supported for matrix multiplications (GEMM) on Ada and later architectures (compute
capability 8.9 or later)" (the quantized-types page; the 1.0 page says the same with "8.9 or above"). Its support
matrix (1.0, 1.1, 1.4, 1.5, unversioned) has FP8 Yes on 12.0 (and 12.1 from 1.5) and 8.9, No on 8.6 and 7.5. So a
MatMul or Gemm built for SM75, SM80 or SM86 fails and one for SM89, SM120 or SM121 builds. For a convolution the page
says only that FP8 is for GEMMs, not whether a Conv fails or runs in a wider type: no expectation (the 1.7 release
notes speak of "FP8 and INT8 weight-only-quantized convolutions"). The default target, a set of architectures, has
none either.

ONNX (#4805 brought the float 8 types into Cast and Q/DQ): QuantizeLinear-19 and DequantizeLinear-19 take
float8e4m3fn, with a scalar scale (per tensor) or a 1-D one and `axis` (per axis), so per-channel FP8 needs no opset
21; opset 19 has no `output_dtype`, so the FP8 zero point (0) gives the Q its output type ("zero-point is usually not
used in the case of float8 ... but the dequantization formula remains the same"). TensorRT (not RTX) 8.0 to 8.6:
onnx-tensorrt's tables list DequantizeLinear for INT8 only and no FP8 data type, so 8.x does not parse these models;
the 9.x and 10.x tables add FP8.

The sweep: MatMul (w[32, 16], axis 1), Gemm transB=1 (w[16, 32], axis 0) and a 3x3 Conv 8->16 (axis 0), FP8
activations per tensor and FP8 weights per tensor or per output channel, float32 outside. Target: the compute node.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.common import OPERATORS_MD_8_6, QUANTIZE_LINEAR, RTX_QUANTIZED_TYPES, RTX_SUPPORT_MATRIX
from cases.pattern import Graph, Match, Pattern, matches

ONNX_4805 = "https://github.com/onnx/onnx/pull/4805"

GEMMS = {"op": ("matmul", "gemm")}
FP8_GEMM_NOTE = ("'FP8 is only supported for matrix multiplications (GEMM) on Ada and later architectures (compute "
                 "capability 8.9 or later)'; support matrix FP8: Yes on 12.0 and 8.9, No on 8.6 and 7.5")


def fp8_dq(g: Graph, tensor: str) -> bool:
    """tensor is a DequantizeLinear output whose input is FP8: an FP8 initializer, or a QuantizeLinear's FP8 output."""
    p = g.producer.get(tensor)
    if p is None or p.op_type != "DequantizeLinear":
        return False
    if p.input[0] in g.const:
        return "float8" in g.dtype(p.input[0])
    return len(p.input) > 2 and "float8" in g.dtype(p.input[2])


def match_fp8(g: Graph, n: Any) -> List[Match]:
    """A MatMul, Gemm or Conv whose weights are FP8 E4M3 through DequantizeLinear."""
    if len(n.input) < 2 or not fp8_dq(g, n.input[1]):
        return []
    return matches(n, {"op": n.op_type.lower()}, target="node_of_y")


PATTERN = Pattern(rules={"fp8_gemm": "FP8 GEMM or Conv"}, ops=("MatMul", "Gemm", "Conv"), match=match_fp8,
                  also_matches=("fp8_conv_stack",))


CASE = Case(
    id="fp8_qdq",
    seed="015",
    title="FP8 E4M3 Q/DQ on MatMul, Gemm and Conv, per tensor or per channel (opset 19)",
    links=(ONNX_4805, RTX_QUANTIZED_TYPES, RTX_SUPPORT_MATRIX, QUANTIZE_LINEAR, OPERATORS_MD_8_6),
    axes={"op": ("matmul", "gemm", "conv"), "weights": ("per_tensor", "per_channel")},
    target_nodes=("node_of_y",),
    signatures=(),
    expectations=(
        Expectation("tensorrt-rtx", "", "fail", RTX_QUANTIZED_TYPES, stage="build", where=GEMMS,
                    when={"target": ("SM75", "SM80", "SM86")}, note=FP8_GEMM_NOTE),
        Expectation("tensorrt-rtx", "", "pass", RTX_QUANTIZED_TYPES, where=GEMMS,
                    when={"target": ("SM89", "SM120", "SM121")}, note=FP8_GEMM_NOTE),
        Expectation(
            "tensorrt", ">=8.0,<9.0", "fail", OPERATORS_MD_8_6, stage="load",
            note="8.0 to 8.6 operators.md: DequantizeLinear 'INT8'; data types DOUBLE, FLOAT32, FLOAT16, INT8, BOOL "
            "(no FP8); 8.1 and 8.3 lie between tables that agree",
        ),
    ),
    builder="generators.fp8_qdq:build",
    arch_dependent=True,
    opset=19,
    pattern=PATTERN,
)
