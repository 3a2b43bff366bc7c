"""NVIDIA/TensorRT#2280, #1934: "Could not find any implementation for node ... QuantizeLinear ... ConvTranspose".

#2280 (pytorch-quantization model, trtexec --int8; reporter on JetPack 4.6.1): "Error Code 10: Internal Error (Could
not find any implementation for node backbone.ida_up.up_1.weight + QuantizeLinear_629_quantize_scale_node +
ConvTranspose_631.)". A maintainer: "I can reproduce this in TRT 8.4 but get passed in TRT 8.5". `backbone.ida_up.up_1`
is CenterNet's DLA-34 IDAUp upsampler: nn.ConvTranspose2d(o, o, 4, stride=2, padding=1, groups=o) (up_f 2), a
depthwise ConvTranspose; the thread does not show the model, so that structure is read from the layer name.
#1934 (TensorRT 8.0.3): "Grouped Quantized Transposed Conv is rejected by trtexec" (labelled enhancement).

The sweep: groups (1 dense, 4, 16 depthwise), kernel 4 (pads 1) or 2, output Q/DQ or not. Weights are per tensor,
so that the weight axis (case convtranspose_weight_axis) does not enter. #2280's two data points are attached to
the depthwise kernel-4 variants.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.common import NO_IMPLEMENTATION
from cases.pattern import Graph, Match, Pattern, attr, compute_with_weights, matches, quantized_after

ISSUE_2280 = "https://github.com/NVIDIA/TensorRT/issues/2280"
ISSUE_1934 = "https://github.com/NVIDIA/TensorRT/issues/1934"


_DEPTHWISE_K4 = {"groups": (16,), "kernel": (4,)}
_NOTE = ("the thread's node is CenterNet's depthwise 4x4 stride-2 ConvTranspose (read from its name "
         "backbone.ida_up.up_1); its weight granularity and what follows it are not shown")


def match_grouped_transpose(g: Graph, n: Any) -> List[Match]:
    """A grouped or depthwise INT8 ConvTranspose (a dense one is the control), its kernel, its output Q/DQ."""
    w = compute_with_weights(g, n)
    groups = attr(n, "group", 1)
    if w is None or groups <= 1:
        return []
    kernel = (attr(n, "kernel_shape") or list(g.const[w.input[0]].shape[2:]) or [0])[0]
    output_qdq = quantized_after(g, n.output[0]) is not None
    params = {"output_qdq": output_qdq, **({"groups": groups} if groups in CASE.axes["groups"] else {}),
              **({"kernel": kernel} if kernel in CASE.axes["kernel"] else {})}
    return matches(n, params, target="node_of_up" if output_qdq else "node_of_y")


PATTERN = Pattern(
    rules={"convtranspose_grouped": "INT8 grouped ConvTranspose"},
    ops=("ConvTranspose",),
    match=match_grouped_transpose,
    controls=({"groups": (1,)},),
)


CASE = Case(
    id="convtranspose_grouped",
    seed="007",
    title="Grouped and depthwise INT8 ConvTranspose: is there an implementation?",
    links=(ISSUE_2280, ISSUE_1934),
    axes={"groups": (1, 4, 16), "kernel": (4, 2), "output_qdq": (True, False)},
    target_nodes=("node_of_up", "node_of_y"),
    signatures=(NO_IMPLEMENTATION,),
    expectations=(
        Expectation(
            "tensorrt", "==8.4.*", "fail", ISSUE_2280, stage="build", signature="no_implementation",
            where=_DEPTHWISE_K4, note="maintainer reproduced the failure on 8.4; " + _NOTE,
        ),
        Expectation(
            "tensorrt", "==8.5.*", "pass", ISSUE_2280, where=_DEPTHWISE_K4,
            note="maintainer: the same model passes in TRT 8.5 (then the dev branch); " + _NOTE,
        ),
    ),
    builder="generators.convtranspose_grouped:build",
    pattern=PATTERN,
)
