"""matrix/predict.py: the lint's summary lines as check prints them."""

from __future__ import annotations


def test_a_node_two_findings_say_the_same_of_is_named_once():
    """A DynamicQuantizeLSTM that two findings speak for alike (one per target setting, say) is one node, not two."""
    from matrix.predict import summary_lines

    one = {"rule": "int8_constant_into_plugin", "engine": "tensorrt-rtx", "versions": "==1.7.1.116",
           "predicted": "parse fails", "source": "reports/observed/nvidia-h100/rtx-1.7.1.116.jsonl"}
    lint = {"findings": [dict(one, node="LSTM_202_quant"), dict(one, node="LSTM_202_quant"), dict(one, node="c1")]}
    [line] = summary_lines("m", lint)
    assert "2 nodes (LSTM_202_quant, c1)" in line, line


def test_one_prediction_two_baselines_back_is_one_line_with_both_sources():
    """Seed 032's 8.6.0 build failure rests on an H100's and an H200's baseline: one line naming both, where check
    printed the same prediction twice (a reviewer's trial)."""
    from matrix.predict import summary_lines

    one = {"node": "conv0", "rule": "two_conv_fanout_qdq", "engine": "tensorrt", "versions": "==8.6.0",
           "predicted": "build fails"}
    lint = {"findings": [dict(one, source="reports/observed/nvidia-h100/trt-8.6.0.jsonl"),
                         dict(one, source="reports/observed/nvidia-h200/trt-8.6.0.jsonl")]}
    [line] = summary_lines("m", lint)
    assert line.endswith("[observed: reports/observed/nvidia-h100/trt-8.6.0.jsonl; observed: "
                         "reports/observed/nvidia-h200/trt-8.6.0.jsonl]"), line


def _finding(node, predicted, versions, engine="tensorrt", setting=""):
    return {"node": node, "rule": "r", "engine": engine, "versions": versions, "setting": setting,
            "predicted": predicted, "source": "https://example.org/doc"}


def test_a_predicted_parse_failure_masks_later_stages_of_its_engine_versions_only():
    """A network the parser refuses never reaches the builder: no build or precision prediction for those versions of
    that engine, each kept, narrowed, for the versions the parser is not predicted to refuse."""
    from matrix.predict import covers, reached

    kept = reached([_finding("q", "parse fails", ">=8.0"), _finding("c", "build fails", "==8.6.0"),
                    _finding("c", "int8", ""), _finding("c", "int8", "==1.7.1.116", engine="tensorrt-rtx"),
                    _finding("d", "parse fails", ">=10.0,<10.2")])
    said = [(f["node"], f["engine"], f["predicted"], f["versions"]) for f in kept]
    assert ("c", "tensorrt", "build fails", "==8.6.0") not in said
    assert [f["versions"] for f in kept if f["predicted"] == "int8" and f["engine"] == "tensorrt"] == ["<8.0"]
    assert ("c", "tensorrt-rtx", "int8", "==1.7.1.116") in said, "another engine's parser is not TensorRT's"
    assert {(n, v) for n, _, p, v in said if p == "parse fails"} == {("q", ">=8.0"), ("d", ">=10.0,<10.2")}
    assert not any(covers(f["versions"], "8.5.3.1") for f in kept if f["predicted"] != "parse fails")


def test_a_build_failure_masks_precisions_and_a_target_masks_its_own_setting():
    from matrix.predict import reached

    kept = reached([_finding("a", "build fails", "==8.6.0"), _finding("b", "int8", ">=8.5,<=8.6.0"),
                    _finding("b", "float", "==8.6.0"),
                    _finding("c", "parse fails", "==1.7.1.116", engine="tensorrt-rtx", setting="target=SM75"),
                    _finding("d", "int8", "==1.7.1.116", engine="tensorrt-rtx", setting="target=SM75"),
                    _finding("d", "int8", "==1.7.1.116", engine="tensorrt-rtx", setting="target=SM86"),
                    _finding("e", "int8", "==1.7.1.116", engine="tensorrt-rtx")])
    said = [(f["node"], f.get("setting"), f["predicted"], f["versions"]) for f in kept]
    assert ("b", "", "int8", "!=8.6.0,<=8.6.0,>=8.5") in said and ("b", "", "float", "==8.6.0") not in said
    assert ("d", "target=SM75", "int8", "==1.7.1.116") not in said
    assert ("d", "target=SM86", "int8", "==1.7.1.116") in said and ("e", "", "int8", "==1.7.1.116") in said


def test_the_comparison_does_not_score_a_prediction_the_engine_never_reaches():
    """A node predicted to build fails, under a parse failure predicted for the same version, is no prediction: the
    comparison has the parse failure's row only, and the summary lines say no build failure."""
    from matrix.predict import compare, summary_lines

    findings = [_finding("q", "parse fails", ">=8.0"), _finding("c", "build fails", "==8.6.0")]
    cell = {"engine": "tensorrt", "engine_version": "8.6.0", "status": "fail", "last_stage": "",
            "failing_node": "q", "hardware": "hw", "bundle": "b", "verdict": "as documented"}
    assert [(r.node, r.predicted) for r in compare(findings, [cell])] == [("q", "parse fails")]
    assert not [line for line in summary_lines("m", {"findings": findings}) if "build fails" in line]


def test_another_engines_failure_is_no_miss_of_the_tensorrt_lint():
    """OpenVINO refusing com.microsoft.QGemm at load, with no finding, is no network row: the lint predicts TensorRT's
    parser; a TensorRT-RTX cell failing the same way is its miss."""
    from matrix.predict import compare

    failed = {"status": "fail", "last_stage": "", "failing_node": "", "hardware": "hw", "bundle": "user_model/m",
              "verdict": "new failure", "error": "No conversion rule found for operations: com.microsoft.QGemm"}
    openvino = dict(failed, engine="openvino", engine_version="2026.4.1")
    rtx = dict(failed, engine="tensorrt-rtx", engine_version="1.7.1.116")
    assert compare([], [openvino]) == []
    [row] = compare([], [rtx])
    assert (row.level, row.engine, row.observed, row.news) == ("model", "tensorrt-rtx", "parse fails", True)
