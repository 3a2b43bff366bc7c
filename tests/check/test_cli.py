"""python -m check end to end on a model quantized by onnxruntime.quantization, and its refusals of bad input."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

from check.__main__ import main
from tests.check.models import float_convnet, qdq_conv, quantize_static
from tests.check.paths import report_file


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    """ORT-quantized with 7-bit weights: no x86-64 CPU, VNNI or not, saturates it, so both engines pass."""
    folder = tmp_path_factory.mktemp("models")
    return quantize_static(float_convnet(folder / "float.onnx", blocks=2), folder / "convnet_int8.onnx")


def test_check_runs_onnxruntime_and_openvino_and_writes_the_nodereport_file(quantized, tmp_path, capsys):
    out = ["--out", str(tmp_path / "b"), "--results", str(tmp_path / "r"), "--reports", str(tmp_path / "rep"),
           "--engine", "onnxruntime", "--engine", "openvino"]
    assert main([str(quantized), *out]) == 0
    printed = capsys.readouterr().out
    assert "quantized compute nodes ran in INT8" in printed and "## Nodes" in printed
    lint = re.search(r"lint user_model/convnet_int8-[0-9a-f]{10}: ", printed)
    assert lint and lint.start() < printed.index("running "), "predictions come before engines"
    report = json.loads(report_file(tmp_path / "rep", "convnet_int8").read_text())
    engines = {c["engine"] for c in report["columns"]}
    assert engines == {"onnxruntime", "openvino"}
    assert report["targets"] == 3 and {n["name"] for n in report["nodes"]} == {"conv0", "conv1", "add_out"}
    assert (report["compute"], report["other"]) == (2, 1)  # the convolutions; the Add is counted apart
    for col in report["columns"]:
        assert col["status"] == "pass" and col["ran"]
        assert "of 2 quantized compute nodes ran in INT8" in col["summary"]
        assert col["numerics"].startswith("SQNR ") and col["output_stats"]["measure"] == "network"
    openvino = next(c for c in report["columns"] if c["engine"] == "openvino")
    assert openvino["int8"] >= 2  # both convolutions run as i8/u8 kernels on any x86-64 CPU
    # engines, quantization loss beside engine fidelity, lint, nodes grouped, every node (behind a click)
    assert report_file(tmp_path / "rep", "convnet_int8", ".html").read_text().count("<table>") == 5
    lint = report["predictions"]
    assert lint["findings"] and lint["ran"] == [] and lint["not_run"] == len(lint["rows"]), \
        "no TensorRT ran here: every prediction is 'predicted, not run here'"
    assert {r["rule"] for r in lint["rows"]} >= {"dq_non_activation"}  # quantize_static's INT32 bias
    cells = sorted(next((tmp_path / "r").glob("convnet_int8-*")).glob("*.jsonl"))
    assert [p.name.split("-")[0] for p in cells] == ["onnxruntime", "openvino"]


@pytest.mark.slow
def test_with_no_gpu_a_check_has_a_real_tensorrt_rtx_plan_per_target(tmp_path, capsys):
    """TensorRT-RTX builds on any machine: by default a check gets its column, and --target one per architecture."""
    pytest.importorskip("tensorrt_rtx")
    from engines.tensorrt import gpu

    if gpu.detect().present:
        pytest.skip("a GPU is here: its cells may run, and the summary would say 'ran'")
    folder = tmp_path / "m"
    folder.mkdir()
    model = quantize_static(float_convnet(folder / "float.onnx", blocks=2), folder / "convnet_fbias.onnx",
                            quantize_bias=False, symmetric=True)  # TensorRT's parsers refuse INT32 bias DQs
    # and non-zero zero points (the lint predicts both)
    out = ["--out", str(tmp_path / "b"), "--results", str(tmp_path / "r"), "--reports", str(tmp_path / "rep")]
    assert main([str(model), "--engine", "tensorrt-rtx", "--target", "SM86,SM89", *out]) == 0
    report = json.loads(report_file(tmp_path / "rep", "convnet_fbias").read_text())
    columns = {c["hardware"]: c for c in report["columns"]}
    assert len(columns) == 2 and all(c["engine"] == "tensorrt-rtx" and c["status"] == "built" for c in columns.values())
    assert {h.rsplit("target=", 1)[-1] for h in columns} == {"SM86", "SM89"}
    for col in columns.values():
        assert col["summary"].startswith("2 of 2 quantized compute nodes INT8 (ahead-of-time plan)")
        assert col["int8"] == 2  # both convolutions: INT8 correlation layers, read from the build log
    assert "quantized compute nodes INT8 (ahead-of-time plan)" in capsys.readouterr().out


def test_prepare_only_then_from_bundles(quantized, tmp_path, capsys):
    assert main([str(quantized), "--prepare-only", "--out", str(tmp_path / "b")]) == 0
    assert len(list((tmp_path / "b" / "user_model").glob("convnet_int8-*/case.json"))) == 1
    assert main(["--from-bundles", str(tmp_path / "b"), "--engine", "onnxruntime", "--results", str(tmp_path / "r"),
                 "--reports", str(tmp_path / "rep")]) == 0
    assert "onnxruntime@" in capsys.readouterr().out
    assert main(["--from-bundles", str(tmp_path / "b"), "--lint-only"]) == 0, "the GPU box prints what was predicted"
    printed = capsys.readouterr().out
    assert "predicted parse fails" in printed and "running" not in printed


def test_lint_only_prints_one_line_per_rule_and_runs_nothing(quantized, tmp_path, capsys, monkeypatch):
    from check.lint import lint_path

    monkeypatch.chdir(tmp_path)
    assert main([str(quantized), "--lint-only", "--out", str(tmp_path / "b"), "--engine", "tensorflow"]) == 0
    lines = capsys.readouterr().out.splitlines()
    findings = lint_path(quantized)
    assert len(lines) == len({(f.rule, f.engine, f.versions, f.predicted, f.source) for f in findings}) < len(findings)
    assert all(line.startswith(f"lint {quantized}: ") and " predicted " in line for line in lines)
    assert any("2 nodes (b0_DequantizeLinear, b1_DequantizeLinear) (dq_non_activation): TensorRT >=8.0,<10.0 "
               "predicted parse fails" in line for line in lines)
    assert not (tmp_path / "b").exists(), "no bundle is made"
    assert main([str(qdq_conv(tmp_path / "conv.onnx")), "--lint-only"]) == 0
    assert capsys.readouterr().out.strip().endswith("conv.onnx: no known problem matched (no catalogue case's pattern "
                                                    "and no source-cited rule; no prediction that it builds)")
    (tmp_path / "junk.onnx").write_text("not a model")
    assert main([str(tmp_path / "junk.onnx"), str(tmp_path / "conv.onnx"), "--lint-only"]) == 4
    lines = capsys.readouterr().out.splitlines()
    assert "not an ONNX model" in lines[0] and lines[1].endswith("no prediction that it builds)"), \
        "one bad model costs only itself"


def _refused(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("check: ") and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("extra", [["--engine", "tensorflow"], ["--trt-python", sys.executable]])
def test_unknown_engine_and_an_interpreter_without_tensorrt_are_refused(extra, tmp_path, capsys):
    model = qdq_conv(tmp_path / "conv.onnx")
    err = _refused([str(model), "--out", str(tmp_path / "b"), *extra], capsys)
    assert "unknown engine 'tensorflow'" in err or "has no TensorRT" in err


def test_usage_errors_are_refused_with_one_line_and_exit_2(tmp_path, capsys):
    out = ["--out", str(tmp_path / "b"), "--engine", "onnxruntime", "--reports", str(tmp_path / "rep")]
    assert "no such model file" in _refused([str(tmp_path / "absent.onnx"), *out], capsys)
    model = qdq_conv(tmp_path / "conv.onnx")
    assert "--inputs" in _refused([str(model), "--inputs", str(tmp_path / "absent.npz"), *out], capsys)
    assert "write it as NAME:1x3x224x224" in _refused([str(model), "--shape", "x=1,3", *out], capsys)
    assert "min <= opt <= max" in _refused([str(model), "--shape", "x:1x3x8x8,1x3x8x8,1x3x4x8", *out], capsys)
    assert "names no input 'image'" in _refused([str(model), "--shape", "image:1x3x8x8", *out], capsys)
    assert not (tmp_path / "rep").exists(), "nothing ran"


def test_a_model_that_cannot_be_used_gets_its_report_and_exit_4(tmp_path, capsys):
    (tmp_path / "junk.onnx").write_text("not a model")
    out = ["--out", str(tmp_path / "b"), "--engine", "onnxruntime", "--reports", str(tmp_path / "rep"),
           "--results", str(tmp_path / "r")]
    assert main([str(tmp_path / "junk.onnx"), *out]) == 4
    printed = capsys.readouterr().out
    assert "junk.onnx: unusable: not an ONNX model" in printed and "exit status 4" in printed
    # no lint ran on it: nothing says "what this check says of TensorRT is the lint's prediction" (a user trial)
    assert "lint's prediction" not in printed and "TensorRT (8.x" not in printed
    # a model cut short reads as ONNX at first: said so, not "not an ONNX model" as for a text file (a user trial)
    whole = qdq_conv(tmp_path / "whole.onnx").read_bytes()
    (tmp_path / "cut.onnx").write_bytes(whole[: len(whole) // 2])
    assert main([str(tmp_path / "cut.onnx"), *out]) == 4
    printed = capsys.readouterr().out
    assert "cut.onnx: unusable: a damaged or truncated ONNX model" in printed, printed
    report = json.loads(report_file(tmp_path / "rep", "junk").read_text())
    assert report["status"] == "unusable" and report["model"] == "junk.onnx" and str(tmp_path) not in report["reason"]
    model = qdq_conv(tmp_path / "conv.onnx")
    np.savez(tmp_path / "bad.npz", image=np.zeros((1, 3, 8, 8), np.float32))
    assert main([str(model), "--inputs", str(tmp_path / "bad.npz"), *out]) == 4
    assert "no model input named image" in capsys.readouterr().out




@pytest.mark.slow
def test_checking_a_model_again_reuses_its_cells_unless_the_measure_changed(quantized, tmp_path, capsys):
    """The second run of the same command runs no engine; a new --min-sqnr judges the stored outputs again."""
    out = ["--out", str(tmp_path / "b"), "--results", str(tmp_path / "r"), "--reports", str(tmp_path / "rep"),
           "--engine", "onnxruntime"]
    assert main([str(quantized), *out]) == 0
    capsys.readouterr()
    assert main([str(quantized), *out]) == 0
    again = capsys.readouterr().out
    assert ": 1 reused" in again and "1 cells reused, nothing to run here" in again, again  # pytest not even started
    (results,) = (tmp_path / "r").rglob("onnxruntime-*.jsonl")
    assert sum('"bundle"' in line for line in results.read_text().splitlines()) == 1, "nothing run twice"
    assert main([str(quantized), *out, "--min-sqnr", "200"]) == 0
    printed = capsys.readouterr().out
    assert "cells: 0 reused from earlier runs, run now: 1 pass" in printed, "judged at the new line, not reused"
    assert "SQNR ≥ 200.0 dB" in printed


def test_a_long_preparation_says_every_interval_which_step_it_is_on(tmp_path, capfd, monkeypatch):
    """A slow float twin (monkeypatched: it sleeps) prints "preparing m.onnx: building the float twin (N s)" while
    it runs (from the child process that prepares the model: read at the file descriptor)."""
    import time

    import check.bundle
    import check.progress

    made = check.bundle.twin_reference

    def slow_twin(*args, **kwargs):
        time.sleep(0.5)
        return made(*args, **kwargs)

    monkeypatch.setattr(check.progress, "INTERVAL_S", 0.1)
    monkeypatch.setattr(check.bundle, "twin_reference", slow_twin)
    model = qdq_conv(tmp_path / "m.onnx")
    assert main([str(model), "--prepare-only", "--out", str(tmp_path / "b")]) == 0
    lines = [line for line in capfd.readouterr().out.splitlines() if line.startswith("preparing m.onnx: ")]
    assert lines and all(re.fullmatch(r"preparing m\.onnx: [a-z][^()]* \(\d+ s\)", line) for line in lines), lines
    assert any(line.startswith("preparing m.onnx: building the float twin (") for line in lines), lines
