"""docs/catalogue.md is written from the cases: a committed page that drifted from them fails here."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cases import all_cases, get_case
from cases.catalogue import PAGE, WRITE_COMMAND, main, markdown, reproducers, source_label


def test_committed_page_is_what_the_cases_say_today():
    assert PAGE.read_text(encoding="utf-8") == markdown(all_cases()), (
        f"docs/catalogue.md is stale: run `{WRITE_COMMAND}` and commit it")


def test_page_has_one_row_per_case_with_its_reproducer_count():
    cases = all_cases()
    rows = [line for line in markdown(cases).splitlines() if line.startswith("| 0")]
    assert [r.split(" | ")[0].strip("| ") for r in rows] == [c.seed for c in cases]
    for row, case in zip(rows, cases):
        assert f"[`{case.id}`](../cases/{case.id}.py)" in row
        assert row.endswith(f" | {reproducers(case)} |")
        assert all(f"({url})" in row for url in case.links), case.id
    total = sum(reproducers(c) for c in cases)
    assert f"{len(cases)} cases (seeds {cases[0].seed}-{cases[-1].seed}), {total} reproducers." in markdown(cases)


def test_a_case_edit_changes_the_page():
    """A new axis value is a new reproducer: the count and the sweep column follow, so the page cannot lag."""
    case = get_case("convtranspose_grouped")  # groups x kernel x output_qdq
    wider = replace(case, axes=dict(case.axes, groups=(1, 4, 16, 32)))
    assert reproducers(wider) == reproducers(case) // 3 * 4
    assert markdown([wider]) != markdown([case])
    assert "`groups`: 1, 4, 16, 32; `kernel`: 4, 2; `output_qdq`: yes, no" in markdown([wider])


@pytest.mark.parametrize("url, label", [
    ("https://github.com/NVIDIA/TensorRT/issues/4833", "NVIDIA/TensorRT#4833"),
    ("https://github.com/NVIDIA/Model-Optimizer/pull/2333", "NVIDIA/Model-Optimizer#2333"),
    ("https://github.com/onnx/onnx-tensorrt/blob/main/docs/operators.md", "onnx/onnx-tensorrt operators.md"),
    ("https://onnx.ai/onnx/operators/onnx__DequantizeLinear.html", "ONNX docs: DequantizeLinear"),
    ("https://docs.nvidia.com/deeplearning/tensorrt/developer-guide/index.html#qdq-placement-recs",
     "TensorRT docs: qdq-placement-recs"),
    ("https://docs.nvidia.com/deeplearning/tensorrt-rtx/latest/getting-started/support-matrix.html",
     "TensorRT-RTX docs: support-matrix"),
    ("https://example.org/notes/thread.html", "example.org: thread"),
])
def test_sources_are_named_as_a_reader_knows_them(url, label):
    assert source_label(url) == label


def test_check_fails_on_a_stale_page_and_names_the_command(tmp_path: Path, capsys):
    page = tmp_path / "catalogue.md"
    assert main(["--markdown", "--out", str(page)]) == 0
    assert main(["--markdown", "--check", "--out", str(page)]) == 0
    page.write_text(page.read_text(encoding="utf-8").replace("| 96 |", "| 95 |"), encoding="utf-8")
    assert main(["--markdown", "--check", "--out", str(page)]) == 1
    assert WRITE_COMMAND in capsys.readouterr().err
    assert main(["--check"]) == 2  # --check compares the Markdown page only

