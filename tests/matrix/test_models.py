"""Your models as one table: INT8 counts, or the failure at the node the engine's error names, and why."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from check.lint import RULE_WORDS
from core.cell import Cell
from engines.reasons import failure_evidence
from matrix.merge import build, load_results
from matrix.models import column_words, models_view
from matrix.nodes import node_report, write_all
from tests.matrix.conftest import write_reports

OBSERVED = Path(__file__).resolve().parents[2] / "reports" / "observed"
CHECK = [OBSERVED / "nvidia-h100" / "check", OBSERVED / "nvidia-h200" / "check"]  # producer models on TensorRT 8.x
INVALID_NODE = ("ONNX parse failed: Invalid Node - b_dw_DequantizeLinear\n"
                "b_dw_DequantizeLinear: only activation types allowed as input to this layer.")
SUFFIX = ("ONNX parse failed: Non-zero zero point is not supported [node node_of_x_q (DynamicQuantizeLinear), "
          "checkDynamicQuantizeLinear]")
LINT = {"findings": [{"node": "b_dw_DequantizeLinear", "rule": "dq_non_activation", "versions": ">=8.0,<10.0",
                      "predicted": "parse fails", "source": "operators.md", "words": RULE_WORDS["dq_non_activation"]}]}


def _cell(engine: str = "tensorrt", version: str = "8.6.0", status: str = "fail", stage: str = "", error: str = "",
          precision=None, model: str = "net", **fields) -> Cell:
    """A cell as engines.cells makes one: a failure's node and reason found where it is made (engines.reasons)."""
    targets = {"conv": "unknown", "relu": "unknown"} if precision is None else precision
    failed = status in ("fail", "crashed")
    node, says = failure_evidence(error, fields.get("parser_errors") or []) if failed else ("", "")
    return Cell(bundle=f"user_model/{model}", case="user_model", params={"model": f"{model}.onnx"}, digest="d",
                engine=engine,
                engine_version=version, hardware="NVIDIA H100 (sm_90)", status=status, last_stage=stage, error=error,
                verdict="new failure" if failed else "undocumented", failing_node=node, engine_reason=says,
                precision={n: {"precision": p, "evidence": f"layer '{n}'"} for n, p in targets.items()}, **fields)


def _said(cell: Cell, lint=None) -> str:
    report = node_report([cell], {"target_nodes": list(cell.precision), "lint": lint} if lint else {})
    view = models_view([{"bundle": cell.bundle, "report": report, "html": "n.html", "md": "n.md"}])
    found = view["rows"][0]["cells"][0]
    return found["text"] + (f" [{view['notes'][found['note'] - 1]['text']}]" if found["note"] else "")


def test_a_parse_failure_says_the_lint_rule_that_predicted_it_at_that_node():
    assert _said(_cell(error=INVALID_NODE), LINT) == "parse fails: INT32 bias DQ (b_dw_DequantizeLinear)"
    # no lint: the parser's own words; a finding elsewhere never names this node
    other = {"findings": [dict(LINT["findings"][0], node="b_expand_DequantizeLinear")]}
    assert _said(_cell(error=INVALID_NODE), other) == \
        "parse fails (b_dw_DequantizeLinear) [only activation types allowed as input to this layer]"
    # the lint does not cover TensorRT 10: its rule is not the reason there
    assert _said(_cell(version="10.3.0", error=INVALID_NODE), LINT).startswith("parse fails (b_dw_DequantizeLinear)")


