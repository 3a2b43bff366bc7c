"""Case 025 `scalar_quantized_constant`: a 0-d INT8 constant -> DQ -> Mul/Add (BERT's GELU), refused by TensorRT-RTX."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cases import slug
from cases.scalar_quantized_constant import CASE as SCALAR
from generators import write
from tests.cases.per_case.helpers import assert_int8_weights_within_63, initializers, observed_cells, rejudged_8x_cells

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("params", list(SCALAR.variants()), ids=slug)
def test_one_target_and_int8_weights_within_63_so_no_x86_cpu_saturates(params):
    rep = write.build(SCALAR, params)
    assert len(rep.target_nodes) == 1
    assert_int8_weights_within_63(rep)


@pytest.mark.parametrize("params", list(SCALAR.variants()), ids=slug)
def test_the_constant_is_32_int8_steps_of_gelus_half_or_one_and_0d_only_when_scalar(params):
    rep = write.build(SCALAR, params)
    init = initializers(rep.model)
    assert init["c"].dtype == np.int8 and init["c"].shape == ((), (1,))[params["constant"] == "one_element"]
    assert float(init["c"].reshape(-1)[0]) * float(init["c_scale"]) == {"mul": 0.5, "add": 1.0}[params["op"]]
    op = next(n for n in rep.model.graph.node if n.op_type in ("Mul", "Add"))
    assert op.op_type == params["op"].capitalize() and "c_dq" in op.input and op.name == rep.target_nodes[0]


def test_scalar_signatures_match_the_measured_and_observed_errors():
    from cases.scalar_quantized_constant import OBSERVED_RTX_17, RTX_ARCH_LOGS

    errors = json.loads((REPO / RTX_ARCH_LOGS).read_text())["errors"]
    axis, constant = SCALAR.signature("rtx_scalar_dq_axis"), SCALAR.signature("rtx_quantized_constant")
    assert sorted(k.split()[0] for k, e in errors.items() if axis.search(e)) == ["1.4.0.76", "1.5.0.114", "1.6.1.120"]
    assert [k.split()[0] for k, e in errors.items() if constant.search(e)] == ["1.7.1.116"]
    (observed,) = observed_cells(OBSERVED_RTX_17, "user_model/ort_transformer_s8_per_channel_float_bias")
    assert constant.search(observed["error"]) and "inv_sqrt_d_quantized" in observed["error"]


def test_the_one_expectation_is_the_observed_mul_on_rtx_17():
    scalar_mul = {"constant": "scalar", "op": "mul"}
    assert SCALAR.expectation_for("tensorrt-rtx", "1.7.1.116", scalar_mul).stage == "build"
    assert SCALAR.expectation_for("tensorrt-rtx", "1.6.1.120", scalar_mul) is None
    assert SCALAR.expectation_for("tensorrt-rtx", "1.7.1.116", dict(scalar_mul, op="add")) is None
    assert SCALAR.expectation_for("tensorrt-rtx", "1.7.1.116", dict(scalar_mul, constant="one_element")) is None
    assert SCALAR.expectation_for("tensorrt", "8.6.0", scalar_mul).outcome == "int8"  # observed on H100 and H200


@pytest.mark.parametrize("gpu", ["nvidia-h100", "nvidia-h200"])
def test_the_observed_8x_cells_are_as_observed_before(gpu):
    """The GPU rounds' cells (reports/observed/<gpu>/seeds-024-025/), judged again: 4 forms x 4 versions per GPU. The
    expectation is the H100 round's own file, a baseline: its cells agree "as observed before", never "as
    documented"."""
    seen = rejudged_8x_cells(gpu, SCALAR)
    assert len(seen) == 16 and set(seen.values()) == {"as observed before"}
