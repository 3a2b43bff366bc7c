"""python -m check on a folder, model by model: every model gets its report and summary line, one bad model
never costs the others, and the exit status says what happened (python -m check --help)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from check.__main__ import main
from tests.check.models import bert_embedding, float_convnet, per_channel_opset12, qdq_conv, quantize_static

RTX = ["--engine", "tensorrt-rtx", "--target", "SM86"]


def _folder(root: Path) -> Path:
    """A dynamic-batch conv, a BERT-style model (dynamic batch and sequence, integer inputs), a float model, an
    opset-12 per-channel model the checker refuses (an invalid model), a file that is not ONNX, and in sub/ a
    dynamic model with its own inputs beside it."""
    models = root / "models"
    (models / "sub").mkdir(parents=True)
    qdq_conv(models / "conv_dyn.onnx", dynamic_batch=True)
    bert_embedding(models / "bert.onnx")
    float_convnet(models / "float.onnx")
    per_channel_opset12(models / "per_axis.onnx")
    (models / "junk.onnx").write_text("not a model")
    qdq_conv(models / "sub" / "batch2.onnx", dynamic_batch=True)
    np.savez(models / "sub" / "batch2.npz", x=np.random.default_rng(0).uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32))
    return models


def _out(root: Path) -> list:
    return ["--out", str(root / "b"), "--results", str(root / "r"), "--reports", str(root / "rep")]


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The folder on ONNX Runtime and TensorRT-RTX (one ahead-of-time target), as a user runs it."""
    pytest.importorskip("tensorrt_rtx")
    root = tmp_path_factory.mktemp("folder")
    models = _folder(root)
    import io
    from contextlib import redirect_stdout

    printed = io.StringIO()
    with redirect_stdout(printed):
        status = main([str(models), "--engine", "onnxruntime", *RTX, *_out(root)])
    return root, status, printed.getvalue()


def _cells(root: Path, engine: str) -> dict:
    files = list((root / "r").glob(f"*/{engine}-*.jsonl"))
    assert len(files) == 1, files
    records = [json.loads(line) for line in files[0].read_text().splitlines()]
    return {r["params"]["model"]: r for r in records if r.get("kind") != "session"}


@pytest.mark.slow
def test_every_model_gets_a_report_and_a_summary_line(checked):
    root, status, printed = checked
    assert status == 4, "models could not be checked (4: junk, and per_axis, which onnx.checker refuses); no " \
                        "engine is asked about an invalid model, so none failed one"
    summary = printed.split("\nsummary: 6 models\n", 1)[1].splitlines()
    lines = {Path(line.strip().split(": ", 1)[0]).name: line for line in summary[:6]}
    assert set(lines) == {"conv_dyn.onnx", "bert.onnx", "float.onnx", "per_axis.onnx", "junk.onnx", "batch2.onnx"}
    assert "unusable: not an ONNX model" in lines["junk.onnx"]
    assert "unusable: invalid model: onnx.checker (full_check) refuses it" in lines["per_axis.onnx"]
    assert "tensorrt-rtx@" in lines["bert.onnx"] and ": built" in lines["bert.onnx"]
    assert "float.onnx: float model (no Q/DQ); onnxruntime@" in lines["float.onnx"]  # what each model is, first
    assert "conv_dyn.onnx: Q/DQ; " in lines["conv_dyn.onnx"]
    # TensorRT was not asked for (no --trt-python): the summary says so, and that its lines are the lint's predictions
    assert summary[6].strip().startswith("TensorRT (8.x, 10.x, 11.x): not run here: no --trt-python was given")
    assert "the lint's prediction, not a result" in summary[6]
    assert summary[7].startswith("exit status 4: a model could not be (fully) checked")
    reports = {json.loads(p.read_text()).get("model") for p in (root / "rep").glob("*.json")}
    assert reports == set(lines), "a report per model, the unusable one included"


@pytest.mark.slow
def test_the_dynamic_models_build_on_tensorrt_rtx_with_the_profile_recorded(checked):
    root, _, printed = checked
    rtx = _cells(root, "tensorrt-rtx")
    assert rtx["conv_dyn.onnx"]["status"] == "built"
    assert rtx["conv_dyn.onnx"]["options"]["profile"]["x"] == {"min": [1, 3, 8, 8], "opt": [1, 3, 8, 8],
                                                               "max": [1, 3, 8, 8], "from": "request"}
    assert rtx["bert.onnx"]["status"] == "built"
    assert {n: p["opt"] for n, p in rtx["bert.onnx"]["options"]["profile"].items()} == {
        "input_ids": [1, 64], "attention_mask": [1, 64], "token_type_ids": [1, 64]}
    assert "profile" not in rtx["float.onnx"]["options"], "a static model builds without a profile"
    assert "per_axis.onnx" not in rtx, "an invalid model is the model's fault: no engine verdict on it"
    assert "assumed, no --shape: batch = 1 (input_ids[0]" in printed, "defaults are said, never silent"
    assert "invalid model: onnx.checker (full_check) refuses it: Unrecognized attribute: axis" in printed


