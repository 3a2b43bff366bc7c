"""Diff two versions of an engine: what a PR comment says changed."""

from __future__ import annotations

import re

import pytest

from matrix.diff import diff

OLD, NEW = "10.0.1", "10.3.0"


@pytest.fixture
def cells(make_cell):
    def pair(bundle, before, after):
        return [make_cell(bundle, engine_version=OLD, **before), make_cell(bundle, engine_version=NEW, **after)]

    failed = dict(status="fail", last_stage="load", verdict="as documented", fused=None, max_error_steps=None)
    return (
        pair("q_output_type/out=int8", failed | {"error": "could not find any supported formats"}, {})
        + pair("q_output_type/out=uint8", {}, failed | {"error": "Assertion failed: scale"})
        + pair("grouped_conv/g=2", {}, {"fused": False, "precision": {"node_of_y": {"precision": "float"}}})
        + pair("grouped_conv/g=4", failed | {"error": "old text\nmore"}, failed | {"error": "new text"})
        + pair("grouped_conv/g=8", {"max_error_steps": 0.0}, {"max_error_steps": 3.0})
        + pair("instancenorm_int8/c=3", {}, {"max_error_steps": 0.4})
        + pair("instancenorm_int8/c=4", failed, {"status": "crashed", "verdict": "new failure", "fused": None,
                                                 "reason": "SIGSEGV"})
        + [make_cell("instancenorm_int8/c=5", engine_version=NEW, status="not_run", verdict="not run",
                     reason="no NVIDIA GPU", fused=None)]
    )


def test_diff_finds_every_kind_of_change(cells):
    report = diff(cells, "tensorrt", OLD, NEW)
    kinds = {c.bundle: c.kind for c in report.changes}
    assert kinds == {
        "q_output_type/out=int8": "fixed",
        "q_output_type/out=uint8": "regressed",
        "grouped_conv/g=2": "fusion lost",
        "grouped_conv/g=4": "error changed",
        "grouped_conv/g=8": "numeric drift",
        "instancenorm_int8/c=4": "now crashes",
    }
    assert report.compared == 7
    assert report.not_compared == ("instancenorm_int8/c=5 [NVIDIA H200 (sm_90)]: no cell for 10.0.1",)


def test_verdict_line_leads_the_markdown(cells):
    report = diff(cells, "tensorrt", OLD, NEW)
    assert report.verdict.startswith("❌ 1 regression, 1 fusion lost, 1 new crash, 1 fix")
    md = report.markdown()
    assert md.splitlines()[2] == f"**{report.verdict}**"
    assert "| grouped_conv | g=2 | fusion lost | fused | not fused | float: node_of_y |" in md


def test_no_changes_says_so(make_cell):
    cells = [make_cell(engine="onnxruntime", engine_version=v, hardware="cpu") for v in ("1.16.3", "1.23.2")]
    report = diff(cells, "onnxruntime", "1.16.3", "1.23.2")
    assert report.verdict == "no changes between onnxruntime 1.16.3 and 1.23.2 on cpu: 1 reproducer compared"


def test_drift_threshold_is_configurable(make_cell):
    cells = [make_cell(engine_version=OLD, max_error_steps=0.0), make_cell(engine_version=NEW, max_error_steps=0.3)]
    assert diff(cells, "tensorrt", OLD, NEW).changes == ()
    assert [c.kind for c in diff(cells, "tensorrt", OLD, NEW, drift=0.1).changes] == ["numeric drift"]


def test_several_gpus_are_compared_per_hardware(make_cell):
    cells = [make_cell(engine_version=v, hardware=h, fused=(h == "B" or v == OLD))
             for v in (OLD, NEW) for h in ("A", "B")]
    report = diff(cells, "tensorrt", OLD, NEW)
    assert [(c.hardware, c.kind) for c in report.changes] == [("A", "fusion lost")]
    assert "compared per hardware" in report.notes[0]
    assert "### on A\n" in report.markdown() and "### on B\n\nNo changes." in report.markdown()
    assert [c.kind for c in diff(cells, "tensorrt", OLD, NEW, hardware="B").changes] == []


