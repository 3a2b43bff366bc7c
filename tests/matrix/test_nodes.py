"""The per-node report reads each engine's evidence: layer, precision (int8, fp16, fp32), fallbacks, numerics."""

from __future__ import annotations

import json
from dataclasses import replace

from core.cell import Cell
from engines.reasons import failure_evidence
from matrix.diff import compare_cells
from matrix.nodes import layer_of, node_report, precision_of, write_node_reports

# Each engine's evidence as its adapter records it: the layer, its type and its input and output types as fields, and a
# sentence for people (the report reads the fields, never the sentence).
TRT = {"evidence": "layer 'conv0 + relu0' CaskConvolution: input int8, output int8", "layer": "conv0 + relu0",
       "layer_type": "CaskConvolution", "inputs": ["int8"], "outputs": ["int8"], "weights": ["int8"]}
TRT_HALF = {"evidence": "layer 'add_out' ElementWise: input fp16, output fp16", "layer": "add_out",
            "layer_type": "ElementWise", "inputs": ["fp16"], "outputs": ["fp16"]}
OV = {"evidence": "runtime layer 'conv1/WithoutBiases' type Convolution, runtimePrecision f32",
      "layer": "conv1/WithoutBiases", "layer_type": "Convolution", "inputs": ["uint8"], "outputs": ["fp32"]}
ORT = {"evidence": "optimized graph: conv0 fused into QLinearConv 'conv0_token_7'", "layer": "conv0_token_7",
       "layer_type": "QLinearConv", "inputs": ["int8"], "outputs": ["int8"]}
ORT_FLOAT = {"evidence": "optimized graph: add_out stays a float Add 'add_out' with DequantizeLinear inputs",
             "layer": "add_out", "layer_type": "Add", "inputs": ["int32"], "outputs": []}


def _cell(engine: str, version: str, precision, status: str = "pass", max_error=0.5) -> Cell:
    return Cell(bundle="user_model/net", case="user_model", params={"model": "net.onnx"}, digest="d", engine=engine,
                engine_version=version, hardware="hw", status=status, verdict="undocumented",
                precision={n: dict(e if isinstance(e, dict) else {"evidence": e}, precision=p)
                           for n, (p, e) in precision.items()},
                max_error_steps=max_error, tolerance_steps=2.0)


def test_layer_and_precision_come_from_each_engines_evidence_fields():
    assert (layer_of(TRT), precision_of(dict(TRT, precision="int8"))) == ("conv0 + relu0 (CaskConvolution)", "int8")
    assert precision_of(dict(TRT_HALF, precision="float")) == "fp16"
    assert (layer_of(OV), precision_of(dict(OV, precision="float"))) == ("conv1/WithoutBiases (Convolution)", "fp32")
    assert layer_of(ORT) == "conv0_token_7 (QLinearConv)"
    assert precision_of(dict(ORT_FLOAT, precision="float")) == "float"  # the width is not stated
    assert precision_of({"precision": "unknown", "evidence": "not reported"}) == "unknown"
    # a sentence alone says nothing: the fields are the evidence
    sentence_only = {"precision": "float", "evidence": "output FP16 (Row major linear FP16 format)"}
    assert (layer_of({"evidence": TRT["evidence"]}), precision_of(sentence_only)) == ("", "float")


def test_the_report_counts_int8_nodes_and_names_the_float_fallback():
    meta = {"bundle": "user_model/net", "params": {"model": "net.onnx"}, "target_nodes": ["conv0", "add_out"],
            "target_details": {"conv0": {"op": "Conv", "dequantize": ["dq_x", "dq_w"], "quantize": ["q_c"]},
                               "add_out": {"op": "Add", "dequantize": ["dq_c"], "quantize": ["q_y"]}},
            "outputs": {"y": {"step": 0.1, "step_kind": "quantization", "peak": 3.0}}}
    cells = [_cell("tensorrt", "8.6.0", {"conv0": ("int8", TRT), "add_out": ("float", TRT_HALF)}),
             _cell("onnxruntime", "1.31.1", {"conv0": ("int8", ORT), "add_out": ("float", ORT_FLOAT)})]
    report = node_report(cells, meta)
    assert [c["heading"] for c in report["columns"]] == ["onnxruntime@1.31.1", "tensorrt@8.6.0"]
    trt = report["columns"][1]
    assert (report["compute"], report["other"]) == (1, 1)
    assert trt["summary"] == "1 of 1 quantized compute nodes ran in INT8; other quantized nodes: 1 float fallback"
    assert trt["fallbacks"][0]["text"] == \
        "dq_c → add_out (Add) → q_y: not fused; float fallback (fp16) in layer add_out (ElementWise)"
    assert trt["numerics"] == "0.5 output quantization steps (tolerance 2)"


