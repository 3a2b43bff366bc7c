"""Symptoms that several cases share: one declaration, one source."""

from __future__ import annotations

from typing import Mapping, Optional, Tuple

from cases.base import Case, Expectation, Signature
from core.engines import ORT_LEVELS
from core.isa import ISA_LEVELS, VNNI_LEVELS

OPERATORS_MD = "https://github.com/onnx/onnx-tensorrt/blob/main/docs/operators.md"
# onnx-tensorrt's 8.6-GA operator table (the 8.0, 8.2, 8.4 and 8.5 tables say the same).
OPERATORS_MD_8_6 = "https://github.com/onnx/onnx-tensorrt/blob/release/8.6-GA/docs/operators.md"
# The 10.1-GA importers: the zero-point assertion, and the fallback that turns an unknown op into a plugin lookup.
ONNX_OP_IMPORTERS_10_1 = "https://github.com/onnx/onnx-tensorrt/blob/10.1-GA/onnxOpImporters.cpp"
ZERO_POINT_ASSERT = ONNX_OP_IMPORTERS_10_1
# The ONNX operator pages: one page per operator, every opset version on it.
QUANTIZE_LINEAR = "https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html"
DEQUANTIZE_LINEAR = "https://onnx.ai/onnx/operators/onnx__DequantizeLinear.html"
ISSUE_2597 = "https://github.com/NVIDIA/TensorRT/issues/2597"
ISSUE_3844 = "https://github.com/NVIDIA/TensorRT/issues/3844"
MODELOPT_ONNX_PTQ = "https://nvidia.github.io/TensorRT-Model-Optimizer/guides/_onnx_quantization.html"
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
RTX_QUANTIZED_TYPES = ("https://docs.nvidia.com/deeplearning/tensorrt-rtx/latest/inference-library/"
                       "work-quantized-types.html")
RTX_SUPPORT_MATRIX = "https://docs.nvidia.com/deeplearning/tensorrt-rtx/latest/getting-started/support-matrix.html"
# A plan that built is not an engine that runs: NVIDIA/TensorRT-RTX#35's three-conv FP8 Q/DQ network built ahead of
# time and deserialized on 1.5.0.114, then died at its first FP8 kernel (integer divide by zero). The reports say it
# once wherever they show a built cell (the grid's key, the per-node report), in these words.
RTX_ISSUE_35 = "https://github.com/NVIDIA/TensorRT-RTX/issues/35"
BUILT_IS_NOT_RUNNING = ("Built is not running: no TensorRT-RTX plan has run here (its runtime refuses our sm_90 GPUs), "
                        "and a plan that builds and loads can still fail when it runs (NVIDIA/TensorRT-RTX#35: an FP8 "
                        "network built and loaded on 1.5.0.114, then crashed at inference)")

