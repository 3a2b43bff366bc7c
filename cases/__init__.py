"""The catalogue: one module per documented TensorRT quantization issue.

Importing a case module declares its case; nothing is built until a generator is asked.
"""

from __future__ import annotations

import importlib
from typing import Dict, List

from cases.base import Case, Expectation, Signature, slug

# Seed order: 000 .. 004.
CASE_MODULES = (
    "cases.q_output_type",
    "cases.instancenorm_int8",
    "cases.dynamic_quantize",
    "cases.grouped_conv",
    "cases.quantized_constant_plugin",
)

__all__ = ["Case", "Expectation", "Signature", "all_cases", "get_case", "slug", "bundle_id"]


def all_cases() -> List[Case]:
    """Every case in the catalogue, in seed order."""
    return [importlib.import_module(m).CASE for m in CASE_MODULES]


def get_case(case_id: str) -> Case:
    """One case by id, with a readable error for an unknown id."""
    cases: Dict[str, Case] = {c.id: c for c in all_cases()}
    if case_id not in cases:
        raise KeyError(f"unknown case {case_id!r}; known cases: {', '.join(cases)}")
    return cases[case_id]


def bundle_id(case: Case, params: dict) -> str:
    """The id of one reproducer: case id and parameter slug."""
    return f"{case.id}/{slug(params)}"
