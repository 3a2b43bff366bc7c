"""The four reports: written, escaped, readable on a phone, and JUnit that CI can count."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from matrix.merge import build
from matrix.render import cell_text, write_reports


@pytest.fixture
def reports(tmp_path, make_cell):
    cells = [
        make_cell("q_output_type/out=int8"),
        make_cell("q_output_type/out=uint8", status="fail", stage="load", verdict="as documented", fused=None,
                  error="could not find any supported formats consistent with input/output data types",
                  signature="no_supported_formats"),
        make_cell("grouped_conv/g=2", status="fail", stage="build", verdict="regressed", fused=None,
                  error="<script>alert(1)</script> broke", explanation="documented to pass, but it fail"),
        make_cell("grouped_conv/g=2", engine="onnxruntime", engine_version="1.23.2", hardware="cpu",
                  verdict="fixed"),
        make_cell("grouped_conv/g=4", status="not_run", verdict="not run", reason="no NVIDIA GPU", fused=None),
    ]
    out = tmp_path / "reports"
    paths = write_reports(build(cells, catalogue=["grouped_conv/g=8"]), out, generated="2026-01-01")
    return out, paths


def test_all_four_reports_are_written(reports):
    out, paths = reports
    assert sorted(p.name for p in paths) == ["junit.xml", "matrix.html", "matrix.json", "matrix.md"]
    assert all((out / p.name).stat().st_size > 0 for p in paths)


def test_html_escapes_engine_text_and_is_self_contained(reports):
    html = (reports[0] / "matrix.html").read_text()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'name="viewport"' in html and "position: sticky" in html and "overflow-x: auto" in html
    assert "<link" not in html and "src=" not in html


def test_markdown_has_a_table_per_case_with_short_cell_text(reports):
    md = (reports[0] / "matrix.md").read_text()
    assert "## 000 · q_output_type" in md and "## 003 · grouped_conv" in md
    assert "❌ build · as documented (sig: no_supported_formats)" in md
    assert "⏭ not run: no NVIDIA GPU" in md
    assert "✅ fused · as documented" in md
    assert "| g=8 |" in md  # a catalogue bundle with no cells still has a row


def test_json_holds_cells_columns_rows_and_summary(reports):
    data = json.loads((reports[0] / "matrix.json").read_text())
    assert len(data["cells"]) == 5 and len(data["columns"]) == 2
    trt = next(s for s in data["summary"] if s["heading"] == "tensorrt@10.3.0")
    assert trt["verdicts"]["regressed"] == 1 and trt["verdicts"]["as documented"] == 2


def test_junit_counts_unexpected_verdicts_as_failures(reports):
    root = ET.parse(reports[0] / "junit.xml").getroot()
    assert root.get("tests") == "5" and root.get("failures") == "2" and root.get("skipped") == "1"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    trt = suites["tensorrt@10.3.0 [NVIDIA H200 (sm_90)] (local)"]
    assert trt.get("failures") == "1"
    [failure] = trt.iter("failure")
    assert failure.get("type") == "regressed" and "<script>" in failure.text


def test_cell_text_reads_like_the_matrix(make_cell):
    assert cell_text(make_cell(fused=False)) == "✅ pass (not fused) · as documented"
    assert cell_text(make_cell(status="crashed", verdict="new failure", reason="SIGSEGV", fused=None)) \
        == "💥 crashed · new failure (SIGSEGV)"


def test_cli_report_writes_reports_and_exits_0_with_failing_cells(make_cell, write_results, tmp_path, capsys):
    from matrix.__main__ import main

    path = write_results("trt.jsonl", [make_cell(status="fail", verdict="regressed", fused=None)])
    (path.parent / "junk.jsonl").write_text("garbage\n")
    out = tmp_path / "out"
    code = main(["report", "--results", str(path.parent), "--out", str(out), "--bundles", str(tmp_path / "none")])
    captured = capsys.readouterr()
    assert code == 0
    assert "1 unexpected" in captured.out and f"wrote {out / 'matrix.html'}" in captured.out
    assert "junk.jsonl:1: error: not JSON" in captured.err
    assert "junk.jsonl:1" in (out / "matrix.md").read_text()


def test_cli_report_exits_2_when_nothing_could_be_read(tmp_path, capsys):
    from matrix.__main__ import main

    (tmp_path / "junk.jsonl").write_text("garbage\n")
    code = main(["report", "--results", str(tmp_path), "--out", str(tmp_path / "out")])
    assert code == 2
    assert "nothing could be read" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