# A build that fails only because this version needs a GPU to build it: the machine's limit, not the engine's
# verdict. TensorRT-RTX 1.4.0.76 with no GPU fails 29 of the catalogue's 176 builds in generateForCurrent
# (cudaDeviceProfile.cpp), and the same 29 build on an H100; 1.5 on never does.
ENVIRONMENT_SIGNATURES = {
    "tensorrt-rtx": (
        Signature(
            name="needs_gpu_to_build",
            pattern=r"In generateForCurrent at \S*cudaDeviceProfile\.cpp",
            kind="environment",
            source=RTX_CPU_ONLY_AOT,
            reason="needs a GPU to build on this version (it asks the CUDA runtime for the current device: "
                   "generateForCurrent), and this machine has none",
            short="needs a GPU to build",
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
    basis="baseline",
    short="Myelin's INT8 convolution check",
)

# Signatures of an engine, not of a case: they can meet any reproducer of the catalogue (and any user model), so each
# is declared once here and matched on every cell of its engine, after the case's own.
ENGINE_SIGNATURES = {"tensorrt-rtx": (RTX_CONV_DTYPE_CHECK,)}


def signatures_of(case: Case, engine: str) -> Tuple[Signature, ...]:
    """The signatures a cell of this case on this engine is matched against: the case's own, then its engine's."""
    own = {s.name for s in case.signatures}
    return case.signatures + tuple(s for s in ENGINE_SIGNATURES.get(engine, ()) if s.name not in own)


def find_signature(case: Case, engine: str, name: str) -> Optional[Signature]:
    """The declaration of a signature a cell matched, None for a name neither the case nor its engine declares."""
    return next((s for s in signatures_of(case, engine) if s.name == name), None)


def cell_signature(case_id: str, engine: str, name: str) -> Optional[Signature]:
    """find_signature by case id: None for no name, or a case this catalogue no longer has."""
    from cases import get_case

    if not name:
        return None
    try:
        return find_signature(get_case(case_id), engine, name)
    except KeyError:
        return None


# TensorRT's builder finding no kernel for a node: #4060 (8.6.11): "Error Code 10: Internal Error (Could not find any
# implementation for node weights + node_of_weights_quantized + node_of_output.)"; #3385 (8.5.2) prints the same before
# its node name; #2280 (8.4, a depthwise ConvTranspose) the same words. The builder says these words of any node it has
# no kernel for (a Resize, a SiLU's pointwise node, a Myelin ForeignNode), so the signature reads the node too: a
# convolution with its weights fused in, which the builder names weights first ("w + node_of_conv", "backbone.ida_up.
# up_1.weight + QuantizeLinear_629_quantize_scale_node + ConvTranspose_631").
ISSUE_4060 = "https://github.com/NVIDIA/TensorRT/issues/4060"
NO_IMPLEMENTATION = Signature(
    name="no_implementation",
    pattern=r"Could not find any implementation for node (?:w|[^\s{}()\[\]+]*[Ww]eights?) \+ ",
    kind="error",
    source=ISSUE_4060,
    short="no implementation for a node",
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
    short="non-zero zero point",
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


# x86-64 INT8 without VNNI: ONNX Runtime's u8s8 MatMulInteger goes through VPMADDUBSW, whose 16-bit pair sums saturate.
# ORT's quantization guide: "This instruction might suffer from saturation issues ... There is no such issue on other
# CPU architectures (x64 with VNNI and ARM)"; oneDNN's "Nuances of int8 computations" says the same of VPDPBUSD
# (VNNI): "the intermediate overflow and saturation cannot occur". microsoft/onnxruntime#12088 (first shipped in 1.13:
# the option's strings are absent from the 1.12.1 wheel and present in 1.13.1) added the session option
# session.x64quantprecision, a Level-2 graph transformation that converts u8s8 MatMulInteger, QLinearMatMul,
# QLinearConv (not ConvInteger) with constant weights outside [-64, 63] to u8u8 on SSE4.1/AVX2/AVX-512 without VNNI.
ORT_QUANTIZATION_SATURATION = "https://onnxruntime.ai/docs/performance/model-optimizations/quantization.html"
ONEDNN_INT8_NUANCES = "https://oneapi-src.github.io/oneDNN/dev_guide_int8_computations.html"
ORT_12088 = "https://github.com/microsoft/onnxruntime/pull/12088"
VNNI = VNNI_LEVELS  # the CPU INT8 levels (core.isa) that accumulate in 32 bits
NO_VNNI = tuple(level for level in ISA_LEVELS if level not in VNNI_LEVELS and level != "baseline")
# ONNX Runtime's optimization levels below level 2 (ORT_ENABLE_EXTENDED, where the QDQ fusions run) and from it on.
BELOW_EXTENDED = ORT_LEVELS[:ORT_LEVELS.index("ORT_ENABLE_EXTENDED")]
EXTENDED_OR_MORE = ORT_LEVELS[ORT_LEVELS.index("ORT_ENABLE_EXTENDED"):]


def ort_u8s8_saturation(where: Mapping[str, Tuple]) -> Tuple[Expectation, ...]:
    """ONNX Runtime's u8s8 MatMulInteger on the reproducers `where` selects, by the CPU's INT8 level and
    session.x64quantprecision: it saturates without VNNI unless the option (at ORT_ENABLE_EXTENDED or more) fixes it."""
    where = dict(where)
    return (
        Expectation(
            "onnxruntime", ">=1.0", "fail", ORT_QUANTIZATION_SATURATION, stage="compare", where=where,
            when={"isa": NO_VNNI, "x64quantprecision": ("0",)},
            note="u8s8 through VPMADDUBSW: 16-bit pair sums saturate without VNNI ('reduce_range or the U8U8 format "
            "... doesn't have saturation issues')",
        ),
        Expectation(
            "onnxruntime", ">=1.0", "fail", ORT_12088, stage="compare", where=where,
            when={"isa": NO_VNNI, "x64quantprecision": ("1",), "graph_optimization_level": BELOW_EXTENDED},
            note="session.x64quantprecision is a Level-2 graph transformation: below ORT_ENABLE_EXTENDED it never runs",
        ),
        Expectation(
            "onnxruntime", ">=1.13", "pass", ORT_12088, where=where,
            when={"isa": NO_VNNI, "x64quantprecision": ("1",), "graph_optimization_level": EXTENDED_OR_MORE},
            note="session.x64quantprecision converts the u8s8 MatMulInteger whose constant weights leave [-64, 63] to "
            "u8u8 (first shipped in 1.13)",
        ),
        Expectation(
            "onnxruntime", ">=1.0", "pass", ONEDNN_INT8_NUANCES, where=where, when={"isa": VNNI},
            note="VNNI's VPDPBUSD accumulates in 32 bits: 'the intermediate overflow and saturation cannot occur'",
        ),
    )


# What the lint says of forms no catalogue case sweeps, as expectations (engine, range, stage, source): one place.
# 8.x's operators.md lists DequantizeLinear for INT8 input only; onnxruntime's quantize_static writes INT32 biases so.
DQ_NON_ACTIVATION = Expectation(
    "tensorrt", ">=8.0,<10.0", "fail", OPERATORS_MD, stage="load",
    note="operators.md lists DequantizeLinear for INT8 input only (8.x tables)",
)
# 8.x: convMultiInput takes the kernel size from the `kernel_shape` attribute only (getKernelParams) and checks the
# weight tensor against it; 10.x fills it from the weights' shape first.
CONV_MULTI_INPUT_8X = "https://github.com/onnx/onnx-tensorrt/blob/release/8.6-GA/onnx2trt_utils.cpp"
CONV_WITHOUT_KERNEL_SHAPE = Expectation(
    "tensorrt", ">=8.0,<9", "fail", CONV_MULTI_INPUT_8X, stage="load",
    note="'The input tensor shape misaligns with the input kernel shape.' without the attribute",
)


# ---- producer fixes the lint names beside a finding (cases' patterns and check.lint's own rules) ----

QUANTIZE_STATIC = "onnxruntime.quantization.quantize_static"
FIX_SYMMETRIC_INT8 = (f'{QUANTIZE_STATIC}(..., quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, '
                      'extra_options={"ActivationSymmetric": True})')
FIX_STATIC_QDQ = f"{QUANTIZE_STATIC}(..., quant_format=QuantFormat.QDQ) instead of quantize_dynamic / QOperator"
# TensorRT for RTX 1.7.1.116's parser (the 10.x generation) refuses the same INT32 bias DequantizeLinear: "... input has
# type Int32 but must have type FP8, FP4, Int4, Int8, or UInt8" (the producer models, checked ahead of time here).
DQ_INT32_RTX_OBSERVED = "reports/observed/no-gpu/check/tensorrt-rtx-1.7.1.116.jsonl"
DQ_INT32_RTX = Expectation(
    "tensorrt-rtx", "==1.7.1.116", "fail", DQ_INT32_RTX_OBSERVED, stage="load", basis="baseline",
    hardware="no GPU: ahead-of-time build (default: SM80 SM86 SM89 SM120 SM121)",
    note="'input has type Int32 but must have type FP8, FP4, Int4, Int8, or UInt8' (observed on the producer models' "
    "INT32 bias DequantizeLinear nodes)",
)
# TensorRT for RTX 1.7.1.116's parser refuses a non-zero zero point with TensorRT's own assertion (NONZERO_ZERO_POINT):
# "Assertion failed: shiftIsAllZeros(zeroPoint): Non-zero zero point is not supported", on every reproducer of the
# catalogue with uint8 activations at zero point 128 it ran (grouped_conv's 48 and q_output_type's 2 of
# activation=uint8, the H100's committed cells). The cases' own expectations stay TensorRT's: the lint's rule reads it.
NONZERO_ZERO_POINT_RTX_OBSERVED = "reports/observed/nvidia-h100/rtx-1.7.1.116.jsonl"
NONZERO_ZERO_POINT_RTX_CASES = ("grouped_conv", "q_output_type")  # the cases whose cells it was read from
NONZERO_ZERO_POINT_RTX = Expectation(
    "tensorrt-rtx", "==1.7.1.116", "fail", NONZERO_ZERO_POINT_RTX_OBSERVED, stage="load", basis="baseline",
    signature=NONZERO_ZERO_POINT.name,
    hardware="NVIDIA H100 80GB HBM3 (sm_90): ahead-of-time build (default: SM80 SM86 SM89 SM120 SM121)",
    note="'Assertion failed: shiftIsAllZeros(zeroPoint): Non-zero zero point is not supported' (observed on catalogue "
    "cases grouped_conv and q_output_type, activation=uint8: 50 of 50 cells)",
)
# ... and int8 Q/DQ with non-zero zero points, onnxruntime quantize_static's own default activations, on every version:
# 1.4.0.76 to 1.7.1.116 refuse the producer blocks quantized so at parse, 12 of 12 cells (no GPU, ahead of time), at an
# activation's QuantizeLinear (the Conv blocks) or at a quantized Add constant's DequantizeLinear (the transformer).
NONZERO_ZERO_POINT_RTX_INT8_OBSERVED = "reports/observed/no-gpu/check-int8-asym/tensorrt-rtx.jsonl"
NONZERO_ZERO_POINT_RTX_INT8_CASES = ("user_model",)  # read from the producer models' cells (user bundles)
NONZERO_ZERO_POINT_RTX_INT8 = Expectation(
    "tensorrt-rtx", ">=1.4.0.76,<=1.7.1.116", "fail", NONZERO_ZERO_POINT_RTX_INT8_OBSERVED, stage="load",
    basis="baseline", signature=NONZERO_ZERO_POINT.name,
    hardware="no GPU: ahead-of-time build (default targets)",
    note="'Assertion failed: shiftIsAllZeros(zeroPoint): Non-zero zero point is not supported' (observed on the "
    "producer blocks quantized with quantize_static's default int8 asymmetric activations: 12 of 12 cells, 1.4.0.76 "
    "to 1.7.1.116)",
)
