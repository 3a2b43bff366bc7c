"""check.versions: the lint's runs of TensorRT versions with one outcome and the specifier set each run is."""

from __future__ import annotations

import pytest
from packaging.specifiers import InvalidSpecifier

from check.versions import check_specifier, runs, specifier
from matrix.predict import covers


def test_runs_follow_pep440_order_not_the_order_given_nor_text_order():
    seen = {"8.6.0": "int8", "10.0.1": "float", "8.5.10": "int8", "8.5.3.1": "int8", "10.13.3.9": "float"}
    assert runs(seen) == [("8.5.3.1", "8.6.0"), ("10.0.1", "10.13.3.9")]
    assert runs({"8.6.0": "int8", "8.5.3.1": "float", "10.0.1": "int8"}) == [
        ("8.5.3.1", "8.5.3.1"), ("8.6.0", "10.0.1")]
    assert runs({}) == []


def test_a_run_is_a_specifier_set_that_covers_its_versions_and_no_other():
    spec = specifier("8.5.3.1", "8.6.0")
    assert spec == ">=8.5.3.1,<=8.6.0" and specifier("8.6.0", "8.6.0") == "==8.6.0"
    assert covers(spec, "8.5.3.1") and covers(spec, "8.6.0") and not covers(spec, "10.0.1")
    check_specifier(spec)
    with pytest.raises(InvalidSpecifier):
        check_specifier("8.6")
