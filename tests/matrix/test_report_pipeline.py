"""The report pipeline: one merge, one view, and every writer (templates, JSON index, JUnit, console) reading it; a
cell's facts in one wording wherever they are said."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from typing import Any, Dict

import pytest

from tests.matrix.conftest import H200

CPU = "cpu: Intel(R) Xeon(R) (avx512_vnni)"


def _count_calls(monkeypatch: pytest.MonkeyPatch, module: str, name: str, counts: Dict[str, int]) -> None:
    """Count every call of module.name, however it is reached: every loaded module that holds it gets the wrapper."""
    import importlib

    original = getattr(importlib.import_module(module), name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return original(*args, **kwargs)

    counts[name] = 0
    for loaded in list(sys.modules.values()):
        if getattr(loaded, name, None) is original:
            monkeypatch.setattr(loaded, name, counted)


def test_one_report_merges_once_and_builds_its_view_once(make_cell, write_results, tmp_path, monkeypatch, capsys):
    """`matrix report` merges once (the conformance cells apart from the start), judges regressions and root causes
    once, and prints its console summary from the view the reports were rendered from."""
    import matrix.__main__  # noqa: F401  (every module it reaches is loaded before the counting starts)
    import matrix.causes
    import matrix.diff
    import matrix.merge
    import matrix.render  # noqa: F401

    conformance = make_cell("onnx_node_tests/quantizelinear_axis-opset21", case="onnx_node_tests",
                            params={"op": "QuantizeLinear", "form": "per-axis uint8", "test": "quantizelinear_axis",
                                    "opset": 21}, engine="onnxruntime", engine_version="1.31.1", hardware=CPU,
                            verdict="undocumented", expectation={}, precision={}, fused=None)
    ort = make_cell("q_output_type/out=uint8", engine="onnxruntime", engine_version="1.31.1", hardware=CPU)
    trt = [make_cell("grouped_conv/g=2", engine_version=v, hardware=H200, status=status, verdict=verdict,
                     last_stage=stage, error=error, fused=None)
           for v, status, verdict, stage, error in (("8.5.3.1", "pass", "as documented", "compare", ""),
                                                    ("8.6.0", "fail", "new failure", "build", "no implementation"))]
    paths = [write_results("ort.jsonl", [ort, conformance]), write_results("trt-8.5.3.1.jsonl", trt[:1]),
             write_results("trt-8.6.0.jsonl", trt[1:])]
    counts: Dict[str, int] = {}
    for module, name in (("matrix.merge", "build"), ("matrix.causes", "root_causes"),
                         ("matrix.diff", "regressions")):
        _count_calls(monkeypatch, module, name, counts)
    out = tmp_path / "reports"
    args = ["report", *[a for p in paths for a in ("--results", str(p))], "--out", str(out),
            "--bundles", str(tmp_path / "none")]
    assert matrix.__main__.main(args) == 0
    assert counts == {"build": 1, "root_causes": 1, "regressions": 1}
    first = capsys.readouterr().out.splitlines()[0]
    data = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    unexpected = sum(s["unexpected"] for s in data["summary"])
    assert first == (f"3 cells from 3 files, {len(data['rows'])} reproducers, 3 columns, {unexpected} unexpected from "
                     f"{len(data['causes'])} root cause; 1 conformance cell (conformance.md)"), first
    assert unexpected == 1


def test_a_cells_facts_are_worded_alike_in_the_grid_junit_and_the_root_causes(make_cell):
    """One wording per fact: the signature, the error against its tolerance and the expectation of one cell read the
    same in the grid's details, the JUnit failure and the root cause that a working cell contradicts."""
    from matrix.causes import root_causes
    from matrix.grid import grid_view
    from matrix.junit import junit_xml
    from matrix.merge import build

    expectation = {"outcome": "fail", "versions": ">=10", "signature": "no_implementation",
                   "source": "https://github.com/NVIDIA/TensorRT/issues/3844"}
    failing = make_cell("grouped_conv/g=2", status="fail", verdict="new failure", last_stage="compare",
                        explanation="fails where nothing documents it", signature="no_implementation",
                        max_error_steps=3.25, tolerance_steps=1.0, fused=None, expectation=expectation,
                        error="output 'y' differs from the reference by 3.25 steps (tolerance 1)")
    fixed = make_cell("grouped_conv/g=4", verdict="fixed", explanation="passes where a failure is documented",
                      expectation=expectation)
    result = build([failing, fixed])
    view = grid_view(result, {})
    texts = view["details"]["texts"]
    said = {}
    for order in view["details"]["order"]:
        items = [texts[i] for i in view["details"]["sets"][order]]
        said[items[0]] = dict(zip(items[1::2], items[2::2]))
    grid = said["new failure"]
    assert grid["signature"] == "no_implementation"
    assert grid["max error"] == "3.25 steps (tolerance 1)"
    assert grid["expected"] == ("fail >=10 (signature no_implementation): "
                                "https://github.com/NVIDIA/TensorRT/issues/3844")
    failure = ET.fromstring(junit_xml(result)).find(".//failure[@type='new failure']").text
    for label in ("signature", "max error", "expected"):
        assert f"{label}: {grid[label]}\n" in failure, label
    [cause] = [c for c in root_causes(result.cells) if c["did"] == "works"]
    assert cause["expected"] == said["fixed"]["expected"] == grid["expected"]


