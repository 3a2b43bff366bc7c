"""github.com/microsoft/onnxruntime quantize.py (QuantizeBias), an H100 observation: a bias Add after Q/DQ MatMul/Conv.

Context, not an expectation. On an H100, TensorRT 8.6.0 ran the bias Adds of an onnxruntime-quantized MLP
(check.producers' transformer block, fc1_bias and fc2_bias) as INT8 PointWise layers where check.lint had predicted
float. No upstream document says what TensorRT does with such an Add, so there is no TensorRT expectation: the
cells will say, per version and GPU. What onnxruntime's quantize_static writes (1.32, QDQ format): QuantizeBias
"Default is True which quantizes floating-point biases and it solely inserts a DeQuantizeLinear node. If False, it
remains floating-point bias and does not insert any quantization nodes associated with biases" (quantize.py). That
option is about a Conv's or Gemm's own bias input. A bias that is an Add of its own (a Linear exported as MatMul +
Add) is quantized like any Add: the MatMul's output through Q/DQ, the bias constant an INT8 initializer -> DQ (per
tensor), and a Q after the Add, with QuantizeBias=False as well; that is the form of fc1_bias/fc2_bias. A float bias
Add straight after the op, with no Q/DQ of its own, is what other producers (which quantize only the MatMul/Conv
inputs) leave.

The sweep: MatMul (x[1, 8, 32] @ w[32, 16], per-channel INT8 weights) or a 3x3 Conv 8->8 without a bias input; the
bias a float constant straight after the op, or onnxruntime's form (op output Q/DQ, bias INT8 -> DQ); a Q/DQ after
the Add or none. Targets: the MatMul/Conv and the Add.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case
from cases.pattern import Graph, Match, Pattern, matches, quantized_after
from cases.quantized_constant_plugin import int8_dq_constant, quantized_producer, scalar_int8_dq

ORT_QUANTIZE_PY = "https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/python/tools/quantization/quantize.py"


def match_bias_add(g: Graph, n: Any) -> List[Match]:
    """An INT8 initializer -> DequantizeLinear added to a Q/DQ MatMul or Conv's output: a bias Add of its own."""
    consts = [i for i in n.input if int8_dq_constant(g, i) and not scalar_int8_dq(g, i)]
    other = [i for i in n.input if i not in consts]
    op = quantized_producer(g, other[0]) if consts and other else ""
    if not op:
        return []
    output_qdq = quantized_after(g, n.output[0]) is not None
    return matches(n, {"op": op, "bias": "int8_dq", "output_qdq": output_qdq},
                   target="node_of_sum" if output_qdq else "node_of_y")


PATTERN = Pattern(rules={"bias_add_after_qdq": "bias Add after a Q/DQ MatMul or Conv"}, ops=("Add",),
                  match=match_bias_add, controls=({"bias": ("float",)},))


CASE = Case(
    id="bias_add_after_qdq",
    seed="018",
    title="Bias Add after a Q/DQ MatMul or Conv: a float constant or onnxruntime's INT8 -> DQ bias; output Q/DQ or not",
    links=(ORT_QUANTIZE_PY,),
    axes={"op": ("matmul", "conv"), "bias": ("float", "int8_dq"), "output_qdq": (True, False)},
    target_nodes=("node_of_mm", "node_of_sum", "node_of_y"),
    signatures=(),
    expectations=(),
    builder="generators.bias_add_after_qdq:build",
    pattern=PATTERN,
)