def test_a_shape_read_of_a_dequantized_tensor_never_falls_back_to_float():
    """Shape reads its input's dimensions, never its values: fed by a DequantizeLinear it is a target node, but a
    float precision of it is no fallback (a user's report read "7 nodes fell back to float: 5 Shape, ...")."""
    meta = {"bundle": "user_model/net", "params": {"model": "net.onnx"}, "target_nodes": ["conv0", "add_out", "dims"],
            "target_details": {"conv0": {"op": "Conv", "dequantize": ["dq_x", "dq_w"], "quantize": ["q_c"]},
                               "add_out": {"op": "Add", "dequantize": ["dq_c"], "quantize": ["q_y"]},
                               "dims": {"op": "Shape", "dequantize": ["dq_c"], "quantize": []}},
            "outputs": {"y": {"step": 0.1, "step_kind": "quantization", "peak": 3.0}}}
    cell = _cell("onnxruntime", "1.31.1", {"conv0": ("int8", ORT), "add_out": ("float", ORT_FLOAT),
                                           "dims": ("float", {"evidence": "Shape kernel, float input"})})
    report = node_report([cell], meta)
    (column,) = report["columns"]
    assert [f["node"] for f in column["fallbacks"]] == ["add_out"] and column["fallback_ops"] == {"Add": 1}
    # counted apart, so that the parts add up to the other quantized nodes (a user's report said "166 other quantized
    # nodes" above "3 INT8, 143 float fallback, 19 no evidence")
    assert column["summary"].endswith("other quantized nodes: 1 float fallback, 1 Shape or Size (it reads "
                                      "dimensions, not values)"), column["summary"]
    assert sum(column["others"].values()) == report["other"] == 2


def test_a_shape_read_without_evidence_is_no_unknown_node():
    meta = {"bundle": "user_model/net", "params": {"model": "net.onnx"}, "target_nodes": ["conv0", "dims"],
            "target_details": {"conv0": {"op": "Conv", "dequantize": ["dq_x", "dq_w"], "quantize": ["q_c"]},
                               "dims": {"op": "Shape", "dequantize": ["dq_c"], "quantize": []}}}
    cell = _cell("onnxruntime", "1.31.1", {"conv0": ("int8", ORT)})
    (column,) = node_report([cell], meta)["columns"]
    assert column["unknown"] == [] and column["others"] == {"fused": 0, "int8": 0, "float": 0, "unknown": 0,
                                                             "shape_reads": 1}, column


def test_an_openvino_errors_detail_is_a_line_that_says_why_not_its_source_location():
    """OpenVINO's errors open with "Exception from <file>:<line>:": the report's detail line is the cell's engine
    reason, the line that says why (a user's report read "openvino@2026.4.1: Exception from
    src/inference/src/cpp/core.cpp:84:")."""
    error = ("Exception from src/inference/src/cpp/core.cpp:84:\n"
             "Exception from src/frontends/onnx/frontend/src/frontend.cpp:453:\n"
             "FrontEnd API failed with OpConversionFailure:\n"
             "Model wasn't fully converted. Failed operations detailed log:\n"
             "-- No conversion rule found for operations: com.microsoft.QGemm\n")
    node, says = failure_evidence(error)
    cell = replace(_cell("openvino", "2026.4.1", {}, status="fail"), error=error, failing_node=node, engine_reason=says)
    (column,) = node_report([cell], {"target_nodes": []})["columns"]
    assert column["error"] == "No conversion rule found for operations: com.microsoft.QGemm", column["error"]


def test_a_float_output_states_abs_and_rel_error():
    meta = {"target_nodes": [], "outputs": {"y": {"step": 0.02, "step_kind": "max/127", "peak": 2.54}}}
    column = node_report([_cell("openvino", "2026.4.1", {}, max_error=1.5)], meta)["columns"][0]
    assert column["numerics"] == "abs 0.03, rel 0.0118 of peak 2.54 (tolerance abs 0.04, rel 0.0157)"


