"""Case 026 `dq_blocked_rank1`: DequantizeLinear-21 blocked along a 1-D input (#32730), read as per-axis by one EP."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.dq_blocked_rank1 import CASE, SHAPES
from core.numerics import comparison_step
from generators import write
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import attrs, initializers, only


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_a_per_axis_reading_of_the_blocked_scale_misses_by_whole_steps(params):
    """What #32730's WebGPU kernel does (element i with scale[i], 0 past the scale's end) is caught, for 1-D inputs;
    the 2-D control's blocks are read alike either way."""
    rep = write.build(CASE, params)
    shape, block = SHAPES[params["shape"]]
    dq = only(rep.model, "DequantizeLinear")
    assert attrs(dq)["block_size"] == block and attrs(dq)["axis"] == 0
    init = initializers(rep.model)
    scale = init["x_scale"].astype(np.float64)
    zero = init.get("x_zero_point", np.zeros(scale.shape, np.int8)).astype(np.float64)
    assert scale.shape == (shape[0] // block, *shape[1:])
    assert ("x_zero_point" in init) == (params["zero_point"] == "thread")
    x = rep.inputs["x"].astype(np.float64)
    assert rep.inputs["x"].dtype == np.int8 and x.shape == shape
    (y,) = expected_outputs(rep)[0].values()
    per_block = (x - np.repeat(zero, block, axis=0)) * np.repeat(scale, block, axis=0)
    assert np.array_equal(y, per_block)
    if len(shape) == 1:
        padded = lambda a: np.concatenate([a, np.zeros(shape[0] - a.size)])  # noqa: E731
        per_axis = (x - padded(zero)) * padded(scale)
        step, _ = comparison_step(y, rep.output_steps.get("y"))
        assert np.max(np.abs(per_axis - y)) / step > 10 * rep.tolerance_steps


def test_the_threads_minimal_case_word_for_word():
    rep = write.build(CASE, {"shape": "8_block4", "zero_point": "thread"})
    assert rep.inputs["x"].tolist() == [10, 20, 30, 40, 50, 60, 70, 80]
    init = initializers(rep.model)
    assert init["x_scale"].tolist() == [0.5, 2.0] and init["x_zero_point"].tolist() == [0, 10]
    assert expected_outputs(rep)[0]["y"].tolist() == [5, 10, 15, 20, 80, 100, 120, 140]


def test_only_the_cpu_ep_the_thread_ran_has_an_expectation():
    for params in CASE.variants():
        assert CASE.expectation_for("onnxruntime", "1.31.1", params).outcome == "pass"
        assert CASE.expectation_for("onnxruntime", "1.16.3", params) is None
        assert CASE.expectation_for("openvino", "2026.4.1", params) is None
        assert CASE.expectation_for("tensorrt", "8.6.0", params) is None
