"""Whole models are judged by signal-to-noise, single-op reproducers by steps: deep quantized networks that agree
with the reference pass on ONNX Runtime and OpenVINO, a really wrong output fails, and --localize names where drift
starts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from cases import get_case
from check.__main__ import main
from check.bundle import bundle_from_model
from check.localize import localize_cell
from core import numerics
from engines import get_engine
from engines.cells import judge_observation, measure
from generators.bundle import verify_bundle
from tests.check.models import deep_convnet, qdq_conv, quantize_for_tensorrt, quantize_fragile, quantize_static
from tests.check.paths import report_file

CASE = get_case("user_model")


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    """A 24-layer residual convnet and two quantized copies: TensorRT settings, and ORT's int8 defaults."""
    folder = tmp_path_factory.mktemp("deep")
    floats = deep_convnet(folder / "deep_float.onnx", layers=24)
    trt = quantize_for_tensorrt(floats, folder / "deep_trt.onnx")
    return floats, trt, quantize_static(floats, folder / "deep.onnx")


@pytest.fixture(scope="module")
def fragile(tmp_path_factory):
    """An 8-layer convnet quantized with TensorRT settings on one calibration input twenty times too wide
    (tests.check.models.quantize_fragile): its Q/DQ reference is about 9 dB from the float model."""
    folder = tmp_path_factory.mktemp("fragile")
    floats = deep_convnet(folder / "fragile_float.onnx", layers=8)
    return floats, quantize_fragile(floats, folder / "fragile.onnx"), _data_in_unit_range(floats, folder / "data.npz")


def _data_in_unit_range(model: Path, npz: Path) -> Path:
    """The data the fragile model meets, uniform in [-1, 1): its quantizers declare twenty times that range, which
    check's own inputs would be drawn over (check.inputs), so the tests give the data as --inputs does."""
    vi = onnx.load(str(model)).graph.input[0]
    shape = [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim]
    np.savez(npz, **{vi.name: np.random.default_rng(0).uniform(-1.0, 1.0, shape).astype(np.float32)})
    return npz


def _run(bundle, engine_name: str):
    engine = get_engine(engine_name)
    info = engine.probe()
    return engine, info, engine.run(bundle)


def test_output_stats_are_onnxruntimes_sqnr_and_a_cosine():
    x = np.linspace(-1, 1, 1000)
    noisy = x + 0.01 * np.cos(np.arange(1000))  # noise at about 1.7% of the signal's norm
    stats = numerics.output_stats(x, noisy)
    want = 20 * np.log10(np.linalg.norm(x) / np.linalg.norm(x - noisy))  # qdq_loss_debug's definition
    assert stats["sqnr_db"] == pytest.approx(want, abs=1e-3) and 30 < stats["sqnr_db"] < 40
    assert stats["cosine"] > 0.999 and stats["max_abs"] == pytest.approx(0.01, rel=1e-3) and stats["peak"] == 1.0
    assert numerics.output_stats(x, x)["sqnr_db"] is None, "equal outputs: no noise, no ratio"
    assert numerics.below(numerics.output_stats(x, 2 * x), 20, 0.99).startswith("SQNR 0.0 dB < 20 dB"), \
        "a mis-scaled output points the right way (cosine 1) and still fails"
    nan = np.where(x > 0.5, np.nan, x)
    assert numerics.below(numerics.output_stats(x, nan), 20, 0.99).endswith("reference is finite")


