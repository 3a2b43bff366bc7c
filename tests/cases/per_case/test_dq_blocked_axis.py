"""Case 030 `dq_blocked_axis`: OpenVINO's DequantizeLinear-21 blocked along axis 1 or 2 (#32917/#32918)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.dq_blocked_axis import CASE
from core.numerics import comparison_step
from generators import write
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import attrs, only

PR_OLD = [8, 14, 8, 14, 18, 20, 18, 20]  # the PR's "old output (incorrect)" for its axis-1 example
PR_NEW = [8, 8, 14, 14, 18, 18, 20, 20]  # its new output and ONNX Runtime's


def test_axis_1_is_the_prs_worked_example():
    rep = write.build(CASE, {"axis": 1})
    assert rep.inputs["x"].ravel().tolist() == [9] * 8 and rep.inputs["x"].dtype == np.int8
    y = expected_outputs(rep)[0]["y"]
    assert y.ravel().tolist() == PR_NEW
    step, _ = comparison_step(y, rep.output_steps.get("y"))
    assert np.max(np.abs(np.array(PR_OLD) - y.ravel())) / step > 10 * rep.tolerance_steps


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_axis_dequantizes_sequential_blocks_of_two(params):
    """The same data on each axis: blocks of 2 along it meet the PR's scales and zero points 1..4."""
    rep = write.build(CASE, params)
    dq = only(rep.model, "DequantizeLinear")
    assert attrs(dq)["axis"] == params["axis"] and attrs(dq)["block_size"] == 2
    y = np.moveaxis(expected_outputs(rep)[0]["y"], params["axis"], -1).reshape(-1, 4)
    assert sorted(y.ravel().tolist()) == sorted(PR_NEW)
    assert np.all(y[:, 0] == y[:, 1]) and np.all(y[:, 2] == y[:, 3])  # sequential along the axis, not interleaved


def test_the_old_implementation_fails_off_axis_0_and_the_fixed_one_passes():
    for axis in (1, 2):
        assert CASE.expectation_for("openvino", "2024.6.0", {"axis": axis}).outcome == "fail"
    assert CASE.expectation_for("openvino", "2024.6.0", {"axis": 0}).outcome == "pass"
    for axis in (0, 1, 2):
        assert CASE.expectation_for("openvino", "2026.4.1", {"axis": axis}).outcome == "pass"
    assert not [e for e in CASE.expectations if e.engine != "openvino"]
