"""Case 032 `two_conv_fanout_qdq`: the reduced detector graph behind TensorRT 8.6.0's chooseHigherPrecision."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cases import bundle_id, slug
from cases.two_conv_fanout_qdq import CASE, CHOOSE_HIGHER_PRECISION, FIRST, OBSERVED, OBSERVED_REPRO
from cases.verdict import rejudge
from generators import write
from generators.reference import expected_outputs
from tests.cases.per_case.helpers import (
    assert_int8_weights_within_63,
    attrs,
    initializers,
    only,
    producers,
    run_onnxruntime,
)

REPO = Path(__file__).resolve().parents[3]
VARIANTS = list(CASE.variants())
MERGED = [p for p in VARIANTS if p["rewrite"] == "merged"]
COPIES = [p for p in VARIANTS if p["rewrite"] in ("dq_copies", "qdq_copies")]
CONSUMERS = {"one": 1, "two": 2, "three": 3}
# What each tail puts between a Conv output and its graph output, graph output first.
TAILS = {"yes": ["DequantizeLinear", "QuantizeLinear"], "no": [], "identity": ["Identity"],
         "relu_qdq": ["DequantizeLinear", "QuantizeLinear", "Relu"],
         "concat_qdq": ["DequantizeLinear", "QuantizeLinear", "Concat"]}
# The first 8 reproducers, whose committed cells (reports/observed/) name them by these ids.
FIRST_8 = {f"{CASE.id}/consumers={c}+output_qdq={q}+size={s}"
           for c in ("two", "one") for q in ("yes", "no") for s in ("detector", "small")}
REDUCED = {"consumers": ("two",), "output_qdq": ("yes",), "size": ("detector",), **FIRST}  # the reduced detector


def _chain(model, output: str) -> list:
    """The op types from a graph output back to the first Conv or Split: what the tail is."""
    producer, found = producers(model), []
    while producer[output].op_type not in ("Conv", "Split"):
        found.append(producer[output].op_type)
        output = producer[output].input[0]
    return found


@pytest.mark.parametrize("params", VARIANTS, ids=slug)
def test_each_conv_is_a_target_and_reads_the_one_qdq_activation(params):
    rep = write.build(CASE, params)
    model = rep.model
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    merged = params["rewrite"] == "merged"
    assert len(convs) == (1 if merged else CONSUMERS[params["consumers"]])
    assert {c.name for c in convs} == set(rep.target_nodes)
    sources = {c.input[0] for c in convs}
    assert sources == ({"x_dq"} if params["rewrite"] in ("none", "merged") else {f"x_dq{k}" for k in range(len(convs))})
    dqs = [producers(model)[s] for s in sources]
    assert {d.op_type for d in dqs} == {"DequantizeLinear"} and {producers(model)[d.input[0]].op_type
                                                                  for d in dqs} == {"QuantizeLinear"}
    quantizers = {producers(model)[d.input[0]].name for d in dqs}
    assert len(quantizers) == (len(convs) if params["rewrite"] == "qdq_copies" else 1)
    assert all(_chain(model, o.name) == TAILS[params["output_qdq"]] for o in model.graph.output)
    assert len(model.graph.output) == (1 if params["output_qdq"] == "concat_qdq" else CONSUMERS[params["consumers"]])
    kernels = {tuple(attrs(c)["kernel_shape"]) for c in convs}
    assert kernels == ({(1, 1), (3, 3)} if params["siblings"] == "other_kernel" else
                       {(3, 3) if params["kernel"] == "3x3" else (1, 1)})
    assert all(attrs(c).get("pads", [0] * 4) == [attrs(c)["kernel_shape"][0] // 2] * 4 for c in convs)
    assert {tuple(attrs(c).get("strides", (1, 1))) for c in convs} == (
        {(1, 1), (2, 2)} if params["siblings"] == "other_stride" else {(1, 1)})
    scales = [v for k, v in initializers(model).items() if k.startswith("w") and k.endswith("_scale")]
    assert all(s.ndim == (0 if params["weights"] == "per_tensor" and not merged else 1) for s in scales)
    assert_int8_weights_within_63(rep)


def test_the_first_8_reproducers_keep_their_ids_and_the_sweep_stays_small():
    """The added axes at their first value leave the id; every added value is swept; at most 55 reproducers; each
    copies form is a trigger form's twin."""
    ids = {bundle_id(CASE, p): p for p in VARIANTS}
    assert FIRST_8 <= set(ids) and len(ids) == len(VARIANTS) <= 55
    assert all(all(ids[i][k] == v for k, v in CASE.defaults.items()) for i in FIRST_8)
    assert all({p[axis] for p in VARIANTS} == set(values) for axis, values in CASE.axes.items())
    triggers = [p for p in VARIANTS if p["consumers"] != "one" and p["output_qdq"] != "no"
                and p["siblings"] == "alike" and p["rewrite"] == "none"]
    assert {bundle_id(CASE, dict(p, rewrite="none")) for p in MERGED} == {bundle_id(CASE, p) for p in triggers}
    assert {bundle_id(CASE, dict(p, rewrite="none")) for p in COPIES} <= {bundle_id(CASE, p) for p in triggers}


