"""`python -m check DIR --shape x:1x3x48x320` over the project's own real-architecture folder (check.producers
--forms): the quantize_dynamic and QOperator models are named with seed 002 or operators.md and the fix, the model
exported at a fixed 224x224 is checked at its own shape with a note, the open ones are built with the shape given, and
an injected wrong output still fails."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest

from cases import get_case
from cases.dynamic_quantize import CASE as SEED_002
from check.__main__ import main
from check.producers import main as producers
from engines import get_engine
from engines.cells import judge_observation
from generators.bundle import load_bundle
from tests.check.paths import report_file

SHAPE = "x:1x3x48x320"
FORMS = ("ocr_rec_dynamic", "ocr_rec_qoperator", "ocr_rec_trt", "mobilenet_cls_trt", "ocr_rec_fragile")


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The folder written as a user writes it, checked on ONNX Runtime and, where installed, TensorRT-RTX (SM86)."""
    root = tmp_path_factory.mktemp("forms")
    with redirect_stdout(io.StringIO()):
        assert producers(["--forms", "--out", str(root / "models"), "--floats", str(root / "floats")]) == 0
    engines = ["--engine", "onnxruntime"]
    try:
        import tensorrt_rtx  # noqa: F401

        engines += ["--engine", "tensorrt-rtx", "--target", "SM86"]
    except ImportError:
        pass
    printed = io.StringIO()
    out = ["--out", str(root / "b"), "--results", str(root / "r"), "--reports", str(root / "rep")]
    with redirect_stdout(printed):
        status = main([str(root / "models"), "--shape", SHAPE, *engines, *out])
    reports = {stem: json.loads(report_file(root / "rep", stem).read_text()) for stem in FORMS}
    markdown = {stem: report_file(root / "rep", stem, ".md").read_text(encoding="utf-8") for stem in FORMS}
    return root, status, printed.getvalue(), reports, markdown


def _column(report, engine):
    return next((c for c in report["columns"] if c["engine"] == engine), None)


@pytest.mark.slow
def test_the_folder_holds_every_form_with_its_manifest(checked):
    root = checked[0]
    manifest = {m["name"]: m for m in json.loads((root / "models" / "manifest.json").read_text())}
    assert list(manifest) == list(FORMS)
    assert manifest["mobilenet_cls_trt"]["inputs"]["x"] == [1, 3, 224, 224]
    assert manifest["ocr_rec_trt"]["inputs"]["x"] == ["batch", 3, 48, "width"]
    assert manifest["ocr_rec_dynamic"]["quantizer"]["call"] == "onnxruntime.quantization.quantize_dynamic"
    assert manifest["ocr_rec_fragile"]["quantizer"]["calibration_samples"] == 1
    assert (root / "floats" / manifest["ocr_rec_fragile"]["float_model"]).is_file()


@pytest.mark.slow
def test_quantize_dynamic_is_named_with_seed_002_and_its_fix_never_a_float_model(checked):
    _, _, printed, reports, markdown = checked
    report, md = reports["ocr_rec_dynamic"], markdown["ocr_rec_dynamic"]
    said, = report["forms"]
    assert (said["form"], said["case"], said["seed"]) == ("dynamic", SEED_002.id, SEED_002.seed)
    assert said["ops"] == "20 DynamicQuantizeLinear, 19 ConvInteger, 1 MatMulInteger"
    assert f"Seed 002 (`dynamic_quantize`: {SEED_002.title})" in md and "Fix: onnxruntime.quantization." \
        "quantize_static(..., quant_format=QuantFormat.QDQ) instead of quantize_dynamic / QOperator" in md
    assert "a float model" not in md and "no Q/DQ" not in md
    assert all(c["summary"].startswith("dynamic quantization (quantize_dynamic): ") for c in report["columns"])
    assert report["compute"] == 20, "19 ConvInteger and a MatMulInteger are its quantized compute nodes"
    assert "quantization: dynamic quantization" in printed and "seed 002 (dynamic_quantize) documents it" in printed
    # Whether ONNX Runtime runs its uint8 x int8 ConvInteger depends on the version; seed 002 judges it either way
    # (without it: "undocumented" or "new failure").
    assert _column(report, "onnxruntime")["verdict"] in ("as documented", "fixed")
    rtx = _column(report, "tensorrt-rtx")
    if rtx is not None:
        assert (rtx["status"], rtx["failed_stage"], rtx["verdict"]) == ("fail", "load", "as observed before")
        assert rtx["says"] == "DynamicQuantizeLinear: false [checkDynamicQuantizeLinear]"


