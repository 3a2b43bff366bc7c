"""check.lint: TensorRT predictions from the catalogue and observed cells, and prediction against observation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from check.lint import PREDICTIONS, Finding, compare, lint_model, lint_path, main

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
    assert any(f.covers("8.6.0") and f.covers("8.5.3.1") for f in observed)
    assert not any(f.covers("10.8.0.43") for f in observed), "nothing observed on 10.x: no prediction there"


def test_findings_speak_per_engine_tensorrt_rtx_1_7_builds_the_grouped_conv_tensorrt_8_6_refuses():
    rtx = [f for f in _by(lint_model(_grouped_conv(3)), "grouped_conv", "tensorrt-rtx")
           if f.source.startswith("reports/observed/")]
    assert rtx and all(f.engine == "tensorrt-rtx" and f.predicted in ("int8", "float") for f in rtx)
    assert any(f.covers("1.7.1.116") for f in rtx) and not any(f.covers("8.6.0") for f in rtx)


def test_grouped_conv_cpg2_fails_only_on_8_6_0():
    found = [f for f in _by(lint_model(_grouped_conv(2)), "grouped_conv") if f.source.startswith("reports/")]
    assert {f.predicted for f in found if f.covers("8.6.0")} == {"build fails"}
    assert {f.predicted for f in found if f.covers("8.5.3.1")} == {"int8"}


def test_uint8_activations_predict_a_parse_failure_and_name_the_quantizer_option():
    found = _by(lint_model(_grouped_conv(4, activation="uint8")), "uint8_activation")
    assert found and {f.predicted for f in found} == {"parse fails"}
    assert all('"ActivationSymmetric": True' in f.fix and "QuantType.QInt8" in f.fix for f in found)


def test_no_observed_folder_keeps_the_catalogue_predictions_only(tmp_path):
    found = lint_model(_grouped_conv(4, activation="uint8"), observed=tmp_path)
    assert found and not any(f.source.startswith("reports/") for f in found)


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
    assert found[0].covers("8.6.0") and not found[0].covers("10.8.0.43")
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
    assert dql and all(f.predicted == "parse fails" for f in dql if f.covers("8.6.0"))
    assert any(f.source == "https://github.com/NVIDIA/TensorRT/issues/3963" for f in dql)


def test_cli_prints_markdown_or_json_and_exits_zero(tmp_path, capsys):
    onnx.save(_grouped_conv(3), str(tmp_path / "gc.onnx"))
    assert main([str(tmp_path / "gc.onnx")]) == 0
    assert "| `node_of_conv` | grouped_conv |" in capsys.readouterr().out
    assert main([str(tmp_path / "gc.onnx"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "qdq-matrix/lint/1"
    assert {tuple(sorted(f)) for f in data["findings"]} == {
        ("detail", "engine", "fix", "node", "predicted", "rule", "setting", "source", "versions", "words")}
    assert {f["words"] for f in data["findings"]} == {"INT8 grouped Conv"}  # the rule registry's words
    assert all(f["predicted"] in PREDICTIONS for f in data["findings"])


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
        {"engine": "onnxruntime", "engine_version": "1.31.1", "status": "pass", "last_stage": "compare",
         "precision": {}},
    ]
    rows = {(r.node, r.version): r for r in compare(findings, cells)}
    assert rows[("conv", "8.6.0")].agrees is True
    assert rows[("conv", "8.5.3.1")].news and rows[("conv", "8.5.3.1")].observed == "int8"
    assert rows[("mm", "8.6.0")].observed == "not observable" and rows[("mm", "8.6.0")].agrees is None
    assert rows[("mm", "8.5.3.1")].agrees is False
    assert not any(r.version == "1.31.1" for r in rows.values())


def test_cli_compares_predictions_with_a_results_file(tmp_path, capsys):
    onnx.save(_grouped_conv(3), str(tmp_path / "gc.onnx"))
    from dataclasses import replace

    from cases.cell import Cell

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
    assert any(f.covers("8.6.0") and f.covers("8.5.1.7") for f in observed)
    assert not _by(lint_model(model), "dq_constant_into_add"), "a bias Add is not seed 004's DQ form"


def test_the_bias_reproducers_observed_on_both_gpus_meet_the_lint_with_no_miss(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("lint_vs_observed", ROOT / "tools" / "lint-vs-observed.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    catalogue = tool.catalogue_models(tmp_path / "bundles", ["bias_add_after_qdq"])
    assert len(catalogue) == 8
    cells = [ROOT / "reports" / "observed" / gpu / f"trt-{v}.jsonl"
             for gpu in ("nvidia-h100", "nvidia-h200") for v in ("8.5.3.1", "8.6.0")]
    (tmp_path / "no-models").mkdir()
    text, counts = tool.page(tmp_path / "no-models", cells, "tensorrt", catalogue)
    assert counts["misses"] == 0 and counts["agrees"] == 16
    for gpu in ("NVIDIA H100 80GB HBM3 (sm_90)", "NVIDIA H200 (sm_90)"):
        for v in ("8.5.3.1", "8.6.0"):
            assert (f"| `node_of_sum` | bias_add_after_qdq | tensorrt | {v} | {gpu} | int8 | int8 | agrees |"
                    in text)
    assert "No cells for" not in text
