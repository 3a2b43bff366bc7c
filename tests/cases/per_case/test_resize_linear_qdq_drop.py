"""Case 028 `resize_linear_qdq_drop`: ONNX Runtime drops the Q/DQ around a linear Resize (#28448, #21319, #28414)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.resize_linear_qdq_drop import CASE
from generators import write
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, attrs, only

THREAD = {"input": "thread_1x3", "mode": "linear"}


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_around_one_resize(params):
    rep = write.build(CASE, params)
    assert_symmetric_int8_for_tensorrt(rep, opset=13, convolutions=False)
    resize = only(rep.model, "Resize")
    assert attrs(resize)["mode"] == params["mode"].encode() and resize.name in rep.target_nodes
    assert attrs(resize)["coordinate_transformation_mode"] == b"half_pixel"


def _half_pixel(size: int):
    """Source positions of a 2x half-pixel Resize along one axis: lower index, upper index, weight of the upper."""
    pos = np.clip((np.arange(2 * size) + 0.5) / 2 - 0.5, 0, size - 1)
    low = np.floor(pos).astype(int)
    return low, np.minimum(low + 1, size - 1), pos - low


def _int8_resize(rep, mode: str):
    """What the dropped Q/DQ computes, in output steps: the Resize on the quantized integers, a linear interpolation
    truncated toward zero (the thread's ORT_ENABLE_ALL output), or nearest (half_pixel, round_prefer_floor)."""
    x = np.rint(rep.inputs["x"] / rep.output_steps["y"])
    for axis in (2, 3):
        if x.shape[axis] == 1:
            continue
        low, high, t = _half_pixel(x.shape[axis])
        a, b = np.take(x, low, axis=axis), np.take(x, high, axis=axis)
        shape = [1, 1, 1, 1]
        shape[axis] = -1
        if mode == "nearest":
            x = np.where(t.reshape(shape) > 0.5, b, a)
        else:
            x = a + t.reshape(shape) * (b - a)
    return np.trunc(x)


def test_the_threads_model_gives_its_expected_output_and_the_int8_resize_its_wrong_one():
    rep = write.build(CASE, THREAD)
    y = expected_outputs(rep)[0]["y"]
    assert y.ravel().tolist() == [2.0, 3.0, 6.0, 6.0, 5.0, 4.0]  # ORT_DISABLE_ALL in #28448
    assert _int8_resize(rep, "linear").ravel().tolist() == [2.0, 3.0, 5.0, 6.0, 4.0, 4.0]  # its ORT_ENABLE_ALL


@pytest.mark.parametrize("mode, caught", [("linear", True), ("nearest", False)])
def test_an_int8_resize_misses_the_linear_upsample_and_matches_the_nearest_one(mode, caught):
    """Dropping the Q/DQ is exact for nearest (it only picks values), not for linear: the reproducer tells which."""
    rep = write.build(CASE, {"input": "upsample_8x8", "mode": mode})
    steps = expected_outputs(rep)[0]["y"] / rep.output_steps["y"]
    missed = np.abs(_int8_resize(rep, mode) - steps)
    assert bool(missed.max() > rep.tolerance_steps) is caught
    assert np.all(np.abs(steps) <= 127)


def test_documented_by_version_and_level():
    level = "graph_optimization_level"
    assert CASE.expectation_for("onnxruntime", "1.16.3", THREAD).outcome == "fail"
    assert CASE.expectation_for("onnxruntime", "1.26.0", THREAD, {level: "ORT_ENABLE_EXTENDED"}).outcome == "fail"
    assert CASE.expectation_for("onnxruntime", "1.26.0", THREAD, {level: "ORT_DISABLE_ALL"}) is None
    assert CASE.expectation_for("onnxruntime", "1.27.0", THREAD).outcome == "pass"
    assert CASE.expectation_for("onnxruntime", "1.16.3", {"input": "upsample_8x8", "mode": "nearest"}).outcome == "pass"
    assert CASE.expectation_for("openvino", "2026.4.1", THREAD) is None
