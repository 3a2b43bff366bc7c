"""Sources that the 2026 low-precision cases share (FP4, NVFP4, MXFP8, opset-23 scale types): one declaration each."""

from __future__ import annotations

from typing import Mapping, Optional, Tuple

from cases.base import Expectation, Signature
from cases.common import OPERATORS_MD_8_6, RTX_QUANTIZED_TYPES

# IDequantizeLayer: "For block quantization, the shape of scale tensor must match the shape of the input, except for
# one dimension (the last or second to last dimension) in which blocking occurs."
RTX_DEQUANTIZE_LAYER = ("https://docs.nvidia.com/deeplearning/tensorrt-rtx/latest/_static/cpp-api/"
                        "classnvinfer1_1_1_i_dequantize_layer.html")
# Real build errors of this repository's TensorRT-RTX runs of seeds 019-023 with no GPU, kept as test data.
RTX_2026_LOGS = "tests/data/trt/rtx-2026-forms.json"

FP4_GEMM_NOTE = ("'FP4 is only supported for matrix multiplications on Blackwell or later architectures (compute "
                 "capability 10.0 or later)'; support matrix 'FP4 GEMM': Yes on 12.0 (and 12.1 from 1.5), No on 8.9, "
                 "8.6 and 7.5")
FP4_BELOW_BLACKWELL = ("SM75", "SM80", "SM86", "SM89")
BLACKWELL = ("SM120", "SM121")

RTX_HW_SPECIFIC = Signature(
    name="rtx_hw_specific_type",
    # Myelin's refusal of a target that lacks a data type: "Cannot compile for target(s) sm89, because the model
    # contains HW-specific datatypes: fp4_e2m1" (1.5-1.7; "data types" in 1.4's words on the INT4 GEMMs).
    pattern=r"Cannot compile for target\(s\) sm\d+, because the model contains HW-specific data ?types",
    kind="error",
    source=RTX_2026_LOGS,
    basis="baseline",
    short="a data type the target lacks",
)
RTX_ISSUE_33 = "https://github.com/NVIDIA/TensorRT-RTX/issues/33"
RTX_TARGET_ARCH_KIND = Signature(
    name="rtx_target_sm_arch_kind",
    # NVIDIA/TensorRT-RTX#33: 1.4.0.76's CPU-only AOT build for an RTX 2070 (sm_75) fails in Myelin on YOLO models with
    # "hfc.cpp:120: CHECK(false) failed. target_sm '110' does not have arch kind assigned" ('101' with the CUDA 12.9
    # build); a minimal Identity model builds. Watched for in the SM75 columns; seen in none (docs/low-precision.md).
    pattern=r"target_sm '\d+' does not have arch kind",
    kind="error",
    source=RTX_ISSUE_33,
    short="target without an arch kind",
)
RTX_BLOCK_AXIS = Signature(
    name="rtx_block_axis",
    # The network API's check on a blocked DequantizeLinear (the ONNX parser passes its axis on unchanged).
    pattern=r"The blocking dimension must be the last or second to last dimension",
    kind="error",
    source=RTX_DEQUANTIZE_LAYER,
    short="block axis not last or second to last",
)


def trt8_cannot_parse(types: str, where: Optional[Mapping[str, Tuple]] = None) -> Expectation:
    """TensorRT 8.x: its ONNX parser has no data type for these (operators.md 8.0 to 8.6)."""
    return Expectation(
        "tensorrt", ">=8.0,<9.0", "fail", OPERATORS_MD_8_6, stage="load", where=dict(where or {}),
        note=f"8.0 to 8.6 operators.md: DequantizeLinear 'INT8'; data types DOUBLE, FLOAT32, FLOAT16, INT8, BOOL "
        f"(no {types}); 8.1 and 8.3 lie between tables that agree",
    )


def rtx_fp4_gemm(refused: Mapping[str, Tuple], built: Mapping[str, Tuple]) -> Tuple[Expectation, Expectation]:
    """TensorRT-RTX FP4 GEMMs per build target: refused below Blackwell (`refused` variants), built for SM120 and
    SM121 (`built` variants: the forms the documents mean)."""
    return (
        Expectation("tensorrt-rtx", "", "fail", RTX_QUANTIZED_TYPES, stage="build", where=dict(refused),
                    when={"target": FP4_BELOW_BLACKWELL}, note=FP4_GEMM_NOTE),
        Expectation("tensorrt-rtx", "", "pass", RTX_QUANTIZED_TYPES, where=dict(built), when={"target": BLACKWELL},
                    note=FP4_GEMM_NOTE),
    )


FP8_GEMM_NOTE = ("'FP8 is only supported for matrix multiplications (GEMM) on Ada and later architectures (compute "
                 "capability 8.9 or later)'; support matrix FP8: Yes on 12.0 and 8.9, No on 8.6 and 7.5")
FP8_BELOW_ADA = ("SM75", "SM80", "SM86")
ADA_AND_LATER = ("SM89", "SM120", "SM121")
