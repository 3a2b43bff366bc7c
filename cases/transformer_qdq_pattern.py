"""NVIDIA/TensorRT#3243: attention BMMs run in INT8 only with Q/DQ on their inputs (ModelOpt / pytorch-quantization).

#3243: a maintainer, "TRT's MHA fusion does not support implicit quantizations yet. Please use explicit quantization
instead: Add Q/DQ ops before the two batch gemms in the MHA and also add Q/DQ ops before the ResidualAdd." TensorRT's
developer guide, "Q/DQ Layer-Placement Recommendations" (explicit quantization): quantize all inputs of weighted
operations and put the Q/DQ right at the operator's input. ModelOpt's ONNX PTQ (`modelopt.onnx.quantization.quantize`)
quantizes MatMul inputs and, unless `disable_mha_qdq`, the MatMuls of the MHA pattern (Q.K^T and softmax.V); it
leaves LayerNorm and the residual Add in float here, as this block does. No source states a TensorRT version for
this pattern, so there is no expectation and no signature: the sweep records what 8.5/8.6 do.

The block (seq 8, hidden 32, 2 heads): x -> Q/DQ -> Q/K/V MatMuls on per-channel INT8 weights -> Q.K^T (BMM1) ->
* 0.25 -> Softmax -> softmax.V (BMM2) -> Q/DQ -> output MatMul -> + x -> LayerNorm. The sweep: Q/DQ on the BMM
inputs from the projections (Q, K^T and V: both BMMs, or none), and Q/DQ on the softmax output (BMM2's other
input) or not. The targets are the two BMMs.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case
from cases.common import MODELOPT_ONNX_PTQ
from cases.pattern import Graph, Match, Pattern, activation_dq, matches, weight_dequantize

ISSUE_3243 = "https://github.com/NVIDIA/TensorRT/issues/3243"
PLACEMENT = ("https://docs.nvidia.com/deeplearning/tensorrt/developer-guide/index.html#qdq-placement-recs")
MODELOPT_QUANTIZE = (
    "https://nvidia.github.io/Model-Optimizer/reference/generated/modelopt.onnx.quantization.quantize.html"
)


def _from_softmax(g: Graph, tensor: str) -> str:
    """ "qdq" where tensor is a Softmax output through Q/DQ, "float" where it is one directly, else ""."""
    dq = activation_dq(g, tensor)
    if dq is not None:
        q = g.producer.get(dq.input[0])
        return "qdq" if q is not None and g.op(q.input[0]) == "Softmax" else ""
    return "float" if g.op(tensor) == "Softmax" else ""


def match_bmm(g: Graph, n: Any) -> List[Match]:
    """An attention batch MatMul (both inputs activations) in a quantized model: Q/DQ on its inputs, on the softmax."""
    if not g.quantized or any(i in g.const or weight_dequantize(g, i) is not None for i in n.input):
        return []
    quantized = [activation_dq(g, i) is not None for i in n.input]
    params = {"bmm_inputs": "both"} if all(quantized) else {"bmm_inputs": "none"} if not any(quantized) else {}
    softmax = [s for s in (_from_softmax(g, i) for i in n.input) if s]
    if softmax:
        params["softmax_qdq"] = softmax[0] == "qdq"
    return matches(n, params, target="node_of_ctx" if softmax else "node_of_scores")


PATTERN = Pattern(rules={"attention_bmm_qdq": "attention BMM and its Q/DQ"}, ops=("MatMul",), match=match_bmm)


CASE = Case(
    id="transformer_qdq_pattern",
    seed="012",
    title="Transformer attention block: Q/DQ on the attention BMMs and on the softmax output, or not",
    links=(ISSUE_3243, PLACEMENT, MODELOPT_ONNX_PTQ, MODELOPT_QUANTIZE),
    axes={"bmm_inputs": ("both", "none"), "softmax_qdq": (True, False)},
    # BMM1 (Q.K^T) and BMM2 (softmax.V).
    target_nodes=("node_of_scores", "node_of_ctx"),
    signatures=(),
    expectations=(),
    builder="generators.transformer_qdq_pattern:build",
    pattern=PATTERN,
)