@pytest.mark.slow
def test_a_models_own_npz_beside_it_is_its_inputs(checked):
    root, _, printed = checked
    rtx = _cells(root, "tensorrt-rtx")
    assert rtx["batch2.onnx"]["options"]["profile"]["x"]["opt"] == [2, 3, 8, 8]
    assert f"with inputs {root / 'models' / 'sub' / 'batch2.npz'}" in printed and "inputs from batch2.npz" in printed
    ort = _cells(root, "onnxruntime")
    assert ort["batch2.onnx"]["status"] == "pass" and ort["bert.onnx"]["status"] == "pass"
    assert "per_axis.onnx" not in ort


def test_one_inputs_file_for_several_models_is_a_usage_error(tmp_path, capsys):
    models = tmp_path / "m"
    models.mkdir()
    qdq_conv(models / "a.onnx")
    qdq_conv(models / "b.onnx", unnamed=False)
    np.savez(tmp_path / "x.npz", x=np.zeros((1, 3, 8, 8), np.float32))
    assert main([str(models), "--inputs", str(tmp_path / "x.npz"), "--engine", "onnxruntime", *_out(tmp_path)]) == 2
    assert "put <model>.npz beside each <model>.onnx" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_a_clean_folder_exits_0_and_a_failing_engine_exits_1(tmp_path, capsys):
    pytest.importorskip("tensorrt_rtx")
    models = tmp_path / "m"
    models.mkdir()
    qdq_conv(models / "a.onnx")
    assert main([str(models), *RTX, *_out(tmp_path)]) == 0
    assert "exit status 0: every model checked, no engine failed" in capsys.readouterr().out
    # onnxruntime's quantizer at its defaults writes an INT32 bias DequantizeLinear, which TensorRT-RTX's parser
    # refuses: every model is checked, an engine failed one
    quantize_static(float_convnet(tmp_path / "float.onnx"), models / "int32_bias.onnx")
    assert main([str(models), *RTX, *_out(tmp_path)]) == 1
    assert "exit status 1: an engine failed a model" in capsys.readouterr().out


def _static_and_open(root: Path) -> Path:
    """A dynamic-batch conv (x [N, 3, 8, 8]) and the same conv exported static (x [1, 3, 8, 8])."""
    models = root / "shapes"
    models.mkdir()
    qdq_conv(models / "open.onnx", dynamic_batch=True)
    qdq_conv(models / "static.onnx")
    return models


def test_one_shape_over_a_folder_fixes_only_what_each_model_leaves_open(tmp_path, capsys):
    models = _static_and_open(tmp_path)
    assert main([str(models), "--shape", "x:2x3x16x16", "--prepare-only", *_out(tmp_path)]) == 0
    printed = capsys.readouterr().out
    bundles = {json.loads(p.read_text())["params"]["model"]: json.loads(p.read_text())
               for p in (tmp_path / "b").rglob("case.json")}
    assert bundles["open.onnx"]["inputs"]["x"]["shape"] == [2, 3, 8, 8], "the open batch takes the shape"
    assert bundles["static.onnx"]["inputs"]["x"]["shape"] == [1, 3, 8, 8], "a static model keeps its own"
    assert "shape not applied: x is declared 1x3x8x8 (--shape x:2x3x16x16); the model's own shape is used" in printed
    assert "shape not applied to the dimensions x declares: x[2] = 8, x[3] = 8 (--shape x:2x3x16x16)" in printed
    assert "unusable" not in printed