def test_the_same_change_on_several_gpus_is_said_once_with_their_list(make_cell):
    cells = [make_cell(engine_version=v, hardware=h, fused=(v == OLD or h == "C"))
             for v in (OLD, NEW) for h in ("A", "B", "C")]
    report = diff(cells, "tensorrt", OLD, NEW)
    assert [(c.hardware, c.kind) for c in report.changes] == [("A", "fusion lost"), ("B", "fusion lost")]
    assert [labels for _, labels in report.merged()] == [("A", "B")]
    assert report.count("fusion lost") == 1 and report.regressions == 1
    text = report.markdown()
    assert text.count("| fusion lost |") == 1
    assert "### on A and B\n" in text and "### on C\n\nNo changes." in text


def test_unknown_engine_or_version_lists_what_is_there(cells):
    with pytest.raises(ValueError, match="engines present: tensorrt"):
        diff(cells, "openvino", "1", "2")
    with pytest.raises(ValueError, match=r"versions present: 10\.0\.1 \(NVIDIA H200 \(sm_90\)\); 10\.3\.0"):
        diff(cells, "tensorrt", "9.9", NEW)


def test_cli_diff_prints_markdown_and_appends_to_the_job_summary(cells, write_results, tmp_path, monkeypatch, capsys):
    from matrix.__main__ import main

    path = write_results("trt.jsonl", cells)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["diff", "tensorrt", OLD, NEW, "--results", str(path)]) == 0
    assert main(["diff", "tensorrt", OLD, NEW, "--results", str(path), "--strict"]) == 1
    out = capsys.readouterr().out
    assert "## tensorrt 10.0.1 → 10.3.0" in out
    assert summary.read_text().startswith("earlier\n## tensorrt")


def test_cli_diff_unknown_version_exits_2_naming_the_versions(cells, write_results, capsys):
    from matrix.__main__ import main

    path = write_results("trt.jsonl", cells)
    assert main(["diff", "tensorrt", "8.6", NEW, "--results", str(path)]) == 2
    assert "versions present: 10.0.1" in capsys.readouterr().err


def test_cli_diff_with_a_version_that_never_ran_says_so_in_one_line_and_exits_4(make_cell, write_results, capsys):
    """TensorRT 10.16.1.11 comes from NVIDIA's index, which no machine here reaches: its only cells are "not run"
    stand-ins from a machine without a GPU, and no cell at all is the same answer."""
    from matrix.__main__ import NOTHING_TO_COMPARE, main

    ran = [make_cell(f"grouped_conv/g={g}", engine_version="8.6.0") for g in (2, 4)]
    stand_ins = [make_cell(f"grouped_conv/g={g}", engine_version="10.16.1.11", hardware="no NVIDIA GPU",
                           status="not_run", verdict="not run", reason="no NVIDIA GPU", fused=None) for g in (2, 4)]
    for name, cells in (("with.jsonl", ran + stand_ins), ("without.jsonl", ran)):
        path = write_results(name, cells)
        assert main(["diff", "tensorrt", "8.6.0", "10.16.1.11", "--results", str(path)]) == NOTHING_TO_COMPARE == 4
        said = capsys.readouterr()
        assert said.out == "" and said.err.splitlines() == [
            "matrix diff: tensorrt 10.16.1.11 never ran on any machine of this project: its builder wheel is not "
            "reachable from here (NVIDIA's index); there is nothing to compare"]


def test_same_signature_in_other_words_is_collapsed_not_headlined(make_cell):
    failed = dict(status="fail", last_stage="load", verdict="as documented", fused=None, signature="nonzero_zero_point")
    cells = [make_cell("grouped_conv/g=1", engine_version=OLD, error="TRT only supports symmetric", **failed),
             make_cell("grouped_conv/g=1", engine_version=NEW, error="TensorRT only supports symmetric", **failed)]
    report = diff(cells, "tensorrt", OLD, NEW)
    assert [c.kind for c in report.changes] == ["error reworded"]
    assert report.regressions == 0 and "1 error reworded" in report.verdict
    assert "<details><summary>1 error reworded" in report.markdown()



