"""Faults through node names: a name holding "[", "]", a line break or " + " is matched as a name in TensorRT-RTX's
own listing (as OpenVINO's evidence matches it), and a name written as a Markdown link stays text in every report."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from check.__main__ import main
from tests.check.models import deep_convnet, quantize_for_tensorrt
from tests.check.paths import report_file
from tests.faults.test_output_faults import live_links

LINK = "[click](javascript:alert(3))"
# One name per convolution of a ten-layer network.
NAMES = ("conv[0]", "conv]1", "two\nlines", "a + b", LINK, "conv[5]", "x]y[z", "n\n[7]", "conv 8", "conv9")


def test_live_links_finds_a_link_and_no_escaped_or_code_one():
    assert live_links(f"a {LINK} b") == [("click", "javascript:alert(3)")]
    assert live_links(r"a \[click\](javascript:alert(3)) `[x](y)` b") == []


def test_a_message_keeps_its_commands_as_code_and_its_links_as_text():
    """A problem's message shows `git checkout -- FILE` as code to copy; a link in a file name around it stays text."""
    from matrix.safe import md_with_code

    said = md_with_code(f"results/{LINK}.jsonl was changed: restore it with `git checkout -- {LINK}.jsonl`, or ...")
    assert "`git checkout -- [click](javascript:alert(3)).jsonl`" in said  # a code span: literal, never a link
    assert said.startswith(r"results/\[click\](javascript:alert(3)).jsonl was changed")
    assert live_links(said) == []


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> Path:
    """The network with those names, checked on TensorRT-RTX (an ahead-of-time build, no GPU needed) and OpenVINO:
    the reports folder."""
    pytest.importorskip("tensorrt_rtx")
    root = tmp_path_factory.mktemp("names")
    float_model = deep_convnet(root / "float.onnx", layers=len(NAMES))
    model = onnx.load(str(float_model))
    for node in model.graph.node:
        if node.op_type == "Conv":
            node.name = NAMES[int(node.name[len("conv"):])]
    onnx.save(model, str(float_model))
    quantized = quantize_for_tensorrt(float_model, root / "names.onnx")
    assert main([str(quantized), "--engine", "tensorrt-rtx", "--engine", "openvino", "--out", str(root / "b"),
                 "--results", str(root / "r"), "--reports", str(root / "rep")]) == 0
    return root / "rep"


def test_tensorrt_rtx_matches_names_with_brackets_and_line_breaks_as_names(checked):
    report = json.loads(report_file(checked, "names").read_text())
    columns = {c["engine"]: c for c in report["columns"]}
    assert columns["openvino"]["int8"] == columns["tensorrt-rtx"]["int8"] == 10, \
        {e: c["summary"] for e, c in columns.items()}
    assert columns["tensorrt-rtx"]["unknown"] == []  # no node "fused away or removed"
    nodes = {n["name"]: n for n in report["nodes"]}
    rtx = [c["engine"] for c in report["columns"]].index("tensorrt-rtx")  # each node's results: one per column
    for name in NAMES:
        found = nodes[name]["results"][rtx]
        assert found["precision"] == "int8" and found["layer"].startswith(name + "_myl"), found  # its own layer


def test_a_node_named_as_a_link_is_text_in_the_markdown_report(checked):
    text = report_file(checked, "names", ".md").read_text()
    assert "click" in text and live_links(text) == []
    assert r"\[click\](javascript:alert(3))" in text  # the name as it is, to the reader
