"""The four reports: written, escaped, readable on a phone, and JUnit that CI can count."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from core.cell import VERDICTS
from matrix.merge import build
from tests.matrix.conftest import cells_from_report, write_reports


@pytest.fixture
def reports(tmp_path, make_cell):
    cells = [
        make_cell("q_output_type/out=int8"),
        make_cell("q_output_type/out=uint8", status="fail", last_stage="load", verdict="as documented", fused=None,
                  error="could not find any supported formats consistent with input/output data types",
                  signature="no_supported_formats"),
        make_cell("grouped_conv/g=2", status="fail", last_stage="build", verdict="fails against expectation",
                  fused=None,
                  error="<script>alert(1)</script> broke", explanation="documented to pass, but it fail"),
        make_cell("grouped_conv/g=2", engine="onnxruntime", engine_version="1.23.2", hardware="cpu",
                  verdict="fixed"),
        make_cell("grouped_conv/g=4", status="not_run", verdict="not run", reason="no NVIDIA GPU", fused=None),
    ]
    out = tmp_path / "reports"
    paths = write_reports(build(cells, catalogue=["grouped_conv/g=8"]), out, generated="2026-01-01")
    return out, paths


def test_all_four_reports_are_written_with_their_side_files(reports):
    out, paths = reports
    assert sorted(p.name for p in paths) == ["cells", "conformance.html", "conformance.json", "conformance.md", "diff",
                                            "junit.xml", "matrix.html", "matrix.json", "matrix.md", "models.html",
                                            "models.md", "plots.html"]
    assert all((out / p.name).stat().st_size > 0 for p in paths if p.is_file())
    columns = sorted(p.name for p in (out / "cells").glob("*.jsonl"))
    assert len(columns) == 2 and columns[0].startswith("onnxruntime_1.23.2_local_cpu_")
    assert (out / "cells" / "details.js").read_text().startswith("qdqDetails({")
    assert [p.name for p in (out / "diff").iterdir()] == []  # one TensorRT version: no pair to diff


def test_html_escapes_engine_text_and_is_self_contained(reports):
    html = (reports[0] / "matrix.html").read_text()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'name="viewport"' in html and "position: sticky" in html and "overflow-x: auto" in html
    assert "<link" not in html and "src=" not in html


def test_markdown_starts_with_the_upgrade_answer_and_has_a_compact_grid(reports):
    md = (reports[0] / "matrix.md").read_text()
    assert md.index("## Upgrade answer") < md.index("## Grid") and "## Upgrade answer" in md[:600]
    grid = (reports[0] / "cells" / "grid.md").read_text()
    assert "[cells/grid.md](cells/grid.md)" in md and "| out=uint8 |" not in md  # the grid is one click away
    assert "### 000 · q_output_type" in grid and "### 003 · grouped_conv" in grid
    assert "| out=uint8 | . | `B` |" in grid  # stopped after load: fails at build, as documented
    assert "| g=2 | `8+` | `R!` |" in grid  # ORT fused and fixed; TensorRT regressed at run
    assert "| g=8 | . | . |" in grid  # a catalogue bundle with no cells still has a row
    assert "| 2 | tensorrt@10.3.0 | NVIDIA H200 (sm_90) |" in grid  # its columns, numbered as in matrix.md


def test_json_holds_cells_columns_rows_and_summary(reports):
    data = json.loads((reports[0] / "matrix.json").read_text())
    assert len(data["cells"]) == 5 and len(data["columns"]) == 2
    trt = next(s for s in data["summary"] if s["heading"] == "tensorrt@10.3.0")
    assert trt["verdicts"]["fails against expectation"] == 1 and trt["verdicts"]["as documented"] == 2


def test_junit_counts_unexpected_verdicts_as_failures(reports):
    root = ET.parse(reports[0] / "junit.xml").getroot()
    assert root.get("tests") == "5" and root.get("failures") == "2" and root.get("skipped") == "1"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    trt = suites["tensorrt@10.3.0 [NVIDIA H200 (sm_90)] (local)"]
    assert trt.get("failures") == "1"
    [failure] = trt.iter("failure")
    assert failure.get("type") == "fails against expectation" and "<script>" in failure.text
    whole = failure.text.splitlines()[-1]  # the file with its log and listing, as the reports folder has it
    assert whole.startswith("whole cell: cells/tensorrt_10.3.0_local_") and (reports[0] / whole[12:]).is_file()


def test_cli_report_writes_reports_and_exits_1_naming_a_refused_file(make_cell, write_results, tmp_path, capsys):
    from matrix.__main__ import main

    path = write_results("trt.jsonl", [make_cell(status="fail", verdict="fails against expectation", fused=None)])
    (path.parent / "junk.jsonl").write_text("garbage\n")
    out = tmp_path / "out"
    code = main(["report", "--results", str(path.parent), "--out", str(out), "--bundles", str(tmp_path / "none")])
    captured = capsys.readouterr()
    assert code == 1  # failing cells are the verdicts' business; a refused file is not
    assert "1 unexpected from 1 root cause\n" in captured.out and f"wrote {out / 'matrix.html'}" in captured.out
    assert "junk.jsonl:1: error: not JSON" in captured.err
    assert "1 results file refused" in captured.err and "junk.jsonl" in captured.err.splitlines()[-1]
    assert "junk.jsonl:1" in (out / "matrix.md").read_text()


def test_cli_report_exits_2_when_nothing_could_be_read(tmp_path, capsys):
    from matrix.__main__ import main

    (tmp_path / "junk.jsonl").write_text("garbage\n")
    code = main(["report", "--results", str(tmp_path), "--out", str(tmp_path / "out")])
    assert code == 2
    assert "nothing could be read" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\u23E9-\u23FA\u2300-\u23FF\uFE0F]")


def test_no_emoji_in_html_or_markdown(reports):
    for name in ("matrix.html", "matrix.md"):
        text = (reports[0] / name).read_text(encoding="utf-8")
        assert not EMOJI.search(text), (name, EMOJI.search(text))


def test_json_is_compact_and_gives_every_cell_back(tmp_path, make_cell):
    cells = [make_cell("grouped_conv/g=2", log="x" * 50),
             make_cell("grouped_conv/g=4", error="boom", status="fail", last_stage="build", fused=None,
                       verdict="fails against expectation")]
    result = build(cells)
    write_reports(result, tmp_path, generated="2026-01-01")
    text = (tmp_path / "matrix.json").read_text()
    data = json.loads(text)
    assert text == json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n"
    assert data["schema"] == "qdq-matrix/report/3"
    assert "engine" not in data["cells"][0] and data["columns"][0]["shared"]["engine"] == "tensorrt"
    assert "log" not in text and data["texts"][data["cells"][1]["error"]] == "boom"  # the log is in cells/
    assert data["cells"][1]["cause"] == 0 and data["causes"][0]["n"] == 1
    assert cells_from_report(data, tmp_path) == list(result.cells)  # whole, from the column files


@pytest.mark.parametrize("values,one", [
    (["SM89", "SM89"], True), (["SM89", "SM90"], False), ([1, 1.0], False), ([1, True], False), ([0.0, -0.0], False),
    (["1", 1], False), ([1, "1"], False), ([[1, 2], (1, 2)], True), ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], True),
    ([{"a": 1}, {"a": 1.0}], False), (["x"], True), ([float("nan"), float("nan")], True)])
def test_a_columns_shared_field_is_one_value_as_json_says_it(values, one):
    """matrix.json keeps a field once per column where every cell's value writes the same JSON, whatever Python's
    == says of it (1 == 1.0 == True; [1] != (1,))."""
    from matrix.index import _one_value

    assert _one_value(iter(values)) is one


def test_a_column_idle_for_one_reason_is_one_line(tmp_path, make_cell):
    cells = [make_cell(f"grouped_conv/g={g}") for g in (2, 4, 8)]
    cells += [make_cell(f"grouped_conv/g={g}", engine_version="12.0.0", hardware="no NVIDIA GPU", status="not_run",
                        verdict="not run", reason="no NVIDIA GPU", fused=None) for g in (2, 4, 8)]  # not pinned
    write_reports(build(cells), tmp_path, generated="2026-01-01")
    html = (tmp_path / "matrix.html").read_text()
    md = (tmp_path / "matrix.md").read_text()
    grid = html[html.index('<table id="g"'):html.index('id="plots"')]
    assert "12.0.0" not in grid and "no NVIDIA GPU" not in grid  # no column of "not run" from top to bottom
    assert "all 3 cells not run: no NVIDIA GPU" in html and "all 3 cells not run: no NVIDIA GPU" in md
    assert "| params | 1 |" in (tmp_path / "cells" / "grid.md").read_text()  # the grid keeps the column that ran


NEVER = "never run: its builder wheel is not reachable from here (NVIDIA's index)"


def test_a_version_that_never_ran_says_so_and_why_in_every_view(tmp_path, make_cell):
    """TensorRT 10.x/11.x come from NVIDIA's index, which no machine here reaches: their stand-in cells written on a
    machine without a GPU are "never run" and why, with no hardware and no fresh local date, never "no NVIDIA GPU"."""
    cells = [make_cell(f"grouped_conv/g={g}", engine_version="8.6.0") for g in (2, 4)]
    cells += [make_cell(f"grouped_conv/g={g}", engine_version=v, hardware="no NVIDIA GPU", status="not_run",
                        verdict="not run", reason="no NVIDIA GPU", fused=None, run={"date": "2026-11-28T09:00:00Z"})
              for g in (2, 4) for v in ("10.16.1.11", "11.5.0")]
    write_reports(build(cells), tmp_path, generated="2026-01-01")
    html, md = (tmp_path / "matrix.html").read_text(), (tmp_path / "matrix.md").read_text()
    columns = md[md.index("## Columns"):md.index("## Grid")]
    assert f"| tensorrt@10.16.1.11 | — | {NEVER} |" in columns and "2026-11-28" not in columns
    assert f"**tensorrt 10.16.1.11 and 11.5.0**: {NEVER}. Left out of the grid." in columns
    assert f"<b>tensorrt 10.16.1.11 and 11.5.0</b>: {NEVER}." in html.replace("&#39;", "'")
    # every version of NVIDIA's index without a cell that ran, its stand-in cells or none: the pin table knows them
    assert "10.8.0.43, 10.13.3.9, 10.16.1.11, 11.0.0.114, 11.1.0.106, 11.2.1.2, 11.3.0.99, 11.4.0.106 and 11.5.0 are " \
           "not compared, each never run: its builder wheel is not reachable from here (NVIDIA's index)" in md
    assert "no NVIDIA GPU" not in md and "no NVIDIA GPU" not in html
    assert f'message="{NEVER}"' in (tmp_path / "junit.xml").read_text()


def test_a_version_of_nvidias_index_that_ran_somewhere_is_no_longer_never_run(tmp_path, make_cell):
    cells = [make_cell("grouped_conv/g=2", engine_version="10.16.1.11")]
    cells += [make_cell("grouped_conv/g=4", engine_version="10.16.1.11", hardware="no NVIDIA GPU", status="not_run",
                        verdict="not run", reason="no NVIDIA GPU", fused=None)]
    result = build(cells)
    assert [c.never_run for c in result.columns] == ["", ""]
    write_reports(result, tmp_path, generated="2026-01-01")
    md = (tmp_path / "matrix.md").read_text()
    assert "10.13.3.9, 11.0.0.114" in md and "One version ran (10.16.1.11)" in md  # the others of its index never ran
    assert "| tensorrt@10.16.1.11 | no NVIDIA GPU | local run, 2026-01-01 |" in md


def test_the_8_6_0_column_names_its_build_and_where_that_comes_from(tmp_path, make_cell):
    source = "https://github.com/NVIDIA/TensorRT/releases/tag/v8.6.0"
    cells = [make_cell("grouped_conv/g=2", engine_version="8.6.0", versions={"tensorrt": "8.6.0"}),
             make_cell("grouped_conv/g=2", engine_version="8.5.3.1", versions={"tensorrt": "8.5.3.1"})]
    result = build(cells)
    assert [(c.engine_version, c.build, c.build_source) for c in result.columns] == \
        [("8.5.3.1", "", ""), ("8.6.0", "8.6.0.12", source)]
    write_reports(result, tmp_path, generated="2026-01-01")
    md = (tmp_path / "matrix.md").read_text()
    assert "| tensorrt@8.6.0 (build 8.6.0.12) |" in md and "tensorrt@8.6.0 is build 8.6.0.12: its cells record" in md
    assert source in md
    recorded = build([make_cell("grouped_conv/g=2", engine_version="8.6.0", versions={"tensorrt": "8.6.0.99"})])
    assert (recorded.columns[0].build, recorded.columns[0].build_source) == ("8.6.0.99", "its cells")  # a fact first


def test_cell_details_are_a_side_file_each_text_said_once(tmp_path, make_cell):
    reason = "needs plugin qdq_matrix::Int8IdentityV2; none is built for TensorRT 8.5.1.7 (a long reason)"
    cells = [make_cell(f"grouped_conv/g={g}", status="not_run", verdict="not run", reason=reason, fused=None)
             for g in (2, 4, 8)] + [make_cell("grouped_conv/g=16")]
    write_reports(build(cells), tmp_path, generated="2026-01-01")
    html = (tmp_path / "matrix.html").read_text()
    assert "Int8IdentityV2" not in html and 'data-s="cells/details.js"' in html  # loaded when a cell is looked at
    script = (tmp_path / "cells" / "details.js").read_text()
    data = json.loads(script[len("qdqDetails("):-len(");\n")])
    assert script.count("Int8IdentityV2") == 1 and data["texts"].count(reason) == 1
    assert sorted(data["order"]) == [0, 1, 1, 1]  # the three idle cells share one set of details
    [row] = re.findall(r'<tr class="r" data-k="([^"]*)" data-s="g=2"><th>[^<]*</th></tr>', html)
    symbols = json.loads(re.search(r"data-p='([^']*)'", html).group(1).replace("&#34;", '"'))
    assert [symbols[s] for s in row] == [["-", f"kn v{VERDICTS.index('not run')}"]]  # one column: not run


def test_notes_are_labelled_and_apart_from_problems(tmp_path, make_cell, write_results):
    from matrix.merge import load_results

    ran = write_results("trt.jsonl", [make_cell("grouped_conv/g=2")])
    write_results("idle.jsonl", [make_cell("grouped_conv/g=2", hardware="no NVIDIA GPU", status="not_run",
                                           verdict="not run", reason="no NVIDIA GPU", fused=None)])
    (ran.parent / "bad.jsonl").write_text("garbage\n")
    result = load_results([ran.parent])
    write_reports(result, tmp_path / "out", generated="2026-01-01")
    html = (tmp_path / "out" / "matrix.html").read_text()
    problems = html[html.index('id="problems"'):html.index("Merge notes")]
    notes = html[html.index("Merge notes"):]
    assert "bad.jsonl:1</code>: not JSON" in problems and "<b>error</b>" in problems and "no NVIDIA GPU" not in problems
    assert "<b>note</b> about <code>" in notes and "idle.jsonl</code>" in notes and ": note:" not in html


def test_the_upgrade_answer_is_matrix_diff(tmp_path, make_cell):
    from matrix.diff import diff

    cells = [make_cell("grouped_conv/g=2", engine_version=v) for v in ("8.5.3.1", "8.6.0", "10.3.0")]
    cells[1] = make_cell("grouped_conv/g=2", engine_version="8.6.0", status="fail", last_stage="build", fused=None,
                         verdict="fails against expectation", error="no implementation")
    write_reports(build(cells), tmp_path, generated="2026-01-01")
    html = (tmp_path / "matrix.html").read_text()
    from matrix.upgrade import headline

    report = diff(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert report.verdict.split(" ", 1)[1].startswith("1 regression between tensorrt 8.5.3.1 and 8.6.0")
    assert headline(report) == "1 regression (1 reproducer compared)" and headline(report) in html
    assert html.index('id="upgrade"') < html.index('id="grid"') < html.index('id="plots"')
    assert 'id="pp0_0_2"' in html  # the any-pair picker has 8.5.3.1 -> 10.3.0
    assert html.count("<svg") == 1 and (tmp_path / "plots.html").read_text().count("<svg") == 1
    [name] = [p.name for p in (tmp_path / "diff").iterdir() if "8.5.3.1_to_8.6.0" in p.name]
    assert (tmp_path / "diff" / name).read_text() == diff(cells, "tensorrt", "8.5.3.1", "8.6.0").markdown() + "\n"
    assert f'href="diff/{name}"' in html


def test_html_grows_linearly_and_stays_small(tmp_path, make_cell):
    def size(rows: int) -> int:
        cells = [make_cell(f"grouped_conv/g={g}", engine_version=v,
                           precision={"node_of_conv": {"precision": "int8", "evidence": f"layer 'conv_{g}' runs Int8"}})
                 for g in range(rows) for v in ("8.5.1.7", "8.6.0", "10.3.0", "10.8.0", "10.13.3.9")]
        out = tmp_path / str(rows)
        write_reports(build(cells), out, generated="2026-01-01")
        return (out / "matrix.html").stat().st_size

    small, large = size(40), size(160)
    per_cell = (large - small) / (120 * 5)
    assert per_cell < 200, per_cell
    assert 3.5 < (large - size(0 + 1)) / (small - size(1)) < 4.5


def test_a_user_models_node_report_plugs_into_the_page(tmp_path, make_cell):
    nodes = tmp_path / "out" / "nodes"
    nodes.mkdir(parents=True)
    summary = {"model": "mine.onnx", "columns": [{"engine": "onnxruntime", "version": "1.31.1", "hardware": "cpu",
                                                  "status": "pass", "ran": True, "int8": 3, "total": 4}]}
    (nodes / "user_model__mine.json").write_text(json.dumps(summary))
    node = {"bundle": "user_model/mine", "md": nodes / "user_model__mine.md", "html": nodes / "user_model__mine.html",
            "json": nodes / "user_model__mine.json"}
    write_reports(build([make_cell()]), tmp_path / "out", generated="2026-01-01", node_reports=[node])
    html = (tmp_path / "out" / "matrix.html").read_text()
    md = (tmp_path / "out" / "matrix.md").read_text()
    models = html[html.index('id="models"'):html.index('id="grid"')]  # the decision page: a line per model
    assert '<tr class="m-some"><th><a href="nodes/user_model__mine.html">mine.onnx</a></th><td>3/4 INT8</td>' \
           "<td>ONNX Runtime 1.31.1</td><td>0 of 1</td></tr>" in models and 'href="models.html"' in models
    assert "| [mine.onnx](nodes/user_model__mine.md) | 3/4 INT8 | ONNX Runtime 1.31.1 | 0 of 1 |" in md
    page = (tmp_path / "out" / "models.html").read_text()  # every model by every column, a page of its own
    assert '<th><a href="nodes/user_model__mine.html">mine.onnx</a></th>' in page
    assert "<th>ONNX Runtime 1.31.1<small>cpu</small></th>" in page
    assert '<td class="m-some" title=""><a href="nodes/user_model__mine.html">3/4 INT8</a></td>' in page
    assert "| [mine.onnx](nodes/user_model__mine.md) | 3/4 INT8 |" in (tmp_path / "out" / "models.md").read_text()


OBSERVED = Path(__file__).resolve().parents[2] / "reports" / "observed"
LATER_TRT = ("10.8.0.43", "10.13.3.9", "10.16.1.11", "11.0.0.114", "11.1.0.106", "11.2.1.2", "11.3.0.99", "11.4.0.106")


def _cpu_cells(bundles, precision_of, make_cell):
    """Synthetic CPU columns of today's shape (plumbing only: the sizes, never a matrix cell)."""
    out = []
    for engine, versions in (("onnxruntime", ("1.16.3", "1.31.1")), ("openvino", ("2024.6.0", "2026.4.1"))):
        for version in versions:
            for i, bundle in enumerate(bundles):
                failing = i % 9 == 0
                error = f"output 'y' differs from the reference by {i % 7 + 2} steps (tolerance 1)"
                nodes = precision_of.get(bundle) or ["node_of_y"]
                precision = {n: {"precision": "int8", "evidence": f"runtime layer '{n}' type Convolution, "
                                 f"runtimePrecision u8, outputPrecisions u8, originalLayersNames {n}"} for n in nodes}
                out.append(make_cell(
                    bundle, engine=engine, engine_version=version, hardware="cpu: synthetic x86-64",
                    status="fail" if failing else "pass", last_stage="run" if failing else "compare",
                    verdict="new failure" if failing else "undocumented", fused=None if failing else i % 2 == 0,
                    error=error if failing else "",
                    explanation="fail, and no source documents a failure here" if failing else "passed",
                    max_error_steps=float(i % 7 + 2) if failing else 0.0, precision=precision, expectation={}))
    for version in LATER_TRT:
        out += [make_cell(b, engine_version=version, hardware="no NVIDIA GPU", status="not_run", verdict="not run",
                          reason="no NVIDIA GPU", fused=None, precision={}, expectation={}, last_stage="",
                          max_error_steps=None, explanation="") for b in bundles]
    return out