@pytest.mark.slow
def test_the_qoperator_format_is_named_with_what_operators_md_says_and_its_fix(checked):
    report, md = checked[3]["ocr_rec_qoperator"], checked[4]["ocr_rec_qoperator"]
    said, = report["forms"]
    assert said["form"] == "qoperator" and said["case"] == ""
    assert "onnx-tensorrt's operators.md lists both as not supported" in said["detail"]
    assert "QOperator format (QLinearConv/QLinearMatMul" in md and "Fix: onnxruntime.quantization.quantize_static" in md
    assert "a float model" not in md
    assert report["compute"] == 20 and all(c["summary"].startswith("QOperator format: ") for c in report["columns"])


@pytest.mark.slow
def test_a_static_model_is_checked_at_its_own_shape_and_the_open_ones_take_the_shape(checked):
    root, _, printed, reports, markdown = checked
    assert "unusable" not in printed
    note = "shape not applied: x is declared 1x3x224x224 (--shape x:1x3x48x320); the model's own shape is used"
    assert reports["mobilenet_cls_trt"]["shape_notes"] == [note] and note in markdown["mobilenet_cls_trt"]
    assert note in printed
    ort = _column(reports["mobilenet_cls_trt"], "onnxruntime")
    assert ort["status"] in ("pass", "fail") and ort["ran"], "checked: it ran, with per-node evidence"
    for stem in ("ocr_rec_trt", "ocr_rec_dynamic", "ocr_rec_qoperator", "ocr_rec_fragile"):
        meta = load_bundle(next((root / "b" / "user_model").glob(f"{stem}-*"))).meta
        assert meta["inputs"]["x"]["shape"] == [1, 3, 48, 320] and not meta["shape_not_applied"], stem
        assert reports[stem]["shape_notes"] == []
    rtx = _column(reports["ocr_rec_trt"], "tensorrt-rtx")
    if rtx is not None:
        cells = [json.loads(line) for f in (root / "r").rglob("tensorrt-rtx-*.jsonl") for line in f.read_text()
                 .splitlines()]
        cell = next(c for c in cells if c.get("params", {}).get("model") == "ocr_rec_trt.onnx")
        assert cell["status"] == "built" and cell["options"]["profile"]["x"]["opt"] == [1, 3, 48, 320]


@pytest.mark.slow
def test_an_injected_wrong_output_of_the_fragile_model_still_fails(checked):
    root = checked[0]
    bundle = load_bundle(next((root / "b" / "user_model").glob("ocr_rec_fragile-*")))
    engine = get_engine("onnxruntime")
    info = engine.probe()
    obs = engine.run(bundle)
    name = next(iter(bundle.expected()))
    wrong = dict(obs.outputs)
    wrong[name] = -wrong[name]  # every class probability negated: no quantization loss does that
    obs.outputs = wrong
    cell = judge_observation(get_case("user_model"), bundle, info, obs, {"source": "local"})
    assert (cell.status, cell.last_stage) == ("fail", "run")
    assert f"output {name!r} differs from the reference" in cell.error


@pytest.mark.slow
def test_the_fragile_model_reports_its_quantization_loss_and_is_not_fail(checked):
    """No --float-model: the float twin derived from the model gives the quantization loss, and ONNX Runtime, which
    is no further from the reference than the quantization itself costs, is not judged a broken engine."""
    report, md = checked[3]["ocr_rec_fragile"], checked[4]["ocr_rec_fragile"]
    assert report["float_reference"].get("derived"), "the float twin, derived without --float-model"
    loss = report["float_reference"]["loss"]
    assert loss and all(o["sqnr_db"] is not None and o["sqnr_db"] < 20.0 for o in loss.values()), loss
    ort = _column(report, "onnxruntime")
    assert ort["status"] == "pass" and ort["fragile"], ort
    assert "the quantized model is numerically fragile" in md and "Quantization loss" in md