def test_a_tensorrt_rtx_row_says_the_lint_rule_that_predicted_its_failure():
    """The rows are keyed by engine, version, hardware and variant: a TensorRT-RTX finding meets its own column
    (once compared by label, "tensorrt-rtx 1.7.1.116" against "1.7.1.116", so an RTX row never named the rule)."""
    rtx = {"findings": [dict(LINT["findings"][0], engine="tensorrt-rtx", versions="==1.7.1.116")]}
    cell = _cell(engine="tensorrt-rtx", version="1.7.1.116", error=INVALID_NODE)
    assert _said(cell, rtx) == "parse fails: INT32 bias DQ (b_dw_DequantizeLinear)"
    # the same finding says nothing of another engine's or another version's column
    assert _said(_cell(error=INVALID_NODE), rtx) != "parse fails: INT32 bias DQ (b_dw_DequantizeLinear)"
    assert _said(_cell(engine="tensorrt-rtx", version="1.6.1.120", error=INVALID_NODE), rtx).startswith(
        "parse fails (b_dw_DequantizeLinear)")
    # a finding for one build target speaks for that target's column only
    sm86 = {"findings": [dict(rtx["findings"][0], setting="target=SM86")]}
    assert _said(replace(cell, variant={"target": "SM86"}), sm86) == \
        "parse fails: INT32 bias DQ (b_dw_DequantizeLinear)"
    assert _said(cell, sm86).startswith("parse fails (b_dw_DequantizeLinear)")


def test_the_worker_node_suffix_and_a_signature():
    assert _said(_cell(engine="tensorrt-rtx", version="1.5.0.114", error=SUFFIX, signature="nonzero_zero_point")) == \
        "parse fails: non-zero zero point (node_of_x_q)"
    # no node in the error: none is named, whatever the lint says about other nodes
    assert _said(_cell(error='ONNX parse failed: Assertion failed: shiftIsAllZeros(zeroPoint)',
                       signature="nonzero_zero_point"), LINT) == "parse fails: non-zero zero point"
    assert _said(_cell(stage="load", error="build_serialized_network returned None: Error Code 10",
                       signature="no_implementation")) == "build fails: no implementation for a node"
    assert _said(_cell(engine="onnxruntime", version="1.31.1", error="[ONNXRuntimeError] : 1 : FAIL : bad")) == \
        "load fails: bad", "the engine's words, less its error code"


def test_int8_counts_for_runs_and_ahead_of_time_plans():
    both = {"conv": "int8", "relu": "int8"}
    assert _said(_cell(status="pass", stage="compare", precision=both)) == "2/2 INT8"
    half = {"conv": "int8", "relu": "float"}
    assert _said(_cell(engine="tensorrt-rtx", version="1.7.1.116", status="built", stage="build", precision=half)) == \
        "1 of 2 INT8 (ahead-of-time plan)"
    assert _said(_cell(status="fail", stage="run", precision=both, max_error_steps=7.0,
                       error="output 'y' differs from the reference by 7 steps (tolerance 1)")) == \
        "2/2 INT8; outputs off by 7 steps"
    assert _said(_cell(status="not_run", reason="no NVIDIA GPU", precision={})) == "not run: no NVIDIA GPU"


def test_tones():
    assert column_words({"status": "pass", "ran": True, "int8": 5, "total": 5})["tone"] == "all"
    assert column_words({"status": "pass", "ran": True, "int8": 4, "total": 5})["tone"] == "some"
    assert column_words({"status": "pass", "ran": True, "int8": 0, "total": 5})["tone"] == "none"
    assert column_words({"status": "fail", "failed_stage": "load", "engine": "tensorrt"})["tone"] == "fail"
    assert column_words({"status": "crashed", "reason": "signal 11"}) == \
        {"text": "crashed", "reason": "signal 11", "node": "", "tone": "crash"}