def test_a_wrong_rank_for_an_open_input_is_a_usage_error_naming_the_model(tmp_path, capsys):
    models = _static_and_open(tmp_path)
    assert main([str(models), "--shape", "x:2x3x8", "--prepare-only", *_out(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("check: --shape x:2x3x8 has 3 dimensions; input x is [N, 3, 8, 8]") and "open.onnx" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "b").exists(), "nothing made"
    one = ["--prepare-only", *_out(tmp_path)]
    assert main([str(models / "static.onnx"), "--shape", "x:2x3x8x8", *one]) == 2, "one model: a shape that does " \
        "not fit it is a usage error, as before"
    assert "does not fit the declared shape [1, 3, 8, 8]" in capsys.readouterr().err


def test_a_harness_error_is_a_model_not_fully_checked_not_an_engine_failure(capsys):
    from check.__main__ import EXIT_ENGINE_FAILED, EXIT_MODEL_UNUSABLE, EXIT_OK, ModelCheck, summary

    harness = ModelCheck(model="a.onnx", bundle="user_model/a", cells=("onnxruntime@1.31.1: harness_error",),
                      statuses=("harness_error",))
    clean = ModelCheck(model="b.onnx", bundle="user_model/b", cells=("onnxruntime@1.31.1: pass",), statuses=("pass",))
    failed = ModelCheck(model="c.onnx", bundle="user_model/c", cells=("onnxruntime@1.31.1: fail",), statuses=("fail",))
    assert summary([clean]) == EXIT_OK
    assert summary([clean, harness]) == EXIT_MODEL_UNUSABLE
    assert summary([harness, failed]) == EXIT_MODEL_UNUSABLE | EXIT_ENGINE_FAILED
    assert "a model could not be (fully) checked" in capsys.readouterr().out


def test_a_bug_of_ours_while_preparing_one_model_costs_that_model_alone(tmp_path, capsys, monkeypatch):
    """An exception our code did not foresee, raised in the child that prepares a model (as "negative dimensions are
    not allowed" once was for a Paddle export): that model cannot be checked (exit 4, the traceback for a bug report),
    the folder's other models are, and the run is not ended by it."""
    import check.bundle

    models = tmp_path / "m"
    models.mkdir()
    qdq_conv(models / "a.onnx")
    qdq_conv(models / "b.onnx")
    real = check.bundle.bundle_from_model

    def buggy(model, *args, **kwargs):
        if Path(model).name == "a.onnx":
            raise ValueError("negative dimensions are not allowed")
        return real(model, *args, **kwargs)

    monkeypatch.setattr(check.bundle, "bundle_from_model", buggy)
    assert main([str(models), "--prepare-only", *_out(tmp_path)]) == 4
    printed = capsys.readouterr()
    assert "a.onnx: the check failed while preparing it, a bug in qdq-matrix" in printed.err
    assert "Traceback (most recent call last)" in printed.err and "in buggy" in printed.err
    assert "ValueError: negative dimensions are not allowed" in printed.err
    assert "(a bug in qdq-matrix, not the model's fault: ValueError: negative dimensions are not allowed)" in \
        printed.out
    assert [json.loads(p.read_text())["params"]["model"] for p in (tmp_path / "b").rglob("case.json")] == ["b.onnx"], \
        "the other model is prepared"


def test_the_report_and_the_index_say_that_tensorrt_was_not_run(tmp_path, capsys):
    """Without --trt-python, TensorRT's columns are not run at all: the model's report and the index say so, not only
    the console (a reader of the report alone saw "0 misses" and lint rows, nothing that said TensorRT never ran)."""
    models = tmp_path / "m"
    models.mkdir()
    qdq_conv(models / "a.onnx")
    assert main([str(models), "--engine", "onnxruntime", *_out(tmp_path)]) == 0
    said = "TensorRT (8.x, 10.x, 11.x): not run here: no --trt-python was given"
    assert said in capsys.readouterr().out
    rep = tmp_path / "rep"
    (md,) = [p for p in rep.glob("*.md") if p.name != "index.md"]
    assert said in md.read_text() and said in md.with_suffix(".html").read_text()
    assert said in (rep / "index.md").read_text()
    assert json.loads(md.with_suffix(".json").read_text())["not_run"].startswith(said)


def _ext_weights(folder: Path, weights: bool = True) -> Path:
    """folder/ext_weights.onnx, qdq_conv with its weights in ext_weights.bin beside it (left out: weights=False)."""
    import onnx

    folder.mkdir(parents=True)
    model = onnx.load(str(qdq_conv(folder / "ext_weights.onnx")))
    onnx.save(model, str(folder / "ext_weights.onnx"), save_as_external_data=True, location="ext_weights.bin",
              size_threshold=0)
    if not weights:
        (folder / "ext_weights.bin").unlink()
    return folder / "ext_weights.onnx"


def test_models_of_one_name_in_three_folders_keep_their_own_reports(tmp_path, capsys):
    models = tmp_path / "m"
    for folder, weights in (("a", True), ("b", False), ("c", True)):
        _ext_weights(models / folder, weights)
    assert main([str(models), "--engine", "onnxruntime", *_out(tmp_path)]) == 4, "b cannot be used"
    printed = capsys.readouterr().out
    rep = tmp_path / "rep"
    stems = {p.name.rsplit(".", 1)[0] for p in rep.iterdir() if p.name != "index.md"}
    assert len(stems) == 3, sorted(p.name for p in rep.iterdir())
    unusable = [s for s in stems if s.endswith("-unusable")]
    assert len(unusable) == 1 and not (rep / f"{unusable[0]}.html").exists()
    for stem in stems - set(unusable):
        assert {p.suffix for p in rep.glob(f"{stem}.*")} == {".md", ".html", ".json"}
        assert json.loads((rep / f"{stem}.json").read_text())["columns"], "a checked model's report, not overwritten"
    assert json.loads((rep / f"{unusable[0]}.json").read_text())["status"] == "unusable"
    index = (rep / "index.md").read_text()
    for folder in "abc":
        assert str(models / folder / "ext_weights.onnx") in index or f"{folder}/ext_weights.onnx" in index
    assert all(f"({stem}.md)" in index for stem in stems)
    assert "index.md" in printed
