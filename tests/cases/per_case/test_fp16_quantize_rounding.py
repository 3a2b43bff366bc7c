"""Case 029 `fp16_quantize_rounding`: float16 QuantizeLinear truncated toward zero on ONNX Runtime's CPU (#32452)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.fp16_quantize_rounding import CASE
from generators import write
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import initializers, only


def _truncated(rep) -> np.ndarray:
    """What the old CPU kernel computed: static_cast<int32_t>(x / scale), toward zero, in steps."""
    scale = initializers(rep.model)["x_scale"]
    return np.trunc(rep.inputs["x"].astype(np.float32) / np.float32(scale))


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_truncation_toward_zero_misses_by_one_step_where_rounding_is_clear_cut(params):
    rep = write.build(CASE, params)
    assert rep.inputs["x"].dtype == np.float16 and initializers(rep.model)["x_scale"].dtype == np.float16
    assert only(rep.model, "QuantizeLinear").name in rep.target_nodes
    (name, y), = expected_outputs(rep)[0].items()
    step = rep.output_steps[name] or 1.0
    rounded = np.rint(y.astype(np.float64) / step)
    if params["values"] == "spread":  # a quarter step from a whole one (the PR's own pair is 0.0003 past a half)
        quotient = rep.inputs["x"].astype(np.float32) / np.float32(initializers(rep.model)["x_scale"])
        assert np.all(np.abs(quotient - np.rint(quotient)) <= 0.3)
    missed = np.abs(_truncated(rep) - rounded)
    assert missed.max() == 1 and np.count_nonzero(missed) >= (2 if params["values"] == "thread" else 50)


def test_the_prs_minimal_case():
    rep = write.build(CASE, {"values": "thread", "output": "int8"})
    assert rep.inputs["x"].tolist() == [0.050018310546875, -0.050018310546875]
    assert float(initializers(rep.model)["x_scale"]) == 0.0999755859375
    assert expected_outputs(rep)[0]["x_q"].tolist() == [1, -1] and _truncated(rep).tolist() == [0, 0]


def test_truncation_is_documented_before_1_30_and_rounding_from_it():
    for params in CASE.variants():
        assert CASE.expectation_for("onnxruntime", "1.16.3", params).outcome == "fail"
        assert CASE.expectation_for("onnxruntime", "1.29.0", params).outcome == "fail"
        assert CASE.expectation_for("onnxruntime", "1.30.0", params).outcome == "pass"
        assert CASE.expectation_for("openvino", "2026.4.1", params) is None
