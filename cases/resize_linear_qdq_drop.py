"""microsoft/onnxruntime#28448 and #21319: ONNX Runtime drops the Q/DQ around a linear Resize and interpolates in int8.

#28448 (2026-05, closed): "ONNX Runtime `CPUExecutionProvider` produces different results for a QDQ `Resize(linear)`
pattern when graph optimization is enabled": `QuantizeLinear -> DequantizeLinear -> Resize(linear, half_pixel) ->
QuantizeLinear -> DequantizeLinear`, scale 1.0 and an int8 zero point of 0, sizes [1, 1, 1, 6]; ORT_DISABLE_ALL gives
the expected [2, 3, 6, 6, 5, 4], ORT_ENABLE_ALL [2, 3, 5, 6, 4, 4]. #21319 (2024-07) names the cause: the
QDQSelectorActionTransformer's drop of the Q/DQ around Resize "makes the Resize compute in int8. This might be fine for
nearest interpolation mode, but in linear interpolation mode it changes the numeric output values"; not with
ORT_DISABLE_ALL. microsoft/onnxruntime#28414 ("preserve Q/DQ around Resize when mode is linear or cubic", fixes
#21319) keeps the pair unless the mode is nearest; its review: "`nearest` resampling only selects existing values, so
it commutes with quantization". The PR names no release: 1.26.0 gives #28448's wrong values and 1.27.0 the right ones
(we ran both wheels on the thread's model, 2026-11-27), so the documented failure is for versions before 1.27 and the
fix from 1.27 on. The drop is a level-2 transformation: the failure is for ORT_ENABLE_EXTENDED and up.

The sweep: the thread's model (its input is not in what we read: x = [2, 7, 4] gives its outputs), a 2x upsample of a
[1, 4, 8, 8] tensor on a 1/16 grid in linear mode, and the same in nearest mode (the control both sources call safe).
The output's step is its Q's scale and the tolerance half a step: linear interpolation of whole steps lands on quarter
steps, so an int8 Resize that truncates is off by one. Symmetric INT8, opset 13 (TensorRT 8.x parses it; seed 008
asks whether its Resize runs in INT8). Target: the Resize.

What our columns do (2026-11-27): ONNX Runtime 1.16.3 at ORT_ENABLE_ALL gives #28448's [2, 3, 5, 6, 4, 4] and misses
the linear upsample by one step; 1.31.1 runs all three exactly. OpenVINO 2024.6.0 and 2026.4.1 run all three exactly
(no source). TensorRT-RTX 1.5 to 1.7 build them for every target (1.4.0.76 needs a GPU to build them).
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Params
from cases.common import EXTENDED_OR_MORE
from cases.pattern import Graph, Match, Pattern, activation_dq, attr, matches, quantized_after

ISSUE_28448 = "https://github.com/microsoft/onnxruntime/issues/28448"
ISSUE_21319 = "https://github.com/microsoft/onnxruntime/issues/21319"
ORT_28414 = "https://github.com/microsoft/onnxruntime/pull/28414"

LINEAR = {"mode": ("linear",)}


def _thread_is_linear(params: Params) -> bool:
    """The thread's model is linear only; nearest is a control on the larger tensor."""
    return params["input"] == "upsample_8x8" or params["mode"] == "linear"



def match_resize_between_qdq(g: Graph, n: Any) -> List[Match]:
    """A Resize with a Q/DQ before and after it, by its mode."""
    if activation_dq(g, n.input[0]) is None or quantized_after(g, n.output[0]) is None:
        return []
    mode = attr(n, "mode", "nearest")
    return matches(n, {"mode": mode} if mode in CASE.axes["mode"] else {}, target="node_of_r")


PATTERN = Pattern(rules={"resize_between_qdq": "Resize between Q/DQ"}, ops=("Resize",), match=match_resize_between_qdq,
                  also_matches=("resize_qdq",))


CASE = Case(
    id="resize_linear_qdq_drop",
    seed="028",
    title="Q -> DQ -> Resize (linear, half_pixel) -> Q -> DQ: ONNX Runtime's dropped Q/DQ interpolates in int8",
    links=(ISSUE_28448, ISSUE_21319, ORT_28414),
    axes={"input": ("thread_1x3", "upsample_8x8"), "mode": ("linear", "nearest")},
    target_nodes=("node_of_r",),
    signatures=(),
    expectations=(
        Expectation(
            "onnxruntime", "<1.27", "fail", ISSUE_28448, stage="compare", where=LINEAR,
            when={"graph_optimization_level": EXTENDED_OR_MORE},
            note="ORT_ENABLE_ALL: [2, 3, 5, 6, 4, 4] where ORT_DISABLE_ALL gives [2, 3, 6, 6, 5, 4]; #21319: the Q/DQ "
            "around the Resize is dropped and it interpolates in int8 (1.26.0 still does; 1.27.0 does not)",
        ),
        Expectation(
            "onnxruntime", ">=1.27", "pass", ORT_28414, where=LINEAR,
            note="the Q/DQ pair stays around a linear or cubic Resize, which then runs in float as the reference does "
            "(first in 1.27.0 of the wheels we ran)",
        ),
        Expectation(
            "onnxruntime", "", "pass", ORT_28414, where={"mode": ("nearest",)},
            note="'nearest resampling only selects existing values, so it commutes with quantization'; the drop stays",
        ),
    ),
    builder="generators.resize_linear_qdq_drop:build",
    arch_dependent=True,
    valid=_thread_is_linear,
    pattern=PATTERN,
)