def test_the_committed_observations_make_one_row_per_model_and_one_column_per_version_and_gpu(tmp_path):
    result = load_results(CHECK)
    models = write_all(result.cells, tmp_path / "nodes")
    write_reports(result, tmp_path, generated="2026-01-01", node_reports=models)
    view = models_view([dict(m, report=json.loads(Path(m["json"]).read_text())) for m in models])
    assert len(view["rows"]) == len({c.bundle for c in result.cells}) == 13
    assert [(c["version"], c["setting"][:11]) for c in view["columns"]] == \
        [("8.5.3.1", "NVIDIA H100"), ("8.5.3.1", "NVIDIA H200"), ("8.6.0", "NVIDIA H100"), ("8.6.0", "NVIDIA H200")]
    texts = {r["model"]: [c["text"] for c in r["cells"]] for r in view["rows"]}
    assert texts["ort_mobilenet_s8_per_channel_float_bias.onnx"] == ["5/5 INT8"] * 4
    assert texts["ort_resnet_s8_per_tensor.onnx"] == ["parse fails (b_conv1_DequantizeLinear)"] * 4
    assert texts["ort_transformer_u8_per_tensor.onnx"] == ["parse fails: non-zero zero point"] * 4
    notes = [n["text"] for n in view["notes"]]
    assert notes[0] == "only activation types allowed as input to this layer"  # said once for 44 cells
    models_md = (tmp_path / "models.md").read_text()  # every model by every column; matrix.md says a line each
    assert models_md.count("\n| [ort_") == 13 and "(note 1)" in models_md
    assert "| [ort_resnet_s8_per_channel_float_bias.onnx](nodes/user_model__ort_resnet_s8_per_channel_float_bias.md) " \
           "| 5/5 INT8 |" in models_md  # the model's name links its per-node report; its cells are text


def test_a_model_without_a_cell_in_a_column_is_a_dot(tmp_path):
    cells = [_cell(status="pass", stage="compare", precision={"conv": "int8"}),
             _cell(version="8.5.3.1", error=INVALID_NODE, model="other")]
    models = write_all(cells, tmp_path / "nodes")
    write_reports(build(cells), tmp_path, generated="2026-01-01", node_reports=models)
    html = (tmp_path / "models.html").read_text()
    table = html[html.index('<table id="m">'):html.index("</table>", html.index('<table id="m">'))]
    assert table.count('<td class="e">&middot;</td>') == 2
    assert '<td class="m-all" title="undocumented"><a href="nodes/user_model__net.html">1/1 INT8</a></td>' in table


def test_the_reason_comes_from_the_parsers_fields_where_the_cell_was_made():
    rtx = {"desc": "Invalid Node - b0_DequantizeLinear\nITensor::getDimensions: Error Code 4: API Usage Error "
                   "(b0_DequantizeLinear: input has type Int32 but must have type FP8, FP4, Int4, Int8, or UInt8. In "
                   "checkType at /_src/optimizer/common/nodeBase.cpp:456)",
           "node_name": "b0_DequantizeLinear", "node_operator": "DequantizeLinear", "code": "ErrorCode.INVALID_NODE"}
    why = "input has type Int32 but must have type FP8, FP4, Int4, Int8, or UInt8"
    cell = _cell(engine="tensorrt-rtx", version="1.7.1.116", parser_errors=[rtx],
                 error="ONNX parse failed: Invalid Node - b0_DequantizeLinear")
    assert (cell.failing_node, cell.engine_reason) == ("b0_DequantizeLinear", why)
    assert _said(cell) == f"parse fails (b0_DequantizeLinear) [{why}]"
    # the report reads the fields, never the error text: a cell whose fields say nothing names nothing
    assert _said(replace(cell, failing_node="", engine_reason="")) == \
        "parse fails [ONNX parse failed: Invalid Node - b0_DequantizeLinear]"


def test_a_network_that_fails_its_sqnr_line_says_so_with_its_statistics():
    stats = {"measure": "network", "min_sqnr_db": 20.0, "min_cosine": 0.99,
             "outputs": {"y": {"sqnr_db": 8.5, "cosine": 0.93, "max_abs": 1.5, "peak": 3.0}}}
    cell = _cell(engine="onnxruntime", version="1.32.0", status="fail", stage="run", max_error_steps=40.0,
                 precision={"conv": "int8", "relu": "int8"}, output_stats=stats,
                 error="output 'y' differs from the reference: SQNR 8.5 dB < 20 dB (cosine 0.9300)")
    assert _said(cell) == "2/2 INT8; outputs differ: SQNR 8.5 dB, cosine 0.9300, max abs 1.5"


