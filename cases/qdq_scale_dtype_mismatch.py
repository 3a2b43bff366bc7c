"""microsoft/onnxruntime#32719 (2026-09, open): opset-23 Q/DQ whose scale type differs from the data type fail in ORT.

Opset 23 lets QuantizeLinear's and DequantizeLinear's scale have a type of its own (DequantizeLinear-23: `output_dtype`
sets the output type, T2 the scale's); #32719: "onnxruntime still fails during session.run in both CPU and CUDA
execution providers when scale dtype is different from input/output" (a float16 input with a float32 scale, and the
reverse). microsoft/onnxruntime#32728 and #32735 (open at the time of the thread) implement the CPU DequantizeLinear and
QuantizeLinear halves.

Our sweep of ONNX Runtime (docs/low-precision.md): 1.16.3 to 1.22 cannot load opset 23 (IR 11), 1.23 has no
opset-23 QuantizeLinear kernel at all (#25932); 1.24.4 to 1.31.1 run the matching form and fail the mixed one at run
time ("RUNTIME_EXCEPTION ... QuantizeLinear"); 1.32.0 runs both. So the documented failure spans 1.24 on, and 1.32.0's
cell reads "fixed". ModelOpt writes such graphs (float32 scales into a float16 model: Model-Optimizer#513 moved its
NVFP4 DQ outputs to float32 to stay out of them).

TensorRT-RTX with no GPU: 1.4.0.76's parser refuses the mixed form ("Mismatch between attribute output_dtype float16 and
zero-point data type int8": it checks a DequantizeLinear's output_dtype against the zero point's type); 1.5.0.114 on
parse it and build the MatMul in INT8; the Conv fails on 1.4 to 1.6 as every INT8 convolution does (seed 013's cuDNN
check) and builds in INT8 on 1.7 (in float for SM75). No source documents either: no expectation.

TensorRT 8.x, observed on an H100 and an H200 (2026-11-24, both the same on 8.5.1.7 to 8.6.0): every form fails at parse
on the weight's DequantizeLinear, which has no zero point (optional since opset 10): 8.5's parser says it "requires 3
inputs for the DequantizeLinear operator", 8.6.0's reads the missing input and stops with "vector::_M_range_check".

The reproducer: an INT8 Q/DQ on float16 activations and an INT8 weight DQ, feeding a MatMul 64->32 or a 3x3 Conv 8->16,
with float16 scales (the matching form) or float32 scales and `output_dtype` float16 (the mixed form), opset 23. The
values are whole multiples of power-of-two scales, so either form computes the same numbers. Target: the MatMul or Conv.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Signature
from cases.common import QUANTIZE_LINEAR
from cases.low_precision import RTX_2026_LOGS
from cases.pattern import ONNX_FLOAT_TYPES, Graph, Match, Pattern, attr, matches

ISSUE_32719 = "https://github.com/microsoft/onnxruntime/issues/32719"
ORT_32728 = "https://github.com/microsoft/onnxruntime/pull/32728"
ORT_32735 = "https://github.com/microsoft/onnxruntime/pull/32735"

# Baselines (our own observed cells, not documentation): 8.x's parser on a DequantizeLinear without its optional zero
# point, on an H100 (the H200's cells say the same); 8.5's words are in the 8.5 files, 8.6.0's in its own.
OBSERVED_85 = "reports/observed/nvidia-h100/seeds-019-023/trt-8.5.3.1.jsonl"
OBSERVED_86 = "reports/observed/nvidia-h100/seeds-019-023/trt-8.6.0.jsonl"
TRT85_DQ_INPUTS = Signature(
    name="trt85_dq_three_inputs",
    pattern=r"requires 3 inputs for the DequantizeLinear operator",
    kind="error",
    short="DequantizeLinear needs its zero point",
    source=OBSERVED_85,
    basis="baseline",
)
TRT86_DQ_RANGE_CHECK = Signature(
    name="trt86_dq_range_check",
    pattern=r"vector::_M_range_check: __n \(which is 2\)",
    kind="error",
    short="parser reads a missing zero point",
    source=OBSERVED_86,
    basis="baseline",
)

RTX_OUTPUT_DTYPE = Signature(
    name="rtx_dq_output_dtype",
    # TensorRT-RTX 1.4.0.76's parser on a DequantizeLinear-23 with output_dtype: it compares it with the zero point.
    pattern=r"Mismatch between attribute output_dtype \S+ and zero-point data type",
    kind="error",
    source=RTX_2026_LOGS,
    basis="baseline",
    short="DQ output_dtype mismatch",
)


def match_scale_type(g: Graph, n: Any) -> List[Match]:
    """A MatMul or Conv whose input DequantizeLinear's scale type differs from the output type it declares."""
    for tensor in n.input[:2]:
        dq = g.producer.get(tensor)
        if dq is None or dq.op_type != "DequantizeLinear":
            continue
        out = ONNX_FLOAT_TYPES.get(attr(dq, "output_dtype", 0), "")
        scale = g.dtype(dq.input[1])
        if out and scale and out != scale and scale in CASE.axes["scale"]:
            return matches(n, {"op": n.op_type.lower(), "scale": scale}, target="node_of_y")
    return []


PATTERN = Pattern(rules={"qdq_scale_dtype_mismatch": "Q/DQ scale type other than its data type"},
                  ops=("MatMul", "Conv"), match=match_scale_type, controls=({"scale": ("float16",)},))


CASE = Case(
    id="qdq_scale_dtype_mismatch",
    seed="023",
    title="Opset-23 INT8 Q/DQ on float16 data, float32 scales (output_dtype) or float16 ones, into MatMul or Conv",
    links=(ISSUE_32719, ORT_32728, ORT_32735, QUANTIZE_LINEAR),
    axes={"op": ("matmul", "conv"), "scale": ("float16", "float32")},
    target_nodes=("node_of_y",),
    signatures=(RTX_OUTPUT_DTYPE, TRT85_DQ_INPUTS, TRT86_DQ_RANGE_CHECK),
    expectations=(
        Expectation(
            "onnxruntime", ">=1.24", "fail", ISSUE_32719, stage="run", where={"scale": ("float32",)},
            note="a scale type apart from the input/output type fails in session.run on the CPU and CUDA EPs; 1.24 is "
            "the first version with an opset-23 QuantizeLinear kernel to reach run (#25932 for 1.23); open",
        ),
        Expectation(
            "tensorrt", ">=8.5,<8.6", "fail", OBSERVED_85, stage="load", signature=TRT85_DQ_INPUTS.name,
            hardware="NVIDIA H100 and H200", basis="baseline",
            note="observed on 8.5.1.7, 8.5.2.2 and 8.5.3.1 (H100 and H200): the weight DequantizeLinear has no zero "
            "point",
        ),
        Expectation(
            "tensorrt", ">=8.6,<8.7", "fail", OBSERVED_86, stage="load", signature=TRT86_DQ_RANGE_CHECK.name,
            hardware="NVIDIA H100 and H200", basis="baseline",
            note="observed on 8.6.0 (H100 and H200): the parser reads the missing zero point of the weight "
            "DequantizeLinear and throws std::out_of_range",
        ),
    ),
    builder="generators.qdq_scale_dtype_mismatch:build",
    arch_dependent=True,
    opset=23,
    pattern=PATTERN,
)