RTX = ("1.4.0.76", "1.5.0.114", "1.6.1.120", "1.7.1.116")
RTX_SETTINGS = ({}, {"plugin_link": "libtensorrt_rtx.so"}, *({"target": t} for t in ("SM75", "SM80", "SM86", "SM89",
                                                                                       "SM120")))
AOT = "no GPU: ahead-of-time build (default: SM80 SM86 SM89 SM120 SM121)"


def _rtx_cells(bundles, precision_of, make_cell):
    """Synthetic TensorRT-RTX columns of a fresh clone's shape: four versions, each with its default build, the
    plugin link and five targets; every third reproducer fails 1.4-1.6's build with a Myelin check whose source lines
    move from version to version (one root cause), with a log and a layer listing per cell."""
    out = []
    for n, version in enumerate(RTX):
        for variant in RTX_SETTINGS:
            for i, bundle in enumerate(bundles):
                failing = i % 3 == 0 and n < 3
                error = (f"build_serialized_network returned None: IBuilder::buildSerializedNetwork: Error Code 1: "
                         f"Myelin ([myelin_graph.h:{1250 + 9 * n}: attachExceptionMsgToGraph] MyelinCheckException: "
                         f"cudnn_impl.cpp:{1040 - 700 * (n % 2)}: CHECK(dtype == myelinTypeFloat || dtype == "
                         f"myelinTypeHalf) failed. In compileGraph at optimizer/myelin/codeGenerator.cpp:{1300 + n})")
                nodes = precision_of.get(bundle) or ["node_of_y"]
                precision = {node: {"precision": "int8", "evidence": f"layer '{node}' [ONNX Layer: {node}] runs "
                                    "Int8 in a Myelin region, tactic 0x0000000000000000"} for node in nodes}
                out.append(make_cell(
                    bundle, engine="tensorrt-rtx", engine_version=version, hardware=AOT, variant=variant,
                    status="fail" if failing else "built", last_stage="load" if failing else "build",
                    verdict="new failure" if failing else "undocumented", fused=None if failing else True,
                    error=error if failing else "", max_error_steps=None, tolerance_steps=None,
                    explanation="fail, and no source documents a failure here" if failing else "built",
                    precision={} if failing else precision, expectation={},
                    log="[TRT] " + "builder log line\n" * 40, listing={"kind": "layers", "encoding": "zlib+base64",
                                                                        "data": "eJx" + "A" * 600}))
    return out


