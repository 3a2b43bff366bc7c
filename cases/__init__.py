"""The catalogue: one module per documented TensorRT quantization issue.

Importing a case module declares its case; nothing is built until a generator is asked. A case module is found, not
registered: every module of this package that declares `CASE = Case(...)` at its top level is one, and its seed is its
`Case.seed` field alone (no list gives it a place), so adding a case is its module, its generator and its test.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Dict, List, Tuple

from cases.base import Case, Expectation, Signature, slug

HERE = Path(__file__).resolve().parent
DECLARES_CASE = re.compile(r"^CASE\s*(?::[^=\n]*)?=", re.MULTILINE)  # a top-level `CASE = ...` (or `CASE: Case = ...`)


def case_modules(folder: Path = HERE) -> Tuple[str, ...]:
    """The case modules of this package, by name: each module whose source declares CASE at its top level. Found from
    the files, without importing them, so that a module that does not import is named by all_cases."""
    return tuple(f"cases.{p.stem}" for p in sorted(folder.glob("*.py"))
                 if not p.stem.startswith("_") and DECLARES_CASE.search(p.read_text(encoding="utf-8")))


# Every case module, seed and external, by name (the order of this tuple decides nothing: all_cases sorts by seed).
CASE_MODULES = case_modules()

__all__ = ["Case", "CaseModuleError", "Expectation", "Signature", "all_cases", "get_case", "slug", "bundle_id"]


class CaseModuleError(Exception):
    """A case module of the catalogue that does not import: which one, and its error. Whatever judges cells against the
    catalogue stops here, rather than keep verdicts that today's catalogue may no longer give."""

    def __init__(self, module: str, error: BaseException) -> None:
        super().__init__(f"case module {module} does not import: {type(error).__name__}: {error}")
        self.module = module
        self.error = error


def all_cases(external: bool = False) -> List[Case]:
    """Every seed case of the catalogue, in seed order; with external=True also the external cases, after them by id. A
    module that does not import, or whose CASE is not named as the module is, raises CaseModuleError, naming it; two
    cases of one seed raise it too."""
    found = []
    for module in CASE_MODULES:
        try:
            case = importlib.import_module(module).CASE
            if case.id != module.rsplit(".", 1)[-1]:
                raise ValueError(f"its CASE is named {case.id!r}; a case module is named by its case's id")
        except Exception as e:
            raise CaseModuleError(module, e) from e
        found.append(case)
    _one_case_per_seed(found)
    ordered = sorted(found, key=lambda c: (c.external, c.seed, c.id))
    return [c for c in ordered if external or not c.external]


def _one_case_per_seed(cases: List[Case]) -> None:
    """CaseModuleError naming the second of two cases that claim one seed."""
    seen: Dict[str, str] = {}
    for c in cases:
        if c.external:
            continue
        if c.seed in seen:
            raise CaseModuleError(f"cases.{c.id}", ValueError(f"seed {c.seed} is case {seen[c.seed]}'s already"))
        seen[c.seed] = c.id


_BY_ID: Dict[Tuple[str, ...], Dict[str, Case]] = {}  # the catalogue by id, per list of case modules


def get_case(case_id: str) -> Case:
    """One case by id (seed or external), with a readable error for an unknown id; the catalogue is gathered once per
    list of case modules (a cell run asks once per cell)."""
    key = tuple(CASE_MODULES)
    cases = _BY_ID.get(key)
    if cases is None:
        cases = _BY_ID[key] = {c.id: c for c in all_cases(external=True)}
    if case_id not in cases:
        raise KeyError(f"unknown case {case_id!r}; known cases: {', '.join(cases)}")
    return cases[case_id]


def bundle_id(case: Case, params: dict) -> str:
    """The id of one reproducer: case id and the slug of its parameters (an added axis at its default left out)."""
    return f"{case.id}/{slug(case.id_params(params))}"
