"""Grouped INT8 Conv: https://github.com/NVIDIA/TensorRT/issues/4060, https://github.com/NVIDIA/TensorRT/issues/3385.

x -> Q -> DQ -> Conv(INT8 weights -> DQ, group = 48 / cpg, 3x3, pads 1) -> [epilogue] -> [Q -> DQ] -> y,
swept over channels per group (cpg 1 is depthwise), weight granularity, activation type, output Q/DQ
and the epilogue fused into the Conv (#3385: ReLU builds, Swish does not).

NvInfer.h, IConvolutionLayer::setNbGroups (from early releases through TensorRT 10) says: "When using
groups in int8 mode, the size of the groups (i.e. the channel count divided by the group count) must
be a multiple of 4 for both input and output." It states a requirement but not what happens when it is
broken (error, float fallback or a slower kernel), and #3385 shows a depthwise (cpg 1) INT8 Conv + ReLU
building on TensorRT 8.5.2. So it supports no outcome here: cpg 1, 2 and 3 carry no expectation from it.
The sweep is what finds out.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from cases.base import Case, Expectation, Params
from cases.common import (
    FIX_SYMMETRIC_INT8,
    ISSUE_4060,
    NO_IMPLEMENTATION,
    NONZERO_ZERO_POINT,
    OPERATORS_MD,
    nonzero_zero_point_by_version,
)
from cases.pattern import Graph, Match, Pattern, attr, matches, scale_size, zero_point_type

ISSUE_3385 = "https://github.com/NVIDIA/TensorRT/issues/3385"
NVINFER_H = "https://github.com/NVIDIA/TensorRT/blob/main/include/NvInfer.h"




def _epilogue_before_q(params: Params) -> bool:
    """The epilogues reproduce #3385, whose patterns all end in a Q: only with output Q/DQ."""
    return params["epilogue"] == "none" or bool(params["output_qdq"])



def epilogue(g: Graph, out: str) -> Tuple[str, str]:
    """("none" | "relu" | "swish", the tensor the epilogue ends in) after a Conv output."""
    users = g.users(out)
    if len(users) == 1 and users[0].op_type == "Relu":
        return "relu", users[0].output[0]
    ops = {u.op_type: u for u in users}
    if len(users) == 2 and set(ops) == {"Sigmoid", "Mul"} and ops["Sigmoid"].output[0] in ops["Mul"].input:
        return "swish", ops["Mul"].output[0]
    return "none", out


def grouped_conv_params(g: Graph, n: Any) -> Optional[Dict[str, Any]]:
    """This case's parameters for an INT8 Conv with group > 1, or None."""
    if n.op_type != "Conv" or len(n.input) < 2 or attr(n, "group", 1) <= 1:
        return None
    wdq, xdq = g.producer.get(n.input[1]), g.producer.get(n.input[0])
    if wdq is None or xdq is None or wdq.op_type != "DequantizeLinear" or xdq.op_type != "DequantizeLinear" \
            or wdq.input[0] not in g.const:
        return None
    kind, tail = epilogue(g, n.output[0])
    return {
        "cpg": int(g.const[wdq.input[0]].shape[1]),
        "weights": "per_channel" if scale_size(g, wdq) > 1 else "per_tensor",
        "activation": "uint8" if zero_point_type(g, xdq) == "uint8" else "int8",
        "output_qdq": any(u.op_type == "QuantizeLinear" for u in g.users(tail)),
        "epilogue": kind,
    }


def match_grouped(g: Graph, n: Any) -> List[Match]:
    """An INT8 grouped or depthwise Conv whose channels per group the sweep covers."""
    params = grouped_conv_params(g, n)
    if params is None or params["cpg"] not in CASE.axes["cpg"]:
        return []
    return matches(n, params, fix="" if params["activation"] == "int8" else FIX_SYMMETRIC_INT8)


PATTERN = Pattern(rules={"grouped_conv": "INT8 grouped Conv"}, ops=("Conv",), match=match_grouped)


CASE = Case(
    id="grouped_conv",
    seed="003",
    title="INT8 grouped and depthwise Conv: channels per group, epilogue fusion, zero point",
    links=(ISSUE_4060, ISSUE_3385, NVINFER_H, OPERATORS_MD),
    axes={
        "cpg": (1, 2, 3, 4, 8, 16),  # channels per group; 48 channels in all, so groups = 48 / cpg
        "weights": ("per_channel", "per_tensor"),
        "activation": ("int8", "uint8"),  # uint8: activation Q/DQ with zero point 128
        "output_qdq": (True, False),
        "epilogue": ("none", "relu", "swish"),  # swish = Sigmoid and Mul, as in #3385
    },
    # The Conv node: node_of_conv, or node_of_y where the Conv itself produces the graph output.
    target_nodes=("node_of_conv", "node_of_y"),
    signatures=(NO_IMPLEMENTATION, NONZERO_ZERO_POINT),
    expectations=(
        Expectation(
            engine="tensorrt",
            versions="==8.6.11.*",
            outcome="fail",
            stage="build",
            signature="no_implementation",
            source=ISSUE_4060,
            # The builder got past the parser, so the thread's Q/DQ were INT8 with zero point 0.
            where={"cpg": (1,), "epilogue": ("none",), "activation": ("int8",)},
            hardware="Quadro T2000 (Turing)",
            note="depthwise Conv in an explicitly quantized model; the thread does not say the weight "
            "granularity, the channel count or whether a Q/DQ follows the Conv (its fused node ends at "
            "node_of_output); its weights are float -> Q -> DQ where ours are an INT8 initializer -> DQ",
        ),
        Expectation(
            engine="tensorrt",
            versions="==8.5.2.*",
            outcome="fail",
            stage="build",
            signature="no_implementation",
            source=ISSUE_3385,
            where={
                "cpg": (1,),
                "weights": ("per_channel",),
                "activation": ("int8",),
                "output_qdq": (True,),
                "epilogue": ("swish",),
            },
            hardware="Jetson AGX Orin",
            note="reporter's table: DQ > DwConv > BN > Swish > Q fails (BN is left out here: the failing "
            "fused node names only the weights, the Conv and PWN(sigmoid, mul))",
        ),
        Expectation(
            engine="tensorrt",
            versions="==8.5.2.*",
            outcome="pass",
            source=ISSUE_3385,
            where={
                "cpg": (1,),
                "weights": ("per_channel",),
                "activation": ("int8",),
                "output_qdq": (True,),
                "epilogue": ("relu",),
            },
            hardware="Jetson AGX Orin",
            note="reporter's table: DQ > DwConv > BN > Relu > Q is OK (it builds; accuracy not reported)",
        ),
        *nonzero_zero_point_by_version({"activation": ("uint8",)}),
    ),
    builder="generators.grouped_conv:build",
    valid=_epilogue_before_q,
    pattern=PATTERN,
)