def test_the_diff_and_the_upgrade_answer_group_changes_by_cause_alike(make_cell):
    """One grouping of changes by cause: 13 reproducers whose error changed alike (their texts differ in numbers
    only) are one line in `matrix diff`'s Markdown and one in the report's upgrade answer, worded alike."""
    from matrix.diff import diff
    from matrix.upgrade import pair_view

    said = {"8.5.3.1": ("load", "Assertion failed: node {i} has {i} inputs"),
            "8.6.0": ("build", "[optimizer.cpp::computeCosts::{i}] Error Code {i}: no implementation")}
    cells = [make_cell(f"grouped_conv/g={i + 2}", engine_version=v, status="fail", verdict="new failure", fused=None,
                       last_stage=stage, error=error.format(i=700 + i))
             for i in range(13) for v, (stage, error) in said.items()]
    markdown = diff(cells, "tensorrt", "8.5.3.1", "8.6.0").markdown()
    lines = [line for line in markdown.splitlines() if line.startswith("- **")]
    [group] = pair_view(cells, "tensorrt", "8.5.3.1", "8.6.0")["groups"][0]["by_cause"]
    assert len(lines) == 1 and lines[0].startswith("- **13 error texts changed**"), lines
    assert group["n"] == 13 and group["kind"] == "error changed"
    assert f"{group['before']} → {group['after']}".replace("[", "\\[").replace("]", "\\]") in lines[0]


def test_a_columns_variant_is_a_field_sorted_by_value_and_said_only_at_the_edge(make_cell):
    """Column.variant holds the options as (name, value) pairs: a value with "=", "," or digits in it is kept whole,
    targets sort by their number (SM8 before SM75 before SM120), and the label is written only where a page says it."""
    from matrix.causes import say_settings, settings_of
    from matrix.cellfiles import column_file
    from matrix.conformance import conformance_view
    from matrix.grid import bugs_options
    from matrix.merge import build, variant_order

    aot = "no GPU: ahead-of-time build"
    odd = {"plugin_link": "lib=a, b2.so"}
    cells = [make_cell("q_output_type/out=uint8", engine="tensorrt-rtx", engine_version="1.7.1.116", hardware=aot,
                       variant=v) for v in ({"target": "SM120"}, {"target": "SM75"}, {"target": "SM8"}, odd)]
    result = build(cells)
    variants = [c.variant for c in result.columns]
    assert (("plugin_link", "lib=a, b2.so"),) in variants and (("target", "SM75"),) in variants
    assert sorted(variants, key=variant_order) == [(("plugin_link", "lib=a, b2.so"),), (("target", "SM8"),),
                                                   (("target", "SM75"),), (("target", "SM120"),)]
    [plugin] = [c for c in result.columns if dict(c.variant).get("plugin_link")]
    assert plugin.setting == f"{aot} · plugin_link=lib=a, b2.so" and "plugin_link=lib=a_b2.so" in column_file(plugin)
    assert "--variant 'plugin_link=lib=a, b2.so'" in bugs_options(plugin).replace('"', "'")
    assert say_settings(settings_of(cells)) == f"{aot} · plugin_link=lib=a, b2.so, target=SM8, SM75 and SM120"
    conformance = [make_cell(f"onnx_node_tests/quantizelinear_axis-opset21-{t}", case="onnx_node_tests",
                             params={"op": "QuantizeLinear", "form": "per-axis uint8", "test": "quantizelinear_axis",
                                     "opset": 21}, engine="tensorrt-rtx", engine_version="1.7.1.116", hardware=aot,
                             variant={"target": t}, status="built", verdict="undocumented", expectation={})
                   for t in ("SM120", "SM75", "SM8")]
    assert conformance_view(conformance, {})["targets"]["targets"] == ["SM8", "SM75", "SM120"]
