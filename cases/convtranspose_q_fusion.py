"""NVIDIA/TensorRT#2597, #1699, #2383: a Q after a ConvTranspose is not fused into it, so it runs INT8 -> FP32.

#2597 (closed, labels Performance and QAT): Concat(ConvTranspose, conv1, conv2) -> Q. The verbose log shows the Q
cloned into each Concat input ("QuantizeDoubleInputNodes: fusing QuantizeLinear_432_clone_0 into Conv_100"), and
the clones fused into both Convs (INT8 in, INT8 out), but QuantizeLinear_432_clone_2 not fused into the
ConvTranspose, which runs INT8 in, FP32 out. The thread names no TensorRT version.
#1699 (TensorRT 8.2.0.6, RTX 2080): the maintainer says the ConvTranspose runs in INT8 -> FP32 when nothing
quantizes its output, and "if there is another Q/DQ after the convTranspose, then it can be run in INT8->INT8".
#2383 (maintainer): "DQ -> Conv: INT8-IN-FP32-OUT; DQ -> Conv -> Q: INT8-IN-INT8-OUT".

The sweep: the op (Conv beside ConvTranspose as the control that #2597 shows fusing) and what follows it: nothing,
a Q/DQ, or a Concat with a Q/DQ Conv branch and then a Q/DQ (#2597's shape). Both ops run INT8 in every documented
form, so the inspector's verdict is INT8 throughout; what tells the cases apart is the target layer's *output*
format in the evidence (Int8: the Q was fused; Float: it was not). The one expectation is #1699's, for 8.2.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.common import ISSUE_2597
from cases.pattern import Graph, Match, Pattern, activation_dq, attr, compute_with_weights, matches, quantized_after

ISSUE_1699 = "https://github.com/NVIDIA/TensorRT/issues/1699"
ISSUE_2383 = "https://github.com/NVIDIA/TensorRT/issues/2383"
ISSUE_3412 = "https://github.com/NVIDIA/TensorRT/issues/3412"


def match_q_fusion(g: Graph, n: Any) -> List[Match]:
    """An INT8 ConvTranspose and what follows it: a Q, a Concat then a Q (#2597), or no Q (the Conv is the control)."""
    if n.op_type != "ConvTranspose" or compute_with_weights(g, n) is None or activation_dq(g, n.input[0]) is None \
            or attr(n, "group", 1) != 1:  # a grouped one is seed 007's: these reproducers are dense
        return []
    out = n.output[0]
    if quantized_after(g, out) is not None:
        follower = "q"
    elif any(u.op_type == "Concat" and quantized_after(g, u.output[0]) is not None for u in g.users(out)):
        follower = "concat_q"
    else:
        follower = "none"
    return matches(n, {"op": "conv_transpose", "follower": follower},
                   target="node_of_y" if follower == "none" else "node_of_up")


PATTERN = Pattern(
    rules={"convtranspose_q_fusion": "INT8 ConvTranspose and the Q after it"},
    ops=("ConvTranspose",),
    match=match_q_fusion,
    controls=({"op": ("conv",)},),
    also_matches=("convtranspose_grouped", "convtranspose_weight_axis"),
)


CASE = Case(
    id="convtranspose_q_fusion",
    seed="005",
    title="ConvTranspose followed by a Q (directly or through a Concat): is the Q fused, INT8 -> INT8?",
    links=(ISSUE_2597, ISSUE_1699, ISSUE_2383, ISSUE_3412),
    axes={"op": ("conv", "conv_transpose"), "follower": ("none", "q", "concat_q")},
    # The Conv/ConvTranspose node: node_of_up, or node_of_y where it produces the graph output.
    target_nodes=("node_of_up", "node_of_y"),
    signatures=(),
    expectations=(
        Expectation(
            "tensorrt", "==8.2.*", "int8", ISSUE_1699, where={"op": ("conv_transpose",), "follower": ("none", "q")},
            hardware="RTX 2080",
            note="maintainer: the ConvTranspose runs INT8 -> FP32 without a Q/DQ after it, INT8 -> INT8 with one; "
            "both are INT8 kernels (reporter's 8.2.0.6)",
        ),
    ),
    builder="generators.convtranspose_q_fusion:build",
    pattern=PATTERN,
)
