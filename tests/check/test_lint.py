"""check.lint: TensorRT predictions from the catalogue and observed cells, and prediction against observation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from check.lint import PREDICTIONS, Finding, compare, covers, lint_model, lint_path, main, to_json, to_markdown

ROOT = Path(__file__).resolve().parents[2]


def _grouped_conv(cpg: int, activation: str = "int8", epilogue: str = "relu", output_qdq: bool = True):
    from generators.grouped_conv import build

    params = {"cpg": cpg, "weights": "per_channel", "activation": activation, "output_qdq": output_qdq,
              "epilogue": epilogue}
    return build(params, np.random.default_rng(0)).model


def _by(findings, rule, engine="tensorrt"):
    return [f for f in findings if f.rule == rule and f.engine == engine]


def test_grouped_conv_cpg3_is_predicted_to_fail_the_build_from_the_observed_h200_cells():
    found = _by(lint_model(_grouped_conv(3)), "grouped_conv")
    assert found, "the Conv with 3 channels per group matches catalogue case grouped_conv"
    observed = [f for f in found if f.source.startswith("reports/observed/")]
    assert observed and all(f.predicted == "build fails" for f in observed)
    assert any(covers(f.versions, "8.6.0") and covers(f.versions, "8.5.3.1") for f in observed)
    assert not any(covers(f.versions, "10.8.0.43") for f in observed), "nothing observed on 10.x: no prediction there"


def test_findings_speak_per_engine_tensorrt_rtx_1_7_builds_the_grouped_conv_tensorrt_8_6_refuses():
    rtx = [f for f in _by(lint_model(_grouped_conv(3)), "grouped_conv", "tensorrt-rtx")
           if f.source.startswith("reports/observed/")]
    assert rtx and all(f.engine == "tensorrt-rtx" and f.predicted in ("int8", "float") for f in rtx)
    assert any(covers(f.versions, "1.7.1.116") for f in rtx) and not any(covers(f.versions, "8.6.0") for f in rtx)


def test_grouped_conv_cpg2_fails_only_on_8_6_0():
    found = [f for f in _by(lint_model(_grouped_conv(2)), "grouped_conv") if f.source.startswith("reports/")]
    assert {f.predicted for f in found if covers(f.versions, "8.6.0")} == {"build fails"}
    assert {f.predicted for f in found if covers(f.versions, "8.5.3.1")} == {"int8"}


def test_uint8_activations_predict_a_parse_failure_and_name_the_quantizer_option():
    found = _by(lint_model(_grouped_conv(4, activation="uint8")), "uint8_activation")
    assert found and {f.predicted for f in found} == {"parse fails"}
    assert all('"ActivationSymmetric": True' in f.fix and "QuantType.QInt8" in f.fix for f in found)


def test_no_observed_folder_keeps_the_catalogue_predictions_only(tmp_path):
    from cases.common import NONZERO_ZERO_POINT_RTX

    found = lint_model(_grouped_conv(4, activation="uint8"), observed=tmp_path)
    committed = {f.source for f in found if f.source.startswith("reports/")}
    assert found and committed == {NONZERO_ZERO_POINT_RTX.source}, "no cell read, a source rule's baseline only"


def _conv_with_dq_weights(kernel_shape: bool, bias: bool = False):
    w = np.ones((4, 3, 3, 3), np.int8)
    inits = [numpy_helper.from_array(w, "w_q"), numpy_helper.from_array(np.float32(0.1), "s"),
             numpy_helper.from_array(np.int8(0), "z"), numpy_helper.from_array(np.ones(4, np.int32), "b_q"),
             numpy_helper.from_array(np.float32(0.01), "s_b"), numpy_helper.from_array(np.int32(0), "z_b")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq"),
             helper.make_node("DequantizeLinear", ["w_q", "s", "z"], ["wd"], name="dq_w"),
             helper.make_node("DequantizeLinear", ["b_q", "s_b", "z_b"], ["bd"], name="dq_b"),
             helper.make_node("Conv", ["xd", "wd"] + (["bd"] if bias else []), ["y"], name="conv",
                              **({"kernel_shape": [3, 3]} if kernel_shape else {}))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_conv_without_kernel_shape_fails_to_parse_on_8x_only():
    found = _by(lint_model(_conv_with_dq_weights(kernel_shape=False)), "conv_without_kernel_shape")
    assert [f.node for f in found] == ["conv"]
    assert covers(found[0].versions, "8.6.0") and not covers(found[0].versions, "10.8.0.43")
    assert not _by(lint_model(_conv_with_dq_weights(kernel_shape=True)), "conv_without_kernel_shape")


def test_an_int32_bias_dequantize_is_flagged_with_quantize_bias_off():
    found = _by(lint_model(_conv_with_dq_weights(True, bias=True)), "dq_non_activation")
    assert [f.node for f in found] == ["dq_b"] and '"QuantizeBias": False' in found[0].fix


def test_dynamic_quantize_linear_from_quantize_dynamic_fails_to_parse(tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "f.onnx"))
    quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "d.onnx"), weight_type=QuantType.QInt8)
    found = lint_path(tmp_path / "d.onnx")
    dql = _by(found, "dynamic_quantize_linear")
    assert dql and all(f.predicted == "parse fails" for f in dql if covers(f.versions, "8.6.0"))
    assert any(f.source == "https://github.com/NVIDIA/TensorRT/issues/3963" for f in dql)


def test_cli_prints_markdown_or_json_and_exits_zero(tmp_path, capsys):
    onnx.save(_grouped_conv(3), str(tmp_path / "gc.onnx"))
    assert main([str(tmp_path / "gc.onnx")]) == 0
    assert "| `node_of_conv` | grouped_conv |" in capsys.readouterr().out
    assert main([str(tmp_path / "gc.onnx"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "qdq-matrix/lint/1"
    assert {tuple(sorted(f)) for f in data["findings"]} == {
        ("basis", "case", "detail", "engine", "fix", "node", "predicted", "rule", "setting", "source", "versions",
         "words")}
    assert {f["words"] for f in data["findings"]} == {"INT8 grouped Conv"}  # the rule registry's words
    assert all(f["predicted"] in PREDICTIONS for f in data["findings"])


def test_each_finding_says_whether_a_document_or_observed_cells_gave_it_and_which():
    found = [f for f in lint_model(_grouped_conv(4, activation="uint8")) if f.rule == "grouped_conv"]
    assert {f.basis for f in found} == {"documented", "observed"} and {f.case for f in found} == {"grouped_conv"}
    assert all(f.source.startswith("https://") for f in found if f.basis == "documented")
    assert all(f.source.startswith("reports/observed/") for f in found if f.basis == "observed")
    text = to_markdown(found)
    assert "| **parse fails** | observed (seed 003 grouped_conv) | reports/observed/" in text
    assert "| documented (seed 003 grouped_conv) | https://" in text


def test_an_expectation_whose_source_is_our_own_cells_is_observed_not_documented(tmp_path):
    """seed 024's expectations cite committed cells (no upstream document says it): their findings are observed."""
    from cases import get_case
    from generators import write

    model = write.build(get_case("silu_qdq"), {"form": "conv_only"}).model
    found = [f for f in lint_model(model, observed=tmp_path) if f.rule == "silu_qdq"]
    assert found and {(f.basis, f.case) for f in found} == {("observed", "silu_qdq")}
    assert all(f.learned_from({"silu_qdq"}) and not f.learned_from({"grouped_conv"}) for f in found)


