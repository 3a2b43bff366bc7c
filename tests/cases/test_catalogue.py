"""The whole catalogue: every seed covered once, and every declaration parses."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from cases import CASE_MODULES, all_cases

SEEDS = ("000", "001", "002", "003", "004")


@pytest.fixture(scope="module")
def catalogue():
    return all_cases()


def test_every_seed_is_covered_once(catalogue):
    seeds = sorted(c.seed for c in catalogue if not c.external)
    assert set(SEEDS) <= set(seeds)  # the five seeds, then the cases grown from the tracker (005 onwards)
    assert len(set(seeds)) == len(seeds) and all(re.fullmatch(r"\d{3}", s) for s in seeds)
    assert len({c.id for c in catalogue}) == len(catalogue)


def test_expectation_ranges_are_pep440_and_cite_a_page_or_a_listed_observation(catalogue):
    """A source is a public page, or an observation committed under reports/observed/ and listed in its manifest."""
    from matrix import observed

    repo = Path(__file__).resolve().parents[2]
    listed = {f"reports/observed/{path}" for path in observed.load(repo / "reports" / "observed").entries}
    for case in catalogue:
        for e in case.expectations:
            SpecifierSet(e.versions)
            assert e.source.startswith("https://") or e.source in listed, (case.id, e.source)


def test_signatures_compile_and_cite_a_source(catalogue):
    """A source is a public page, or a real observation committed in this repository."""
    repo = Path(__file__).resolve().parents[2]
    for case in catalogue:
        for s in case.signatures:
            re.compile(s.pattern)
            assert s.source.startswith("https://") or (repo / s.source).is_file(), (case.id, s.name)


def test_every_case_has_variants_and_a_builder_function(catalogue):
    for case in catalogue:
        assert list(case.variants()), case.id
        module, function = case.builder.split(":")
        assert module.startswith("generators.")
        assert callable(getattr(importlib.import_module(module), function)), case.builder


@pytest.mark.parametrize("module", CASE_MODULES)
def test_module_docstring_cites_its_upstream_threads(module):
    first_line = (importlib.import_module(module).__doc__ or "").strip().splitlines()[0]
    assert "#" in first_line or "github.com" in first_line, first_line