@pytest.mark.parametrize("which", [1, 2], ids=["tensorrt-settings", "ort-defaults"])
@pytest.mark.parametrize("engine_name", ["onnxruntime", "openvino"])
def test_a_deep_network_that_agrees_at_high_sqnr_passes_and_a_wrong_output_fails(deep, tmp_path, which, engine_name):
    bundle = bundle_from_model(deep[which], tmp_path / "b", float_model=deep[0])
    assert measure(bundle.meta) == {"measure": "network", "min_sqnr_db": 20.0, "min_cosine": 0.99,
                                    "within_output_steps": 1.0, "fragile_margin_db": 3.0,
                                    "float_digest": bundle.meta["float_reference"]["digest"]}
    _, info, obs = _run(bundle, engine_name)
    cell = judge_observation(CASE, bundle, info, obs, {"source": "local"})
    (name, stats), = cell.output_stats["outputs"].items()
    assert cell.status == "pass", cell.error
    assert stats["sqnr_db"] is None or stats["sqnr_db"] >= 30, "the engine's integer kernels agree with the reference"
    assert stats["float"]["sqnr_db"] > 20 and stats["float"]["cosine"] > 0.99, "against the float model too"
    # The same run with one output channel off by a factor of two (a mis-scaled layer) is a failure.
    wrong = dict(obs.outputs)
    wrong[name] = wrong[name].copy()
    wrong[name][:, 0] *= 2.0
    obs.outputs = wrong
    bad = judge_observation(CASE, bundle, info, obs, {"source": "local"})
    assert (bad.status, bad.last_stage, bad.verdict) == ("fail", "run", "new failure")
    assert f"output {name!r} differs from the reference: SQNR" in bad.error
    assert bad.output_stats["outputs"][name]["sqnr_db"] < 20


def test_the_catalogue_keeps_the_step_measure(tmp_path):
    from generators import write
    from generators.bundle import load_bundle

    case = get_case("grouped_conv")
    bundle = load_bundle(write.write_bundle(case, next(iter(case.variants())), root=tmp_path).path)
    assert "judge" not in bundle.meta and measure(bundle.meta)["measure"] == "steps"
    _, info, obs = _run(bundle, "onnxruntime")
    cell = judge_observation(case, bundle, info, obs, {"source": "local"})
    assert cell.output_stats["measure"] == "steps" and cell.max_error_steps is not None


@pytest.mark.slow
def test_the_cli_reports_sqnr_with_the_float_model_and_localizes_on_both_cpu_engines(deep, tmp_path, capsys):
    floats, trt, _ = deep
    out = ["--out", str(tmp_path / "b"), "--results", str(tmp_path / "r"), "--reports", str(tmp_path / "rep")]
    assert main([str(trt), "--engine", "onnxruntime", "--engine", "openvino", "--float-model", str(floats),
                 "--localize", "--min-sqnr", "25", *out]) == 0
    printed = capsys.readouterr().out
    assert "each output passes at SQNR ≥ 25.0 dB" in printed and "against the float model SQNR" in printed
    report = json.loads(report_file(tmp_path / "rep", "deep_trt").read_text())
    assert report["float_reference"]["model"] == "deep_float.onnx"
    loss = next(iter(report["float_reference"]["loss"].values()))
    assert 20 < loss["sqnr_db"] < 60, "quantization loss: the simulated Q/DQ model against the float one"
    assert [(r["engine"], r["status"]) for r in report["localize"]] == [("onnxruntime", "none drift"),
                                                                       ("openvino", "none drift")]
    graph = onnx.load(str(trt)).graph
    stored = {i.name for i in graph.initializer}
    activations = sum(n.op_type == "QuantizeLinear" and n.input[0] not in stored for n in graph.node)
    assert activations > 24 and all(r["marked"] == activations for r in report["localize"]), \
        "every quantized activation is marked"
    (bundle,) = (tmp_path / "b" / "user_model").glob("deep_trt-*")
    assert verify_bundle(bundle).meta["float_reference"]["digest"]


@pytest.mark.parametrize("flag, value", [("--min-sqnr", "nan"), ("--min-sqnr", "-3"), ("--min-cosine", "1.5"),
                                         ("--min-cosine", "0"), ("--tolerance", "inf")])
def test_thresholds_are_finite_and_positive(flag, value, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(qdq_conv(tmp_path / "conv.onnx")), flag, value])
    assert e.value.code == 2 and flag in capsys.readouterr().err


