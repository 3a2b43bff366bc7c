"""openvinotoolkit/openvino#34364 and #37171: FP8 Q/DQ, and FP4 E2M1 with E8M0 block scales, in OpenVINO's frontend.

#34364 (merged, 2026-02-26): "Adds 8-bit floating-point support to Quantize-Dequantize operations", using FakeConvert
where an FP8 output type is asked for; before it QuantizeLinear's zero point had to be "one of the supported types: u4,
i4, u8, i8, u16 or i16 integer type". #37171 (merged, 2026-07-31): "Mapped ONNX `FLOAT4E2M1` (23) and `FLOAT8E8M0`
(24)" to OpenVINO's types; "`DequantizeLinear`: accepts `f4e2m1` data (`T1`) and `f8e8m0` MX block scales (`T2`)", with
f32 as the dequantization precision for such scales; "`QuantizeLinear`: accepts `f4e2m1` as a destination type". So
every OpenVINO before 2026.0 fails all three forms (both PRs are of 2026), and 2026.4, released after both, runs the
FP8 Q/DQ and the FP4 DequantizeLinear; for its FP4 QuantizeLinear see below, no expectation.
Seeds 015, 019 and 021 use these types inside MatMul and Conv; this case isolates the operators the PRs changed, so
an OpenVINO upgrade's diff names them.

The sweep, all at opset 24 (IR 12): an FP8 E4M3 Q/DQ of float32 activations per tensor (the FP8 zero point gives the
type), an FP4 E2M1 Q/DQ likewise, and a weight-only MatMul 64->16 whose FP4 weights have float8e8m0 scales per block of
32 along K (output_dtype float32). Every value is exact in its format: an engine is off by 0. Target: the
DequantizeLinear, or the MatMul.

What our columns do (2026-11-27): OpenVINO 2024.6.0 refuses all three at load ("Unsupported data type" for FP4, the
integer-only zero point for FP8); 2026.4.1 runs the FP8 Q/DQ and the E8M0 MatMul exactly, but sends the FP4
QuantizeLinear to FakeConvert, which refuses it: "Bad format for f8 conversion type: f4e2m1". ONNX Runtime 1.31.1 runs
the FP8 form and has no opset-24 kernel for the FP4 ones. TensorRT-RTX 1.5 to 1.7 (no document speaks of a bare Q/DQ,
which is not a GEMM) refuse the FP8 Q/DQ for SM75 to SM86 and the FP4 one for SM75 to SM89 ("HW-specific datatypes"),
build them for SM89 (FP8), SM120 and the default set, and refuse the float8e8m0 scale initializer on every target, as
in seed 021. TensorRT 8.x has none of these types.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.low_precision import RTX_HW_SPECIFIC, trt8_cannot_parse
from cases.mxfp8_block_scales import RTX_E8M0_INITIALIZER
from cases.pattern import Graph, Match, Pattern, matches, weight_dequantize, zero_point_type

OV_34364 = "https://github.com/openvinotoolkit/openvino/pull/34364"
OV_37171 = "https://github.com/openvinotoolkit/openvino/pull/37171"

FP8 = {"form": ("fp8_e4m3_qdq",)}
FP4 = {"form": ("fp4_e2m1_qdq", "fp4_e8m0_matmul")}


def match_float_types(g: Graph, n: Any) -> List[Match]:
    """A Q -> DQ to FP8 E4M3 or FP4 E2M1, or a MatMul of FP4 weights with float8e8m0 block scales."""
    if n.op_type == "QuantizeLinear":
        kind = zero_point_type(g, n)
        form = "fp8_e4m3_qdq" if kind.startswith("float8_e4m3") else "fp4_e2m1_qdq" if kind.startswith("float4") else ""
        if not form or not any(u.op_type == "DequantizeLinear" for u in g.users(n.output[0])):
            return []
        return matches(n, {"form": form}, target="node_of_y")
    dq = weight_dequantize(g, n.input[1]) if len(n.input) > 1 else None
    if dq is None or not g.dtype(dq.input[0]).startswith("float4") or "e8m0" not in g.dtype(dq.input[1]):
        return []
    return matches(n, {"form": "fp4_e8m0_matmul"}, target="node_of_y")


PATTERN = Pattern(rules={"float_qdq_types": "FP8/FP4 Q/DQ types"}, ops=("QuantizeLinear", "MatMul"),
                  match=match_float_types,
                  also_matches=("fp4_weight_only", "fp8_conv_stack", "fp8_qdq"))


CASE = Case(
    id="float_qdq_types",
    seed="031",
    title="FP8 E4M3 Q/DQ, FP4 E2M1 Q/DQ and FP4 weights with E8M0 block scales, operator by operator",
    links=(OV_34364, OV_37171),
    axes={"form": ("fp8_e4m3_qdq", "fp4_e2m1_qdq", "fp4_e8m0_matmul")},
    target_nodes=("node_of_y",),
    signatures=(RTX_HW_SPECIFIC, RTX_E8M0_INITIALIZER),
    expectations=(
        Expectation("openvino", "<2026.0", "fail", OV_34364, stage="load", where=FP8,
                    note="QuantizeLinear's zero point had to be u4, i4, u8, i8, u16 or i16 (FP8 came with #34364)"),
        Expectation("openvino", ">=2026.4", "pass", OV_34364, where=FP8,
                    note="FP8 E4M3 and E5M2 zero points accepted; FakeConvert where FP8 is the output type"),
        Expectation("openvino", "<2026.0", "fail", OV_37171, stage="load", where=FP4,
                    note="ONNX FLOAT4E2M1 and FLOAT8E8M0 had no OpenVINO type before #37171"),
        Expectation("openvino", ">=2026.4", "pass", OV_37171, where={"form": ("fp4_e8m0_matmul",)},
                    note="f4e2m1 data, f8e8m0 block scales dequantized in f32"),
        trt8_cannot_parse("FP8, FP4 or E8M0"),
    ),
    builder="generators.float_qdq_types:build",
    arch_dependent=True,
    opset=24,
    pattern=PATTERN,
)
