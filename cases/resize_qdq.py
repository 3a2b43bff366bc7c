"""NVIDIA/TensorRT#2976: a Resize (upsample) between Q/DQ does not run in INT8 (TensorRT 8.4, pytorch-quantization).

The reporter (TensorRT 8.4) asks how to run nn.Upsample's Resize in INT8 with QAT. The maintainer: "no need to insert
Q/DQ before resize, we should run resize in INT8 automatically for patterns like `resize -> Q/DQ -> conv`". The
reporter's graphs (images) then show "the first `resize` not quant with int8"; another user sees the Resize input
"automatically rescaled to fp16/fp32" and the same with ConvTranspose.

The sweep: Q/DQ before the Resize, after it (the maintainer's `resize -> Q/DQ -> conv`), both or neither, and the
Resize mode (nearest, as nn.Upsample exports by default; linear with half_pixel, as bilinear does). The target is the
Resize node; the expectation is the maintainer's statement, for the reporter's 8.4, in nearest mode (what the
thread's Upsample is; the maintainer does not qualify the mode).
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.pattern import Graph, Match, Pattern, activation_dq, attr, matches, quantized_after

ISSUE_2976 = "https://github.com/NVIDIA/TensorRT/issues/2976"


def match_resize(g: Graph, n: Any) -> List[Match]:
    """A Resize in a quantized model: Q/DQ before it, after it (#2976's `resize -> Q/DQ -> conv`), both or neither."""
    if not g.quantized:
        return []
    mode = attr(n, "mode", "nearest")
    params = {"qdq_before": activation_dq(g, n.input[0]) is not None,
              "qdq_after": quantized_after(g, n.output[0]) is not None}
    params.update({"mode": mode} if mode in CASE.axes["mode"] else {})
    return matches(n, params, target="node_of_rs")


PATTERN = Pattern(rules={"resize_qdq": "Resize between Q/DQ"}, ops=("Resize",), match=match_resize,
                  also_matches=("resize_linear_qdq_drop",))


CASE = Case(
    id="resize_qdq",
    seed="008",
    title="Resize (upsample) with Q/DQ before and/or after it: does it run in INT8?",
    links=(ISSUE_2976,),
    axes={"qdq_before": (False, True), "qdq_after": (True, False), "mode": ("nearest", "linear")},
    target_nodes=("node_of_rs",),
    signatures=(),
    expectations=(
        Expectation(
            "tensorrt", "==8.4.*", "int8", ISSUE_2976,
            where={"qdq_before": (False,), "qdq_after": (True,), "mode": ("nearest",)},
            note="maintainer: no Q/DQ is needed before the Resize; `resize -> Q/DQ -> conv` runs the Resize in INT8 "
            "automatically (the reporter's images then show a Resize that did not)",
        ),
    ),
    builder="generators.resize_qdq:build",
    pattern=PATTERN,
)