def test_an_error_that_moved_to_other_engine_source_lines_is_reworded_and_one_that_changed_words_is_not(make_cell):
    failed = dict(status="fail", last_stage="build", verdict="new failure", fused=None, signature="")
    text = ("Myelin ([pass.cpp:{}: run_passes] Cannot compile for target(s) sm75, because the model contains "
            "HW-specific datatypes: fp8_e4m3. In compileGraph at /_src/optimizer/myelin/codeGenerator.cpp:{})")
    moved = [make_cell("fp8_qdq/a", engine_version=OLD, error=text.format(1357, 1783), **failed),
             make_cell("fp8_qdq/a", engine_version=NEW, error=text.format(1348, 1825), **failed)]
    assert [c.kind for c in diff(moved, "tensorrt", OLD, NEW).changes] == ["error reworded"]
    changed = [make_cell("fp8_qdq/a", engine_version=OLD, error=text.format(1357, 1783), **failed),
               make_cell("fp8_qdq/a", engine_version=NEW, error=text.format(1357, 1783).replace("sm75", "sm80"),
                         **failed)]
    assert [c.kind for c in diff(changed, "tensorrt", OLD, NEW).changes] == ["error changed"]

def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


OPENER = re.compile(r"(?<!\\)(?:\\\\)*(`+)")  # a backtick run no backslash escapes


def _without_code_spans(text: str) -> str:
    """The Markdown with every code span removed (CommonMark: a run of n backticks closes at the next run of n)."""
    out, i = [], 0
    while True:
        m = OPENER.search(text, i)
        if not m:
            return "".join(out) + text[i:]
        fence = m.group(1)
        close = re.compile(r"(?<!`)" + fence + r"(?!`)").search(text, m.end(1))
        out.append(text[i:m.start(1)] if close else text[i:m.end(1)])  # an unclosed run is literal text
        i = close.end() if close else m.end(1)


def test_text_from_results_files_stays_text_in_the_markdown(make_cell):
    evil = "<script>alert(1)</script> | a`b``c"
    hw = "GPU <img src=x onerror=alert(1)> | `x`"
    failed = dict(status="fail", last_stage="build", verdict="fails against expectation", fused=None,
                  max_error_steps=None, hardware=hw)
    cells = [make_cell("grouped_conv/<b>g</b>|1", engine_version=OLD, hardware=hw),
             make_cell("grouped_conv/<b>g</b>|1", engine_version=NEW, error=evil, **failed),
             make_cell("grouped_conv/g=2", engine_version=OLD, error="old | text", **failed),
             make_cell("grouped_conv/g=2", engine_version=NEW, error=evil, **failed),
             make_cell("grouped_conv/g=3", engine_version=OLD, hardware=hw)]
    md = diff(cells, "tensorrt", OLD, NEW).markdown()
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert len(rows) == 4 and all(_unescaped_pipes(r) == 7 for r in rows), "six cells a row, whatever the text"
    regressed = next(r for r in rows if "| regressed |" in r)
    span = regressed.rsplit(" | ", 1)[1][:-2]
    assert span.startswith("```") and span.strip("` ").replace("\\|", "|") == evil, "the error is one code span"
    outside = _without_code_spans(md).replace("<details><summary>", "").replace("</summary>", "")
    outside = outside.replace("</details>", "")
    assert "<" not in outside and "&lt;script>" in outside and "&lt;img src=x" in outside
    assert "\\`x\\`" in outside, "a backtick outside a code span is escaped, not a code span"


