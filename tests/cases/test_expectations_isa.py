"""Expectations filtered by the CPU's INT8 level and the engine's column options: dql_matmulinteger on ONNX Runtime."""

from __future__ import annotations

import pytest

from cases import get_case
from cases.base import Expectation
from cases.verdict import expectation_record
from core.judge import verdict_of

CASE = get_case("dynamic_quantize")
PARAMS = {"variant": "dql_matmulinteger"}


def _expect(isa: str, **options: str):
    return CASE.expectation_for("onnxruntime", "1.31.1", PARAMS, dict(options, isa=isa))


@pytest.mark.parametrize("isa", ["avx2", "avx512", "sse4.1"])
def test_without_vnni_the_saturation_is_documented(isa):
    found = _expect(isa)
    assert found.outcome == "fail" and "onnxruntime.ai" in found.source
    # 8770 steps on AVX2 is no new failure
    assert verdict_of(expectation_record(found), "fail", None)[0] == "as documented"


@pytest.mark.parametrize("isa", ["avx_vnni", "avx512_vnni", "amx"])
def test_with_vnni_it_is_documented_to_match(isa):
    found = _expect(isa)
    assert found.outcome == "pass" and "oneDNN" in found.source
    # a saturation with VNNI would be news
    assert verdict_of(expectation_record(found), "fail", None)[0] == "fails against expectation"


def test_the_documented_fix_needs_graph_optimizations():
    assert _expect("avx2", x64quantprecision="1").outcome == "pass"  # ORT_ENABLE_ALL: the default level
    off = _expect("avx2", x64quantprecision="1", graph_optimization_level="ORT_DISABLE_ALL")
    assert off.outcome == "fail" and "12088" in off.source
    assert CASE.expectation_for("onnxruntime", "1.12.1", PARAMS, {"isa": "avx2", "x64quantprecision": "1"}) is None


def test_a_cell_without_a_recorded_level_is_judged_against_no_isa_expectation():
    assert CASE.expectation_for("onnxruntime", "1.31.1", PARAMS, {}) is None


def test_a_filter_on_an_option_the_engine_does_not_have_is_refused():
    with pytest.raises(ValueError, match="cells know"):
        Expectation("openvino", "", "pass", "https://example.org", when={"x64quantprecision": ("1",)})
