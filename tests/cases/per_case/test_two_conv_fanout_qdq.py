"""Case 032 `two_conv_fanout_qdq`: the reduced detector graph behind TensorRT 8.6.0's chooseHigherPrecision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cases import slug
from cases.two_conv_fanout_qdq import CASE, CHOOSE_HIGHER_PRECISION, OBSERVED, OBSERVED_REPRO, REDUCED
from cases.verdict import rejudge
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
def test_the_reduced_detector_graph_failed_as_the_reproducer_does(version):
    """The reduced third-party graph's own cells (where the case came from) fail at build as the trigger forms do."""
    cells = [json.loads(line) for line in (REPO / OBSERVED.format(version)).read_text().splitlines()]
    failed = [c for c in cells if c.get("engine_version") == version and c.get("status") == "fail"]
    assert failed and all(c["last_stage"] == "load" for c in failed), "it parsed, then the build failed"
    if version == "8.6.0":
        assert all(CHOOSE_HIGHER_PRECISION.search(c["error"]) for c in failed)
    said = CASE.expectation_for("tensorrt", version, {k: v[0] for k, v in REDUCED.items()})
    assert said is not None and (said.outcome, said.stage, said.basis) == ("fail", "build", "baseline")


@pytest.mark.parametrize("version", ["8.5.3.1", "8.6.0"])
def test_every_committed_cell_agrees_with_its_baseline(version):
    """Each of the 8 reproducers' own H100 cells: both Convs with requantized outputs fail at build, the rest INT8."""
    from core.results import read_results

    cells = [s.cell for s in read_results(REPO / OBSERVED_REPRO.format(version)).cells if s.cell.case == CASE.id]
    assert len(cells) == 8
    verdicts = {c.bundle: rejudge(c, CASE).verdict for c in cells}
    assert set(verdicts.values()) == {"as observed before"}, verdicts
    failing = {c.bundle for c in cells if c.status == "fail"}
    assert failing == {f"{CASE.id}/consumers=two+output_qdq=yes+size={s}" for s in ("detector", "small")}


def test_a_user_models_failure_with_this_signature_names_seed_032_and_where_it_is_known():
    """A user's detector that fails at build with the chooseHigherPrecision assertion: still a new failure (no source
    speaks of this model), and its verdict line names the case, its seed and the versions it is known on."""
    from dataclasses import replace

    from cases.user_model import CASE as USER_MODEL
    from core.cell import Cell

    error = ("[graphOptimizer.cpp::chooseHigherPrecision::7079] Error Code 2: Internal Error (Assertion dt1 == "
             "DataType::kFLOAT || dt1 == DataType::kHALF failed. )")
    cell = Cell(bundle="user_model/yolox-0123456789", case="user_model", params={}, digest="d", engine="tensorrt",
                engine_version="8.6.0", hardware="NVIDIA H200 (sm_90)", status="fail", verdict="new failure",
                last_stage="load", error=error)
    judged = rejudge(cell, USER_MODEL)
    assert judged.verdict == "new failure" and judged.signature == CHOOSE_HIGHER_PRECISION.name
    assert judged.explanation.startswith("its error matches seed 032 two_conv_fanout_qdq's signature "
                                         "'chooseHigherPrecision assertion', known on TensorRT 8.5.1.7, 8.5.2.2, "
                                         "8.5.3.1, 8.6.0 (observed before)")
    assert "seed 032" not in rejudge(replace(cell, error="something else"), USER_MODEL).explanation
