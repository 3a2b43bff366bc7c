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

from cases.base import Case

ISSUE_3266 = "https://github.com/NVIDIA/TensorRT/issues/3266"
ISSUE_2392 = "https://github.com/NVIDIA/TensorRT/issues/2392"

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
)