@pytest.mark.slow
@pytest.mark.skipif(not OBSERVED.is_dir(), reason="reports/observed is not in this checkout")
def test_reports_from_todays_data_stay_within_their_sizes(tmp_path, make_cell):
    """The reports' size budgets over a fresh clone's shape: the observations, synthetic CPU and TensorRT-RTX
    columns."""
    from matrix.merge import catalogue_bundles, load_results

    catalogue = catalogue_bundles()
    observed = load_results([OBSERVED], catalogue)
    precision_of = {c.bundle: sorted(c.precision) for c in observed.cells}
    bundles = [r.bundle for r in observed.rows]
    cells = list(observed.cells) + _cpu_cells(bundles, precision_of, make_cell)
    cells += _rtx_cells(bundles, precision_of, make_cell)
    result = build(cells, observed.problems, catalogue, files=observed.files)
    assert len(result.columns) >= 50 and len(result.rows) >= 240 and len(result.cells) > 9000
    write_reports(result, tmp_path, generated="2026-01-01")
    html, md = (tmp_path / "matrix.html").read_text(), (tmp_path / "matrix.md").read_text()
    sizes = {name: (tmp_path / name).stat().st_size for name in ("matrix.html", "matrix.md", "matrix.json")}
    print(sizes)
    assert sizes["matrix.html"] <= 400_000 and sizes["matrix.md"] <= 100_000 and sizes["matrix.json"] <= 5_000_000
    headlines = re.findall(r"^#### .+\n\n\*\*(.+)\*\*$", md, re.M)  # each version pair's one line
    assert len(headlines) >= 8 and max(len(h) for h in headlines) <= 140, headlines
    diffs = {p.name: p.stat().st_size for p in (tmp_path / "diff").glob("*.md")}
    assert len(diffs) >= 8 and max(diffs.values()) <= 100_000, diffs  # the rest in diff/rows/, linked
    for name in (p.name for p in (tmp_path / "diff" / "rows").glob("*.md")):
        assert f"](rows/{name})" in (tmp_path / "diff" / name).read_text()
    data = json.loads((tmp_path / "matrix.json").read_text())
    myelin = [c for c in data["causes"] if c["engine"] == "tensorrt-rtx" and "cudnn_impl" in c["example"]]
    assert len(myelin) == 1 and myelin[0]["versions"] == "1.4.0.76 to 1.6.1.120"  # source lines do not split it
    assert myelin[0]["where"] == f"{AOT} · its default, plugin_link=libtensorrt_rtx.so, target=SM75, SM80, SM86, " \
                                 "SM89 and SM120"
    unexpected = sum(s["unexpected"] for s in data["summary"])
    said = f"**{unexpected} unexpected** cells from **{len(data['causes'])} root causes**"
    assert said in md.splitlines()[2] and len(data["causes"]) < unexpected / 10  # the top counts causes
    assert f"<b>{unexpected} unexpected</b> cells from <a href=\"#causes\"><b>{len(data['causes'])} root causes" in html
    assert html.count('<details class="cause">') == len(data["causes"])  # each cause's cells one click away
    assert html.index('id="upgrade"') < html.index('id="grid"') and md.index("## Upgrade answer") < md.index("## Grid")
    assert md.count("Left out of the grid.") == 1 and "tensorrt 10.8.0.43, 10.13.3.9, " in md  # idle: one line
    assert "11.4.0.106" not in html[html.index('<table id="g"'):html.index("</table>")]
    assert "builder log line" not in html + md + (tmp_path / "matrix.json").read_text()  # logs are in cells/ only
    catalogue_cells = result.cells  # the conformance cells are on their own page (conformance.json)
    assert sum(len(cells_from_report(data, tmp_path)) for _ in [0]) == len(catalogue_cells)  # and nothing is lost