def test_two_models_under_one_bundle_id_are_two_rows_never_a_duplicate(tmp_path, write_results):
    """Reductions name their bundle "reduced": two reduced models (other bytes, other digest) are two models."""
    one = _cell(error=INVALID_NODE, model="reduced")
    other = replace(_cell(error=INVALID_NODE, model="reduced"), digest="e" * 64, run={"date": "2026-02-01"})
    result = load_results([write_results("one.jsonl", [one]), write_results("other.jsonl", [other])])
    assert sorted(c.digest for c in result.cells) == ["d", "e" * 64], "neither dropped as the other's duplicate"
    assert not [p for p in result.problems if p.duplicate]
    models = write_all(result.cells, tmp_path / "nodes")
    assert sorted(m["report"]["model"] for m in models) == ["reduced.onnx (d)", f"reduced.onnx ({'e' * 10})"]
    assert len({Path(m["md"]).name for m in models}) == 2, "a per-node report each"


def test_a_dynamic_models_row_names_its_form_and_the_seed_that_documents_it():
    cell = _cell(error="ONNX parse failed: Plugin not found", model="crnn")
    forms = [{"form": "dynamic", "case": "dynamic_quantize", "words": "dynamic quantization (quantize_dynamic)",
              "ops": {"DynamicQuantizeLinear": 2, "ConvInteger": 2}}]
    report = node_report([cell], {"target_nodes": ["conv"], "quantization": {"form": "dynamic", "forms": forms}})
    row, = models_view([{"bundle": cell.bundle, "report": report, "html": "n.html", "md": "n.md"}])["rows"]
    assert row["form"] == "dynamic quantization (quantize_dynamic), seed 002"


def test_a_fresh_clone_names_the_dynamic_models_seed_from_its_committed_node_report(tmp_path):
    """No .bundles-user in a fresh clone: the quantize_dynamic producer model's row takes its form from the node report
    committed with its GPU cells, which the manifest lists at its exact content; an edited one is not read."""
    import shutil

    from matrix.nodes import observed_node_reports

    forms = OBSERVED / "nvidia-h100" / "check-forms"
    result = load_results([forms])
    models = write_all(result.cells, tmp_path / "nodes", bundles=[tmp_path / "no-bundles"])
    view = models_view([dict(m, report=json.loads(Path(m["json"]).read_text())) for m in models])
    said = {r["model"]: r["form"] for r in view["rows"]}
    assert said["ocr_rec_dynamic.onnx"].endswith("seed 002")
    assert said["ocr_rec_qoperator.onnx"].startswith("QOperator format")
    copy = tmp_path / "observed"
    shutil.copytree(OBSERVED, copy)
    node = next((copy / "nvidia-h100" / "check-forms" / "nodes").glob("ocr_rec_dynamic-*.json"))
    node.write_text(node.read_text().replace('"seed": "002"', '"seed": "003"'))
    assert len(observed_node_reports(OBSERVED)) >= 3
    recorded = observed_node_reports(copy)
    assert not [r for r in recorded.values() if "ocr_rec_dynamic" in r["bundle"]], "an edited report is not trusted"


def test_a_models_worst_is_said_beside_the_versions_that_said_it():
    """Two engines failing one model at parse in different words: the summary names, beside the worst words, only the
    version that said them; the other is named apart (a user trial read OpenVINO beside TensorRT for RTX's zero-point
    assertion)."""
    from matrix.models import summarise

    rtx = _cell("tensorrt-rtx", "1.7.1.116", error=SUFFIX)
    ov = _cell("openvino", "2026.4.1", error="Exception from src/core.cpp:1:\nsome other refusal")
    view = models_view([{"bundle": rtx.bundle, "report": node_report([rtx, ov], {"target_nodes": ["conv", "relu"]}),
                         "html": "n.html", "md": "n.md"}])
    (line,) = summarise(view["rows"], view["columns"], [n["text"] for n in view["notes"]])
    assert line["tone"] == "fail" and line["where"].count(";") == 1, line
    first, other = line["where"].split("; ")
    assert ("OpenVINO" in other) != ("OpenVINO" in first), line["where"]
    assert other.startswith("failing otherwise on "), line["where"]
