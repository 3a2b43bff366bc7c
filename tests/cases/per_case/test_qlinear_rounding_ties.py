"""Case 027 `qlinear_rounding_ties`: INT8 Conv, Add and AveragePool whose outputs land on rounding ties (#32132)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.qlinear_rounding_ties import CASE
from generators import write
from generators.qdq_parts import X_SCALE
from generators.qlinear_rounding_ties import RATIO
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, initializers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_on_every_int8_value(params):
    rep = write.build(CASE, params)
    assert_symmetric_int8_for_tensorrt(rep, opset=13, convolutions=params["op"] == "conv")
    for x in rep.inputs.values():
        assert sorted((x / X_SCALE).ravel().tolist()) == sorted([*range(-127, 128), 0])


def _fused(rep, op):
    """What an integer-domain op computes before rounding, in output steps: the integer inputs times float32(1/r),
    once for the Conv's and AveragePool's accumulator, once per input for the Add (a * sa/sy + b * sb/sy)."""
    q = {n: np.rint(a / X_SCALE).astype(np.float32) for n, a in rep.inputs.items()}
    one_over_r = np.float32(1.0 / RATIO[op])
    if op == "conv":
        w = initializers(rep.model)["w"].astype(np.float32).reshape(-1)
        return (w[None, :, None, None] * q["x"]) * one_over_r, (w[None, :, None, None] * q["x"])
    if op == "add":
        return q["a"] * one_over_r + q["b"] * one_over_r, q["a"] + q["b"]
    x = q["x"][0, 0]
    sums = np.array([[x[i:i + 3, j:j + 3].sum() for j in range(14)] for i in range(14)], np.float32)[None, None]
    return sums * one_over_r, sums


@pytest.mark.parametrize("op", ["conv", "add", "avgpool"])
def test_a_requantization_by_float32_one_over_r_rounds_some_ties_the_other_way(op):
    """#32132's mechanism, in numpy: the integer inputs times float32(1/r), rounded, against the reference's float path,
    which rounds exact ties to even (Conv, Add) or near ties (AveragePool's /9): some land one step off."""
    rep = write.build(CASE, {"op": op})
    y = expected_outputs(rep)[0]["y"]
    step = rep.output_steps["y"]
    fused, acc = _fused(rep, op)
    missed = np.abs(np.rint(fused) * step - y) / step
    assert np.isclose(missed.max(), 1.0) and np.count_nonzero(missed > rep.tolerance_steps) >= 5
    assert np.all(np.abs(y / step) <= 127)  # no saturation: every difference is a rounding
    if op != "avgpool":
        assert np.count_nonzero(acc % RATIO[op] == RATIO[op] // 2) > 40  # exact ties of the float path


def test_the_expectation_follows_the_optimization_level_from_the_threads_version():
    level = "graph_optimization_level"
    conv = {"op": "conv"}
    assert CASE.expectation_for("onnxruntime", "1.31.1", conv).outcome == "fail"  # ORT_ENABLE_ALL, the default
    assert CASE.expectation_for("onnxruntime", "1.29.0", conv, {level: "ORT_ENABLE_EXTENDED"}).outcome == "fail"
    assert CASE.expectation_for("onnxruntime", "1.29.0", conv, {level: "ORT_ENABLE_BASIC"}).outcome == "pass"
    assert CASE.expectation_for("onnxruntime", "1.16.3", conv) is None  # no source names it
    assert not [e for e in CASE.expectations if e.engine != "onnxruntime"]
