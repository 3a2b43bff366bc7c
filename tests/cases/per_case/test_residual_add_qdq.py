"""Case 009 `residual_add_qdq`: a residual Add runs in INT8 only with Q/DQ on the residual input (#1992, #1144)."""

from __future__ import annotations

import pytest

from cases import slug
from cases.residual_add_qdq import CASE
from generators.write import build
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, only


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_for_tensorrt(params):
    assert_symmetric_int8_for_tensorrt(build(CASE, params))


def test_residual_inputs_are_what_the_sweep_says():
    for params in CASE.variants():
        rep = build(CASE, params)
        add = only(rep.model, "Add")
        assert add.input[1] == {"float": "x", "shared_qdq": "x_dq", "own_qdq": "res_dq"}[params["residual"]]


def test_no_version_is_guessed():
    assert CASE.expectations == ()  # no thread states a version
