"""Case 016 `fp8_conv_stack`: an FP8 E4M3 Q/DQ stack of three Convs crashes TensorRT-RTX (RTX#35, TensorRT#4817)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.fp8_conv_stack import CASE
from generators import write
from tests.cases.per_case.helpers import initializers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_fp8_conv_stack_has_the_threads_channels_and_unsaturated_scales(params):
    rep = write.build(CASE, params)
    init = initializers(rep.model)
    convs = [n for n in rep.model.graph.node if n.op_type == "Conv"]
    assert [init[n.input[1].removesuffix("_dq")].shape[:2] for n in convs] == [(64, 3), (64, 64), (3, 64)]
    assert [n.name for n in convs] == list(rep.target_nodes)
    assert [n.op_type for n in rep.model.graph.node].count("Relu") == 2
    dtype = np.dtype(params["activation"])
    assert all(init[f"a{k}_scale"].dtype == dtype for k in (1, 2, 3)) and rep.inputs["x"].dtype == dtype


def test_the_rtx_35_crash_is_a_run_time_expectation_for_the_default_target():
    params = next(iter(CASE.variants()))
    crash = CASE.expectation_for("tensorrt-rtx", "1.5.0.114", params, {"target": "default"})
    assert crash is not None and crash.stage == "run" and crash.source.endswith("TensorRT-RTX/issues/35")
    assert CASE.expectation_for("tensorrt-rtx", "1.5.0.114", params, {"target": "SM86"}) is None
    assert CASE.expectation_for("tensorrt-rtx", "1.7.1.116", params, {"target": "default"}) is None
