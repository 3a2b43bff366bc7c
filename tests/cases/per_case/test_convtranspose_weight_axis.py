"""Case 006 `convtranspose_weight_axis`: ConvTranspose INT8 weights quantized per channel on axis 1 (#1694, #1961)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.convtranspose_weight_axis import CASE
from core.numerics import error_steps
from generators.qdq_parts import conv_transpose
from generators.reference import expected_outputs
from generators.write import build
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, attrs, initializers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_for_tensorrt(params):
    assert_symmetric_int8_for_tensorrt(build(CASE, params))


@pytest.mark.parametrize("weights", ("axis0", "axis1"))
def test_a_weight_scale_read_on_the_other_axis_is_off_by_many_steps(weights):
    """What the sweep detects: #1694's TensorRT applied per-channel ConvTranspose scales on the wrong axis."""
    rep = build(CASE, {"weights": weights, "channels": "equal"})
    init = initializers(rep.model)
    dq = next(n for n in rep.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w")
    axis = attrs(dq)["axis"]
    assert axis == {"axis0": 0, "axis1": 1}[weights] and init["w_scale"].shape == (init["w"].shape[axis],)
    x = rep.inputs["x"]
    swapped = np.moveaxis(init["w"].astype(np.float32), 1 - axis, 0) * init["w_scale"].reshape(-1, 1, 1, 1)
    wrong = conv_transpose(x, np.moveaxis(swapped, 0, 1 - axis), 1, 2, 0)
    expected, _ = expected_outputs(rep)
    assert error_steps(expected["y"], wrong, rep.output_steps["y"]) > 5


def test_weight_axis_variants_hold_the_documented_shapes():
    for params in CASE.variants():
        rep = build(CASE, params)
        init = initializers(rep.model)
        out_channels = 8 if params["channels"] == "equal" else 4
        assert init["w"].shape == (8, out_channels, 2, 2) and init["w"].dtype == np.int8
        assert init["w_scale"].shape == {"per_tensor": (), "axis0": (8,), "axis1": (out_channels,)}[params["weights"]]


def test_documented_outcomes_by_version():
    assert CASE.expectation_for("tensorrt", "8.0.1.6", {"weights": "axis1", "channels": "different"}).outcome == "fail"
    assert CASE.expectation_for("tensorrt", "8.5.3.1", {"weights": "axis1", "channels": "different"}) is None


def test_expectations_cite_the_cases_own_threads():
    assert all(e.source in CASE.links for e in CASE.expectations)
