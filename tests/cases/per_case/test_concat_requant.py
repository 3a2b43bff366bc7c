"""Case 010 `concat_requant`: Concat of Q/DQ inputs with different scales, requantized (#3861, #4401, #2597)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.concat_requant import CASE
from generators.write import build
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, initializers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_for_tensorrt(params):
    assert_symmetric_int8_for_tensorrt(build(CASE, params))


def test_concat_inputs_are_what_the_sweep_says():
    for params in CASE.variants():
        rep = build(CASE, params)
        init = initializers(rep.model)
        equal = float(init["a_scale"]) == float(init["b_scale"])
        assert equal == (params["scales"] == "equal")
        assert ("cat_scale" in init) == params["output_qdq"]
        for name in ("a", "b"):  # inputs sit on their own Q's grid: their Q is exact, only the Concat Q rounds
            steps = rep.inputs[name] / init[f"{name}_scale"]
            assert np.array_equal(steps, np.rint(steps))


def test_no_version_is_guessed():
    assert CASE.expectations == ()  # no thread states a version
