"""NVIDIA/TensorRT#3266, #2392: MatMul and Gemm with INT8 weights through DequantizeLinear, per channel or per tensor.

#3266 (pytorch-quantization, opset 17, `nn.Linear` layers exported as MatMul with Q/DQ on the input and the
weights): "Why TensorRT use Convolution instead MatMul in explicit quantized model"; the engine runs the quantized
MatMuls as Convolution layers. pytorch-quantization quantizes a Linear's weights per output channel, which for the
exported MatMul's [K, N] weight is axis 1, and for a Gemm with transB=1 ([N, K]) axis 0. #2392 (per-channel
weights, per-tensor activations): a maintainer, "Q/DQ -> OP => INT8-IN-FP32-OUT; Q/DQ -> OP -> Q/DQ =>
INT8-IN-INT8-OUT". Neither thread states a TensorRT version for these shapes, so there is no expectation and no
signature: the sweep records what 8.5/8.6 do.

The sweep: the operator (MatMul on a [1, seq, K] input with [K, N] weights, or Gemm transB=1 with [N, K]
weights), per-channel (on the output-channel axis) or per-tensor weight scales, and an output Q/DQ or not.
The target is the MatMul or Gemm node.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case
from cases.pattern import (
    Graph,
    Match,
    Pattern,
    activation_dq,
    attr,
    compute_with_weights,
    matches,
    quantized_after,
    scale_size,
)

ISSUE_3266 = "https://github.com/NVIDIA/TensorRT/issues/3266"
ISSUE_2392 = "https://github.com/NVIDIA/TensorRT/issues/2392"


def match_matmul(g: Graph, n: Any) -> List[Match]:
    """An INT8 MatMul, or Gemm with transB, on INT8 weights through DequantizeLinear: per channel or per tensor."""
    w = compute_with_weights(g, n)
    if w is None or g.dtype(w.input[0]) != "int8" or activation_dq(g, n.input[0]) is None:
        return []
    op = "matmul" if n.op_type == "MatMul" else "gemm_transb" if attr(n, "transB", 0) == 1 else ""
    output_qdq = quantized_after(g, n.output[0]) is not None
    params = {"weights": "per_channel" if scale_size(g, w) > 1 else "per_tensor", "output_qdq": output_qdq,
              **({"op": op} if op else {})}
    return matches(n, params, target="node_of_mm" if output_qdq else "node_of_y")


PATTERN = Pattern(rules={"matmul_per_channel": "INT8 MatMul/Gemm weights"}, ops=("MatMul", "Gemm"),
                  match=match_matmul,
                  also_matches=("bias_add_after_qdq", "fp16_scale_qdq", "qdq_scale_dtype_mismatch",
                                "transformer_qdq_pattern"))


CASE = Case(
    id="matmul_per_channel",
    seed="011",
    title="MatMul and Gemm with INT8 weights per channel or per tensor: INT8 fusion and numerics",
    links=(ISSUE_3266, ISSUE_2392),
    axes={"op": ("matmul", "gemm_transb"), "weights": ("per_channel", "per_tensor"), "output_qdq": (True, False)},
    # The MatMul/Gemm node: node_of_mm, or node_of_y where it produces the graph output.
    target_nodes=("node_of_mm", "node_of_y"),
    signatures=(),
    expectations=(),
    builder="generators.matmul_per_channel:build",
    pattern=PATTERN,
)
