"""microsoft/onnxruntime#32730 (2026-09, open): DequantizeLinear-21 on a 1-D input with block_size, read as per-axis.

#32730: "`DequantizeLinear` (opset 21) with a **1-D input** and an explicit `block_size` returns wrong values on the
WebGPU EP, without any error or warning. The same model is correct on the `wasm` EP and on CPU in Python." The kernel
dequantizes element i with x_scale[i] and x_zero_point[i] instead of x_scale[i / block_size]; past the scale's length
it reads 0. The thread's minimal case: x = int8[10, 20, 30, 40, 50, 60, 70, 80], x_scale = [0.5, 2.0], x_zero_point =
int8[0, 10], axis 0, block_size 4: expected [5, 10, 15, 20, 80, 100, 120, 140]; WebGPU gives [5, 20, 0, 0, 0, 0, 0, 0].
Its scope table (WebGPU, 1.30.0 and 1.31.0-dev.20260918): [8] with blocks of 4 and [64] with blocks of 16 wrong, [64,
27] with blocks of 16 along axis 0 right. microsoft/onnxruntime#32734 (open) is the fix. Our ONNX Runtime column is the
CPU EP, which the thread calls correct: that is its expectation, for the versions the thread ran.

What our engines do (2026-11-27; no source speaks for them): two of them make #32730's misreading, but say so at
load. OpenVINO 2024.6.0 and 2026.4.1 refuse both 1-D forms: "The number of dequantization scale elements '2' must
match the input shape dimension '8' pointed to by the axis attribute: 0" (2024.6.0 also fails the 2-D control without
a zero point: "Arguments do not have the same element type (arg0 element type: i8, arg1 element type: f32)").
TensorRT-RTX 1.4 to 1.7, every target, refuse the 1-D forms without a zero point in the parser: "The number of scales
is not equal to the number of output channels. Number of output channels = 8, number of scales = 2", and the forms
with zero points as any non-zero zero point; 1.5 to 1.7 build the 2-D control without one (1.4 fails it at
build). ONNX Runtime 1.31.1 runs all six exactly, as the thread says of the CPU EP; 1.16.3 reads IR 9 at most.
TensorRT 8.x: opset 21 is past its parser's tables (8.6: opset 17), which do not say that a later opset fails, so
there is no 8.x expectation, as for seed 013.

The sweep: the thread's three shapes, each with the thread's zero points or without any (symmetric, as TensorRT takes
them). x is an int8 graph input, y = DequantizeLinear(x) the float32 output, exact: an engine is off by 0 or by whole
blocks. Target: the DequantizeLinear.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.common import NONZERO_ZERO_POINT
from cases.pattern import Graph, Match, Pattern, attr, matches

ISSUE_32730 = "https://github.com/microsoft/onnxruntime/issues/32730"
ORT_32734 = "https://github.com/microsoft/onnxruntime/pull/32734"

# (input shape, block size): the rows of #32730's scope table, blocks along axis 0.
SHAPES = {"8_block4": ((8,), 4), "64_block16": ((64,), 16), "64x27_block16": ((64, 27), 16)}


def match_blocked_activation(g: Graph, n: Any) -> List[Match]:
    """A blocked DequantizeLinear (block_size) of an activation, not of weights: its shape and block, its zero point."""
    block = attr(n, "block_size", 0)
    if not block or n.input[0] in g.const:
        return []
    shape = g.shapes.get(n.input[0], ())
    key = "x".join(str(d) for d in shape) + f"_block{block}"
    params = {"zero_point": "thread" if len(n.input) > 2 and n.input[2] else "none",
              **({"shape": key} if key in CASE.axes["shape"] else {})}
    return matches(n, params, target="node_of_y")


PATTERN = Pattern(rules={"dq_blocked_activation": "blocked DequantizeLinear of an activation"},
                  ops=("DequantizeLinear",), match=match_blocked_activation,
                  also_matches=("dq_blocked_axis", "nvfp4_two_level_scales"))


CASE = Case(
    id="dq_blocked_rank1",
    seed="026",
    title="DequantizeLinear-21 blocked along axis 0 of a 1-D int8 input (block_size 4 and 16), and a 2-D control",
    links=(ISSUE_32730, ORT_32734),
    axes={"shape": tuple(SHAPES), "zero_point": ("thread", "none")},
    target_nodes=("node_of_y",),
    # TensorRT and TensorRT-RTX refuse the thread's zero points with the parser's check, worded differently by 8.5 and
    # 8.6: one signature, so that an upgrade diff reads the new words as the same failure reworded
    signatures=(NONZERO_ZERO_POINT,),
    expectations=(
        Expectation(
            "onnxruntime", ">=1.30,<1.32", "pass", ISSUE_32730,
            note="'The same model is correct on the wasm EP and on CPU in Python'; the wrong values are the WebGPU "
            "EP's (1.30.0 and 1.31.0-dev.20260918), which these columns do not run",
        ),
    ),
    builder="generators.dq_blocked_rank1:build",
    arch_dependent=True,
    opset=21,
    pattern=PATTERN,
)
