"""`python -m check` on a folder of real-architecture models, as a user brings them.

YOLO-, PaddleOCR- and BERT-style graphs with dynamic batch, size and sequence (check.archs), each float, quantized
by onnxruntime's quantize_static at its defaults and with TensorRT settings (check.arch_models), checked in one run
on ONNX Runtime, OpenVINO and TensorRT for RTX: every model gets its report, the dynamic ones build ahead of time
with the optimization profile recorded in the cell, and each summary says what TensorRT would do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from check import arch_models, archs
from check.__main__ import main
from tests.check.paths import report_file

pytestmark = pytest.mark.slow  # every test reads its module fixture, which checks nine models on three engines


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The nine models of check.arch_models in one folder, checked once on the three engines here."""
    pytest.importorskip("tensorrt_rtx")
    pytest.importorskip("openvino")
    from engines.tensorrt import gpu

    if gpu.detect().present:
        pytest.skip("a GPU is here: TensorRT-RTX cells may run, and their status would not be 'built'")
    root = tmp_path_factory.mktemp("archs")
    made = arch_models.write_models(root / "models", archs.ARCHS)
    out = ["--out", str(root / "b"), "--results", str(root / "r"), "--reports", str(root / "rep")]
    engines = ["--engine", "onnxruntime", "--engine", "openvino", "--engine", "tensorrt-rtx"]
    status = main([str(root / "models"), *engines, *out])
    reports = {m.name: json.loads(report_file(root / "rep", m.name).read_text()) for m in made}
    cells = [json.loads(line) for f in (root / "r").rglob("*.jsonl") for line in f.read_text().splitlines()]
    return status, made, reports, [c for c in cells if "bundle" in c]


def _column(report, engine):
    (column,) = [c for c in report["columns"] if c["engine"] == engine]
    return column


def test_every_model_of_the_folder_gets_its_report_and_an_engine_failure_is_exit_1(checked):
    status, made, reports, _ = checked
    assert len(made) == 9 and set(reports) == {m.name for m in made}
    assert status == 1, "the defaults' non-zero zero points fail TensorRT-RTX's parser: exit 1, not a usage error"
    for report in reports.values():
        assert {c["engine"] for c in report["columns"]} == {"onnxruntime", "openvino", "tensorrt-rtx"}


# onnxruntime's quantizer, with TensorRT settings, quantizes GELU's constant 0.5 as a scalar INT8 initializer ->
# DequantizeLinear -> Mul: TensorRT-RTX 1.7 refuses that at build ("Quantized constant (...half_quantized) is only
# allowed before DQ or PLUGIN_V2 or kPLUGIN_V3 node"), though the constant does feed a DequantizeLinear.
REFUSED_AT_BUILD = {"bert_encoder_trt": "Quantized constant"}


def test_the_dynamic_models_build_on_tensorrt_rtx_with_their_profile_recorded(checked):
    _, made, reports, cells = checked
    for m in made:
        if m.variant == "ort_default":
            continue
        name = Path(m.path).name
        dynamic = [i for i, dims in m.inputs.items() if any(isinstance(d, str) for d in dims)]
        assert dynamic, f"{name} has a dynamic dimension"
        (cell,) = [c for c in cells if c["engine"] == "tensorrt-rtx" and c["params"]["model"] == name]
        profile = cell["options"]["profile"]
        assert set(dynamic) <= set(profile), (name, profile)
        for i in dynamic:
            low, opt, high = (profile[i][k] for k in ("min", "opt", "max"))
            assert all(a <= b <= c for a, b, c in zip(low, opt, high)) and min(low) > 0, (name, profile[i])
        column = _column(reports[m.name], "tensorrt-rtx")
        if m.name in REFUSED_AT_BUILD:
            assert column["status"] == "fail" and REFUSED_AT_BUILD[m.name] in column["says"], column["says"]
        else:
            assert column["status"] == "built", (name, column["says"])


def test_the_models_quantized_with_tensorrt_settings_have_every_quantized_compute_node_int8_on_tensorrt_rtx(checked):
    _, made, reports, _ = checked
    for m in made:
        if m.variant != "trt" or m.name in REFUSED_AT_BUILD:
            continue
        column = _column(reports[m.name], "tensorrt-rtx")
        assert column["total"] >= m.compute_nodes_with_dq > 0, m.name
        assert column["summary"].startswith(f"{column['total']} of {column['total']} quantized compute nodes INT8"), \
            (m.name, column["summary"])


def test_the_defaults_fail_on_tensorrt_rtx_with_the_engines_reason_in_the_summary(checked):
    _, made, reports, _ = checked
    for m in made:
        if m.variant != "ort_default":
            continue
        column = _column(reports[m.name], "tensorrt-rtx")
        assert column["status"] == "fail" and column["failed_stage"] in ("load", "build"), Path(m.path).name
        assert "zero point" in column["says"].lower() or "int32" in column["says"].lower(), column["says"]


def test_a_float_model_says_tensorrt_builds_it_in_float(checked):
    _, made, reports, _ = checked
    for m in made:
        if m.variant == "float":
            report = reports[m.name]
            assert report["compute"] == 0 and report["float_model"], Path(m.path).name