def qdq_models(folder: Path, count: int) -> Path:
    """count small Q/DQ models, each its own (seeded weights, channels, depth), with names as long as real ones."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    for m in range(count):
        rng, channels, nodes, inits, x = np.random.default_rng(m), 4 + m % 5, [], [], "x"
        for d in range(1 + m % 3):
            inits += [numpy_helper.from_array(np.array(0.05, np.float32), f"a{d}_s"),
                      numpy_helper.from_array(np.array(0, np.int8), f"a{d}_z"),
                      numpy_helper.from_array(rng.integers(-127, 128, (channels, channels, 3, 3), dtype=np.int8),
                                              f"w{d}"),
                      numpy_helper.from_array(np.full((channels,), 0.01, np.float32), f"w{d}_s"),
                      numpy_helper.from_array(np.zeros((channels,), np.int8), f"w{d}_z")]
            nodes += [helper.make_node("QuantizeLinear", [x, f"a{d}_s", f"a{d}_z"], [f"a{d}_q"], name=f"a{d}_Q"),
                      helper.make_node("DequantizeLinear", [f"a{d}_q", f"a{d}_s", f"a{d}_z"], [f"a{d}_dq"],
                                       name=f"a{d}_DQ"),
                      helper.make_node("DequantizeLinear", [f"w{d}", f"w{d}_s", f"w{d}_z"], [f"w{d}_dq"], axis=0,
                                       name=f"w{d}_DQ"),
                      helper.make_node("Conv", [f"a{d}_dq", f"w{d}_dq"], [f"conv{d}"], kernel_shape=[3, 3],
                                       pads=[1, 1, 1, 1], name=f"conv{d}"),
                      helper.make_node("Relu", [f"conv{d}"], [f"relu{d}"], name=f"relu{d}")]
            x = f"relu{d}"
        nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
        shape = [1, channels, 8, 8]
        graph = helper.make_graph(nodes, f"net{m}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        onnx.save(model, folder / f"customer_detector_backbone_variant_{m:02d}_int8_per_channel.onnx")
    return folder


def checked_model_cells(bundles: Path, make_cell) -> list:
    """The cells `python -m check` writes for each bundle made with --prepare-only, on ONNX Runtime, OpenVINO and
    TensorRT-RTX, every third model failing OpenVINO's build at a named node (a double: the sizes, never a finding)."""
    out = []
    for meta in sorted(bundles.glob("user_model/*/case.json")):
        case = json.loads(meta.read_text())
        nodes = {n: {"precision": "int8", "evidence": f"runtime layer '{n}' type Convolution, runtimePrecision i8"}
                 for n in case["target_nodes"]}
        failing = len(out) % 9 == 3  # models 1, 4, 7, ...
        for engine, version, hardware in (("onnxruntime", "1.32.0", "cpu: synthetic x86-64"),
                                          ("openvino", "2026.4.1", "cpu: synthetic x86-64"),
                                          ("tensorrt-rtx", "1.7.1.116", AOT)):
            broken = failing and engine == "openvino"
            out.append(make_cell(
                case["bundle"], case="user_model", params=case["params"], digest=case["digest"], engine=engine,
                engine_version=version, hardware=hardware, status="fail" if broken else
                "built" if engine == "tensorrt-rtx" else "pass", last_stage="build" if broken else "compare",
                verdict="new failure" if broken else "undocumented", fused=None if broken else True,
                error=f"Exception from src/plugins/intel_cpu/src/node.cpp:1190: [CPU] {case['target_nodes'][0]} "
                      "node with name conv0 has unsupported precision combination i8 x u8" if broken else "",
                precision={} if broken else nodes, expectation={}, max_error_steps=None, tolerance_steps=None))
    return out