def test_a_failed_build_has_no_per_node_claims():
    cell = _cell("tensorrt", "8.5.3.1", {"conv0": ("unknown", "no engine layer names conv0")}, status="fail",
                 max_error=None)
    column = node_report([cell], {"target_nodes": ["conv0"]})["columns"][0]
    assert not column["ran"] and column["summary"].startswith("no per-node evidence: fail")


def test_the_diff_lists_nodes_that_lost_int8():
    old = _cell("tensorrt", "8.5.3.1", {"conv0": ("int8", TRT), "add_out": ("unknown", "")})
    new = _cell("tensorrt", "8.6.0", {"conv0": ("float", TRT_HALF), "add_out": ("unknown", "")})
    changes = compare_cells(old, new, "hw")
    assert [(c.kind, c.before, c.after, c.detail) for c in changes] == [
        ("fusion lost", "1 of 2 INT8 nodes", "0 of 2 INT8 nodes", "float: conv0")]


# ---- the lint's predictions (case.json's `lint`, as check.lint --json writes it) against what TensorRT did ----

LINT = {"schema": "qdq-matrix/lint/1", "findings": [
    {"node": "conv0", "rule": "grouped_conv", "versions": ">=8.5.3.1,<=8.6.0", "predicted": "float",
     "source": "reports/observed/nvidia-h200", "detail": "observed", "fix": "", "engine": "tensorrt"},
    {"node": "add_out", "rule": "dq_constant_into_add", "versions": "==8.6.0", "predicted": "float",
     "source": "reports/observed/nvidia-h200/trt-8.6.0.jsonl", "detail": "", "fix": "", "engine": "tensorrt"},
    {"node": "q_x", "rule": "nonzero_zero_point", "versions": ">10.0,<10.9", "predicted": "parse fails",
     "source": "https://example.org/<script>|`x`", "detail": "", "fix": "WeightSymmetric", "engine": "tensorrt"},
]}
# An older bundle's lint, which said a parse failure and, for the same versions, later stages the engine never reaches.
LINT_UNREACHED = {"schema": "qdq-matrix/lint/1", "findings": LINT["findings"][:2] + [
    dict(LINT["findings"][2], versions=">=8.0,<10.0")]}


def _trt(version: str, status: str, stage: str, precision) -> Cell:
    return Cell(bundle="user_model/net", case="user_model", params={"model": "net.onnx"}, digest="d",
                engine="tensorrt", engine_version=version, hardware="hw", status=status, last_stage=stage,
                verdict="undocumented", precision={n: {"precision": p, "evidence": ""} for n, p in precision.items()})


def _rows(report):
    return {(r["node"], r["version"]): r for r in report["predictions"]["rows"]}


def test_each_prediction_stands_next_to_what_each_tensorrt_version_did():
    cells = [_trt("8.6.0", "pass", "compare", {"conv0": "int8", "add_out": "float"}),
             _trt("10.8.0.43", "pass", "compare", {"conv0": "int8", "add_out": "int8"}),
             _cell("onnxruntime", "1.31.1", {"conv0": ("int8", ORT)})]
    report = node_report(cells, {"target_nodes": ["conv0", "add_out"], "lint": LINT})
    rows, p = _rows(report), report["predictions"]
    miss = rows[("conv0", "8.6.0")]
    assert (miss["observed"], miss["verdict"], miss["news"]) == ("int8", "news for the catalogue", True)
    assert rows[("add_out", "8.6.0")]["verdict"] == "agrees"
    assert rows[("conv0", "8.5.3.1")]["verdict"] == "predicted, not run here", "a version its range names, not run"
    assert rows[("q_x", "10.8.0.43")]["verdict"] == "cannot say", "the cell has no precision for the quantizer"
    assert not any(r["version"] in ("10.8.0.43", "1.31.1") for r in p["rows"] if r["node"] != "q_x"), "none there"
    assert p["rows"][0]["news"] and (p["news"], p["agrees"], p["ran"]) == (1, 1, ["8.6.0", "10.8.0.43"])
    # the headline's counts add up to its rows, "cannot say" included (a user saw 0 + 1 + 170 of 193 and 22 unnamed)
    assert p["news"] + p["agrees"] + p["cannot_say"] + p["not_run"] == len(p["rows"])
    only_8 = _rows(node_report(cells[:1], {"target_nodes": ["conv0"], "lint": LINT}))
    assert only_8[("q_x", ">10.0,<10.9")]["verdict"] == "predicted, not run here", "no run falls in the range"


