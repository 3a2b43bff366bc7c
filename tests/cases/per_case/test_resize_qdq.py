"""Case 008 `resize_qdq`: a Resize (upsample) between Q/DQ does not run in INT8 (#2976)."""

from __future__ import annotations

import pytest

from cases import slug
from cases.resize_qdq import CASE
from generators.write import build
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, attrs, only, producers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_for_tensorrt(params):
    assert_symmetric_int8_for_tensorrt(build(CASE, params))


def test_resize_qdq_places_q_dq_around_the_resize_only_where_asked():
    for params in CASE.variants():
        rep = build(CASE, params)
        resize = only(rep.model, "Resize")
        made_by = producers(rep.model)
        readers = [n.op_type for n in rep.model.graph.node if resize.output[0] in n.input]
        assert (made_by[resize.input[0]].op_type == "DequantizeLinear") == params["qdq_before"]
        assert readers == (["QuantizeLinear"] if params["qdq_after"] else ["Conv"])
        assert attrs(resize)["mode"] == params["mode"].encode()


def test_documented_outcomes_by_version():
    after = {"qdq_before": False, "qdq_after": True, "mode": "nearest"}
    assert CASE.expectation_for("tensorrt", "8.4.3.1", after).outcome == "int8"
    assert CASE.expectation_for("tensorrt", "8.6.0", after) is None
    assert CASE.expectation_for("tensorrt", "8.4.3.1", dict(after, mode="linear")) is None


def test_expectations_cite_the_cases_own_threads():
    assert all(e.source in CASE.links for e in CASE.expectations)