def test_an_error_change_the_versions_own_machines_disagree_on_is_said_so(make_cell):
    """8.6.0 fails one reproducer at parse on an H200 and at build on an H100 (both sm_90): its change from 8.5.3.1 on
    the H100 is no upgrade's doing, and the diff says what each run did instead of "error changed"."""
    h100 = dict(hardware="NVIDIA H100 80GB HBM3 (sm_90)", hardware_detail={"compute_capability": "9.0"})
    h200 = dict(hardware="NVIDIA H200 (sm_90)", hardware_detail={"compute_capability": "9.0"})
    parse = dict(status="fail", last_stage="", error="ONNX parse failed: scaleAllPositive", fused=None)
    build = dict(status="fail", last_stage="load", error="build_serialized_network returned None", fused=None)
    b = "fp16_quantize_rounding/values=thread+output=int8"
    steady = "fp16_quantize_rounding/values=spread+output=int8"
    cells = [make_cell(b, engine_version="8.5.3.1", **h100, **parse),
             make_cell(b, engine_version="8.5.3.1", **h200, **parse),
             make_cell(b, engine_version="8.6.0", **h100, **build),
             make_cell(b, engine_version="8.6.0", **h200, **parse),
             make_cell(steady, engine_version="8.5.3.1", **h100, **parse),
             make_cell(steady, engine_version="8.5.3.1", **h200, **parse),
             make_cell(steady, engine_version="8.6.0", **h100, **build),
             make_cell(steady, engine_version="8.6.0", **h200, **build)]
    report = diff(cells, "tensorrt", "8.5.3.1", "8.6.0")
    kinds = {(c.bundle, c.hardware): c.kind for c in report.changes}
    assert kinds == {(b, h100["hardware"]): "runs disagree", (steady, h100["hardware"]): "error changed",
                     (steady, h200["hardware"]): "error changed"}
    said = next(c.detail for c in report.changes if c.kind == "runs disagree")
    assert said == ("8.6.0 fails it at build on NVIDIA H100 80GB HBM3 (sm_90) and fails it at load on "
                    "NVIDIA H200 (sm_90)")
    assert "1 stage change not counted (runs disagree)" in report.verdict



def test_an_error_text_changed_at_one_stage_is_still_an_error_change(make_cell):
    """8.6.0's stage varies (parse on the H200, build on the H100), but on the H100 both versions failed at build with
    other words: that text is the versions' own difference, and stays "error changed"."""
    h100 = dict(hardware="NVIDIA H100 80GB HBM3 (sm_90)", hardware_detail={"compute_capability": "9.0"})
    h200 = dict(hardware="NVIDIA H200 (sm_90)", hardware_detail={"compute_capability": "9.0"})
    b = "fp16_scale_qdq/graph=conv+weights=per_tensor"
    old_build = dict(status="fail", last_stage="load", error="Assertion engine != nullptr failed", fused=None)
    new_build = dict(status="fail", last_stage="load", error="weightsPtr.h: Assertion type() failed", fused=None)
    parse = dict(status="fail", last_stage="", error="ONNX parse failed: scaleAllPositive", fused=None)
    cells = [make_cell(b, engine_version="8.5.3.1", **h100, **old_build),
             make_cell(b, engine_version="8.5.3.1", **h200, **old_build),
             make_cell(b, engine_version="8.6.0", **h100, **new_build),
             make_cell(b, engine_version="8.6.0", **h200, **parse)]
    kinds = {c.hardware: c.kind for c in diff(cells, "tensorrt", "8.5.3.1", "8.6.0").changes}
    assert kinds == {h100["hardware"]: "error changed", h200["hardware"]: "runs disagree"}


def test_a_stage_change_of_a_reproducer_another_version_is_unstable_on_is_not_counted(make_cell):
    """8.5.2.2 ran on one GPU only, so its runs cannot disagree; but 8.6.0's runs of the same reproducer did. A stage
    change between 8.5.2.2 and 8.5.3.1 is then not counted either, and the detail names 8.6.0's runs."""
    h100 = dict(hardware="NVIDIA H100 80GB HBM3 (sm_90)", hardware_detail={"compute_capability": "9.0"})
    h200 = dict(hardware="NVIDIA H200 (sm_90)", hardware_detail={"compute_capability": "9.0"})
    parse = dict(status="fail", last_stage="", error="ONNX parse failed: scaleAllPositive", fused=None)
    build = dict(status="fail", last_stage="load", error="build_serialized_network returned None", fused=None)
    b = "fp16_quantize_rounding/values=thread+output=int8"
    cells = [make_cell(b, engine_version="8.5.2.2", **h100, **build),
             make_cell(b, engine_version="8.5.3.1", **h100, **parse),
             make_cell(b, engine_version="8.6.0", **h100, **build),
             make_cell(b, engine_version="8.6.0", **h200, **parse)]
    [change] = diff(cells, "tensorrt", "8.5.2.2", "8.5.3.1").changes
    assert change.kind == "runs disagree" and change.detail.startswith("8.6.0 fails it at build on NVIDIA H100")