def test_a_failed_parse_agrees_and_no_stage_behind_a_predicted_one_is_scored_and_an_old_bundle_says_no_lint():
    cells = [_trt("8.6.0", "fail", "", {}), _trt("8.5.3.1", "fail", "load", {})]
    report = node_report(cells, {"target_nodes": ["conv0"], "lint": LINT_UNREACHED})
    rows = _rows(report)
    assert (rows[("q_x", "8.6.0")]["observed"], rows[("q_x", "8.6.0")]["verdict"]) == ("parse fails", "agrees")
    assert rows[("q_x", "8.5.3.1")]["news"], "predicted a parse failure, the parser passed it and the build failed"
    assert {node for node, _ in rows} == {"q_x"}, "the nodes predicted to run are behind the parse failure"
    assert (report["predictions"]["news"], report["predictions"]["agrees"]) == (1, 1)
    assert node_report(cells, {"target_nodes": ["conv0"]})["predictions"]["present"] is False


def test_the_markdown_and_html_reports_show_misses_and_keep_sources_as_text(tmp_path):
    from matrix.nodes import write_node_reports

    cells = [_trt("8.6.0", "pass", "compare", {"conv0": "int8", "add_out": "float"})]
    md, html, data = write_node_reports(node_report(cells, {"target_nodes": ["conv0"], "lint": LINT}), tmp_path, "n")
    text = md.read_text()
    miss = "| grouped_conv | `8.6.0` [hw] | 1: conv0 | float | int8 | **miss: news for the catalogue** | [1] |  |"
    assert miss in text and text.index(miss) < text.index("## Nodes")
    assert "| nonzero_zero_point | `>10.0,<10.9` | 1: q_x | parse fails |  | predicted, not run here | [3] | (1) |" \
        in text, "no run falls in the range: the range is said"
    assert "| grouped_conv | `>=8.5.3.1,<=8.6.0` |" not in text, "8.6.0 ran: the range is said by its version"
    assert "<script>" not in text and "&lt;script>\\|\\`x\\`" in text
    page = html.read_text()
    assert "<script>" not in page and '<tr class="news">' in page and "predicted, not run here" in page
    assert json.loads(data.read_text())["predictions"]["news"] == 1
    p = json.loads(data.read_text())["predictions"]
    said = (f", {len(p['rows'])} by engine version (a node's prediction for one version, or for a range of versions "
            f"none of which ran): **1 miss (news for the catalogue)**, {p['agrees']} agree, {p['cannot_say']} cannot "
            f"say, {p['not_run']} predicted, not run here")
    assert said in text, "the headline names every kind of row it counts"
    assert p["news"] + p["agrees"] + p["cannot_say"] + p["not_run"] == len(p["rows"]), "the counts add up"
    rows = len([line for line in text.split("| rule | version |", 1)[1].split("\n\n", 1)[0].splitlines()
                if line.startswith("| ")]) - 1  # the table's rows, less its rule line
    assert f"Below, {rows} rows: one per rule, version and outcome" in text and rows == len(p["groups"])
    assert f"{p['cannot_say']} cannot say, {p['not_run']} predicted, not run here" in page


