"""What a person reads first: compute nodes counted apart from the other quantized nodes, a float model and widened
integer weights explained, the engine's own reason in the summary table, and a 900-node report that stays short."""

from __future__ import annotations

import json
import re

import pytest

from check.__main__ import main
from tests.check.models import (
    float_convnet,
    qdq_conv,
    qdq_conv_stack,
    quantize_for_tensorrt,
    quantize_static,
    widened_matmul,
    yolo_csp,
)
from tests.check.paths import report_file


def _check(model, tmp_path, *engines: str, extra=()):
    """Run python -m check on one model; (its report JSON, its Markdown)."""
    out = ["--out", str(tmp_path / "b"), "--results", str(tmp_path / "r"), "--reports", str(tmp_path / "rep")]
    main([str(model), *[a for e in engines for a in ("--engine", e)], *out, *extra])
    stem = model.name[: -len(".onnx")]
    return (json.loads(report_file(tmp_path / "rep", stem).read_text()),
            report_file(tmp_path / "rep", stem, ".md").read_text(encoding="utf-8"))


def _rtx():
    pytest.importorskip("tensorrt_rtx")
    from engines.tensorrt import gpu

    if gpu.detect().present:
        pytest.skip("a GPU is here: its cells may run, and the summary would say 'ran'")


def _column(report, engine):
    return next(c for c in report["columns"] if c["engine"] == engine)


def test_a_yolo_style_model_quantized_for_tensorrt_has_all_its_compute_nodes_int8_on_tensorrt_rtx(tmp_path):
    _rtx()
    model = quantize_for_tensorrt(yolo_csp(tmp_path / "float.onnx"), tmp_path / "yolo_trt.onnx")
    report, md = _check(model, tmp_path, "tensorrt-rtx")
    convs = [n for n in report["nodes"] if n["op"] == "Conv"]
    assert report["compute"] == len(convs) == 9 and report["other"] > report["compute"]
    rtx = _column(report, "tensorrt-rtx")
    assert rtx["status"] == "built" and (rtx["int8"], rtx["total"]) == (9, 9)
    assert rtx["summary"].startswith("9 of 9 quantized compute nodes INT8 (ahead-of-time plan); other quantized "
                                     "nodes: ")
    # SiLU's Sigmoid and Mul, Split, Concat, Resize, the residual Adds: inside Myelin's generated kernels
    assert rtx["others"]["fused"] >= 20 and rtx["others"]["fused"] + rtx["others"]["int8"] == report["other"]
    assert "9 of 9 quantized compute nodes INT8" in md.split("\n## ", 1)[0], "said in the summary table"
    assert "| compute | Conv | 9: stem, down, cv1, m0a and 5 more | int8 |" in md
    assert "No precision evidence" not in md, "a node in a generated kernel is counted as fused, not as unknown"


def test_a_float_model_says_tensorrt_builds_it_in_float_and_names_the_quantizers(tmp_path):
    model = float_convnet(tmp_path / "plain.onnx", blocks=2)
    report, md = _check(model, tmp_path, "onnxruntime")
    assert report["float_model"] and report["targets"] == 0
    assert _column(report, "onnxruntime")["summary"] == \
        "no Q/DQ in the model: a float model (TensorRT builds it in float)"
    (advice,) = report["advice"]
    assert advice["title"] == "This model has no Q/DQ" and len(advice["nodes"]) == 2
    assert "python -m modelopt.onnx.quantization" in advice["fix"] and "quantize_static" in advice["fix"]
    assert '"QuantizeBias": False' in advice["fix"] and "per_channel=True" in advice["fix"]
    assert "**This model has no Q/DQ** (2 compute nodes)" in md
    # its reference is its own float arithmetic, no simulated Q/DQ model (a user's report said so of a float model)
    assert "on the model as it is: it holds no QuantizeLinear or DequantizeLinear, so this is its float arithmetic" \
        in md and "simulated Q/DQ" not in md and "never an engine under test" not in md


def test_a_qdq_models_reference_is_the_simulated_qdq_model(tmp_path):
    _, md = _check(qdq_conv(tmp_path / "q.onnx"), tmp_path, "onnxruntime")
    assert "on CPU, graph optimizations off (the simulated Q/DQ model)" in md and "float arithmetic" not in md