def test_the_same_error_with_a_signature_matched_on_one_side_only_is_no_change(make_cell):
    """Both versions fail at parse with the very same words; only the newer cell names the catalogue's signature (it
    was recorded after the signature was added). The engine did not change: nothing is reported."""
    said = dict(status="fail", last_stage="", fused=None,
                error='ONNX parse failed: Assertion failed: creator && "Plugin not found"')
    b = "dynamic_quantize/form=conv"
    cells = [make_cell(b, engine_version="8.5.3.1", **said),
             make_cell(b, engine_version="8.6.0", **said, signature="dql_plugin_not_found")]
    assert diff(cells, "tensorrt", "8.5.3.1", "8.6.0").changes == ()


@pytest.mark.parametrize("before,after", [("not_applicable", "pass"), ("pass", "not_applicable"),
                                          ("not_applicable", "fail")])
def test_a_pair_with_a_side_not_applicable_is_no_change_and_says_why_it_is_not_compared(make_cell, before, after):
    why = "the model's ONNX IR version 10 is newer than this version reads (IR 9 at most)"
    states = {"not_applicable": dict(status="not_applicable", verdict="not applicable", reason=why, fused=None,
                                     max_error_steps=None, last_stage="load", error="Unsupported model IR version"),
              "pass": dict(fused=True), "fail": dict(status="fail", verdict="new failure", fused=None,
                                                     last_stage="load", error="something else")}
    cells = [make_cell("dq_blocked_axis/axis=0", engine_version=OLD, **states[before]),
             make_cell("dq_blocked_axis/axis=0", engine_version=NEW, **states[after])]
    report = diff(cells, "tensorrt", OLD, NEW)
    assert report.changes == ()
    side = OLD if before == "not_applicable" else NEW
    assert len(report.not_compared) == 1
    assert report.not_compared[0].startswith("dq_blocked_axis/axis=0 [")
    assert report.not_compared[0].endswith(f"]: {side} not applicable ({why})")


def test_two_models_under_one_bundle_id_are_not_compared(make_cell):
    """A bundle id whose cells at the two versions ran different models (a user's `reduced`, remade between rounds):
    no change is read from them, and the diff says why it did not compare them."""
    cells = [make_cell("user_model/reduced", engine_version=OLD, digest="a" * 64),
             make_cell("user_model/reduced", engine_version=NEW, digest="b" * 64, status="fail", last_stage="build",
                       verdict="new failure", fused=None, error="an error")]
    report = diff(cells, "tensorrt", OLD, NEW)
    assert report.changes == () and report.compared == 0
    assert report.not_compared == ("user_model/reduced [NVIDIA H200 (sm_90)]: not the same model: 10.0.1's cell ran "
                                   f"digest {'a' * 12}, 10.3.0's {'b' * 12}",)


def test_a_fusion_change_node_by_node_says_which_way_in_its_group(make_cell):
    """Both cells partly fused (fused None): the change is counted node by node; its group (by_cause) says "INT8 on
    more nodes -> INT8 on fewer nodes", where a user's report read "N INT8 nodes -> N INT8 nodes" (the counts masked
    away), and the reproducer's own row keeps its counts."""
    from matrix.diff import by_cause

    both = {"a": {"precision": "int8"}, "b": {"precision": "int8"}}
    one = {"a": {"precision": "int8"}, "b": {"precision": "float"}}
    cells = [make_cell("grouped_conv/g=2", engine_version=OLD, fused=None, precision=both),
             make_cell("grouped_conv/g=2", engine_version=NEW, fused=None, precision=one),
             make_cell("grouped_conv/g=4", engine_version=OLD, fused=None, precision=one),
             make_cell("grouped_conv/g=4", engine_version=NEW, fused=None, precision=both)]
    report = diff(cells, "tensorrt", OLD, NEW)
    groups = {g.kind: (g.before, g.after) for g in by_cause(report.changes)}
    assert groups == {"fusion lost": ("INT8 on more nodes", "INT8 on fewer nodes"),
                      "fusion gained": ("INT8 on fewer nodes", "INT8 on more nodes")}, groups
    rows = {c.kind: (c.before, c.after) for c in report.changes}
    assert rows["fusion lost"] == ("2 of 2 INT8 nodes", "1 of 2 INT8 nodes")