def test_no_tensorrt_rtx_version_is_predicted_for_widened_int8_weights_without_a_source(tmp_path):
    """An INT8 initializer widened by Cast -> Mul: no committed source says what TensorRT-RTX does; uint8 weights
    are plain data to every TensorRT, float as documented."""
    from tests.check.models import widened_matmul

    int8 = lint_path(widened_matmul(tmp_path / "w8.onnx", "int8"))
    assert [(f.engine, f.versions, f.predicted) for f in int8 if f.rule == "widened_weights"] == \
        [("tensorrt", "", "float")]
    uint8 = [f for f in lint_path(widened_matmul(tmp_path / "wu8.onnx", "uint8")) if f.rule == "widened_weights"]
    assert {(f.engine, f.versions, f.predicted, f.basis) for f in uint8} == {
        ("tensorrt", "", "float", "documented"), ("tensorrt-rtx", "", "float", "documented")}


@pytest.mark.parametrize("content", [None, b"not an onnx model"])
def test_cli_refuses_bad_input_with_exit_2(tmp_path, capsys, content):
    path = tmp_path / "m.onnx"
    if content is not None:
        path.write_bytes(content)
    assert main([str(path)]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_compare_agrees_misses_and_cannot_say():
    findings = [Finding("conv", "grouped_conv", ">=8.5,<8.7", "build fails", "src"),
                Finding("mm", "x", "", "int8", "src")]
    cells = [
        {"engine": "tensorrt", "engine_version": "8.6.0", "status": "fail", "last_stage": "load", "precision": {}},
        {"engine": "tensorrt", "engine_version": "8.5.3.1", "status": "pass", "last_stage": "compare",
         "precision": {"conv": {"precision": "int8"}, "mm": {"precision": "float"}}},
        {"engine": "tensorrt", "engine_version": "10.8.0.43", "status": "pass", "last_stage": "compare",
         "precision": {"conv": {"precision": "int8"}, "mm": {"precision": "float"}}},
        {"engine": "onnxruntime", "engine_version": "1.31.1", "status": "pass", "last_stage": "compare",
         "precision": {}},
    ]
    rows = {(r.node, r.version): r for r in compare(findings, cells)}
    assert rows[("conv", "8.6.0")].agrees is True
    assert rows[("conv", "8.5.3.1")].news and rows[("conv", "8.5.3.1")].observed == "int8"
    assert ("mm", "8.6.0") not in rows and ("mm", "8.5.3.1") not in rows, "behind the predicted build failure"
    assert rows[("mm", "10.8.0.43")].agrees is False
    assert not any(r.version == "1.31.1" for r in rows.values())


def test_cli_compares_predictions_with_a_results_file(tmp_path, capsys):
    onnx.save(_grouped_conv(3), str(tmp_path / "gc.onnx"))
    from dataclasses import replace

    from core.cell import Cell

    cell = Cell(bundle="user_model/gc", case="user_model", params={}, digest="d", engine="tensorrt",
                engine_version="8.6.0", hardware="", status="pass", verdict="undocumented", last_stage="compare",
                precision={"node_of_conv": {"precision": "int8"}})
    other = replace(cell, bundle="user_model/other", status="fail", verdict="new failure", last_stage="load")
    (tmp_path / "r.jsonl").write_text(cell.to_json() + "\n" + other.to_json() + "\n")
    assert main([str(tmp_path / "gc.onnx"), "--cells", str(tmp_path / "r.jsonl")]) == 0
    out = capsys.readouterr().out
    assert ("| `node_of_conv` | grouped_conv | tensorrt | 8.6.0 |  | build fails | int8 "
            "| **miss: news for the catalogue** |") in out
    assert main([str(tmp_path / "gc.onnx"), "--cells", str(tmp_path / "none.jsonl")]) == 2
    (tmp_path / "bad.jsonl").write_text('{"bundle": "user_model/gc", "engine": "tensorrt"}\n')  # not a cell
    assert main([str(tmp_path / "gc.onnx"), "--cells", str(tmp_path / "bad.jsonl")]) == 2
    assert "not a results file this suite reads" in capsys.readouterr().err


@pytest.mark.parametrize("output_qdq, predicted", [(True, "int8"), (False, "float")])
def test_an_int8_dq_bias_add_after_a_quantized_matmul_is_predicted_from_the_observed_bias_cells(output_qdq, predicted):
    from generators.bias_add_after_qdq import build

    model = build({"op": "matmul", "bias": "int8_dq", "output_qdq": output_qdq}, np.random.default_rng(0)).model
    found = _by(lint_model(model), "bias_add_after_qdq")
    assert found and all(f.node == ("node_of_sum" if output_qdq else "node_of_y") for f in found)
    observed = [f for f in found if f.source.startswith("reports/observed/")]
    assert observed and {f.predicted for f in observed} == {predicted}
    assert any(covers(f.versions, "8.6.0") and covers(f.versions, "8.5.1.7") for f in observed)
    assert not _by(lint_model(model), "dq_constant_into_add"), "a bias Add is not seed 004's DQ form"


def _tool():
    """tools/lint-vs-observed.py as a module."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("lint_vs_observed", ROOT / "tools" / "lint-vs-observed.py")
    tool = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = tool  # its dataclasses look their module up
    spec.loader.exec_module(tool)
    return tool


def _silu_conv_only():
    """seed 024's conv_only form: Q/DQ on the Conv's inputs only, the SiLU as Sigmoid * Mul (the YOLOX-style
    placement), which the lint predicts INT8 from the reproducer's observed cells."""
    from cases import get_case
    from generators import write

    return write.build(get_case("silu_qdq"), {"form": "conv_only"}).model


def _failed_build(bundle: str, version: str = "8.6.0"):
    from core.cell import Cell

    return Cell(bundle=bundle, case="user_model", params={}, digest="d", engine="tensorrt", engine_version=version,
                hardware="NVIDIA H100 80GB HBM3 (sm_90)", status="fail", verdict="new failure", last_stage="load",
                error="[graphOptimizer.cpp::chooseHigherPrecision::7079] Error Code 2: Internal Error (Assertion "
                "dt1 == DataType::kFLOAT || dt1 == DataType::kHALF failed.)")


def test_a_network_predicted_int8_that_failed_to_build_is_one_miss_at_the_model_level():
    findings = [f for f in lint_model(_silu_conv_only()) if f.engine == "tensorrt"]
    assert {(f.node, f.predicted) for f in findings if covers(f.versions, "8.6.0")} == {("node_of_conv", "int8")}
    rows = compare(findings, [_failed_build("user_model/yolox")])
    (network,) = [r for r in rows if r.level == "model"]
    assert (network.node, network.predicted, network.observed, network.agrees, network.news) == \
        ("", "builds", "build fails", False, True)
    node = next(r for r in rows if r.level == "node")
    assert (node.observed, node.agrees) == ("build fails", None), "the node's precision cannot be seen"
    assert sum(r.news for r in rows) == 1, "one miss for the network, not one per node"


def test_a_node_predicted_to_run_is_not_scored_where_the_lint_predicted_a_build_failure_at_another_node():
    findings = [Finding("conv", "grouped_conv", "==8.6.0", "build fails", "https://example.org/a"),
                Finding("mm", "x", "", "int8", "https://example.org/b")]
    rows = compare(findings, [_failed_build("user_model/net")])
    assert {(r.node, r.observed, r.agrees) for r in rows} == {("conv", "build fails", True)}
    on_8_5 = compare(findings, [_failed_build("user_model/net", "8.5.3.1")])
    assert [(r.level, r.observed, r.agrees) for r in on_8_5 if r.agrees is False] == \
        [("model", "build fails", False)], "on 8.5.3.1 no finding foresaw it"


def test_a_network_that_fails_where_no_finding_spoke_is_a_miss_of_no_known_problem():
    """"No known problem matched" is no prediction that it builds, and the failure counts against the lint."""
    rows = compare([Finding("mm", "x", "==8.5.3.1", "int8", "https://example.org/b")],
                   [_failed_build("user_model/net", "8.6.0")])
    assert [(r.level, r.predicted, r.observed, r.agrees) for r in rows] == [
        ("model", "no known problem", "build fails", False)]
    assert [(r.predicted, r.agrees) for r in compare([], [_failed_build("user_model/net", "8.6.0")])] == [
        ("no known problem", False)]


def test_the_node_report_shows_the_networks_miss_first(tmp_path):
    from matrix.nodes import node_report, write_node_reports

    lint = json.loads(to_json([f for f in lint_model(_silu_conv_only()) if f.engine == "tensorrt"]))
    report = node_report([_failed_build("user_model/yolox")], {"target_nodes": ["node_of_conv"], "lint": lint})
    p = report["predictions"]
    assert p["news"] == 1 and p["rows"][0]["level"] == "model" and p["rows"][0]["verdict"] == "news for the catalogue"
    assert {s["basis"] for s in p["sources"]} == {"observed"}
    md, _, _ = write_node_reports(report, tmp_path, "n")
    text = md.read_text()
    assert "| the network: no failure foreseen | builds | build fails | **miss: news for the catalogue** |" in text
    assert "1. observed: reports/observed/" in text


def test_the_page_counts_an_unforeseen_build_failure_of_a_held_out_model_as_a_miss(tmp_path):
    """A user model whose cells no case was made from keeps every finding: its INT8 prediction and its failed build
    make one held-out miss on the page."""
    from cases.user_model import bundle_ids_for

    tool = _tool()
    (tmp_path / "models").mkdir()
    model = tmp_path / "models" / "yolox_like.onnx"
    onnx.save(_silu_conv_only(), str(model))
    cells = tmp_path / "cells.jsonl"
    cells.write_text(_failed_build(bundle_ids_for(model)[0]).to_json() + "\n")
    targets, none = tool.user_targets(tmp_path / "models", "producer", tool.engine_cells([cells]), "tensorrt")
    assert [t.left_out for t in targets] == [()] and none == []
    text, held = tool.page(targets, [cells], "tensorrt", "python tools/lint-vs-observed.py")
    assert (held["misses"], held["network misses"], held["agrees"]) == (1, 1, 0)
    assert "**1 misses** (1 of them a network that failed to parse or build" in text
    assert ("| yolox_like.onnx | the network | no failure foreseen | tensorrt | 8.6.0 [H100] | builds | build fails "
            "| **miss** |") in text
    assert tool.main(["--cells", str(cells), "--models", str(tmp_path / "models"), "--case", "none",
                      "--out", str(tmp_path / "page.md")]) == 1, "a held-out miss is exit status 1"


def test_leave_one_case_out_predicts_a_case_without_what_it_learned_from_that_case():
    """seed 018's reproducers: the whole lint agrees on every cell (it learned from them); held out it has nothing
    to say, since no upstream document covers a bias Add, and the page says so instead of counting agreement."""
    tool = _tool()
    cells = [ROOT / "reports" / "observed" / gpu / f"trt-{v}.jsonl"
             for gpu in ("nvidia-h100", "nvidia-h200") for v in ("8.5.3.1", "8.6.0")]
    targets, unbuilt = tool.catalogue_targets(tool.engine_cells(cells), "tensorrt", ["bias_add_after_qdq"])
    assert len(targets) == 8 and not unbuilt and {t.left_out for t in targets} == {("bias_add_after_qdq",)}
    own = {t.title: [f for f in t.findings if f.case == "bias_add_after_qdq"] for t in targets}
    learned = [r for t in targets for r in compare(own[t.title], t.cells)]
    assert len(learned) == 16 and all(r.agrees for r in learned)
    assert not [f for t in targets for f in t.held_out if f.case == "bias_add_after_qdq"]
    text, held = tool.page(targets, cells, "tensorrt", "python tools/lint-vs-observed.py")
    assert "**The split: leave one case out, by provenance.**" in text
    assert "**0 misses** (0 of them a network" in text and held["misses"] == 0
    assert held["agrees"] == 16, "seed 011's observed MatMul cells, another case's, speak for the quantized MatMuls"
    assert "Not held out, for comparison only: the whole lint on the same cells, which it learned from, 0 misses" \
        in text
    assert "| bias_add_after_qdq | catalogue | 8 | bias_add_after_qdq | 0 | 16 | 0 |" in text


def test_a_node_the_parser_names_as_refused_is_its_own_miss_and_the_network_is_not_counted_twice():
    findings = [Finding("a", "x", "", "parse fails", "https://example.org/a"),
                Finding("b", "y", "", "int8", "https://example.org/b")]
    cell = dict(json.loads(_failed_build("user_model/net").to_json()), last_stage="", failing_node="b")
    rows = {(r.level, r.node): r for r in compare(findings, [cell])}
    assert ("node", "b") not in rows, "a's predicted parse failure leaves no version where b was predicted to run"
    assert (rows[("node", "a")].observed, rows[("node", "a")].agrees) == ("not observable", None)
    unforeseen = {(r.level, r.node): r for r in compare(findings[1:], [cell])}
    assert [k for k, r in unforeseen.items() if r.news] == [("node", "b")], "one miss, at the node the parser named"


def _fanout(kernels=(3, 3), outs=(8, 16), tails=("relu_qdq", "relu_qdq"), strides=(1, 1)):
    """x -> Q/DQ -> one INT8 Conv per kernel (its own output channels and stride) -> its tail: "qdq", "relu_qdq",
    "identity" or "float" (a graph output straight from the Conv)."""
    def scalar(name, value, dtype):
        return numpy_helper.from_array(np.array(value, dtype), name)

    inits = [scalar("s", 0.05, np.float32), scalar("z", 0, np.int8)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="x_q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="x_dq")]
    outputs = []
    for k, (kernel, out, tail, stride) in enumerate(zip(kernels, outs, tails, strides)):
        inits.append(numpy_helper.from_array(np.ones((out, 4, kernel, kernel), np.int8), f"w{k}"))
        nodes += [helper.make_node("DequantizeLinear", [f"w{k}", "s", "z"], [f"wd{k}"], name=f"w{k}_dq"),
                  helper.make_node("Conv", ["xd", f"wd{k}"], [f"c{k}"], name=f"conv{k}", kernel_shape=[kernel] * 2,
                                   strides=[stride] * 2, pads=[kernel // 2] * 4)]
        last = f"c{k}"
        if tail == "relu_qdq":
            nodes.append(helper.make_node("Relu", [last], [f"r{k}"], name=f"relu{k}"))
            last = f"r{k}"
        if tail in ("qdq", "relu_qdq"):
            nodes += [helper.make_node("QuantizeLinear", [last, "s", "z"], [f"q{k}"], name=f"q{k}"),
                      helper.make_node("DequantizeLinear", [f"q{k}", "s", "z"], [f"y{k}"], name=f"dq{k}")]
        elif tail == "identity":
            nodes.append(helper.make_node("Identity", [last], [f"y{k}"], name=f"id{k}"))
        else:
            nodes.append(helper.make_node("Relu", [last], [f"y{k}"], name=f"float{k}"))
        outputs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "fanout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_seed_032_flags_one_qdq_activation_fanned_out_to_two_requantized_convs_as_a_build_failure():
    found = _by(lint_model(_fanout()), "two_conv_fanout_qdq")
    assert {f.node for f in found} == {"conv0", "conv1"} and {f.case for f in found} == {"two_conv_fanout_qdq"}
    assert {f.predicted for f in found} == {"build fails"}
    for version in ("8.5.1.7", "8.5.2.2", "8.5.3.1", "8.6.0"):
        assert any(covers(f.versions, version) for f in found), version
    assert not any(covers(f.versions, "10.8.0.43") for f in found), "nothing observed on 10.x: no prediction there"
    assert {f.basis for f in found} == {"observed"}
    sources = {f.source for f in found}
    # the H200's sweep of every 8.x version: this graph's tails (Relu then Q/DQ) and kernel (3x3) are among its forms
    assert {f"reports/observed/nvidia-h200/round-2026-11-28/trt-{v}.jsonl"
            for v in ("8.5.1.7", "8.5.2.2", "8.5.3.1", "8.6.0")} <= sources
    assert all((ROOT / s).exists() for s in sources)
    assert all("catalogue case 032 two_conv_fanout_qdq" in f.detail and "Split" in f.fix for f in found)
    assert "observed (seed 032 two_conv_fanout_qdq)" in to_markdown(found)


def _asymmetric(model):
    """The model with uint8 asymmetric activations (QUInt8): zero point 128 on every activation
    Q/DQ (the weights keep their int8 zero point 0)."""
    model.graph.initializer.append(numpy_helper.from_array(np.array(128, np.uint8), "za"))
    for n in model.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear") and n.input[0] not in {i.name for i in
                                                                                     model.graph.initializer}:
            n.input[2] = "za"
    return model


def test_seed_032_on_asymmetric_activations_predicts_the_parse_failure_and_no_build_failure_behind_it():
    """The parser refuses a non-zero zero point on every TensorRT >= 8.0, so chooseHigherPrecision's build failure can
    never be reached there: the lint says the parse failure and no later stage for those versions."""
    found = lint_model(_asymmetric(_fanout()))
    assert {f.node for f in found if f.predicted == "parse fails" and f.engine == "tensorrt"} >= {"x_q", "x_dq"}
    later = [f for f in found if f.predicted in ("build fails", "int8", "float")]
    for version in ("8.5.1.7", "8.5.3.1", "8.6.0", "10.8.0.43"):
        assert not [f for f in later if f.engine == "tensorrt" and covers(f.versions, version)], version
    assert not _by(found, "two_conv_fanout_qdq"), "every version seed 032 speaks for is refused at parse first"
    assert _by(lint_model(_asymmetric(_fanout()), reach=False), "two_conv_fanout_qdq"), "the matcher still matched"


def _conv_uint8(zero_point: int = 128):
    """x -> Q/DQ (uint8 at `zero_point`) -> Conv with INT8 weights (zero point 0) -> Q/DQ (uint8)."""
    inits = [numpy_helper.from_array(np.float32(0.05), "s"), numpy_helper.from_array(np.uint8(zero_point), "za"),
             numpy_helper.from_array(np.int8(0), "zw"), numpy_helper.from_array(np.float32(0.01), "sw"),
             numpy_helper.from_array(np.ones((8, 4, 3, 3), np.int8), "w")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "za"], ["xq"], name="x_q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "za"], ["xd"], name="x_dq"),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wd"], name="w_dq"),
             helper.make_node("Conv", ["xd", "wd"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("QuantizeLinear", ["c", "s", "za"], ["cq"], name="y_q"),
             helper.make_node("DequantizeLinear", ["cq", "s", "za"], ["y"], name="y_dq")]
    graph = helper.make_graph(nodes, "conv_uint8", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                  [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_nonzero_zero_point_is_predicted_to_fail_tensorrt_rtx_s_parser_from_its_committed_cells():
    from dataclasses import asdict

    from cases.common import NONZERO_ZERO_POINT_RTX_CASES
    from core.results import read_results

    rtx = [f for f in lint_model(_conv_uint8()) if f.engine == "tensorrt-rtx" and f.node == "x_dq"]
    assert [(f.rule, f.versions, f.predicted, f.basis, f.case) for f in rtx] == [
        ("uint8_activation", "==1.7.1.116", "parse fails", "observed", "")]
    cells = [c for c in (asdict(s.cell) for s in read_results(ROOT / rtx[0].source).cells)
             if c.get("case") in NONZERO_ZERO_POINT_RTX_CASES and (c.get("params") or {}).get("activation") == "uint8"]
    assert cells and {(c["engine_version"], c["status"], c["signature"]) for c in cells} == {
        ("1.7.1.116", "fail", "nonzero_zero_point")}, "the rule says what the committed cells show, no more"
    assert not [f for f in lint_model(_conv_uint8(0)) if f.node == "x_dq"], "a zero zero point: no finding"
    assert rtx[0].learned_from(("grouped_conv",)) and not rtx[0].learned_from(("two_conv_fanout_qdq",))


def test_int8_asymmetric_activations_are_predicted_to_fail_every_tensorrt_rtx_parser_from_committed_cells():
    """quantize_static's default activations (int8, non-zero zero points): TensorRT for RTX 1.4 to 1.7 refuse them at
    parse, as the producer blocks' committed cells show (a user trial's PaddleOCR classifier quantized with the defaults
    failed so on 1.7.1.116, where the lint foresaw nothing and its report said 'news for the catalogue')."""
    from dataclasses import asdict

    from core.results import read_results

    rtx = [f for f in lint_model(_conv_uint8(), observed=None) if f.engine == "tensorrt-rtx" and f.node == "x_dq"]
    assert [f.rule for f in rtx] == ["uint8_activation"], "uint8 keeps its own rule"
    model = _conv_uint8()
    for t in model.graph.initializer:
        if t.name == "za":
            t.CopyFrom(numpy_helper.from_array(np.int8(-5), "za"))
    rtx = [f for f in lint_model(model) if f.engine == "tensorrt-rtx" and f.node == "x_dq"]
    assert [(f.rule, f.versions, f.predicted, f.basis) for f in rtx] == [
        ("nonzero_zero_point", ">=1.4.0.76,<=1.7.1.116", "parse fails", "observed")], rtx
    cells = [asdict(s.cell) for s in read_results(ROOT / rtx[0].source).cells]
    assert {c["engine_version"] for c in cells} == {"1.4.0.76", "1.5.0.114", "1.6.1.120", "1.7.1.116"}
    assert all(c["status"] == "fail" and c["error"].startswith("ONNX parse failed: Assertion failed: "
                                                               "shiftIsAllZeros(zeroPoint)")
               for c in cells) and len(cells) == 12, "the rule says what the committed cells show, no more"
    assert rtx[0].learned_from(("user_model",)), "read from the producer models: never scored on users' models"


@pytest.mark.parametrize("siblings", [
    {"kernels": (3, 1)},  # another kernel
    {"strides": (1, 2)},  # another stride
    {"tails": ("relu_qdq", "float")},  # another tail
    {"tails": ("qdq", "identity")},  # two typed tails, but not the same kind
    {"kernels": (3,), "outs": (8,), "tails": ("qdq",), "strides": (1,)},  # one Conv
])
def test_seed_032_declines_the_siblings_that_build(siblings):
    assert not _by(lint_model(_fanout(**siblings)), "two_conv_fanout_qdq")


def test_seed_032_matches_identity_tails_too():
    assert {f.node for f in _by(lint_model(_fanout(tails=("identity", "identity"))), "two_conv_fanout_qdq")} == {
        "conv0", "conv1"}


def test_no_match_says_no_known_problem_not_that_it_builds():
    text = to_markdown([])
    assert "No known problem matched" in text and "no prediction that it parses or builds" in text


def _plugin_like_concat():
    """A custom-domain node (a plugin the user registers) taking an INT8 initializer straight in: seed 004's pattern
    cannot tell whether it is an IPluginV3 or an IPluginV2 and matches it as both. (An ONNX Runtime contrib operator,
    com.microsoft's QLinearConcat, is no plugin: the pattern leaves it alone.)"""
    nodes = [helper.make_node("Int8ConcatPlugin", ["x", "c_q"], ["y"], name="Concat_40_quant", domain="user_plugins")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [8])],
                              [numpy_helper.from_array(np.ones(4, np.int8), "c_q")])
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("user_plugins", 1)]
    return helper.make_model(graph, opset_imports=opsets)


def test_a_node_matched_under_two_forms_is_one_claim_and_listed_once_against_what_ran():
    """Seed 004 matches the node once per plugin API, and its TensorRT-RTX expectation speaks for both: one claim, so
    the comparison lists the node once and counts its agreement once (it said "Concat_40_quant, Concat_40_quant")."""
    from dataclasses import asdict

    from matrix.predict import predictions_view

    found = [f for f in lint_model(_plugin_like_concat()) if f.engine == "tensorrt-rtx" and f.basis == "documented"]
    assert len(found) == 1 and found[0].node == "Concat_40_quant", found
    assert "IPluginV3" in found[0].detail and "IPluginV2" in found[0].detail, "the one claim keeps both matches' words"
    parsed_not = {"engine": "tensorrt-rtx", "engine_version": "1.7.1.116", "status": "fail", "last_stage": "",
                  "precision": {}}
    for findings in (found, found + found):  # linted now, and a bundle linted before that says it twice
        view = predictions_view({"findings": [asdict(f) for f in findings]}, [parsed_not])
        assert [(g["verdict"], g["nodes"]) for g in view["groups"]] == [("agrees", ["Concat_40_quant"])]
        assert (view["findings"], view["agrees"], view["nodes"]) == (1, 1, ["Concat_40_quant"])
