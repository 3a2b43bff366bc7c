"""NVIDIA/TensorRT#3861, #4401, #2597: Concat of Q/DQ inputs with different scales (requantization) in INT8.

#3861 asks how Q/DQ should be placed around a Concat ("Should all the inputs/outputs be Q/DQ nodes?") and calls the
documentation unclear; #4401 (UNet) tries "all suggested Q/DQ placements" and never gets the Concat-Conv section
fully fused, while pytorch-quantization's default leaves Concat unquantized. #2597's log shows TensorRT cloning the
Q after a Concat into each of its inputs ("QuantizeLinear_432_clone_0 ... clone_2"), which requantizes each input
at the Concat output's scale. No thread states a TensorRT version with an outcome, so there is no expectation.

The sweep: input scales equal to the output's, or different (inputs at s and 4s, the Concat's Q at 2s: both inputs
are requantized, and half of a's values sit on rounding ties); a Q/DQ after the Concat or not; and what reads the
Concat (a 1x1 INT8 Conv, or the graph output). Numerics are counted in the Concat Q's steps where it is the output.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case
from cases.common import ISSUE_2597
from cases.pattern import Graph, Match, Pattern, activation_dq, matches, quantized_after, through_qdq

ISSUE_3861 = "https://github.com/NVIDIA/TensorRT/issues/3861"
ISSUE_4401 = "https://github.com/NVIDIA/TensorRT/issues/4401"


def match_concat(g: Graph, n: Any) -> List[Match]:
    """A Concat of Q/DQ inputs: scales equal or not (requantized), a Q/DQ after it, an INT8 Conv reading it or not."""
    dqs = [activation_dq(g, i) for i in n.input]
    if len(dqs) < 2 or any(d is None for d in dqs):
        return []
    q = quantized_after(g, n.output[0])
    scales = [g.const.get(d.input[1]) for d in dqs] + ([g.const.get(q.input[1])] if q is not None else [])
    if any(s is None for s in scales):
        return []
    equal = len({tuple(s.reshape(-1).tolist()) for s in scales}) == 1
    tensor, _ = through_qdq(g, n.output[0])
    consumer = ("conv" if any(u.op_type == "Conv" for u in g.users(tensor)) else
                "none" if tensor in g.outputs else "")
    params = {"scales": "equal" if equal else "different", "output_qdq": q is not None,
              **({"consumer": consumer} if consumer else {})}
    return matches(n, params, target="node_of_cat")


PATTERN = Pattern(rules={"concat_requant": "Concat of Q/DQ inputs"}, ops=("Concat",), match=match_concat)


CASE = Case(
    id="concat_requant",
    seed="010",
    title="Concat of Q/DQ inputs with equal or different scales, requantized by a Q after it",
    links=(ISSUE_3861, ISSUE_4401, ISSUE_2597),
    axes={"scales": ("equal", "different"), "output_qdq": (True, False), "consumer": ("conv", "none")},
    # The Concat node: node_of_cat, or node_of_y where it produces the graph output.
    target_nodes=("node_of_cat", "node_of_y"),
    signatures=(),
    expectations=(),
    builder="generators.concat_requant:build",
    pattern=PATTERN,
)
