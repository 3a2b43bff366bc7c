"""microsoft/onnxruntime#32452 and #18576: ONNX Runtime's float16 QuantizeLinear on the CPU truncated, not rounded.

#32452 (merged 2026-09): "The CPU `MLFloat16` overload of `ParQuantizeLinearStd` converted `x / scale` directly with
`static_cast<int32_t>`, which truncates toward zero. ONNX `QuantizeLinear` requires round-to-nearest with ties to
even." Its minimal case, opset 19: x (float16) = [0.050018310546875, -0.050018310546875], scale (float16) =
0.0999755859375, zero point 0 (int8): expected [1, -1], "ORT CPU 1.29.0 = [0, 0]"; "A 4,096-value float16
differential check found 2,041 mismatches, all toward zero and by at most one quantization unit. The float32 control
path matched." It "fixes the still-reproducible numerical issue reported in #18576" (2023-11: a float16 QuantizeLinear
"consistently rounding to the lower integer"). The PR names no release: 1.29.0 truncates and 1.30.0 rounds (we ran both
wheels on the thread's model, 2026-11-27), so the documented failure is for versions before 1.30, the fix from 1.30 on.

The sweep: the PR's two values, or 256 float16 values a quarter or three quarters of a step past a whole number of
steps (|x| < 121 steps), where rounding is clear-cut and truncation misses the three-quarter ones; the output either
the QuantizeLinear's int8 (the PR's graph; step 1) or its float16 DequantizeLinear (step: the scale). Tolerance half
a step: a truncated value is off by one. Opset 19 (a float16 scale on QuantizeLinear), symmetric INT8. Target: the
QuantizeLinear.

What our columns do (2026-11-27): ONNX Runtime 1.16.3 gives the PR's [0, 0] and truncates the spread, 1.31.1 rounds
all four exactly. OpenVINO (no source) rounds both int8 forms exactly; 2024.6.0 refuses the float16 DequantizeLinear
at load ("data_type_ok"), 2026.4.1 runs it. TensorRT-RTX 1.5 to 1.7 build all four for every target, the int8 forms
quantized, the dequantized ones not (1.4.0.76 needs a GPU to build them). TensorRT 8.5.3.1 and 8.6.0 fail all four on
an H100 and an H200; the int8 forms fail at parse ("Scale coefficients must all be positive", the scale being
positive) in some runs and at build in others, on one machine too, so file their status, not their stage
(reports/observed/nvidia-h100/fp16-repeat/README.md).
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.pattern import Graph, Match, Pattern, matches, zero_point_type

ORT_32452 = "https://github.com/microsoft/onnxruntime/pull/32452"
ISSUE_18576 = "https://github.com/microsoft/onnxruntime/issues/18576"


def match_fp16_quantize(g: Graph, n: Any) -> List[Match]:
    """An INT8 QuantizeLinear of float16 values (a float16 scale): its output a graph output or dequantized again."""
    if g.dtype(n.input[1]) != "float16" or zero_point_type(g, n) != "int8":
        return []
    if n.output[0] in g.outputs:
        output = "int8"
    elif any(u.op_type == "DequantizeLinear" for u in g.users(n.output[0])):
        output = "dequantized"
    else:
        return []
    return matches(n, {"output": output}, target="node_of_x_q")


PATTERN = Pattern(rules={"fp16_quantize": "INT8 QuantizeLinear of float16 values"}, ops=("QuantizeLinear",),
                  match=match_fp16_quantize,
                  also_matches=("fp16_scale_qdq", "qdq_scale_dtype_mismatch"))


CASE = Case(
    id="fp16_quantize_rounding",
    seed="029",
    title="float16 QuantizeLinear (float16 scale) to int8: ONNX Runtime's CPU kernel truncated toward zero",
    links=(ORT_32452, ISSUE_18576),
    axes={"values": ("thread", "spread"), "output": ("dequantized", "int8")},
    target_nodes=("node_of_x_q",),
    signatures=(),
    expectations=(
        Expectation(
            "onnxruntime", "<1.30", "fail", ORT_32452, stage="compare",
            note="x / scale is converted with static_cast<int32_t>, truncating toward zero: [0, 0] for the expected "
            "[1, -1] on 1.29.0 (#18576, 2023-11, saw the same); 1.29.0 is the last release we ran that truncates",
        ),
        Expectation(
            "onnxruntime", ">=1.30", "pass", ORT_32452,
            note="std::nearbyint before the conversion: round to nearest, ties to even (first in 1.30.0 of the wheels "
            "we ran)",
        ),
    ),
    builder="generators.fp16_quantize_rounding:build",
    arch_dependent=True,
    opset=19,
    pattern=PATTERN,
)
