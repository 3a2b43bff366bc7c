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

from cases.base import Case, Expectation
from cases.common import NO_IMPLEMENTATION

ISSUE_2280 = "https://github.com/NVIDIA/TensorRT/issues/2280"
ISSUE_1934 = "https://github.com/NVIDIA/TensorRT/issues/1934"


_DEPTHWISE_K4 = {"groups": (16,), "kernel": (4,)}
_NOTE = ("the thread's node is CenterNet's depthwise 4x4 stride-2 ConvTranspose (read from its name "
         "backbone.ida_up.up_1); its weight granularity and what follows it are not shown")

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
)
