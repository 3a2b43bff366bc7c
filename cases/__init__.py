"""The catalogue: one module per documented TensorRT quantization issue.

Importing a case module declares its case; nothing is built until a generator is asked.
"""

from __future__ import annotations

import importlib
from typing import Dict, List

from cases.base import Case, Expectation, Signature, slug

# A case's seed is its place in this tuple (000 first, counting up; tests/cases/test_catalogue.py checks it); the
# external cases come last. The comments group the cases by where they came from.
CASE_MODULES = (
    # The five seed issues: 000 .. 004.
    "cases.q_output_type",
    "cases.instancenorm_int8",
    "cases.dynamic_quantize",
    "cases.grouped_conv",
    "cases.quantized_constant_plugin",
    # More documented TensorRT Q/DQ fusion threads (ConvTranspose, Resize, residual Add, Concat, MatMul): 005 onwards.
    "cases.convtranspose_q_fusion",
    "cases.convtranspose_weight_axis",
    "cases.convtranspose_grouped",
    "cases.resize_qdq",
    "cases.residual_add_qdq",
    "cases.concat_requant",
    "cases.matmul_per_channel",
    "cases.transformer_qdq_pattern",
    # 2025-2026 quantized types (float16 scales, INT4, FP8) and threads: 013 onwards.
    "cases.fp16_scale_qdq",
    "cases.int4_blocked_weights",
    "cases.fp8_qdq",
    "cases.fp8_conv_stack",
    "cases.dynamic_quantize_asymmetric",
    "cases.bias_add_after_qdq",
    # FP4, NVFP4 and MXFP8 forms (docs/low-precision.md), the cross-check engines' own bugs: 019 onwards.
    "cases.fp4_weight_only",
    "cases.nvfp4_two_level_scales",
    "cases.mxfp8_block_scales",
    "cases.int4_matmulnbits_fusion",
    "cases.qdq_scale_dtype_mismatch",
    # What checking real-architecture models found (YOLO SiLU, BERT GELU constants): 024 onwards.
    "cases.silu_qdq",
    "cases.scalar_quantized_constant",
    # The cross-check engines' own Q/DQ numerics and ONNX frontends (ONNX Runtime, OpenVINO threads): 026 onwards.
    "cases.dq_blocked_rank1",
    "cases.qlinear_rounding_ties",
    "cases.resize_linear_qdq_drop",
    "cases.fp16_quantize_rounding",
    "cases.dq_blocked_axis",
    "cases.float_qdq_types",
    # Found by checking third-party models on TensorRT 8.x and reduced on the GPU: 032 onwards.
    "cases.two_conv_fanout_qdq",
    "cases.zero_scale_qdq",
    # External cases (Case.external): models from outside the catalogue; not seeds, no sweep.
    "cases.onnx_node_tests",
    "cases.qdq_companion",
    "cases.user_model",
)

__all__ = ["Case", "CaseModuleError", "Expectation", "Signature", "all_cases", "get_case", "slug", "bundle_id"]


class CaseModuleError(Exception):
    """A case module of the catalogue that does not import: which one, and its error. Whatever judges cells against the
    catalogue stops here, rather than keep verdicts that today's catalogue may no longer give."""

    def __init__(self, module: str, error: BaseException) -> None:
        super().__init__(f"case module {module} does not import: {type(error).__name__}: {error}")
        self.module = module
        self.error = error


def all_cases(external: bool = False) -> List[Case]:
    """Every seed case of the catalogue, in seed order; with external=True also the external cases. A module that does
    not import raises CaseModuleError, naming it."""
    found = []
    for module in CASE_MODULES:
        try:
            found.append(importlib.import_module(module).CASE)
        except Exception as e:
            raise CaseModuleError(module, e) from e
    return [c for c in found if external or not c.external]


def get_case(case_id: str) -> Case:
    """One case by id (seed or external), with a readable error for an unknown id."""
    cases: Dict[str, Case] = {c.id: c for c in all_cases(external=True)}
    if case_id not in cases:
        raise KeyError(f"unknown case {case_id!r}; known cases: {', '.join(cases)}")
    return cases[case_id]


def bundle_id(case: Case, params: dict) -> str:
    """The id of one reproducer: case id and the slug of its parameters (an added axis at its default left out)."""
    return f"{case.id}/{slug(case.id_params(params))}"
