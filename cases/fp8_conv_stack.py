"""NVIDIA/TensorRT-RTX#35 and NVIDIA/TensorRT#4817: an FP8 E4M3 Q/DQ stack of three Convs crashes at inference.

TensorRT-RTX#35 (TensorRT-RTX 1.5.0.114, Windows, closed; GPU not stated in what was read): "a 3-layer conv net (Conv
3->64, Conv 64->64, Conv 64->3, ReLU)", exported as FP32 ONNX and FP8-quantized with nvidia-modelopt[onnx], "builds
and deserializes successfully but crashes the process the moment it executes the first FP8 conv kernel, with Windows
exit status 0xC0000094 (STATUS_INTEGER_DIVIDE_BY_ZERO). No TensorRT/CUDA error is emitted. The equivalent FP16 engine
runs fine." #4817 cross-posts it; a commenter (not said to be NVIDIA's) "built the same tiny network ... as an FP8
(E4M3) Q/DQ ONNX and ran it as a strongly-typed engine on TensorRT 11.1.0.106, Linux, RTX 4060 (Ada, sm 8.9)": it
builds, deserializes and runs.

What our columns can see: TensorRT-RTX builds ahead of time with no GPU, so a cell can say the plan builds and
how each Conv is computed, never the run-time crash; a built 1.5.0.114 cell is "not run" against the documented
failure, which is at run time. The thread's build command names no target architecture, so the expectation is
for the default target only. The threads do not say the weight granularity (ModelOpt's support matrix,
https://nvidia.github.io/Model-Optimizer/guides/0_support_matrix.html, lists ONNX FP8 as per-tensor activations and
per-channel weights) or where the ReLU sits (here after the first two Convs), nor whether the model
was float16 or float32 outside the Q/DQ: the sweep covers both. The channel counts are the thread's; the spatial size
is 16x16 instead of the thread's dynamic 64..512 profile (a static shape; the build does not need the large one).
onnx-tensorrt's 8.0 to 8.6 tables have no FP8: 8.x does not parse it.

Targets: the three Convs.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.common import OPERATORS_MD_8_6
from cases.common import RTX_ISSUE_35 as ISSUE_RTX_35
from cases.pattern import (
    Graph,
    Match,
    Pattern,
    activation_dq,
    compute_with_weights,
    matches,
    scale_size,
    zero_point_type,
)

ISSUE_4817 = "https://github.com/NVIDIA/TensorRT/issues/4817"


def match_fp8_conv(g: Graph, n: Any) -> List[Match]:
    """A Conv with FP8 weights and FP8 Q/DQ activations (ModelOpt's FP8 CNN form), its weight scales and float type."""
    w, x = compute_with_weights(g, n), activation_dq(g, n.input[0])
    if w is None or x is None or "float8" not in g.dtype(w.input[0]) or "float8" not in zero_point_type(g, x):
        return []
    params = {"weights": "per_channel" if scale_size(g, w) > 1 else "per_tensor",
              "activation": "float16" if g.dtype(x.input[1]) == "float16" else "float32"}
    return matches(n, params)


PATTERN = Pattern(rules={"fp8_conv_stack": "FP8 Conv stack"}, ops=("Conv",), match=match_fp8_conv,
                  also_matches=("fp8_qdq",))


CASE = Case(
    id="fp8_conv_stack",
    seed="016",
    title="Three FP8 E4M3 Q/DQ Convs (3->64->64->3) with ReLU: builds, crashes at its first FP8 conv kernel",
    links=(ISSUE_RTX_35, ISSUE_4817, OPERATORS_MD_8_6),
    axes={"weights": ("per_tensor", "per_channel"), "activation": ("float32", "float16")},
    target_nodes=("node_of_c1", "node_of_c2", "node_of_y"),
    signatures=(),
    expectations=(
        Expectation(
            "tensorrt-rtx", "==1.5.0.114", "fail", ISSUE_RTX_35, stage="run", hardware="Windows; GPU not stated",
            when={"target": ("default",)},
            note="built with the tensorrt_rtx command and no target option, it builds and deserializes; the process "
            "dies at the first FP8 conv kernel (0xC0000094, integer divide by zero), with no TensorRT or CUDA error; "
            "an ahead-of-time build cannot show it",
        ),
        Expectation(
            "tensorrt", "==11.1.0.106", "pass", ISSUE_4817, hardware="RTX 4060 (Ada, SM 8.9), Linux",
            note="a commenter built, deserialized and ran the same network strongly typed; no divide by zero",
        ),
        Expectation(
            "tensorrt", ">=8.0,<9.0", "fail", OPERATORS_MD_8_6, stage="load",
            note="8.0 to 8.6 operators.md: DequantizeLinear 'INT8'; data types DOUBLE, FLOAT32, FLOAT16, INT8, BOOL "
            "(no FP8); 8.1 and 8.3 lie between tables that agree",
        ),
    ),
    builder="generators.fp8_conv_stack:build",
    arch_dependent=True,
    opset=19,
    pattern=PATTERN,
)
