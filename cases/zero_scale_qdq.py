"""NVIDIA/TensorRT#1826 (closed): a Q/DQ scale with a zero in it (a dead channel) is refused by TensorRT's ONNX parser.

#1826 (TensorRT 8.2): "Using the `pytorch-quantization` toolkit of TensorRT to do PTQ on a pytorch model, gives 0
scale values for some nodes, which causes ONNX parse error"; "When I replace these 0 values with some constant value
using `onnx-graphsurgeon` I am able to proceed". NVIDIA/TensorRT#2498 (closed) reports the same on 8.5.1.7 ("seems like
0 scale produced during calibration with pytorch-quantization"), and NVIDIA/Model-Optimizer#454 (open) on 8.6.1 after
NVIDIA ModelOpt's ONNX PTQ: "Assertion failed: scaleAllPositive && "Scale coefficients must all be positive"". The
parser's QuantDequantLinearHelper checks every coefficient of a constant scale, `x > 0`; ModelOpt 0.47 writes a zero
weight scale for a channel whose weights are all zero (its amax is 0).

The sweep (`zero`): `weight_channel`, a per-channel INT8 weight scale that is 0 on one dead output channel of a Conv
(whose INT8 weights are all 0), as ModelOpt writes it; `activation`, a per-tensor activation scale of 0 on the Conv's
input (a tensor that was all zero when it was calibrated, here fed non-zero values: Q saturates, DQ gives zeros).
Target: the Conv. ONNX allows either (the scale is a float); the reference is exact: the dead channel, or every channel
after a zero activation, computes its bias alone.

Observed on an H200 (2026-11-28, reports/observed/nvidia-h200/round-2026-11-28/): TensorRT 8.5.1.7, 8.5.2.2, 8.5.3.1
and 8.6.0 refuse both forms at parse, "Assertion failed: scaleAllPositive && "Scale coefficients must all be
positive"", as #2498 and Model-Optimizer#454 report; the expectations are those cells. An independent check on an
H200 was told that TensorRT for RTX 1.7 builds such a model; built ahead of time on a CPU with TensorRT for RTX
1.4.0.76 to 1.7.1.116 (every `nox -s matrix`), these reproducers are refused at parse with the same words
("onnxOpImporters.cpp:1889 In function resolveScaleInput: [6] Assertion failed: (scaleAllPositive ||
allowNegativeScale): Scale coefficients must all be positive"). ONNX Runtime 1.31.1's default column on this
project's CPU (not committed) was 3 steps off on the dead weight channel's form and 64 on the zero activation
scale's, where 1.16.3 matched: news for the cross-check columns, with no source yet.

The fix, in the model: give each zero scale a positive one, the smallest positive normal float32 or the smallest
non-zero scale of the same tensor. A dead weight channel's INT8 weights are all 0, so its dequantized weights stay 0
whatever the scale; a zero activation scale saturated every value, so a tiny positive one changes its outputs by no
more than 127 times that scale.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Signature
from cases.pattern import Graph, Match, Pattern, constant_dq, matches
from core.engines import pin_group

ISSUE_1826 = "https://github.com/NVIDIA/TensorRT/issues/1826"
ISSUE_2498 = "https://github.com/NVIDIA/TensorRT/issues/2498"
MODELOPT_454 = "https://github.com/NVIDIA/Model-Optimizer/issues/454"

SCALE_NOT_POSITIVE = Signature(
    name="scale_not_positive",
    # TensorRT 8.6: "builtin_op_importers.cpp:1197 In function QuantDequantLinearHelper: [6] Assertion failed:
    # scaleAllPositive && "Scale coefficients must all be positive""; TensorRT for RTX 1.7: the same words, from
    # resolveScaleInput.
    pattern=r"Scale coefficients must all be positive",
    kind="error",
    short="zero Q/DQ scale refused",
    source=MODELOPT_454,
)
# Observed (a baseline): both forms on TensorRT 8.5.1.7, 8.5.2.2, 8.5.3.1 and 8.6.0, an H200, 2026-11-28.
OBSERVED = "reports/observed/nvidia-h200/round-2026-11-28/trt-{}.jsonl"


def match_zero_scale(g: Graph, n: Any) -> List[Match]:
    """A Q/DQ whose constant scale holds a zero (or a negative): a dead weight channel where the DequantizeLinear reads
    an initializer, else a dead activation."""
    scale = g.const.get(n.input[1]) if len(n.input) > 1 else None
    if scale is None or not (scale <= 0).any():
        return []
    weight = constant_dq(g, n.output[0]) is n
    return matches(n, {"zero": "weight_channel" if weight else "activation"}, target="node_of_c")


PATTERN = Pattern(rules={"zero_scale_qdq": "Q/DQ scale with a zero (a dead channel)"},
                  ops=("QuantizeLinear", "DequantizeLinear"), match=match_zero_scale,
                  fix="give each zero scale a positive one (the tensor's smallest non-zero scale): a dead channel's "
                      "INT8 values are 0, so its dequantized values stay 0")


CASE = Case(
    id="zero_scale_qdq",
    seed="033",
    title="A Q/DQ scale with a zero (a dead weight channel, or a dead activation): refused by TensorRT's parser",
    links=(ISSUE_1826, ISSUE_2498, MODELOPT_454),
    axes={"zero": ("weight_channel", "activation")},
    target_nodes=("node_of_c",),
    signatures=(SCALE_NOT_POSITIVE,),
    expectations=tuple(
        Expectation("tensorrt", f"=={v}", "fail", OBSERVED.format(v), stage="load",
                    signature=SCALE_NOT_POSITIVE.name, hardware="NVIDIA H200", basis="baseline",
                    note="refused at parse, both forms: 'Scale coefficients must all be positive'")
        for v in pin_group("trt").versions
    ),
    builder="generators.zero_scale_qdq:build",
    pattern=PATTERN,
)
