"""microsoft/onnxruntime#32132 (2026-08, open): ONNX Runtime's fused QLinearConv/Add/AveragePool round ties otherwise.

#32132: "level-2 graph optimizations (`ORT_ENABLE_EXTENDED` / `ORT_ENABLE_ALL`, the default) can produce a graph output
that differs from the unoptimized run by an integer number of quantization steps (`diff == k * scale`, k = 1 or 2)":
`QDQSelectorActionTransformer` fuses Conv, Add and AveragePool between Q/DQ into QLinearConv, QLinearAdd and
QLinearAveragePool, "the integer-domain result of the fused ops differs from the float op + `QuantizeLinear` path by
one LSB", in plain single-chain models too. "`ORT_DISABLE_ALL` and `ORT_ENABLE_BASIC` are bit-identical to each other;
the bug first appears at level 2." A comment (1.29.0, Windows CPU) narrows it to the fusion (disabling
QDQSelectorActionTransformer removes it, NhwcTransformer does not) and to rounding ties: "every mismatching element
lands essentially exactly on a rounding tie". The issue is open: its expectation is for 1.29 on.

The reproducers put the float path exactly on ties: power-of-two input and weight scales, inputs that are every int8
value once, and an output scale r times the float result's unit, r even and not a power of two, so the float value over
the output scale is a whole number plus one half wherever the accumulator is r*k + r/2, and QuantizeLinear rounds it to
even. The fused op multiplies the integer accumulator by sx*sw/sy = 1/r, which float32 cannot hold, and lands beside
the tie. Conv: a 1x1 Conv 1->8, weights 6..13, r = 14; Add: two inputs, r = 6; AveragePool: 3x3 windows, whose float
path divides by 9 (near ties, not exact ones), r = 10. The output is the last DequantizeLinear, its step the output
scale; an engine that rounds every tie as ONNX does is off by 0 steps, one that rounds a tie the other way by 1, so the
tolerance is half a step. Symmetric INT8 (zero points 0), opset 13: TensorRT 8.x parses it; its own INT8 kernels round
ties their own way, which its cells will show. Target: the Conv, Add or AveragePool.

What our columns do (2026-11-27, an Intel Xeon with AMX; no source names these versions): ONNX Runtime 1.16.3 and
1.31.1 at their default ORT_ENABLE_ALL miss the reference by one step on all three, as #32132 says of 1.29.0.
OpenVINO 2024.6.0 and 2026.4.1 miss the Conv and the AveragePool by one step and match the Add
(microsoft/onnxruntime#25045 says OpenVINO's own quantization rounds halves away from zero; not a source for these
cells). TensorRT-RTX 1.5 to 1.7 build the Add and the AveragePool; 1.4 to 1.6 refuse the INT8 Conv with their
cuDNN dtype check, and 1.7 builds it, in float for SM75 and in INT8 from SM80 on (1.4.0.76 needs a GPU for the
others). Those plans are not run here: their rounding is the GPU's to show.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation
from cases.common import BELOW_EXTENDED, EXTENDED_OR_MORE
from cases.pattern import Graph, Match, Pattern, activation_dq, compute_with_weights, matches, quantized_after

ISSUE_32132 = "https://github.com/microsoft/onnxruntime/issues/32132"


_OPS = {"Conv": "conv", "Add": "add", "AveragePool": "avgpool"}


def match_qlinear(g: Graph, n: Any) -> List[Match]:
    """A Conv, Add or AveragePool between Q/DQ (Q/DQ on its activations and after it): what ONNX Runtime fuses into a
    QLinear op."""
    activations = n.input[:1] if n.op_type != "Add" else n.input[:2]
    if any(activation_dq(g, i) is None for i in activations) or quantized_after(g, n.output[0]) is None:
        return []
    if n.op_type == "Conv" and compute_with_weights(g, n) is None:
        return []
    return matches(n, {"op": _OPS[n.op_type]}, target="node_of_c")


PATTERN = Pattern(rules={"qlinear_op": "an op between Q/DQ (a QLinear fusion)"}, ops=tuple(_OPS), match=match_qlinear,
                  also_matches=("bias_add_after_qdq", "convtranspose_q_fusion", "grouped_conv", "resize_qdq",
                                "silu_qdq", "two_conv_fanout_qdq", "zero_scale_qdq"))


CASE = Case(
    id="qlinear_rounding_ties",
    seed="027",
    title="INT8 Q/DQ Conv, Add and AveragePool whose float results land on rounding ties: ONNX Runtime's fused "
          "QLinear ops round them otherwise",
    links=(ISSUE_32132,),
    axes={"op": ("conv", "add", "avgpool")},
    target_nodes=("node_of_c",),
    signatures=(),
    expectations=(
        Expectation(
            "onnxruntime", ">=1.29", "fail", ISSUE_32132, stage="compare",
            when={"graph_optimization_level": EXTENDED_OR_MORE},
            note="the fused QLinearConv/QLinearAdd/QLinearAveragePool differ by one step on rounding ties from level 2 "
            "(ORT_ENABLE_EXTENDED) on; reproduced on 1.29.0; open",
        ),
        Expectation(
            "onnxruntime", ">=1.29", "pass", ISSUE_32132, when={"graph_optimization_level": BELOW_EXTENDED},
            note="'ORT_DISABLE_ALL and ORT_ENABLE_BASIC are bit-identical to each other'; disabling "
            "QDQSelectorActionTransformer gives no difference",
        ),
    ),
    builder="generators.qlinear_rounding_ties:build",
    arch_dependent=True,
    pattern=PATTERN,
)
