"""github.com/NVIDIA/TensorRT-Model-Optimizer qdq_utils.py's MXFP8 ops against ONNX's opset-24 form (TensorRT 10.12+).

MXFP8: FP8 E4M3 values with one E8M0 (power-of-two) scale per block of 32. TensorRT 10.12.0's release notes (and its
documentation's "What's New"): "Added support for MXFP8 quantization, which performs block quantization by quantizing
across 32 high-precision elements to produce 32 quantized output values and one E8M0 scaling factor." ONNX has the
scale type since opset 24 (DequantizeLinear-24: `x_scale` may be float8e8m0); ModelOpt writes TensorRT's custom ops,
`TRT_MXFP8DequantizeLinear(w_fp8, scale_uint8, axis=-1, block_size=32, output_dtype)` for weights and
`TRT_MXFP8DynamicQuantize` + `TRT_MXFP8DequantizeLinear` for activations (modelopt/onnx/quantization/qdq_utils.py,
`quantize_weights_to_mxfp8`: the E8M0 scales saved as uint8), which onnx-tensorrt imports.

TensorRT-RTX with no GPU (1.4.0.76 to 1.7.1.116; its documents say nothing of MXFP8 or E8M0): the ONNX form is
refused in the parser, which cannot import a float8e8m0 initializer (no expectation); ModelOpt's form is an FP8 GEMM to
the quantized-types page, refused for SM75 to SM86 ("HW-specific datatypes") and built for SM89, SM120 and the default
set, but with the GEMM in float16 (1.5, 1.6) or in a generated kernel that reads float16 weights (1.7): a separate
kernel dequantizes the MXFP8 weights, so no FP8 GEMM is built, even with MXFP8 activations (no source says so; the lint
says it from these cells). 1.4.0.76 needs a GPU to build for SM89, SM120 and its default set. TensorRT 8.x has none of
these types or ops.

The sweep: the ONNX form (opset 24, IR 12, weight-only) and ModelOpt's (opset 21 plus the `trt` domain), weight-only or
with dynamically quantized activations (ModelOpt's form only); a float16 MatMul 64->32 on 8 tokens, weights [32, 64]
blocked along K and transposed, as ModelOpt exports a Linear. The activations are small whole numbers (|v| <= 7) times
a power of two, so any power-of-two block scale keeps them exact: the reference is the float MatMul. ONNX Runtime and
OpenVINO cannot run TensorRT's custom ops. Target: the MatMul.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Params, Signature
from cases.common import DEQUANTIZE_LINEAR, RTX_QUANTIZED_TYPES
from cases.low_precision import (
    ADA_AND_LATER,
    FP8_BELOW_ADA,
    FP8_GEMM_NOTE,
    RTX_2026_LOGS,
    RTX_HW_SPECIFIC,
    RTX_TARGET_ARCH_KIND,
    trt8_cannot_parse,
)
from cases.nvfp4_two_level_scales import _reaches
from cases.pattern import Graph, Match, Pattern, matches, weight_dequantize

# "What's New in NVIDIA TensorRT 10.12.0: MXFP8 Quantization Support"
TRT_10_12 = "https://docs.nvidia.com/deeplearning/tensorrt/10.12.0/index.html"
MODELOPT_QDQ_UTILS = ("https://github.com/NVIDIA/TensorRT-Model-Optimizer/blob/main/modelopt/onnx/quantization/"
                      "qdq_utils.py")

TRT_FORM = {"form": ("trt_custom",)}
RTX_E8M0_INITIALIZER = Signature(
    name="rtx_e8m0_initializer",
    # TensorRT-RTX's ONNX parser on a float8e8m0 scale initializer (1.4 to 1.7): "... convertOnnxWeights(initializer,
    # &weights): Failed to import initializer: w_scale". It says so of any initializer it cannot import (1.4's uint4
    # weights "w", an e5m2 input "x"), so the signature asks for the scale: the initializer's name says it is one.
    pattern=r"Failed to import initializer: In node -1 .*convertOnnxWeights[^\n]*Failed to import initializer: "
            r"[\w./:-]*scale\b",
    kind="error",
    source=RTX_2026_LOGS,
    basis="baseline",
    short="float8e8m0 scale initializer",
)


def _dynamic_needs_trt_ops(params: Params) -> bool:
    """ONNX has no dynamic MX quantizer: the ONNX form is weight-only."""
    return params["form"] == "trt_custom" or params["activations"] == "weight_only"



def match_mxfp8(g: Graph, n: Any) -> List[Match]:
    """A MatMul with MXFP8 weights: TRT_MXFP8DequantizeLinear, or DequantizeLinear-24 with float8e8m0 block scales."""
    dq = weight_dequantize(g, n.input[1]) if len(n.input) > 1 else None
    if dq is None:
        return []
    form = ("trt_custom" if dq.op_type == "TRT_MXFP8DequantizeLinear" else
            "onnx_e8m0" if "float8_e8m0" in g.dtype(dq.input[1]) else "")
    if not form:
        return []
    dynamic = _reaches(g, n.input[0], "TRT_MXFP8DynamicQuantize")
    return matches(n, {"form": form, "activations": "dynamic" if dynamic else "weight_only"}, target="node_of_y")


PATTERN = Pattern(rules={"mxfp8_gemm": "MXFP8 block scales"}, ops=("MatMul",), match=match_mxfp8,
                  also_matches=("float_qdq_types",))


CASE = Case(
    id="mxfp8_block_scales",
    seed="021",
    title="MXFP8 MatMul (FP8 E4M3, E8M0 block scales of 32): ONNX's opset-24 DequantizeLinear or ModelOpt's TRT ops",
    links=(MODELOPT_QDQ_UTILS, TRT_10_12, DEQUANTIZE_LINEAR, RTX_QUANTIZED_TYPES),
    axes={"form": ("onnx_e8m0", "trt_custom"), "activations": ("weight_only", "dynamic")},
    target_nodes=("node_of_y",),
    signatures=(RTX_E8M0_INITIALIZER, RTX_HW_SPECIFIC, RTX_TARGET_ARCH_KIND),
    expectations=(
        Expectation("tensorrt-rtx", "", "fail", RTX_QUANTIZED_TYPES, stage="build", where=TRT_FORM,
                    when={"target": FP8_BELOW_ADA}, note=FP8_GEMM_NOTE),
        Expectation("tensorrt-rtx", "", "pass", RTX_QUANTIZED_TYPES, where=TRT_FORM, when={"target": ADA_AND_LATER},
                    note=FP8_GEMM_NOTE),
        Expectation(
            "tensorrt", ">=10.0,<10.12", "fail", TRT_10_12, stage="load", where=TRT_FORM,
            note="MXFP8 came with 10.12.0 ('Added support for MXFP8 quantization'); earlier parsers have no "
            "TRT_MXFP8 importers",
        ),
        trt8_cannot_parse("FP8, E8M0 or the trt domain's custom ops"),
    ),
    builder="generators.mxfp8_block_scales:build",
    arch_dependent=True,
    valid=_dynamic_needs_trt_ops,
    opset=24,
    pattern=PATTERN,
)
