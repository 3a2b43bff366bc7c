"""NVIDIA/TensorRT#4698: quantize_dynamic with WeightSymmetric/ActivationSymmetric still writes a non-zero zero point.

#4698 (open; the TensorRT version sits in a part of the thread that was not read) quantizes a model with
`onnxruntime.quantization.quantize_dynamic(model_fp32, model_quant, extra_options={"WeightSymmetric": True,
"ActivationSymmetric": True})` and the parser refuses the embedding's
`.../tok_embeddings/Gather_output_0_DequantizeLinear`:
"Assertion failed: shiftIsAllZeros(zeroPoint): Non-zero zero point is not supported. Please set
kENABLE_UINT8_AND_ASYMMETRIC_QUANTIZATION_DLAto enable asymmetric quantization if it is on DLA."

Why, read in onnxruntime's quantizer (GatherQuant): the Gather's table is quantized as an *activation*, and
quantize_dynamic's activations are uint8, so "symmetric" centres them on 128, not 0: WeightSymmetric never reaches the
table. The DequantizeLinear sits after the Gather because the Gather's consumer (the position Add) stays float. The
zero-point rule is onnx-tensorrt's (operators.md: DequantizeLinear "`x_zero_point` must be zero", per release table;
TensorRT 11's guide: a symmetric scheme), the same as grouped_conv's uint8 activations, and the signature matches
#4698's wording. No TensorRT-RTX document speaks of zero points: the RTX cells say what happens. With a MatMul after
the embedding, quantize_dynamic also writes DynamicQuantizeLinear and MatMulInteger, which no TensorRT table supports
(seed 002): that variant fails at the parser whichever node it reaches first. On ONNX Runtime's side that
MatMulInteger is u8s8, and with #4698's options its pair sums saturate on an x86-64 CPU without VNNI, as seed 002's do.

The sweep: the embedding alone (Gather + position Add) or followed by a Linear (MatMul), quantized with onnxruntime's
defaults or with #4698's symmetric options. Targets: the Gather and its DequantizeLinear, as onnxruntime names them.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case
from cases.common import NONZERO_ZERO_POINT, nonzero_zero_point_by_version, ort_u8s8_saturation
from cases.pattern import Graph, Match, Pattern, matches

ISSUE_4698 = "https://github.com/NVIDIA/TensorRT/issues/4698"
# The Linear's u8s8 MatMulInteger whose pair sums saturate ONNX Runtime's AVX2 kernels (seed 002's story).
SATURATING = {"graph": ("gather_add_matmul",), "options": ("symmetric",)}
ORT_GATHER_QUANT = ("https://github.com/microsoft/onnxruntime/blob/main/onnxruntime/python/tools/quantization/"
                    "operators/gather.py")


def match_quantized_embedding(g: Graph, n: Any) -> List[Match]:
    """A Gather from a quantized table into a DequantizeLinear (quantize_dynamic's embedding), then an Add."""
    if n.input[0] not in g.const or g.dtype(n.input[0]) not in ("uint8", "int8"):
        return []
    dq = next((u for u in g.users(n.output[0]) if u.op_type == "DequantizeLinear"), None)
    add = next((u for u in g.users(dq.output[0]) if u.op_type == "Add"), None) if dq is not None else None
    if add is None:
        return []
    dynamic = any(u.op_type == "DynamicQuantizeLinear" for u in g.users(add.output[0]))
    return matches(n, {"graph": "gather_add_matmul" if dynamic else "gather_add"})


PATTERN = Pattern(rules={"quantized_embedding": "quantized embedding Gather"}, ops=("Gather",),
                  match=match_quantized_embedding)


CASE = Case(
    id="dynamic_quantize_asymmetric",
    seed="017",
    title="quantize_dynamic's embedding Gather: a uint8 DequantizeLinear with zero point 128 even when 'symmetric'",
    links=(ISSUE_4698, ORT_GATHER_QUANT),
    axes={"graph": ("gather_add", "gather_add_matmul"), "options": ("default", "symmetric")},
    target_nodes=(),  # onnxruntime names the nodes: each variant names its Gather and DequantizeLinear
    signatures=(NONZERO_ZERO_POINT,),
    expectations=(
        *nonzero_zero_point_by_version({}),
        # The cross-check column's CPU, as for seed 002's MatMulInteger (measured here: 10.1 steps on an emulated AVX2
        # level with ONNX Runtime 1.32.0; 0 with VNNI; 0 with session.x64quantprecision at ORT_ENABLE_ALL). With
        # onnxruntime's default options the same Linear stays within a step on AVX2: only the variant that saturates.
        *ort_u8s8_saturation(SATURATING),
    ),
    builder="generators.dynamic_quantize_asymmetric:build",
    pattern=PATTERN,
)
