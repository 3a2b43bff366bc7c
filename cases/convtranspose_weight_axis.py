"""NVIDIA/TensorRT#1694, #1961, #2380, #1519: ConvTranspose INT8 weights quantized per channel on axis 0 or 1.

ONNX ConvTranspose weights are [in, out / group, kH, kW], so per-output-channel quantization is DequantizeLinear
axis=1 (what ONNX Runtime's and tf2onnx's quantizers write), per-input-channel is axis=0.
#1694 (pytorch-quantization, one ConvTranspose): TensorRT gives 2.57 where 200 is expected; the maintainer: the
"quantization toolkit misaligned with TRT implementation for convTranspose. Could you try quant axis 0 for deconv?".
#1961 ("TensorRT8 int8 model convtranspose layer output error"): a maintainer reproduced the accuracy error with
Polygraphy (ONNX Runtime vs TensorRT). #2380: pytorch-quantization's default changed from axis 1 to axis 0; a
maintainer: "the kernels assume per-input-channel quant for ConvTranspose", "We don't support per-output-channel
quant for ConvTranspose". None of these three threads states the TensorRT version it speaks for, so none gives an
expectation here; the sweep is what finds out what 8.5/8.6 do with axis 1 (refuse, or compute wrong numbers).
#1519 (TensorRT 8.0.1.6, RTX 2080): "Quantized block of ConvTranspose2d with different input and output channels
is not supported" for weights (64, 55, 2, 2) with 55 scales, i.e. per output channel (axis 1) with in != out.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.pattern import Graph, Match, Pattern, attr, compute_with_weights, matches, scale_size

ISSUE_1694 = "https://github.com/NVIDIA/TensorRT/issues/1694"
ISSUE_1961 = "https://github.com/NVIDIA/TensorRT/issues/1961"
ISSUE_2380 = "https://github.com/NVIDIA/TensorRT/issues/2380"
ISSUE_1519 = "https://github.com/NVIDIA/TensorRT/issues/1519"


def match_weight_axis(g: Graph, n: Any) -> List[Match]:
    """An INT8 ConvTranspose: its weights per tensor or per channel on axis 0 or 1, input and output channels."""
    w = compute_with_weights(g, n)
    if w is None or g.dtype(w.input[0]) != "int8" or attr(n, "group", 1) != 1:  # grouped: seed 007's
        return []
    shape = g.const[w.input[0]].shape
    weights = "per_tensor" if scale_size(g, w) <= 1 else f"axis{attr(w, 'axis', 1)}"
    params = {"channels": "equal" if shape[0] == shape[1] * attr(n, "group", 1) else "different"}
    params.update({"weights": weights} if weights in CASE.axes["weights"] else {})
    return matches(n, params, target="node_of_up")


PATTERN = Pattern(
    rules={"convtranspose_weight_axis": "INT8 ConvTranspose weights per channel"},
    ops=("ConvTranspose",),
    match=match_weight_axis,
    also_matches=("convtranspose_grouped", "convtranspose_q_fusion"),
)


CASE = Case(
    id="convtranspose_weight_axis",
    seed="006",
    title="ConvTranspose with INT8 weights quantized per tensor, per input channel (axis 0) or per output channel "
          "(axis 1)",
    links=(ISSUE_1694, ISSUE_1961, ISSUE_2380, ISSUE_1519),
    axes={"weights": ("per_tensor", "axis0", "axis1"), "channels": ("equal", "different")},
    target_nodes=("node_of_up",),
    signatures=(),
    expectations=(
        Expectation(
            "tensorrt", "==8.0.1.*", "fail", ISSUE_1519, where={"weights": ("axis1",), "channels": ("different",)},
            hardware="RTX 2080",
            note="reporter: a quantized ConvTranspose2d with different input and output channels is not supported; "
            "the thread's log stops at the parser and does not show the error text",
        ),
    ),
    builder="generators.convtranspose_weight_axis:build",
    pattern=PATTERN,
)