def test_localize_names_the_first_drifting_node_in_graph_order(deep, tmp_path, monkeypatch):
    """The engine's run is replaced (plumbing only: no cell is written): two activations drift, the first is named."""
    from check import localize

    bundle = bundle_from_model(deep[1], tmp_path / "b")
    _, info, obs = _run(bundle, "onnxruntime")
    cell = judge_observation(CASE, bundle, info, obs, {"source": "local"})
    real = localize._reference

    def drifted(cell_, model, inputs, tmp):
        got = real(model, inputs)
        marked, _ = localize.mark_activations(Path(bundle.model_path), tmp / "again.onnx")
        for tensor, _, _ in (marked[20], marked[5]):
            got[tensor] = np.clip(got[tensor].astype(np.int16) * 3, -128, 127).astype(got[tensor].dtype)
        return got

    monkeypatch.setattr(localize, "_run", drifted)
    found = localize_cell(bundle, cell, 20.0)
    marked, _ = localize.mark_activations(Path(bundle.model_path), tmp_path / "m.onnx")
    assert found.status == "found" and found.first.tensor == marked[5][0] and found.first.node == marked[5][1]
    assert [d.tensor for d in found.drifts] == [marked[5][0], marked[20][0]]


def test_localize_says_why_for_the_tensorrt_family(deep, tmp_path):
    from core.cell import Cell

    bundle = bundle_from_model(deep[1], tmp_path / "b")
    said = {}
    for engine in ("tensorrt-rtx", "tensorrt"):
        cell = Cell(bundle=bundle.id, case="user_model", params={}, digest="d", engine=engine, engine_version="1",
                    hardware="h", status="built", verdict="undocumented", last_stage="build")
        said[engine] = localize_cell(bundle, cell, 20.0)
        assert said[engine].status == "not localized" and "--trt-outputs mark all" in said[engine].reason
    assert "cannot run on this machine" in said["tensorrt-rtx"].reason
    assert "does not mark outputs" in said["tensorrt"].reason


def test_a_bug_bundles_repro_judges_a_user_model_by_the_same_measure(deep, tmp_path):
    import subprocess
    import sys

    from matrix.bugbundle import make

    bundle = bundle_from_model(deep[1], tmp_path / "b")
    _, info, obs = _run(bundle, "openvino")
    cell = judge_observation(CASE, bundle, info, obs, {"source": "local"})
    folder = make(cell, [cell], tmp_path / "b", tmp_path / "bug")
    done = subprocess.run([sys.executable, "repro.py", "--json", "seen.json"], cwd=str(folder), capture_output=True,
                          text=True, timeout=600)
    seen = json.loads((folder / "seen.json").read_text())["observed"]
    assert (seen["status"], cell.status) == ("pass", "pass") and done.returncode == 0, done.stdout + done.stderr
    assert "REPRODUCED" in done.stdout
    issue = (folder / "ISSUE.md").read_text(encoding="utf-8")
    assert "against the reference, its worst output has SQNR" in issue and "error is" not in issue
    assert "judged by SQNR >= 20.0 dB" in (folder / "log.txt").read_text(encoding="utf-8")