def todays_shape(make_cell, extra=()):
    """A fresh clone's matrix (the observations, synthetic CPU and TensorRT-RTX columns) and extra cells, merged."""
    from matrix.merge import catalogue_bundles, load_results

    catalogue = catalogue_bundles()
    observed = load_results([OBSERVED], catalogue)
    precision_of = {c.bundle: sorted(c.precision) for c in observed.cells}
    bundles = [r.bundle for r in observed.rows]
    cells = list(observed.cells) + _cpu_cells(bundles, precision_of, make_cell)
    cells += _rtx_cells(bundles, precision_of, make_cell) + list(extra)
    return build(cells, observed.problems, catalogue, files=observed.files)


@pytest.mark.slow
@pytest.mark.skipif(not OBSERVED.is_dir(), reason="reports/observed is not in this checkout")
def test_thirty_checked_models_keep_the_reports_in_their_budgets(tmp_path, make_cell, capsys, monkeypatch):
    """Issue 40: 30 of one's own models checked, then `matrix report`: matrix.md was 103,300 bytes and matrix.html
    403,421, over 100 KB and 400 KB, with no warning. The decision page says a line per model, worst first (at most
    matrix.models.SHOWN), each linking its per-node report; every model by every column is models.md/.html."""
    from check.__main__ import main as check
    from matrix.__main__ import main as matrix
    from matrix.models import SHOWN
    from matrix.nodes import write_all
    from matrix.render import BUDGETS

    assert check([str(qdq_models(tmp_path / "models", 30)), "--prepare-only", "--out", str(tmp_path / "bundles")]) == 0
    mine = checked_model_cells(tmp_path / "bundles", make_cell)
    assert len({c.bundle for c in mine}) == 30
    result = todays_shape(make_cell, mine)
    out = tmp_path / "reports"
    write_reports(result, out, generated="2026-01-01",
                  node_reports=write_all(result.cells, out / "nodes", [tmp_path / "bundles"]))
    sizes = {name: (out / name).stat().st_size for name in BUDGETS}
    print(sizes)
    assert all(sizes[name] <= budget for name, budget in BUDGETS.items()), sizes
    md, html = (out / "matrix.md").read_text(), (out / "matrix.html").read_text()
    models = (out / "models.md").read_text().count("\n| [")  # every model on its own page, a row each
    assert models > len({c.bundle for c in mine}) + 20  # the committed producer models and these
    assert md.count("](nodes/user_model__") == SHOWN  # a line per model shown, each linking its per-node report
    assert f"And {models - SHOWN} more models: [models.md](models.md)." in md and 'href="models.html"' in html
    # worst first: a model OpenVINO fails is on the page, one all INT8 everywhere is one click away
    assert "variant_01_int8_per_channel.onnx](nodes/" in md and "variant_00_int8_per_channel.onnx" not in md
    # over a budget, `matrix report` says so on stdout
    monkeypatch.setattr("matrix.render.BUDGETS", dict(BUDGETS, **{"matrix.md": 1_000}))
    results = tmp_path / "results.jsonl"
    results.write_text("".join(c.to_json() + "\n" for c in mine[:3]))
    assert matrix(["report", "--results", str(results), "--out", str(tmp_path / "small"), "--bundles",
                   str(tmp_path / "bundles")]) == 0
    said = capsys.readouterr().out
    assert "matrix report: warning: matrix.md is " in said and "over its budget of 1,000 (docs/reports.md)" in said
    assert "matrix.html is" not in said


