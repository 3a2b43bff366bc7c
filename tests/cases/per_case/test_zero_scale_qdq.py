"""Case 033 `zero_scale_qdq`: a Q/DQ Conv with a zero in a scale (NVIDIA/TensorRT#1826, #2498, Model-Optimizer#454)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.zero_scale_qdq import CASE, SCALE_NOT_POSITIVE
from generators import write
from generators.reference import expected_outputs
from generators.zero_scale_qdq import DEAD
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, initializers, run_onnxruntime

# TensorRT 8.6's parser error, as NVIDIA/Model-Optimizer#454 quotes it.
TRT_86 = ('ERROR: builtin_op_importers.cpp:1197 In function QuantDequantLinearHelper:\n[6] Assertion failed: '
          'scaleAllPositive && "Scale coefficients must all be positive"')
# TensorRT for RTX 1.7.1.116's, from an ahead-of-time build of this case on a CPU.
RTX_17 = ("ONNX parse failed: Assertion failed: (scaleAllPositive || allowNegativeScale): Scale coefficients must all "
          "be positive [node node_of_w_dq (DequantizeLinear), resolveScaleInput]")


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_exactly_the_named_scale_holds_a_zero(params):
    rep = write.build(CASE, params)
    assert_symmetric_int8_for_tensorrt(rep)
    inits = initializers(rep.model)
    zero = {name for name, v in inits.items() if name.endswith("_scale") and not np.all(v > 0)}
    if params["zero"] == "weight_channel":
        assert zero == {"w_scale"} and np.flatnonzero(inits["w_scale"] == 0).tolist() == [DEAD]
        assert not inits["w"][DEAD].any() and inits["w"].any()  # the dead channel's INT8 weights are all 0
    else:
        assert zero == {"x_scale"} and inits["x_scale"].ndim == 0 and np.all(inits["w_scale"] > 0)
        assert np.all(rep.inputs["x"] != 0)


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_what_the_zero_leaves_is_the_bias_alone_and_onnx_runtime_agrees(params):
    rep = write.build(CASE, params)
    y, step = expected_outputs(rep)[0]["y"], rep.output_steps["y"]
    bias = initializers(rep.model)["b"]
    dead = y[:, [DEAD]] if params["zero"] == "weight_channel" else y
    wanted = np.rint(np.broadcast_to(bias.reshape(1, -1, 1, 1), y.shape) / step) * step
    assert np.array_equal(dead, wanted[:, [DEAD]] if params["zero"] == "weight_channel" else wanted)
    assert np.array_equal(run_onnxruntime(rep)["y"], y)


def test_the_signature_matches_the_parsers_words_and_the_expectations_are_the_committed_cells():
    """Every 8.x version refuses both forms at parse (the H200's cells, 2026-11-28); TensorRT-RTX has no committed
    cell, so no expectation."""
    from pathlib import Path

    assert SCALE_NOT_POSITIVE.search(TRT_86) and SCALE_NOT_POSITIVE.search(RTX_17)
    assert not SCALE_NOT_POSITIVE.search("Scale coefficients must be positive")
    for version in ("8.5.1.7", "8.5.2.2", "8.5.3.1", "8.6.0"):
        for p in CASE.variants():
            said = CASE.expectation_for("tensorrt", version, p)
            assert said.outcome == "fail" and said.stage == "load" and said.basis == "baseline"
            assert (Path(__file__).resolve().parents[3] / said.source).is_file()
    assert all(CASE.expectation_for("tensorrt-rtx", "1.7.1.116", p) is None for p in CASE.variants())
