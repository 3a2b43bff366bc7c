"""pytorch/TensorRT#4196 (2026-04, open) and NVIDIA/Model-Optimizer#2333: NVFP4 with two-level (FP8, then FP32) scales.

NVFP4 as ModelOpt writes it for TensorRT (`fp4qdq_to_2dq`, and #513 for the output types): FP4 E2M1 weights in blocks
of 16 along K, whose FP8 E4M3 block scales are themselves dequantized by a per-tensor scale, DQ(scale_fp8, scale_2) ->
DQ(w_fp4, that, axis=-1, block_size=16) -> Transpose -> MatMul; activations either float (weight-only) or quantized at
run time by TensorRT's custom op `TRT_FP4DynamicQuantize(x, double_quant_scale)` -> (x_fp4, scale_fp8), dequantized the
same two-level way. The DynamicQuantize layer's documentation allows a double-quantization scale "of type T1 or
float32" (T1 the input's type).

#4196: a ModelOpt-NVFP4 ViT through torch_tensorrt on a B300 (server Blackwell) fails in the builder with
"[DYNAMIC_QUANTIZE] double quant scale must be FP32" on TensorRT 10.13 (NGC 26.01) and with Myelin's
"pw_vtx_analyzer CHECK(false) Not implemented" on 10.16 (NGC 26.03); the same model and call build on an RTX PRO 6000
Blackwell (sm_120). Model-Optimizer#2333 (2026-09): building a graph with dynamic NVFP4 (`TRT_FP4DynamicQuantize`)
"requires TensorRT 11.0 or newer"; ModelOpt now refuses to ask TensorRT 10 for it.

TensorRT-RTX with no GPU (1.5.0.114 to 1.7.1.116): FP4 is Blackwell-only (refused for SM75 to SM89, as the FP4 GEMM
documents say); for SM120 and the default set both forms build, and both double-scale types. The per-node precision
tells them apart: with dynamic activations the GEMM reads FP4 activations and FP4 weights (a real FP4 GEMM);
weight-only, a separate kernel dequantizes the weights to float16 and the GEMM is float16 (seed 019's silent float).

The sweep: the double-quantization scale float32 (each DQ then outputs float32 and a Cast to float16 follows, #513's
form) or float16 (everything float16), weight-only or dynamic activations, float16 MatMul 64->32 on 8 tokens. Opset 23,
IR 11, plus the `trt` domain for the dynamic quantizer. Its reference is the float MatMul of the dequantized weights:
the activations are built so that NVFP4's dynamic quantization is exact for them (each block of 16 holds FP4 grid
values times a power of two, one of them +-6), which ONNX Runtime and OpenVINO cannot run (a TensorRT custom op).
Target: the MatMul.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Signature
from cases.common import RTX_QUANTIZED_TYPES, RTX_SUPPORT_MATRIX
from cases.fp4_weight_only import fp4_weights, two_level
from cases.low_precision import RTX_HW_SPECIFIC, RTX_TARGET_ARCH_KIND, rtx_fp4_gemm, trt8_cannot_parse
from cases.pattern import Graph, Match, Pattern, matches

ISSUE_PT_4196 = "https://github.com/pytorch/TensorRT/issues/4196"
MODELOPT_2333 = "https://github.com/NVIDIA/Model-Optimizer/pull/2333"
MODELOPT_513 = "https://github.com/NVIDIA/Model-Optimizer/pull/513"
DYNAMIC_QUANTIZE_OP = "https://docs.nvidia.com/deeplearning/tensorrt/latest/_static/operators/DynamicQuantize.html"

DOUBLE_QUANT_FP32 = Signature(
    name="double_quant_scale_fp32",
    pattern=r"\[DYNAMIC_QUANTIZE\] double quant scale must be FP32",
    kind="error",
    source=ISSUE_PT_4196,
    short="double quant scale must be FP32",
)
PW_VTX_ANALYZER = Signature(
    name="myelin_pw_vtx_analyzer",
    pattern=r"pw_vtx_analyzer CHECK\(false\) Not implemented",
    kind="error",
    source=ISSUE_PT_4196,
    short="Myelin pointwise analyzer check",
)
B300 = "NVIDIA B300 (server Blackwell), NGC containers; builds on an RTX PRO 6000 Blackwell (sm_120)"
DYNAMIC = {"activations": ("dynamic",)}


def _reaches(g: Graph, tensor: str, op: str, depth: int = 6) -> bool:
    """Whether `op` produces `tensor` within `depth` producers (first inputs only)."""
    p = g.producer.get(tensor)
    while p is not None and depth > 0:
        if p.op_type == op:
            return True
        p, depth = g.producer.get(p.input[0]) if p.input else None, depth - 1
    return False


def match_nvfp4(g: Graph, n: Any) -> List[Match]:
    """FP4 weights whose block scales are FP8 dequantized by a second scale (NVFP4), weight-only or dynamic."""
    dq = fp4_weights(g, n)
    if dq is None or not two_level(g, dq):
        return []
    scale = g.producer[dq.input[1]]
    params = {"double_scale": "float16" if g.dtype(scale.input[1]) == "float16" else "float32",
              "activations": "dynamic" if _reaches(g, n.input[0], "TRT_FP4DynamicQuantize") else "weight_only"}
    return matches(n, params, target="node_of_y")


PATTERN = Pattern(rules={"nvfp4_gemm": "NVFP4 two-level scales"}, ops=("Conv", "MatMul"), match=match_nvfp4)


CASE = Case(
    id="nvfp4_two_level_scales",
    seed="020",
    title="NVFP4 MatMul: FP4 weights with FP8 block scales under a float32 or float16 second-level scale, "
          "weight-only or TRT_FP4DynamicQuantize activations",
    links=(ISSUE_PT_4196, MODELOPT_2333, MODELOPT_513, DYNAMIC_QUANTIZE_OP, RTX_QUANTIZED_TYPES, RTX_SUPPORT_MATRIX),
    axes={"double_scale": ("float32", "float16"), "activations": ("weight_only", "dynamic")},
    target_nodes=("node_of_y",),
    signatures=(RTX_HW_SPECIFIC, RTX_TARGET_ARCH_KIND, DOUBLE_QUANT_FP32, PW_VTX_ANALYZER),
    expectations=(
        *rtx_fp4_gemm({}, {}),
        Expectation(
            "tensorrt", ">=10.13,<10.14", "fail", ISSUE_PT_4196, stage="build", signature=DOUBLE_QUANT_FP32.name,
            where=dict(DYNAMIC, double_scale=("float16",)), hardware=B300,
            note="NGC pytorch:26.01 (torch_tensorrt 2.10, TensorRT 10.13, modelopt 0.40); static shapes",
        ),
        Expectation(
            "tensorrt", ">=10.16,<10.17", "fail", ISSUE_PT_4196, stage="build", signature=PW_VTX_ANALYZER.name,
            where=DYNAMIC, hardware=B300,
            note="NGC pytorch:26.03 (torch_tensorrt 2.11, TensorRT 10.16, modelopt 0.41)",
        ),
        Expectation(
            "tensorrt", ">=10.0,<11.0", "fail", MODELOPT_2333, where=DYNAMIC,
            note="'Building or evaluating that graph requires TensorRT 11.0 or newer' (TRT_FP4DynamicQuantize); "
            "tested on a B200 with TensorRT 10.16",
        ),
        trt8_cannot_parse("FP4 or the trt domain's custom ops"),
    ),
    builder="generators.nvfp4_two_level_scales:build",
    arch_dependent=True,
    opset=23,
    pattern=PATTERN,
)
