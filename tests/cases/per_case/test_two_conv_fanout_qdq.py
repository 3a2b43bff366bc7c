"""Case 032 `two_conv_fanout_qdq`: the reduced detector graph behind TensorRT 8.6.0's chooseHigherPrecision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cases import slug
from cases.two_conv_fanout_qdq import CASE, CHOOSE_HIGHER_PRECISION, OBSERVED, REDUCED
from generators import write
from tests.cases.per_case.helpers import assert_int8_weights_within_63

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_each_conv_is_a_target_and_reads_the_one_qdq_activation(params):
    rep = write.build(CASE, params)
    model = rep.model
    producer = {o: n for n in model.graph.node for o in n.output}
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    assert len(convs) == (2 if params["consumers"] == "two" else 1)
    assert {c.name for c in convs} == set(rep.target_nodes)
    assert {c.input[0] for c in convs} == {"x_dq"} and producer["x_dq"].op_type == "DequantizeLinear"
    requantized = [o.name for o in model.graph.output if producer[o.name].op_type == "DequantizeLinear"]
    assert len(requantized) == (len(convs) if params["output_qdq"] == "yes" else 0)
    assert_int8_weights_within_63(rep)


def test_the_reduced_form_has_the_detectors_shape():
    rep = write.build(CASE, {k: v[0] for k, v in REDUCED.items()})
    assert list(rep.inputs["x"].shape) == [1, 48, 104, 104]
    dims = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in rep.model.graph.output}
    assert dims == {"y0": [1, 24, 104, 104], "y1": [1, 24, 104, 104]}


@pytest.mark.parametrize("version", ["8.5.3.1", "8.6.0"])
def test_the_baselines_are_the_reduced_graphs_observed_build_failures(version):
    cells = [json.loads(line) for line in (REPO / OBSERVED.format(version)).read_text().splitlines()]
    failed = [c for c in cells if c.get("engine_version") == version and c.get("status") == "fail"]
    assert failed, "the observation holds the reduced graph's failing cell"
    said = CASE.expectation_for("tensorrt", version, {k: v[0] for k, v in REDUCED.items()})
    assert said is not None and (said.outcome, said.stage, said.basis) == ("fail", "build", "baseline")
    if version == "8.6.0":
        assert all(CHOOSE_HIGHER_PRECISION.search(c["error"]) for c in failed)
    others = [p for p in CASE.variants() if any(p[k] not in v for k, v in REDUCED.items())]
    assert all(CASE.expectation_for("tensorrt", version, p) is None for p in others), "nothing else is claimed"
