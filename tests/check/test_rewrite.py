"""check offers seed 032's way around: sibling INT8 Convs on one Q/DQ activation merged into one Conv and a Split, its
outputs equal to the original's on the reference, and the committed cells that prove the merged form builds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cases import slug
from cases.two_conv_fanout_qdq import CASE
from check.__main__ import main
from check.bundle import bundle_from_model
from check.reference import onnx_reference_run
from check.rewrite import MERGED_FILE, compare, offer, sibling_groups
from generators import write
from matrix.nodes import node_report, write_node_reports

REPO = Path(__file__).resolve().parents[2]
VERSIONS = ("8.5.1.7", "8.5.2.2", "8.5.3.1", "8.6.0")


def _const(array, name: str):
    return numpy_helper.from_array(np.asarray(array), name)


def detector(path: Path, per_tensor: bool = False, heads: int = 2, seed: int = 0, int32_bias: bool = False,
             asymmetric: bool = False) -> Path:
    """A small detector-like graph: x -> Q/DQ -> a 3x3 stem Conv -> Relu -> Q/DQ, read by `heads` sibling 1x1 Convs
    (4, 6, 5 output channels, INT8 weights per channel or per tensor, a float bias or, as quantize_static writes it
    by default, an INT32 bias through a DequantizeLinear at scale activation x weight), each quantized again; with
    `asymmetric`, every activation Q/DQ is uint8 at zero point 128 (QUInt8 activations)."""
    rng = np.random.default_rng(seed)
    zero = np.uint8(128) if asymmetric else np.int8(0)
    inits = [_const(np.float32(2.0**-4), "xs"), _const(zero, "z"), _const(np.float32(2.0**-3), "fs"),
             _const(rng.integers(-63, 64, (8, 3, 3, 3)).astype(np.int8), "stem_w"),
             _const(rng.uniform(0.005, 0.02, 8).astype(np.float32), "stem_ws"), _const(np.zeros(8, np.int8), "stem_wz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "z"], ["xq"], name="x_q"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "z"], ["xd"], name="x_dq"),
             helper.make_node("DequantizeLinear", ["stem_w", "stem_ws", "stem_wz"], ["stem_wd"], name="stem_w_dq",
                              axis=0),
             helper.make_node("Conv", ["xd", "stem_wd"], ["s"], name="stem", kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Relu", ["s"], ["r"], name="stem_relu"),
             helper.make_node("QuantizeLinear", ["r", "fs", "z"], ["fq"], name="f_q"),
             helper.make_node("DequantizeLinear", ["fq", "fs", "z"], ["fd"], name="f_dq")]
    outputs = []
    for k, channels in enumerate((4, 6, 5)[:heads]):
        scale = np.float32(0.01 * (k + 1)) if per_tensor else rng.uniform(0.005, 0.02, channels).astype(np.float32)
        inits += [_const(rng.integers(-63, 64, (channels, 8, 1, 1)).astype(np.int8), f"w{k}"), _const(scale, f"ws{k}"),
                  _const(np.zeros(np.shape(scale), np.int8), f"wz{k}"),
                  _const(np.float32(2.0**-2), f"ys{k}")]
        if int32_bias:
            inits += [_const(rng.integers(-500, 501, channels).astype(np.int32), f"bq{k}"),
                      _const((np.float32(2.0**-3) * scale).astype(np.float32), f"bs{k}"),
                      _const(np.zeros(np.shape(scale), np.int32), f"bz{k}")]
            nodes.append(helper.make_node("DequantizeLinear", [f"bq{k}", f"bs{k}", f"bz{k}"], [f"b{k}"],
                                          name=f"b{k}_dq", **({} if per_tensor else {"axis": 0})))
        else:
            inits.append(_const((rng.integers(-8, 9, channels) / 64).astype(np.float32), f"b{k}"))
        nodes += [helper.make_node("DequantizeLinear", [f"w{k}", f"ws{k}", f"wz{k}"], [f"wd{k}"], name=f"w{k}_dq",
                                   **({} if per_tensor else {"axis": 0})),
                  helper.make_node("Conv", ["fd", f"wd{k}", f"b{k}"], [f"c{k}"], name=f"head{k}", kernel_shape=[1, 1]),
                  helper.make_node("QuantizeLinear", [f"c{k}", f"ys{k}", "z"], [f"q{k}"], name=f"q{k}"),
                  helper.make_node("DequantizeLinear", [f"q{k}", f"ys{k}", "z"], [f"y{k}"], name=f"dq{k}")]
        outputs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [1, channels, 16, 16]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    graph = helper.make_graph(nodes, "detector", [x], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _ops(model) -> List[str]:
    return [n.op_type for n in model.graph.node]


def _reference_equal(original: Path, merged: Path, inputs) -> bool:
    """onnx.reference (onnx's own operator definitions, not ONNX Runtime) gives both models the same outputs."""
    mine, theirs = onnx_reference_run(onnx.load(str(merged)), inputs), onnx_reference_run(onnx.load(str(original)),
                                                                                         inputs)
    return mine.keys() == theirs.keys() and all(np.array_equal(mine[k], theirs[k]) for k in mine)


@pytest.mark.parametrize("per_tensor", [False, True], ids=["per_channel", "per_tensor"])
def test_a_detector_with_sibling_heads_is_offered_the_merged_model_equal_bit_for_bit(tmp_path, per_tensor):
    bundle = bundle_from_model(detector(tmp_path / "det.onnx", per_tensor=per_tensor), tmp_path / "out")
    record = bundle.meta["rewrite"]
    assert record["offered"] and record["why_not"] == "" and record["model"] == MERGED_FILE
    assert [g["convs"] for g in record["groups"]] == [["head0", "head1"]]
    assert record["comparison"]["bit_for_bit"] and record["comparison"]["steps"] == 0.0
    merged_path = bundle.path / MERGED_FILE
    merged = onnx.load(str(merged_path))
    onnx.checker.check_model(merged, full_check=True)
    assert _ops(merged).count("Conv") == 2 and _ops(merged).count("Split") == 1, "the stem and one merged head"
    weights = {t.name: numpy_helper.to_array(t) for t in merged.graph.initializer}
    assert weights["head0__merged_w"].shape == (10, 8, 1, 1) and weights["head0__merged_w_scale"].shape == (10,)
    if per_tensor:  # the scalar scales repeated per output channel
        assert list(weights["head0__merged_w_scale"]) == pytest.approx([0.01] * 4 + [0.02] * 6)
    assert not {"w0", "w1", "ws0", "ws1"} & set(weights), "the old weights are gone with their Convs"
    inputs = dict(np.load(bundle.path / "inputs.npz"))
    assert _reference_equal(bundle.path / "model.onnx", merged_path, inputs)


@pytest.mark.parametrize("per_tensor", [False, True], ids=["per_channel", "per_tensor"])
def test_an_int32_bias_through_a_dequantizelinear_merges_as_quantize_static_writes_it(tmp_path, per_tensor):
    """quantize_static's default bias (INT32, dequantized at activation x weight scale) is no reason to decline: the
    merged Conv's bias is the siblings' INT32 values and scales concatenated, dequantized per output channel, and the
    outputs equal the original's bit for bit."""
    model = detector(tmp_path / "det.onnx", per_tensor=per_tensor, int32_bias=True)
    bundle = bundle_from_model(model, tmp_path / "out")
    record = bundle.meta["rewrite"]
    assert record["offered"] and record["why_not"] == "", record
    assert record["comparison"]["bit_for_bit"]
    merged = onnx.load(str(bundle.path / MERGED_FILE))
    onnx.checker.check_model(merged, full_check=True)
    weights = {t.name: numpy_helper.to_array(t) for t in merged.graph.initializer}
    assert weights["head0__merged_b"].dtype == np.int32 and weights["head0__merged_b"].shape == (10,)
    assert weights["head0__merged_b_scale"].shape == (10,)
    assert _ops(merged).count("Conv") == 2 and not {"bq0", "bq1", "bs0", "bs1"} & set(weights)
    assert _reference_equal(bundle.path / "model.onnx", bundle.path / MERGED_FILE,
                            dict(np.load(bundle.path / "inputs.npz")))


def test_the_offer_names_the_committed_merged_cells_that_build_in_int8_on_every_8x_version(tmp_path):
    record = bundle_from_model(detector(tmp_path / "det.onnx", per_tensor=True), tmp_path / "out").meta["rewrite"]
    cells = record["cells"]
    assert {c["version"] for c in cells if c["int8"]} == set(VERSIONS)
    assert {c["reproducer"] for c in cells} == {f"{CASE.id}/consumers=two+output_qdq=yes+size=small"
                                                "+weights=per_tensor+rewrite=merged"}
    assert all((REPO / c["file"]).is_file() and c["file"].startswith("reports/observed/") for c in cells)
    assert all(c["status"] == "pass" for c in cells)


def test_a_model_with_asymmetric_activations_is_told_the_parser_refuses_it_first_and_cited_no_cells(tmp_path):
    """uint8 activations at zero point 128: TensorRT's parser refuses the model before its builder, so the merged
    reproducers' INT8 cells (symmetric) prove nothing for it; the offer says so and cites none."""
    bundle = bundle_from_model(detector(tmp_path / "det.onnx", per_tensor=True, asymmetric=True), tmp_path / "out")
    record = bundle.meta["rewrite"]
    assert [g["convs"] for g in record["groups"]] == [["head0", "head1"]], "the seed-032 pattern matched"
    assert not record["offered"] and record["cells"] == [] and not (bundle.path / MERGED_FILE).exists()
    assert "refuses this model at parse" in record["why_not"] and "non-zero zero point" in record["why_not"]
    assert "x_q" in record["why_not"] and '"ActivationSymmetric": True' in record["why_not"]
    from check.rewrite import notes

    [line] = notes(record, bundle.path)
    assert "not offered" in line and "refuses this model at parse" in line and "builds in INT8" not in line


def test_a_model_without_the_pattern_is_offered_nothing(tmp_path):
    bundle = bundle_from_model(detector(tmp_path / "one.onnx", heads=1), tmp_path / "out")
    assert bundle.meta["rewrite"] == {} and not (bundle.path / MERGED_FILE).exists()


def test_check_says_where_the_rewritten_model_is_and_its_report_shows_the_cells(tmp_path, capsys):
    model = detector(tmp_path / "det.onnx")
    assert main([str(model), "--prepare-only", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    written = next(line for line in out.splitlines() if "seed 032" in line and "written to" in line)
    assert "outputs equal bit for bit" in written and Path(written.split("written to ")[1]).is_file()
    assert sum(line.strip().startswith("builds in INT8 on TensorRT") for line in out.splitlines()) == 4
    bundle = next(p for p in (tmp_path / "b" / "user_model").iterdir() if not p.name.startswith("."))
    meta = json.loads((bundle / "case.json").read_text())
    paths = write_node_reports(node_report([], meta), tmp_path / "reports", bundle.name)
    md = paths[0].read_text()
    assert "## A way around it: seed 032's sibling Convs merged" in md and "equal the original's bit for bit" in md
    assert all(f"| {v} | INT8 | `{CASE.id}/consumers=two+output_qdq=yes+size=" in md for v in VERSIONS)


@pytest.mark.parametrize("params", [p for p in CASE.variants() if p["rewrite"] in ("dq_copies", "qdq_copies")
                                    or (p["rewrite"] == "none" and p["consumers"] != "one" and p["output_qdq"] != "no"
                                        and p["siblings"] == "alike" and p["size"] == "small")], ids=slug)
def test_every_failing_reproducer_of_the_case_is_merged_and_computes_the_same(tmp_path, params):
    """The case's own trigger forms, and the copies the field tried: one group, merged, bit for bit on the reference."""
    rep = write.build(CASE, params)
    path = tmp_path / "m.onnx"
    onnx.save(rep.model, str(path))
    groups, declined = sibling_groups(rep.model)
    assert len(groups) == 1 and not declined
    assert [c.name for c in groups[0].convs] == [f"node_of_c{k}" for k in range(len(groups[0].convs))]

    def reference(model: Path, inputs):
        return onnx_reference_run(onnx.load(str(model)), inputs), {}, ""

    expected = reference(path, rep.inputs)[0]
    record = offer(path, rep.inputs, expected, rep.output_steps, reference, tmp_path)
    assert record["offered"] and record["comparison"]["bit_for_bit"], record
    merged = onnx.load(str(tmp_path / MERGED_FILE))
    producer = {o: n for n in merged.graph.node for o in n.output}
    constants = {t.name for t in merged.graph.initializer}
    dqs = [n for n in merged.graph.node if n.op_type == "DequantizeLinear"]
    assert _ops(merged).count("Conv") == 1 and sum(n.input[0] in constants for n in dqs) == 1, "one weight DQ"
    assert len([n for n in dqs if n.input[0] in producer and producer[n.input[0]].input[0] == "x"]) == 1, \
        "the copies of the activation's Q/DQ are gone with the Convs that read them"


def test_the_merged_reproducer_itself_is_offered_nothing(tmp_path):
    params = next(p for p in CASE.variants() if p["rewrite"] == "merged")
    assert sibling_groups(write.build(CASE, params).model) == ([], [])


def test_outputs_that_move_past_one_step_refuse_the_offer(tmp_path):
    """A reference that moves an output by two steps (a double: the plumbing of the refusal): nothing offered, the
    rewritten model is not left behind, and the reason says by how much."""
    path = detector(tmp_path / "det.onnx")
    inputs = {"x": np.zeros((1, 3, 16, 16), np.float32)}
    expected = {"y0": np.zeros((1, 4, 16, 16), np.float32), "y1": np.zeros((1, 6, 16, 16), np.float32)}
    steps = {"y0": 0.25, "y1": 0.25}

    def moved(model: Path, given):
        return {"y0": expected["y0"] + 0.5, "y1": expected["y1"]}, {}, ""

    record = offer(path, inputs, expected, steps, moved, tmp_path)
    assert not record["offered"] and "2 steps" in record["why_not"] and not (tmp_path / MERGED_FILE).exists()
    within = compare(expected, {"y0": expected["y0"] + 0.25, "y1": expected["y1"]}, steps)
    assert not within["bit_for_bit"] and within["steps"] == 1.0
    assert compare(expected, {"y0": expected["y0"][:, :2], "y1": expected["y1"]}, steps)["steps"] is None


def _at_opset_12(path: Path) -> Path:
    """The model at opset 12 (a per-tensor DequantizeLinear is valid there): no per-channel axis for a merged Conv."""
    model = onnx.load(str(path))
    inits = {t.name: t for t in model.graph.initializer}
    for n in model.graph.node:  # opset 12's DequantizeLinear has no axis: a per-channel scale becomes per tensor
        if any(a.name == "axis" for a in n.attribute):
            scale, zero = (numpy_helper.to_array(inits[i]) for i in n.input[1:3])
            inits[n.input[1]].CopyFrom(_const(np.float32(scale.max()), n.input[1]))
            inits[n.input[2]].CopyFrom(_const(zero.flat[0], n.input[2]))
            del n.attribute[:]
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", 12))
    model.ir_version = 7
    onnx.save(model, str(path))
    return path


def test_convs_that_cannot_merge_are_named_with_their_reason_once(tmp_path):
    """Every matched Conv declined for one reason: the record says what matched and the reason once with the Convs it
    holds for (a user's report repeated a per-Conv reason 17 times in one 1,000-character line)."""
    path = _at_opset_12(detector(tmp_path / "det.onnx", per_tensor=True, heads=3))
    record = bundle_from_model(path, tmp_path / "out").meta["rewrite"]
    assert record["groups"] == [] and len(record["declined"]) == 3 and not record["offered"]
    assert record["matched"] == "3 Convs (head0, head1, head2)", record["matched"]
    assert record["why_not"] == ("no group of sibling Convs can be merged: head0, head1, head2: opset 12: "
                                 "DequantizeLinear has no per-channel axis before opset 13"), record["why_not"]
    from check.rewrite import notes

    [line] = notes(record, tmp_path)
    assert "its pattern matched 3 Convs (head0, head1, head2)" in line and line.count("opset 12") == 1, line


def test_a_parse_refusal_is_the_reason_even_where_no_group_can_merge(tmp_path):
    """Asymmetric activations and Convs that cannot merge: the parser's refusal (the model never reaches the build
    where seed 032 fails) is the reason given, not the Convs' (a user's report gave only the per-Conv reason)."""
    path = _at_opset_12(detector(tmp_path / "det.onnx", per_tensor=True, asymmetric=True))
    record = bundle_from_model(path, tmp_path / "out").meta["rewrite"]
    assert record["groups"] == [] and record["declined"] and not record["offered"]
    assert "refuses this model at parse" in record["why_not"] and "non-zero zero point" in record["why_not"]
    meta = {"target_nodes": [], "rewrite": record}
    md = write_node_reports(node_report([], meta), tmp_path / "reports", "m")[0].read_text()
    assert "Seed 032's pattern (sibling INT8 Convs on one Q/DQ activation" in md
    assert "matched 2 Convs (head0, head1)" in md
    assert "The lint's seed-032 pattern" not in md, "the lint has no seed-032 row where it predicts a parse failure"