def test_the_report_side_never_imports_onnx_or_the_lint():
    import subprocess
    import sys

    code = ("import sys, matrix.nodes, matrix.predict; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'onnx' or m == 'check.lint'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_check_lint_compare_is_the_same_implementation():
    import check.lint
    import matrix.predict

    assert check.lint.compare is matrix.predict.compare and check.lint.Comparison is matrix.predict.Comparison


def test_a_parse_failure_at_another_node_says_nothing_about_this_one() -> None:
    from matrix.predict import node_outcome

    cell = {"status": "fail", "last_stage": "", "error": "ONNX parse failed: Invalid Node - b_conv1_DequantizeLinear",
            "failing_node": "b_conv1_DequantizeLinear"}  # found where the cell was made, never from the text
    assert node_outcome(cell, "b_conv1_DequantizeLinear") == "parse fails"
    assert node_outcome(cell, "x_QuantizeLinear") == "not observable"
    assert node_outcome(dict(cell, failing_node=""), "x_QuantizeLinear") == "parse fails"


def test_a_cell_under_a_user_models_old_id_finds_its_bundle_under_todays(tmp_path):
    """Committed cells say user_model/<slug>; bundles are now user_model/<slug>-<10 hex digits>."""
    import json

    from matrix.nodes import read_meta

    folder = tmp_path / "user_model" / "net-0123456789"
    folder.mkdir(parents=True)
    (folder / "case.json").write_text(json.dumps({"bundle": "user_model/net-0123456789", "lint": {"findings": []}}))
    assert read_meta(tmp_path, "user_model/net")["bundle"] == "user_model/net-0123456789"
    assert read_meta(tmp_path, "user_model/ne") == {}, "a slug is matched whole"
    (tmp_path / "user_model" / "net-abcdefabcd").mkdir()
    (tmp_path / "user_model" / "net-abcdefabcd" / "case.json").write_text("{}")
    assert read_meta(tmp_path, "user_model/net") == {}, "two candidates: neither is guessed"


def test_a_big_model_groups_its_nodes_and_counts_the_nodes_without_evidence_by_op(tmp_path):
    from matrix.nodes import write_node_reports

    names = [f"split{i}" for i in range(30)] + [f"conv{i}" for i in range(30)]
    details = {n: {"op": "Split" if n.startswith("split") else "Conv"} for n in names}
    ov = {n: ("int8", dict(OV, inputs=["int8"])) if n.startswith("conv") else ("unknown", "no runtime layer")
          for n in names}
    report = node_report([_cell("openvino", "2026.4.1", ov)], {"target_nodes": names, "target_details": details})
    col = report["columns"][0]
    assert col["unknown_ops"] == {"Split": 30} and len(col["unknown"]) == 30 and not report["listed"]
    assert [(g["kind"], g["op"], g["count"], g["results"]) for g in report["node_groups"]] == \
        [("compute", "Conv", 30, ["int8"]), ("other", "Split", 30, ["unknown"])]
    md, html, _ = write_node_reports(report, tmp_path, "big")
    text = md.read_text()
    assert "No precision evidence for 30 nodes: 30 Split (listed in the HTML and the JSON)." in text
    assert "split7" not in text.split("## Nodes", 1)[1].replace("split0, split1, split2, split3", "")
    page = html.read_text()
    assert "<summary>No precision evidence for 30 nodes: 30 Split</summary>" in page and "split29" in page


def test_markdown_keeps_plain_comparisons_and_escapes_only_what_opens_html():
    from matrix.safe import md_cell

    assert md_cell(">=8.0,<10.0") == ">=8.0,<10.0"
    assert md_cell("a < b && c > d") == "a < b && c > d"
    assert md_cell("<script>x</script> &amp; | `") == "&lt;script>x&lt;/script> &amp;amp; \\| \\`"


def test_every_quantized_precision_a_cell_can_hold_is_evidence_fp4_too():
    from core.cell import QUANTIZED_PRECISIONS

    assert [precision_of({"precision": p}) for p in QUANTIZED_PRECISIONS] == list(QUANTIZED_PRECISIONS)
    assert precision_of({"precision": "fp4"}) == "fp4" and precision_of({"precision": "nonsense"}) == "unknown"


def test_an_engine_wide_signature_reaches_the_report_and_the_bug_bundle():
    """rtx_conv_dtype_check is declared once for the engine (cases.common.ENGINE_SIGNATURES), not by the case."""
    from cases import get_case
    from cases.common import ENGINE_SIGNATURES
    from cases.verdict import signature_fields
    from matrix.bugbundle import signature_source
    from matrix.nodes import signature_short

    base = dict(params={}, digest="d", hardware="no GPU", verdict="as documented", engine="tensorrt-rtx",
                engine_version="1.6.1.120", status="fail", signature="rtx_conv_dtype_check")
    declared = next(s for s in ENGINE_SIGNATURES["tensorrt-rtx"] if s.name == "rtx_conv_dtype_check")
    judged = signature_fields(get_case("concat_requant"), "tensorrt-rtx", "rtx_conv_dtype_check")  # as cells record it
    cell = Cell(bundle="concat_requant/x", case="concat_requant", **dict(base, **judged))
    assert signature_short(cell) and signature_source(cell) == declared.source
    assert signature_short(Cell(bundle="gone/x", case="no_such_case", **base)) == ""


def test_a_built_column_says_once_that_built_is_not_running(tmp_path):
    """A TensorRT-RTX plan that only built reads as such, once under the table, with TensorRT-RTX#35; a report whose
    every column ran says nothing of it."""
    from matrix.nodes import write_node_reports

    built = _cell("tensorrt-rtx", "1.7.1.116", {"conv0": ("int8", TRT)}, status="built")
    ran = _cell("onnxruntime", "1.31.1", {"conv0": ("int8", ORT)})
    for cells, says in (([built, ran], 1), ([ran], 0)):
        md, html, _ = write_node_reports(node_report(cells, {"target_nodes": ["conv0"]}), tmp_path, f"n{says}")
        for page in (md.read_text(), html.read_text()):
            assert page.count("Built is not running") == says
            assert ("https://github.com/NVIDIA/TensorRT-RTX/issues/35" in page) is bool(says)


def test_a_derived_float_twin_says_which_pairs_became_a_clip_and_why(tmp_path):
    """A Q/DQ pair whose quantized range starts at 0 becomes a Relu in the float twin: the report says so in words a
    reader can check (a user's report read "(3 kept as the Relu their range starts at)" on a model with no Relu)."""
    loss = {"y": {"sqnr_db": 31.0, "cosine": 0.9995}}
    meta = {"target_nodes": [], "float_reference": {"derived": True, "loss": loss},
            "float_twin": {"pairs": 12, "relu": 3, "folded": 4, "dequantized_at_run": 0, "kept": []}}
    md = write_node_reports(node_report([], meta), tmp_path, "m")[0].read_text()
    assert "12 QuantizeLinear → DequantizeLinear pairs removed (3 of them replaced by a Clip to their quantized " \
           "range, which starts at 0: a quantizer folds a Relu or a Clip (Relu6, HardSwish's Clip(0, 6)) into such a " \
           "pair and removes it" in md, md
    assert "kept as the Relu" not in md


def test_a_twin_of_a_model_with_float_weights_says_its_loss_is_the_whole_quantizations(tmp_path):
    """Weights stored in float behind Q/DQ pairs (Constant -> QuantizeLinear -> DequantizeLinear): the twin removes
    the pairs and has the float weights back, so "its weights keep their quantized values" was wrong (a user trial)."""
    loss = {"y": {"sqnr_db": 31.0, "cosine": 0.9995}}
    meta = {"target_nodes": [], "float_reference": {"derived": True, "loss": loss},
            "float_twin": {"pairs": 12, "relu": 0, "folded": 0, "dequantized_at_run": 0, "kept": []}}
    md = write_node_reports(node_report([], meta), tmp_path, "m")[0].read_text()
    assert "the twin's weights are the float ones and its loss is the whole quantization's" in md
    assert "keep their quantized values" not in md
    meta["float_twin"]["folded"] = 4
    md = write_node_reports(node_report([], meta), tmp_path, "n")[0].read_text()
    assert "its weights keep their quantized values" in md



def test_the_quantization_loss_table_does_not_call_every_reference_a_simulated_qdq_model(tmp_path):
    """A dynamically quantized model's reference is onnx.reference on the model itself; the table's heading said "the
    reference, the Q/DQ model simulated in float" for it all the same (a user trial); it points at the Reference
    line."""
    stats = {"measure": "network", "outputs": {"y": {"sqnr_db": 27.5, "cosine": 0.999, "max_abs": 0.02, "peak": 1.0}}}
    cell = replace(_cell("onnxruntime", "1.32.0", {}), output_stats=stats)
    meta = {"target_nodes": [], "reference_engine": {"engine": "onnx.reference", "version": "1.23.2", "rewritten": {},
                                                     "words": "onnx.reference 1.23.2 on the model as it is"}}
    md = write_node_reports(node_report([cell], meta), tmp_path, "m")[0].read_text()
    assert "## Quantization loss beside engine fidelity" in md, md
    assert "the Q/DQ model simulated in float" not in md
    assert "(the reference, computed as the Reference line above says, against" in md
