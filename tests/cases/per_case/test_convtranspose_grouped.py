"""Case 007 `convtranspose_grouped`: "Could not find any implementation" for a grouped INT8 ConvTranspose (#2280)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.convtranspose_grouped import CASE
from generators.reference import expected_outputs
from generators.write import build
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, attrs, only, run_onnxruntime


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_for_tensorrt(params):
    assert_symmetric_int8_for_tensorrt(build(CASE, params))


def test_grouped_convtranspose_reference_is_independent_of_onnx_reference():
    """onnx.reference mishandles grouped ConvTranspose; the numpy one agrees with ONNX Runtime instead."""
    for params in CASE.variants():
        rep = build(CASE, params)
        found = attrs(only(rep.model, "ConvTranspose"))
        assert found["group"] == params["groups"] and found["kernel_shape"] == [params["kernel"]] * 2
        assert rep.reference is not None
        expected, reference = expected_outputs(rep)
        assert reference == "numpy"
        actual = run_onnxruntime(rep)["y"]
        assert actual.shape == (1, 16, 12, 12)
        assert np.max(np.abs(actual - expected["y"])) <= 1e-5 * max(1.0, float(np.max(np.abs(actual))))


def test_documented_outcomes_by_version():
    depthwise = {"groups": 16, "kernel": 4, "output_qdq": True}
    fail = CASE.expectation_for("tensorrt", "8.4.3.1", depthwise)
    assert (fail.outcome, fail.stage, fail.signature) == ("fail", "build", "no_implementation")
    assert CASE.expectation_for("tensorrt", "8.5.3.1", depthwise).outcome == "pass"
    assert CASE.expectation_for("tensorrt", "8.6.0", depthwise) is None
    assert CASE.expectation_for("tensorrt", "8.5.3.1", dict(depthwise, groups=1)) is None
    assert CASE.signature("no_implementation").search(
        "Error Code 10: Internal Error (Could not find any implementation for node backbone.ida_up.up_1.weight + "
        "QuantizeLinear_629_quantize_scale_node + ConvTranspose_631.)"
    )


def test_expectations_cite_the_cases_own_threads():
    assert all(e.source in CASE.links for e in CASE.expectations)