def test_counts_read_in_the_number_they_take(tmp_path, make_cell):
    """Never "1 problems reading results": one of a thing is singular."""
    from matrix.merge import Problem

    result = build([make_cell("q_output_type/out=int8")], [Problem("results", 0, "no such file or folder")])
    write_reports(result, tmp_path, generated="2026-01-01")
    for name in ("matrix.md", "matrix.html"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert "1 problem reading results" in text and "1 problems" not in text, name
        assert "1 cell," in text and "1 column" in text and "1 cells" not in text, name


def test_the_grid_key_says_once_that_a_built_cell_is_not_running(reports):
    """`A`, `a`, `b` are plans built ahead of time: the key says once (not per cell) that built is not running, with
    the thread where a built and loaded plan crashed at inference."""
    html = (reports[0] / "matrix.html").read_text()
    grid = (reports[0] / "cells" / "grid.md").read_text()
    for page in (html, grid):
        assert page.count("Built is not running") == 1
        assert "https://github.com/NVIDIA/TensorRT-RTX/issues/35" in page


def test_compiled_templates_are_kept_per_environment_and_a_changed_template_is_compiled_again(tmp_path, monkeypatch):
    from jinja2 import Environment, FileSystemLoader

    from core import schema
    from matrix.render import _compiled_templates

    monkeypatch.setenv(schema.CACHE_ENV, str(tmp_path / "cache"))
    (tmp_path / "t").mkdir()
    template = tmp_path / "t" / "page.j2"
    template.write_text("{{ x }}")

    def render(html: bool) -> str:  # a fresh environment, as a new report process makes
        env = Environment(loader=FileSystemLoader(str(tmp_path / "t")), autoescape=html,
                          bytecode_cache=_compiled_templates("html" if html else "md"))
        return env.get_template("page.j2").render(x="<b>")

    assert render(True) == "&lt;b&gt;" and render(False) == "<b>"  # the HTML one's escaping is not the Markdown one's
    assert render(True) == "&lt;b&gt;" and render(False) == "<b>"  # read back from the cache, each its own
    template.write_text("[{{ x }}]")
    assert render(False) == "[<b>]"


def test_a_cache_folder_that_cannot_be_written_costs_only_the_compiling(tmp_path, monkeypatch, make_cell):
    from core import schema
    from matrix.render import template_environment

    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv(schema.CACHE_ENV, str(tmp_path / "file"))
    template_environment.cache_clear()
    try:
        out = tmp_path / "reports"
        write_reports(build([make_cell()]), out, generated="2026-01-01")
        assert (out / "matrix.md").read_text().startswith("# qdq-matrix\n\nGenerated 2026-01-01")
    finally:
        template_environment.cache_clear()


def test_a_report_leaves_the_cycle_collector_as_it_found_it(make_cell, write_results, tmp_path):
    import gc

    from matrix.__main__ import main

    path = write_results("trt.jsonl", [make_cell()])
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "junk.jsonl").write_text("garbage\n")
    assert gc.isenabled()
    assert main(["report", "--results", str(path), "--out", str(tmp_path / "out"), "--bundles",
                 str(tmp_path / "none")]) == 0
    assert gc.isenabled()
    assert main(["report", "--results", str(tmp_path / "junk"), "--out", str(tmp_path / "out2")]) == 2
    assert gc.isenabled()  # also where it stopped early
