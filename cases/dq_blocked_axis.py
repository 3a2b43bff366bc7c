"""openvinotoolkit/openvino#32918, #32917: a blocked DequantizeLinear-21 on axis 1 came out interleaved, axis 2 failed.

#32918 (merged; #32917 is its closed twin, 2025-11-18): "The old implementation had two issues: 1. Did not support
axis > 1 (returned error 'Axis > 1 isn't supported') 2. For axis = 1, produced incorrect results due to wrong dimension
ordering"; "axis = 0: [num_blocks, block_size, ...] - correct". Its worked example: axis=1, block_size=2,
input=[9,9,9,9,9,9,9,9], scale=[1,2,3,4], zero_point=[1,2,3,4]: the old output [8, 14, 8, 14, 18, 20, 18, 20] ("elements
interleaved"), the new and ONNX Runtime's [8, 8, 14, 14, 18, 18, 20, 20]. Every release before 2025.4 predates the PR
(2025.3 is of 2025-09-03), so the old behaviour is documented for them, and the fix from 2026.0 on (the first release
cut after it); the PR says the failure is an error for axis > 1 and wrong values for axis 1, so the expectation names
no stage.

The sweep: the PR's example along axis 1 ([2, 4], scales [[1, 2], [3, 4]]), the same data blocked along axis 0 ([4,
2]) and along axis 2 ([2, 1, 4]); x is an int8 graph input, y its float32 DequantizeLinear, exact. Target: the
DequantizeLinear.

What our columns do (2026-11-27): OpenVINO 2024.6.0 predates even the PR's old implementation and refuses axis 1 ("Axis
!= 0 isn't supported") and axis 2 (its scale must be rank 2) at load; 2026.4.1 gives the PR's [8, 8, 14, 14, 18, 18,
20, 20] on all three. ONNX Runtime 1.31.1 agrees; 1.16.3 reads IR 9 at most. TensorRT-RTX 1.4 to 1.7 refuse the PR's
zero points ("Non-zero zero point is not supported"). TensorRT 8.x: opset 21, no expectation (seed 026).
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.common import NONZERO_ZERO_POINT
from cases.pattern import Graph, Match, Pattern, attr, matches

OV_32917 = "https://github.com/openvinotoolkit/openvino/pull/32917"
OV_32918 = "https://github.com/openvinotoolkit/openvino/pull/32918"

# (input shape, scale shape) per blocked axis, blocks of 2: the PR's example and the same data on axes 0 and 2.
SHAPES = {0: ((4, 2), (2, 2)), 1: ((2, 4), (2, 2)), 2: ((2, 1, 4), (2, 1, 2))}


def match_blocked_axis(g: Graph, n: Any) -> List[Match]:
    """A blocked DequantizeLinear (block_size) of an activation, by the axis its blocks run along."""
    if not attr(n, "block_size", 0) or n.input[0] in g.const:
        return []
    axis = attr(n, "axis", 1)
    return matches(n, {"axis": axis} if axis in CASE.axes["axis"] else {}, target="node_of_y")


PATTERN = Pattern(rules={"dq_blocked_axis": "blocked DequantizeLinear along an axis"}, ops=("DequantizeLinear",),
                  match=match_blocked_axis,
                  also_matches=("dq_blocked_rank1", "nvfp4_two_level_scales"))


CASE = Case(
    id="dq_blocked_axis",
    seed="030",
    title="DequantizeLinear-21 blocked along axis 0, 1 or 2 (OpenVINO's PR example): sequential blocks or interleaved",
    links=(OV_32918, OV_32917),
    axes={"axis": tuple(SHAPES)},
    target_nodes=("node_of_y",),
    # TensorRT and TensorRT-RTX refuse the thread's zero points with the parser's check, worded differently by 8.5 and
    # 8.6: one signature, so that an upgrade diff reads the new words as the same failure reworded
    signatures=(NONZERO_ZERO_POINT,),
    expectations=(
        Expectation(
            "openvino", "<2025.4", "fail", OV_32918, where={"axis": (1, 2)},
            note="the old implementation: axis > 1 an error ('Axis > 1 isn't supported'), axis 1 interleaved blocks "
            "([8, 14, 8, 14, 18, 20, 18, 20] for the example)",
        ),
        Expectation(
            "openvino", ">=2026.0", "pass", OV_32918,
            note="the reshape always splits [D0, ..., num_blocks, block_size, ...]: sequential blocks on every axis",
        ),
        Expectation(
            "openvino", "<2025.4", "pass", OV_32918, where={"axis": (0,)},
            note="'axis = 0: [num_blocks, block_size, ...] - correct' in the old implementation",
        ),
    ),
    builder="generators.dq_blocked_axis:build",
    arch_dependent=True,
    opset=21,
    pattern=PATTERN,
)
