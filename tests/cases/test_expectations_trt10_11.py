"""TensorRT 10.x/11.x expectations: each cites a versioned source and resolves for the pinned NVIDIA-index versions."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cases import all_cases, get_case
from cases.common import OPERATORS_MD, OPERATORS_MD_10_1, OPERATORS_MD_10_15, QUANTIZED_TYPES_11
from core.engines import pin_group

MOVING = ("/blob/main/", "/tree/main/", "/latest/")  # a page that changes under the citation
ISSUE_3919 = "https://github.com/NVIDIA/TensorRT/issues/3919"
PINNED = list(pin_group("trt10").versions)  # the NVIDIA-index versions of the pin table (core/engines.py)
V10 = [v for v in PINNED if v.startswith("10.")]
V11 = [v for v in PINNED if v.startswith("11.")]


def only_10_or_later(spec: str) -> bool:
    """The range admits no version before 10.0 and at least one pinned 10.x/11.x version, or 10.0/10.1."""
    s = SpecifierSet(spec)
    early = any(s.contains(Version(v), prereleases=True) for v in ("7.2.3.4", "8.0.1.6", "8.6.1.6", "9.3.0.1"))
    later = any(s.contains(Version(v), prereleases=True) for v in PINNED + ["10.0.1.6", "10.1.0.27"])
    return bool(spec) and not early and later


def test_the_pin_table_has_10x_and_11x_versions_that_pep440_reads():
    assert V10 and V11
    assert all(Version(v).release[0] in (10, 11) for v in PINNED)


def test_10x_and_11x_expectations_cite_a_versioned_source():
    found = [(c.id, e) for c in all_cases() for e in c.expectations
             if e.engine == "tensorrt" and only_10_or_later(e.versions)]
    assert len(found) >= 8  # zero points (2 cases x 3 lines), DynamicQuantizeLinear (2), #3919 (3)
    for case_id, e in found:
        assert e.source.startswith("https://") and not any(m in e.source for m in MOVING), (case_id, e.source)
        assert e.note, (case_id, e.versions)


@pytest.mark.parametrize("case_id", ["q_output_type", "grouped_conv"])
def test_uint8_zero_point_per_release_line(case_id):
    case = get_case(case_id)
    params = next(p for p in case.variants() if p["activation"] == "uint8")
    for v in V10:
        e = case.expectation_for("tensorrt", v, params)
        want = OPERATORS_MD if Version(v) >= Version("10.16") else OPERATORS_MD_10_15
        assert e.outcome == "fail" and e.source == want, (v, e.source)
    for v in V11:
        e = case.expectation_for("tensorrt", v, params)
        want = QUANTIZED_TYPES_11 if Version(v) < Version("11.4") else OPERATORS_MD
        assert e.outcome == "fail" and e.source == want, (v, e.source)
    first = case.expectation_for("tensorrt", "10.0.1.6", params)
    assert first.source == OPERATORS_MD_10_1 and first.signature == "nonzero_zero_point" and first.stage == "load"
    assert case.expectation_for("tensorrt", "8.6.1.6", params).source == OPERATORS_MD  # 8.x untouched


def test_int8_activations_get_no_zero_point_expectation():
    case = get_case("grouped_conv")
    params = {"cpg": 4, "weights": "per_channel", "activation": "int8", "output_qdq": True, "epilogue": "none"}
    assert all(case.expectation_for("tensorrt", v, params) is None for v in PINNED)


def test_dynamic_quantize_linear_only_where_a_10x_table_says():
    case = get_case("dynamic_quantize")
    for params in case.variants():
        assert case.expectation_for("tensorrt", "10.0.1.6", params).source == OPERATORS_MD_10_1
        for v in V10:
            e = case.expectation_for("tensorrt", v, params)
            if Version(v) < Version("10.16"):
                assert e.outcome == "fail" and e.stage == "load" and e.source == OPERATORS_MD_10_15, v
            else:
                assert e is None, (v, e)  # no 10.16 table read
        assert all(case.expectation_for("tensorrt", v, params) is None for v in V11)  # no 11.x source says
        assert case.expectation_for("tensorrt", "8.6.1.6", params) is not None


def test_3919_fixed_from_10_1_on_and_implicit_int8_not_claimed_on_11x():
    plugin = get_case("quantized_constant_plugin")
    v3 = {"form": "int8_const_to_plugin_v3"}
    assert plugin.expectation_for("tensorrt", "10.0.1.6", v3).outcome == "fail"
    for v in V10 + V11:
        e = plugin.expectation_for("tensorrt", v, v3)
        assert e.outcome == "pass" and e.source == ISSUE_3919 and "10.1" in e.note, v
    implicit = get_case("instancenorm_int8")
    params = {"native_instancenorm": True, "int8_ranges": "none"}
    assert all(implicit.expectation_for("tensorrt", v, params).outcome == "fail" for v in V10)
    assert all(implicit.expectation_for("tensorrt", v, params) is None for v in V11)  # cells: not applicable
