"""NVIDIA/TensorRT#1992, #1144, #3270: a residual Add runs in INT8 only with Q/DQ on the residual branch.

#1992 (a ResNet block in an explicitly quantized model): asked whether the identity branch needs its own Q/DQ, a
maintainer answers "you need to add Q/DQ pair in the residual add branch to get the best performance by running it
in INT8. If not, the "Add" will have to perform in FP16/FP32". #1144 shows the Add left in FP32 with Q/DQ from
pytorch-quantization; #3270 asks the same for the TensorFlow toolkit's residual case. No thread states a TensorRT
version, so there is no expectation: the sweep records what 8.5/8.6 do.

The sweep: what the Add's second input is (the float block input, the Conv's own input DQ shared with it, or a Q/DQ
of its own at another scale) and whether a Q/DQ follows the Add. The target is the Add node (TensorRT fuses it into
the Conv as its epilogue when it can: the Conv layer is then named after both).
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case
from cases.pattern import Graph, Match, Pattern, activation_dq, compute_with_weights, matches, quantized_after

ISSUE_1992 = "https://github.com/NVIDIA/TensorRT/issues/1992"
ISSUE_1144 = "https://github.com/NVIDIA/TensorRT/issues/1144"
ISSUE_3270 = "https://github.com/NVIDIA/TensorRT/issues/3270"


def match_residual(g: Graph, n: Any) -> List[Match]:
    """An Add of an INT8 Conv's output and a residual activation: float, the Conv's input DQ, or its own Q/DQ."""
    for i, j in ((0, 1), (1, 0)):
        conv = g.producer.get(n.input[i]) if len(n.input) == 2 else None
        if conv is None or conv.op_type != "Conv" or compute_with_weights(g, conv) is None:
            continue
        other = n.input[j]
        if other in g.const or g.op(other) in ("DequantizeLinear", "Constant") and activation_dq(g, other) is None:
            return []
        residual = ("shared_qdq" if other == conv.input[0] else "own_qdq" if activation_dq(g, other) is not None
                    else "float")
        output_qdq = quantized_after(g, n.output[0]) is not None
        return matches(n, {"residual": residual, "output_qdq": output_qdq},
                       target="node_of_sum" if output_qdq else "node_of_y")
    return []


PATTERN = Pattern(rules={"residual_add_qdq": "residual Add after an INT8 Conv"}, ops=("Add",), match=match_residual)


CASE = Case(
    id="residual_add_qdq",
    seed="009",
    title="Residual Add after a Q/DQ Conv: Q/DQ on the residual branch or not, and after the Add",
    links=(ISSUE_1992, ISSUE_1144, ISSUE_3270),
    axes={"residual": ("float", "shared_qdq", "own_qdq"), "output_qdq": (True, False)},
    # The Add node: node_of_sum, or node_of_y where it produces the graph output.
    target_nodes=("node_of_sum", "node_of_y"),
    signatures=(),
    expectations=(),
    builder="generators.residual_add_qdq:build",
    pattern=PATTERN,
)