def _softmax_model(path: Path) -> Path:
    """x -> Softmax -> Q/DQ at 1/127: a near-uniform distribution over 97 classes spans one or two steps, so one
    rounding apart is an SQNR near 20 dB (the OCR-style model's head, where OpenVINO on AMX read 19.4 dB)."""
    from onnx import TensorProto, helper

    scale = helper.make_tensor("s", TensorProto.FLOAT, [], [1 / 127])
    zero = helper.make_tensor("z", TensorProto.INT8, [], [0])
    nodes = [helper.make_node("Softmax", ["x"], ["p"], axis=-1, name="softmax"),
             helper.make_node("QuantizeLinear", ["p", "s", "z"], ["p_q"], name="q"),
             helper.make_node("DequantizeLinear", ["p_q", "s", "z"], ["y"], name="dq")]
    graph = helper.make_graph(nodes, "head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 97])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 97])], [scale, zero])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.mark.parametrize("off_by, status", [(1, "pass"), (2, "fail")])
def test_a_quantized_output_one_step_off_passes_however_low_its_sqnr(tmp_path, off_by, status):
    bundle = bundle_from_model(_softmax_model(tmp_path / "head.onnx"), tmp_path / "b")
    assert bundle.meta["outputs"]["y"]["step_kind"] == "quantization"
    _, info, obs = _run(bundle, "onnxruntime")
    moved = obs.outputs["y"].copy()
    moved[..., ::2] += off_by / 127  # every other element one (or two) steps up
    obs.outputs = {"y": moved}
    cell = judge_observation(CASE, bundle, info, obs, {"source": "local"})
    assert cell.output_stats["outputs"]["y"]["sqnr_db"] < 20  # the network measure alone would call it wrong
    assert cell.status == status, cell.error
    assert cell.max_error_steps == pytest.approx(off_by, abs=0.01)


def test_a_fragile_models_bundle_measures_its_quantization_loss_with_the_float_twin(fragile, tmp_path):
    """Without --float-model the bundle derives the float twin; its loss is the float model's within 1 dB."""
    floats, quantized, _ = fragile
    bundle = verify_bundle(bundle_from_model(quantized, tmp_path / "b", inputs_npz=fragile[2]).path)
    twin = bundle.meta["float_reference"]
    assert twin["derived"] and twin["model"] == "the float twin of fragile.onnx" and "path" not in twin
    assert bundle.meta["float_twin"]["pairs"] > 8 and bundle.meta["float_twin"]["error"] == ""
    (name, loss), = twin["loss"].items()
    real = bundle_from_model(quantized, tmp_path / "real", float_model=floats, inputs_npz=fragile[2])
    real = real.meta["float_reference"]["loss"][name]
    assert loss["sqnr_db"] < 12 and abs(loss["sqnr_db"] - real["sqnr_db"]) < 1.0, (loss, real)
    assert measure(bundle.meta)["float_digest"] == twin["digest"]


@pytest.mark.parametrize("engine_name", ["onnxruntime", "openvino"])
def test_on_a_fragile_model_a_cpu_engine_is_not_a_failure(fragile, tmp_path, engine_name):
    """ONNX Runtime rounds otherwise than the reference and lands about 15 dB from it (on AMX; any CPU: exact to a few
    dB below the line), as close to the float twin as the reference is: a pass that says the model is fragile."""
    bundle = bundle_from_model(fragile[1], tmp_path / "b", inputs_npz=fragile[2])
    _, info, obs = _run(bundle, engine_name)
    cell = judge_observation(CASE, bundle, info, obs, {"source": "local"})
    (name, stats), = cell.output_stats["outputs"].items()
    assert cell.status == "pass", cell.error
    assert stats["loss"]["sqnr_db"] < 12 and stats["float"]["sqnr_db"] > stats["loss"]["sqnr_db"] - 3
    below = stats["sqnr_db"] is not None and stats["sqnr_db"] < 20
    assert stats.get("fragile", False) is below
    assert cell.reason.startswith("the quantized model is numerically fragile") is below, cell.reason


@pytest.mark.parametrize("wrong, status", [
    (lambda ref, twin: (ref + twin) / 2, "pass"),  # halfway to the float twin: as good as the quantization allows
    (lambda ref, twin: np.zeros_like(ref), "fail"),
    (lambda ref, twin: ref * 2, "fail"),  # a mis-scaled layer scales what follows it
    (lambda ref, twin: -ref, "fail"),
    (lambda ref, twin: np.where(np.arange(ref.size).reshape(ref.shape) % 5 == 0, np.nan, ref), "fail"),
], ids=["halfway-to-the-float-twin", "zeros", "scaled-by-2", "sign-flipped", "nan"])
def test_on_a_fragile_model_a_really_wrong_output_still_fails(fragile, tmp_path, wrong, status):
    bundle = bundle_from_model(fragile[1], tmp_path / "b", inputs_npz=fragile[2])
    _, info, obs = _run(bundle, "onnxruntime")
    (name, reference), = bundle.expected().items()
    obs.outputs = {name: wrong(reference, bundle.float_outputs()[name]).astype(np.float32)}
    cell = judge_observation(CASE, bundle, info, obs, {"source": "local"})
    stats = cell.output_stats["outputs"][name]
    assert cell.status == status, (cell.error, stats)
    assert stats.get("non_finite") or stats["sqnr_db"] < 20, "below the line against the reference, every one"
    if status == "fail":
        assert (cell.last_stage, cell.verdict) == ("run", "new failure") and "differs from the reference" in cell.error
    else:
        assert stats["fragile"] and f"SQNR {stats['loss']['sqnr_db']:.1f} dB" in cell.reason
        assert_the_report_says_fragile(cell, bundle.meta, name)


def assert_the_report_says_fragile(cell, meta, name: str) -> None:
    """The node report's result column and its fidelity table say it, with the quantization loss (Markdown and HTML)."""
    from matrix.nodes import node_report
    from matrix.render import render_template

    report = node_report([cell], meta)
    loss = f"SQNR {meta['float_reference']['loss'][name]['sqnr_db']:.1f} dB"
    md, html = (render_template(f"nodes.{kind}.j2", report, html=kind == "html") for kind in ("md", "html"))
    assert "pass · new failure" not in md and f"**the quantized model is numerically fragile** (quantization loss " \
        f"{name} {loss})" in md
    assert f"| {name} | {loss}, cosine" in md and "against the float twin: **numerically fragile** |" in md
    assert f"<strong>the quantized model is numerically fragile</strong> (quantization loss {name} {loss})" in html
    assert "<h2>Quantization loss beside engine fidelity</h2>" in html


@pytest.mark.slow
def test_the_cli_reports_quantization_loss_beside_engine_fidelity_for_a_fragile_model(fragile, tmp_path, capsys):
    """`python -m check fragile.onnx` (no --float-model): exit 0, the report gives the loss per output beside each
    engine's fidelity, and a column below the line says the model is fragile."""
    out = ["--out", str(tmp_path / "b"), "--results", str(tmp_path / "r"), "--reports", str(tmp_path / "rep")]
    given = ["--inputs", str(fragile[2])]
    assert main([str(fragile[1]), "--engine", "onnxruntime", "--engine", "openvino", *given, *out]) == 0
    printed = capsys.readouterr().out
    report = json.loads(report_file(tmp_path / "rep", "fragile").read_text())
    (name, loss), = report["float_reference"]["loss"].items()
    assert report["float_name"] == "the float twin" and report["float_reference"]["derived"]
    assert "## Quantization loss beside engine fidelity" in printed and "Float twin, derived from the model" in printed
    (row,) = report["fidelity"]
    assert row["output"] == name and row["loss"].startswith(f"SQNR {loss['sqnr_db']:.1f} dB, cosine")
    assert [c["status"] for c in report["columns"]] == ["pass", "pass"]
    for col, cell in zip(report["columns"], row["cells"]):
        said = col["output_stats"]["outputs"][name]
        assert cell["reference"].startswith("SQNR") and cell["float"].startswith("SQNR")
        assert cell["fragile"] is bool(said.get("fragile")) and bool(col["fragile"]) is cell["fragile"]
        if cell["fragile"]:
            assert f"{col['heading']} [{col['hardware']}] | pass · undocumented: **the quantized model is " \
                   f"numerically fragile** (quantization loss {name} SQNR {loss['sqnr_db']:.1f} dB)" in printed
