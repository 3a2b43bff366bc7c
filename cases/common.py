"""Symptoms that several cases share: one declaration, one source."""

from __future__ import annotations

from typing import Mapping, Tuple

from cases.base import Expectation, Signature

OPERATORS_MD = "https://github.com/onnx/onnx-tensorrt/blob/main/docs/operators.md"
ZERO_POINT_ASSERT = "https://github.com/onnx/onnx-tensorrt/blob/10.1-GA/onnxOpImporters.cpp"
# The parser's operator tables for one release: the 10.1-GA tag's table (its header still says "TensorRT 10.0"), and
# the 10.15 table ("TensorRT 10.15 supports operators in the inclusive range of opset 9 to opset 24").
OPERATORS_MD_10_1 = "https://github.com/onnx/onnx-tensorrt/blob/release/10.1-GA/docs/operators.md"
OPERATORS_MD_10_15 = "https://github.com/onnx/onnx-tensorrt/blob/release/10.15-GA/docs/operators.md"
# TensorRT 11.0 developer guide: "TensorRT uses a symmetric quantization scheme" (the 11.3.0 page says the same).
QUANTIZED_TYPES_11 = "https://docs.nvidia.com/deeplearning/tensorrt/11.0.0/inference-library/work-quantized-types.html"

# NVIDIA TensorRT-RTX, "CPU-Only AOT": "The CPU-only Ahead Of Time (AOT) feature is enabled by default";
# "by default, an engine built by TensorRT-RTX can be run on GPU devices with compute capability 8.0, 8.6, 8.9,
# 12.0, and later"; kCURRENT turns CPU-only AOT off and targets the current GPU.
RTX_CPU_ONLY_AOT = "https://docs.nvidia.com/deeplearning/tensorrt-rtx/latest/inference-library/cpu-engines.html"

# A build that fails only because this version needs a GPU to build it: the machine's limit, not the engine's
# verdict. TensorRT-RTX 1.4.0.76 with no GPU fails 29 of the catalogue's 176 builds in generateForCurrent
# (cudaDeviceProfile.cpp), and the same 29 build on an H100 (issue 18's measurement); 1.5 on never does.
ENVIRONMENT_SIGNATURES = {
    "tensorrt-rtx": (
        Signature(
            name="needs_gpu_to_build",
            pattern=r"In generateForCurrent at \S*cudaDeviceProfile\.cpp",
            kind="environment",
            source=RTX_CPU_ONLY_AOT,
            reason="needs a GPU to build on this version (it asks the CUDA runtime for the current device: "
                   "generateForCurrent), and this machine has none",
        ),
    ),
}

# TensorRT for RTX. The porting guide's "Plugins are not supported in TensorRT-RTX", as NVIDIA/TensorRT-RTX#4
# (open since 2025-06-27) quotes it; ONNX Runtime's TensorRT-RTX execution provider loads an external plugin
# library all the same (microsoft/onnxruntime#26558).
RTX_PORTING = "https://docs.nvidia.com/deeplearning/tensorrt-rtx/latest/inference-library/porting.html#apis"
RTX_ISSUE_4 = "https://github.com/NVIDIA/TensorRT-RTX/issues/4"
# Real build errors of this repository's runs, kept as test data (no NVIDIA document names this check).
RTX_BUILD_ERRORS = "tests/data/trt/rtx-build-logs.json"  # "errors": TensorRT-RTX 1.4-1.6 with no GPU, 2026-11-23

RTX_CONV_DTYPE_CHECK = Signature(
    name="rtx_conv_dtype_check",
    # TensorRT-RTX 1.4 to 1.6 refuse every INT8 convolution and deconvolution in Myelin's cuDNN backend:
    # "MyelinCheckException: cudnn_impl.cpp:89: CHECK(dtype == myelinTypeFloat || dtype == myelinTypeHalf ||
    # dtype == myelinTypeBF16 || dtype == myelinTypeFP8E4M3) failed" (line 1040 in 1.4; 324/323, without FP8, for
    # ConvTranspose); 1.7.1.116 builds them.
    pattern=r"cudnn_impl\.cpp:\d+: CHECK\(dtype == myelinTypeFloat \|\| dtype == myelinTypeHalf",
    kind="error",
    source=RTX_BUILD_ERRORS,
)


def rtx_plugins_unsupported(where: Mapping[str, Tuple]) -> Expectation:
    """TensorRT-RTX's porting guide: no plugins. Which versions do what with a Python plugin is for the cells to say."""
    return Expectation(
        "tensorrt-rtx", "", "fail", RTX_PORTING, stage="load", where=dict(where),
        note=f"'Plugins are not supported in TensorRT-RTX' (porting guide, quoted in {RTX_ISSUE_4})",
    )


NONZERO_ZERO_POINT = Signature(
    name="nonzero_zero_point",
    # The ONNX parser's check on Q/DQ zero points: 8.x prints the failed assertion
    # "shiftIsAllZeros(zeroPoint) && ...", 8.6 and 10.x say "TensorRT only supports symmetric
    # quantization. The zero point for the QuantizeLinear/DequantizeLinear operator must be all zeros."
    pattern=r"shiftIsAllZeros\(zeroPoint\)|TensorRT only supports symmetric quantization",
    kind="error",
    source=ZERO_POINT_ASSERT,
)


def nonzero_zero_point_fails(where: Mapping[str, Tuple]) -> Expectation:
    """TensorRT's parser refuses a Q/DQ with a non-zero zero point (uint8 activations at 128)."""
    return Expectation(
        engine="tensorrt",
        versions=">=8.0",
        outcome="fail",
        stage="load",
        signature=NONZERO_ZERO_POINT.name,
        source=OPERATORS_MD,
        where=dict(where),
        note="operators.md: QuantizeLinear `y_zero_point` must be 0, DequantizeLinear `x_zero_point` "
        "must be zero; the parser asserts it (onnx-tensorrt 8.0-GA to 10.1-GA); 10.x first warns "
        "that UINT8 zero points are read as INT8",
    )


def nonzero_zero_point_by_version(where: Mapping[str, Tuple]) -> Tuple[Expectation, ...]:
    """The zero-point rule per release line (10.x tables, 11.x guide), then the general one; this order wins ties."""
    where = dict(where)
    return (
        Expectation(
            "tensorrt", ">=10.0,<10.2", "fail", OPERATORS_MD_10_1, stage="load", signature=NONZERO_ZERO_POINT.name,
            where=where,
            note="10.1-GA operators.md: QuantizeLinear `y_zero_point` must be 0, DequantizeLinear `x_zero_point` "
            "must be zero; the 10.1-GA parser warns that a UINT8 zero point is read as INT8, then asserts "
            "'TensorRT only supports symmetric quantization'",
        ),
        Expectation(
            "tensorrt", ">=10.2,<10.16", "fail", OPERATORS_MD_10_15, stage="load", signature=NONZERO_ZERO_POINT.name,
            where=where,
            note="10.15 operators.md: the same two restrictions (10.2 to 10.14 lie between two tables that agree; "
            "the parser message is the one read at 10.1-GA); the 10.11 parser flag "
            "kENABLE_UINT8_AND_ASYMMETRIC_QUANTIZATION_DLA is for DLA engines only",
        ),
        Expectation(
            "tensorrt", ">=11.0,<11.4", "fail", QUANTIZED_TYPES_11, where=where,
            note="TensorRT 11.0 and 11.3 guides: TensorRT uses a symmetric quantization scheme; they do not say "
            "whether the parser or the builder refuses a non-zero zero point",
        ),
        nonzero_zero_point_fails(where),
    )