@pytest.mark.parametrize("dtype, rtx_does", [("int8", None), ("uint8", "float")])
def test_integer_weights_widened_by_cast_and_mul_are_explained_and_tensorrt_rtx_agrees(tmp_path, dtype, rtx_does):
    """uint8 weights are plain data, float as documented; for INT8 ones no source says what TensorRT-RTX does (it
    refuses the constant at build here), so the lint predicts nothing for it."""
    _rtx()
    model = widened_matmul(tmp_path / f"widened_{dtype}.onnx", dtype)
    report, md = _check(model, tmp_path, "tensorrt-rtx")
    assert report["compute"] == 1 and report["nodes"][0]["name"] == "mm", "widened weights make a compute node"
    (advice,) = report["advice"]
    assert advice["title"] == "Integer weights without a DequantizeLinear" and "Cast -> Mul" in advice["detail"]
    rows = {r["engine"]: r for r in report["predictions"]["rows"] if r["ran"]}
    if rtx_does is None:
        # no finding speaks for TensorRT-RTX: "no known problem matched", and its build failure is the lint's miss
        assert (rows["tensorrt-rtx"]["level"], rows["tensorrt-rtx"]["predicted"]) == ("model", "no known problem")
        assert _column(report, "tensorrt-rtx")["failed_stage"] == "build"
    else:
        assert rows["tensorrt-rtx"]["predicted"] == rtx_does and rows["tensorrt-rtx"]["verdict"] == "agrees", \
            "what TensorRT-RTX 1.7.1.116 does with it: news for the catalogue if it changes"
    assert "**Integer weights without a DequantizeLinear** (1 compute node)" in md


def test_the_int32_bias_parse_failure_shows_the_engines_reason_in_the_summary_table(tmp_path):
    _rtx()
    model = quantize_static(float_convnet(tmp_path / "float.onnx"), tmp_path / "int32_bias.onnx", symmetric=True)
    report, md = _check(model, tmp_path, "tensorrt-rtx")
    rtx = _column(report, "tensorrt-rtx")
    reason = "input has type Int32 but must have type FP8, FP4, Int4, Int8, or UInt8"
    assert rtx["status"] == "fail" and rtx["says"] == reason and rtx["failing_node"] == "b0_DequantizeLinear"
    summary = md.split("\n## ", 1)[0]
    row = next(line for line in summary.splitlines() if line.startswith("| tensorrt-rtx@"))
    assert f"as observed before: **{reason}** (b0_DequantizeLinear)" in row  # as the lint predicted (DQ_INT32_RTX)
    # the verdict names its kind of source: the earlier run's file and hardware, in the report, not only its cells
    why = next(line for line in summary.splitlines()
               if line.startswith("tensorrt-rtx@") and "*as observed before*" in line)
    assert "fails as observed before in reports/observed/" in why and ", on " in why, why
    html = report_file(tmp_path / "rep", "int32_bias", ".html").read_text(encoding="utf-8")
    assert rtx["why"].split(" in ", 1)[1].split(",")[0] in html
    from matrix.models import models_view

    view = models_view([{"bundle": report["bundle"], "report": report, "html": "n.html", "md": "n.md"}])
    cell = view["rows"][0]["cells"][0]
    # the lint's INT32 bias rule speaks for TensorRT-RTX 1.7.1.116 (observed), so the cell says it in the rule's words
    assert cell["text"] == "parse fails: INT32 bias DQ (b0_DequantizeLinear)" and cell["note"] == 0


@pytest.mark.slow
def test_a_900_node_model_reads_in_under_30_kb_with_the_lint_grouped_by_rule(tmp_path):
    model = qdq_conv_stack(tmp_path / "stack900.onnx", blocks=150)
    report, md = _check(model, tmp_path, "onnxruntime", "openvino")
    # every Conv, and every Relu but the last (the graph's output, with no Q after it)
    assert report["graph"]["nodes"] == 900 and (report["compute"], report["other"]) == (150, 149)
    size = len(md.encode("utf-8"))
    assert size < 30_000, f"{size} bytes of Markdown"
    lint = md[md.index("## TensorRT and TensorRT-RTX"):md.index("## Nodes")]
    rows = [line for line in lint.splitlines() if line.startswith("| dq_non_activation |")]
    assert rows == ["| dq_non_activation | `>=8.0,<10.0` | 150: b0_DequantizeLinear, b1_DequantizeLinear, "
                    "b2_DequantizeLinear, b3_DequantizeLinear and 146 more | parse fails |  | predicted, not run here "
                    "| [1] | (1) |",
                    "| dq_non_activation | `tensorrt-rtx ==1.7.1.116` | 150: b0_DequantizeLinear, b1_DequantizeLinear, "
                    "b2_DequantizeLinear, b3_DequantizeLinear and 146 more | parse fails |  | predicted, not run here "
                    "| [2] | (1) |"]
    assert len([r for r in report["predictions"]["rows"] if r["rule"] == "dq_non_activation"]) == 300, \
        "every node stays in the JSON, once per engine the rule speaks for"
    assert "&gt;" not in md and "&lt;" not in md, "no HTML escaping in Markdown"
    assert "## Evidence" not in md and "| conv17 |" not in md, "node by node only in the HTML and the JSON"
    nodes = md[md.index("## Nodes"):md.index("## Q/DQ pairs")]
    assert re.search(r"\| compute \| Conv \| 150: conv0, conv1, conv2, conv3 and 146 more \|", nodes)
    html = report_file(tmp_path / "rep", "stack900", ".html").read_text(encoding="utf-8")
    assert html.count("<tr><td>conv17</td>") == 1 and "<details" in html, "the full node table is one click away"
    for col in report["columns"]:
        assert col["time"].startswith("build ") and col["output_stats"]["measure"] == "network"
