"""Faults against the bug bundles: columns that differ only in their variant (TensorRT's tactics, ONNX Runtime's
x64quantprecision, TensorRT-RTX's target) each get their own folder, and the count `bugs` prints is what is on disk."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import List

import pytest

from core.cell import Cell
from core.engines import ENGINES
from generators.write import write_all
from matrix.__main__ import main
from matrix.bugbundle import folder_for
from matrix.merge import load_results

REPO = Path(__file__).resolve().parents[2]
OBSERVED = REPO / "tests" / "data" / "observed-sample.jsonl"  # two real TensorRT cells (8.5.3.1, 8.6.0), an H200
BUNDLE = "grouped_conv/cpg=3+weights=per_channel+activation=int8+output_qdq=yes+epilogue=none"
PARAMS = {"cpg": [3], "weights": ["per_channel"], "activation": ["int8"], "output_qdq": [True], "epilogue": ["none"]}
RTX_SWEEP = ENGINES["tensorrt-rtx"].option("target").sweep  # the targets a full run gives a column each
CPU = "cpu: Intel(R) Xeon(R) Processor (avx2, emulated)"
RTX = "no GPU: ahead-of-time build"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bundles")
    write_all(["grouped_conv"], PARAMS, root=root)
    return root


def colliding_columns() -> List[Cell]:
    """One failing cell of one reproducer in each column that wrote to one folder before: TensorRT 8.6.0 on an H200 with
    default and tensorrt-only tactics, ONNX Runtime with x64quantprecision 0 and 1, TensorRT-RTX for five targets and
    its default one."""
    trt = next(c for c in load_results([OBSERVED]).cells if c.engine_version == "8.6.0")
    trt = replace(trt, status="fail", verdict="new failure", last_stage="build", error="build failed", variant={})
    ort = replace(trt, engine="onnxruntime", engine_version="1.31.1", hardware=CPU, hardware_detail={},
                  options={}, tactic_sources=[], run={"source": "local"})
    rtx = replace(ort, engine="tensorrt-rtx", engine_version="1.7.1.116", hardware=RTX, last_stage="load",
                  error="parse failed")
    return [trt, replace(trt, variant={"tactics": "tensorrt-only"}),
            ort, replace(ort, variant={"x64quantprecision": "1"}),
            replace(rtx, hardware=f"{RTX} (default: SM80 SM86 SM89 SM120 SM121)"),
            *(replace(rtx, variant={"target": t}) for t in RTX_SWEEP)]


def written(out: Path) -> List[Path]:
    return sorted(p.parent for p in out.glob("*/*/ISSUE.md"))


def test_every_column_gets_its_own_bug_bundle_and_the_count_is_what_is_on_disk(bundles, tmp_path, capsys):
    cells = colliding_columns()
    results = tmp_path / "results" / "cells.jsonl"
    results.parent.mkdir()
    results.write_text("".join(c.to_json() + "\n" for c in cells), encoding="utf-8")
    out = tmp_path / "bug-bundles"
    assert len({folder_for(c, out) for c in cells}) == len(cells) == 10
    assert main(["bugs", "--results", str(results), "--bundles", str(bundles), "--out", str(out), "--zip"]) == 0
    said = int(re.search(r"^(\d+) bug bundles? written", capsys.readouterr().out, re.M).group(1))
    assert said == len(written(out)) == len(list(out.glob("*/*.zip"))) == len(cells)
    for cell in cells:  # each folder names its column, and its ISSUE.md says that column's settings
        folder = folder_for(cell, out)
        issue = (folder / "ISSUE.md").read_text(encoding="utf-8")
        for key, value in cell.variant.items():
            assert f"{key}={value}" in folder.parent.name
        if cell.engine == "tensorrt-rtx":
            target = cell.variant.get("target", "default")
            assert f"**Settings**: target={target}," in issue, folder
        if cell.engine == "onnxruntime":
            assert f"x64quantprecision={cell.variant.get('x64quantprecision', '0')}" in issue
        if cell.engine == "tensorrt":
            tensorrt_only = cell.variant.get("tactics") == "tensorrt-only"
            assert ("the build left out the CUDNN" in issue) is tensorrt_only


def test_a_second_cell_of_one_column_is_refused_not_written_over_the_first(bundles, tmp_path, capsys):
    """Two results files of one column, not merged: the second cell would overwrite the first; it is refused and the
    count says one."""
    from matrix.bugbundle import make_all

    first = colliding_columns()[0]
    made = make_all([first, replace(first, error="another failure")], [first], bundles, tmp_path / "out")
    assert [m.path is not None for m in made] == [True, False] and "same reproducer and column" in made[1].refused
    assert len(written(tmp_path / "out")) == 1


def test_an_earlier_runs_bug_bundles_are_counted_apart(bundles, tmp_path, capsys):
    cells = colliding_columns()[:2]
    results = tmp_path / "cells.jsonl"
    results.write_text("".join(c.to_json() + "\n" for c in cells), encoding="utf-8")
    out = tmp_path / "out"
    stale = out / "tensorrt-8.6.0" / "grouped_conv__old"
    stale.mkdir(parents=True)
    (stale / "ISSUE.md").write_text("# an earlier layout\n")
    assert main(["bugs", "--results", str(results), "--bundles", str(bundles), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2 bug bundles written" in text and "1 other bug bundle in" in text and len(written(out)) == 3


def test_one_cell_of_columns_that_differ_only_in_their_variant_is_named_by_it(bundles, tmp_path, capsys):
    results = tmp_path / "cells.jsonl"
    results.write_text("".join(c.to_json() + "\n" for c in colliding_columns()), encoding="utf-8")
    out = tmp_path / "out"
    common = ["bugs", "--results", str(results), "--bundles", str(bundles), "--out", str(out), "--cell", BUNDLE,
              "--engine", "tensorrt-rtx", "--version", "1.7.1.116"]
    assert main([*common, "--hardware", RTX]) == 2
    said = capsys.readouterr().err
    assert "5 cells match" in said and not out.exists()
    # each choice as the options that name it (a user trial was told "keep one results file" for cells that differed
    # in their variant alone)
    assert "--variant target=SM89" in said and "--variant target=SM75" in said and "results file" not in said, said
    assert main([*common, "--hardware", RTX, "--variant", "target=SM89"]) == 0
    [folder] = written(out)
    assert "**Settings**: target=SM89," in (folder / "ISSUE.md").read_text(encoding="utf-8")