@pytest.mark.parametrize("params", COPIES, ids=slug)
def test_a_copies_form_is_its_twin_with_the_activation_copied(params):
    """What the field tried: the twin's weights, a Q/DQ copy per Conv of the same scale and zero point; the reference
    outputs equal the twin's exactly."""
    rep, twin = write.build(CASE, params), write.build(CASE, dict(params, rewrite="none"))
    inits, twin_inits = initializers(rep.model), initializers(twin.model)
    assert all(np.array_equal(inits[k], v) for k, v in twin_inits.items() if not k.startswith("x_"))
    assert np.array_equal(rep.inputs["x"], twin.inputs["x"]) and rep.output_steps == twin.output_steps
    mine, theirs = expected_outputs(rep)[0], expected_outputs(twin)[0]
    assert mine.keys() == theirs.keys() and all(np.array_equal(mine[k], theirs[k]) for k in mine)


@pytest.mark.parametrize("params", MERGED, ids=slug)
def test_the_merged_form_computes_what_its_twin_does_bit_for_bit(params):
    """The way around it: one Conv (the twins' weights, per-channel scales and biases concatenated) and a Split;
    its reference outputs and ONNX Runtime's (optimizations off) equal the unmerged twin's exactly."""
    rep, twin = write.build(CASE, params), write.build(CASE, dict(params, rewrite="none"))
    inits, twin_inits = initializers(rep.model), initializers(twin.model)
    count = CONSUMERS[params["consumers"]]
    assert np.array_equal(inits["w"], np.concatenate([twin_inits[f"w{k}"] for k in range(count)]))
    assert np.array_equal(inits["b"], np.concatenate([twin_inits[f"b{k}"] for k in range(count)]))
    scales = [np.broadcast_to(twin_inits[f"w{k}_scale"], (twin_inits[f"w{k}"].shape[0],)) for k in range(count)]
    assert np.array_equal(inits["w_scale"], np.concatenate(scales))
    assert list(inits["split"]) == [twin_inits[f"w{k}"].shape[0] for k in range(count)]
    assert attrs(only(rep.model, "Split"))["axis"] == 1
    assert np.array_equal(rep.inputs["x"], twin.inputs["x"])
    for mine, theirs in ((expected_outputs(rep)[0], expected_outputs(twin)[0]), (run_onnxruntime(rep),
                                                                              run_onnxruntime(twin))):
        assert mine.keys() == theirs.keys() and all(np.array_equal(mine[k], theirs[k]) for k in mine)
    assert rep.output_steps == twin.output_steps


def test_a_cell_written_before_the_axes_were_added_is_judged_at_their_first_value():
    """The committed cells name 8 reproducers without the added axes; the baselines still judge them as the same
    reproducers at the added axes' first values, and every form of the sweep has a baseline (the H200's, every 8.x);
    the copies forms' baselines name their own round's file and expect the twin's failure."""
    for version in ("8.5.1.7", "8.5.2.2", "8.5.3.1", "8.6.0"):
        for p in COPIES:
            said = CASE.expectation_for("tensorrt", version, p)
            assert said.outcome == "fail" and said.signature == "choose_higher_precision", (version, p)
            assert said.source.endswith(f"round-2026-11-28b/trt-{version}.jsonl")
        for p in (p for p in VARIANTS if p not in COPIES):
            said = CASE.expectation_for("tensorrt", version, p)
            assert said is not None and said.basis == "baseline", (version, p)
            if all(p[k] == v for k, v in CASE.defaults.items()) and p["output_qdq"] in ("yes", "no") \
                    and p["consumers"] != "three":
                old = {k: p[k] for k in ("consumers", "output_qdq", "size")}
                assert CASE.expectation_for("tensorrt", version, old) == said


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


def test_a_committed_cells_params_rebuild_its_model():
    """A cell written before the axes were added names 3 parameters; its model is rebuilt byte for byte."""
    old = {"consumers": "two", "output_qdq": "yes", "size": "small"}
    full = next(p for p in VARIANTS if bundle_id(CASE, p) == bundle_id(CASE, old))
    assert write.build(CASE, old).model.SerializeToString() == write.build(CASE, full).model.SerializeToString()


def test_a_user_models_failure_with_this_signature_names_seed_032_and_where_it_is_known():
    """A user's detector that fails at build with the chooseHigherPrecision assertion, where its lint matched seed
    032's pattern (the cell was recorded with the signature): still a new failure (no source speaks of this model),
    and its verdict line names the case, its seed and the versions it is known on. Without the lint's match (no
    signature recorded), the error text alone names no seed case when the cell is judged again."""
    from dataclasses import replace

    from cases.user_model import CASE as USER_MODEL
    from core.cell import Cell

    error = ("[graphOptimizer.cpp::chooseHigherPrecision::7079] Error Code 2: Internal Error (Assertion dt1 == "
             "DataType::kFLOAT || dt1 == DataType::kHALF failed. )")
    cell = Cell(bundle="user_model/yolox-0123456789", case="user_model", params={}, digest="d", engine="tensorrt",
                engine_version="8.6.0", hardware="NVIDIA H200 (sm_90)", status="fail", verdict="new failure",
                last_stage="load", error=error, signature=CHOOSE_HIGHER_PRECISION.name)
    judged = rejudge(cell, USER_MODEL)
    assert judged.verdict == "new failure" and judged.signature == CHOOSE_HIGHER_PRECISION.name
    assert judged.explanation.startswith("its error matches seed 032 two_conv_fanout_qdq's signature "
                                         "'chooseHigherPrecision assertion', known on TensorRT 8.5.1.7, 8.5.2.2, "
                                         "8.5.3.1, 8.6.0 (observed before)")
    assert "seed 032" not in rejudge(replace(cell, error="something else"), USER_MODEL).explanation
    unbacked = rejudge(replace(cell, signature=""), USER_MODEL)
    assert unbacked.signature == "" and "seed 032" not in unbacked.explanation
