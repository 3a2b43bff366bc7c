"""The cell runner and its plugin: one JSONL line per cell, written by the controller, and crashes cost one cell; a
test is found in the plan's table of cells, never by its id's text."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

from tests.engines.fakes import cells_argv, write_fake_bundle

REPO = Path(__file__).resolve().parents[2]


def _fake_bundle(root: Path, name: str) -> None:
    """A hand-made bundle of the grouped_conv case; only the plumbing reads it."""
    write_fake_bundle(root, name)


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    bundles, results = tmp_path / "bundles", tmp_path / "out.jsonl"
    for name in ("a-ok", "b-crash", "c-hang", "d-ok", "e-harness"):
        _fake_bundle(bundles, name)
    cmd = [sys.executable, *cells_argv(tmp_path, "tests.engines.fakes:PlumbingEngine", results), "-q",
           "--bundles", str(bundles), *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    return proc, lines


@pytest.mark.slow
def test_crash_and_hang_cost_one_cell_each(tmp_path: Path) -> None:
    proc, lines = _run(tmp_path, "-n", "2", "--timeout", "5")
    header, cells = lines[0], {c["bundle"].split("/")[1]: c for c in lines[1:]}
    assert header["kind"] == "session" and header["engine"] == "fake", proc.stdout
    assert set(cells) == {"a-ok", "b-crash", "c-hang", "d-ok", "e-harness"}, proc.stdout + proc.stderr
    assert cells["a-ok"]["status"] == cells["d-ok"]["status"] == "pass"
    assert cells["b-crash"]["status"] == "crashed" and "crashed" in cells["b-crash"]["reason"]
    assert cells["c-hang"]["status"] == "crashed" and cells["c-hang"]["reason"] == \
        cells["c-hang"]["error"] == "timed out after 5 s (the cell timeout)"
    assert "cell timeout" in cells["c-hang"]["explanation"] and "died" not in cells["c-hang"]["explanation"]
    assert "died" in cells["b-crash"]["explanation"], "a segfault is still a process that died"
    written = json.loads((tmp_path / "bundles/grouped_conv/b-crash/case.json").read_text())
    assert cells["b-crash"]["digest"] == written["digest"]
    _assert_a_harness_error(cells["e-harness"])
    assert proc.returncode == 1  # the crashed cells fail their tests; the others still ran


def _assert_a_harness_error(cell: dict) -> None:
    """An exception of the suite's own code is a harness error with its traceback, never the engine's crash."""
    assert (cell["status"], cell["verdict"]) == ("harness_error", "harness error"), cell
    assert cell["reason"] == "KeyError: 'a bug in the harness, not the engine'"
    assert "Traceback" in cell["log"] and "fakes.py" in cell["log"] and "raise KeyError" in cell["log"]
    assert "died" not in cell["explanation"] and "engine's process" not in cell["explanation"]


def test_a_harness_exception_is_a_harness_error_not_a_crash(tmp_path: Path) -> None:
    """Without xdist too: the test raised in our code, the process lives on, the cell says whose failure it was."""
    proc, lines = _run(tmp_path, "-p", "no:xdist", "-k", "not crash and not hang")
    cells = {c["bundle"].split("/")[1]: c for c in lines[1:]}
    assert set(cells) == {"a-ok", "d-ok", "e-harness"}, proc.stdout + proc.stderr
    _assert_a_harness_error(cells["e-harness"])
    assert proc.returncode == 1, proc.stdout


def test_results_are_flushed_cell_by_cell(tmp_path: Path) -> None:
    """Without xdist a segfault ends the run, but every cell before it is already on disk."""
    proc, lines = _run(tmp_path, "-p", "no:xdist")
    bundles = [c["bundle"] for c in lines[1:]]
    assert bundles == ["grouped_conv/a-ok"], proc.stdout + proc.stderr
    assert proc.returncode != 0


def _heartbeat_run(tmp_path: Path, *args: str, env: Optional[dict] = None) -> tuple[list[str], int]:
    """Two fake cells; the second is held until a heartbeat line says it is running (the fake lets go by itself
    after 120 s). Returns the stderr lines and the exit status."""
    import os

    bundles, hold = tmp_path / "bundles", tmp_path / "hold"
    for name in ("a", "b"):
        _fake_bundle(bundles, name)
    hold.write_text("")
    cmd = [sys.executable, *cells_argv(tmp_path, "tests.engines.fakes:SlowEngine", tmp_path / "out.jsonl"), "-q",
           "-p", "no:xdist", "--bundles", str(bundles), *args]
    env = {**os.environ, "PYTHONPATH": str(REPO), "QDQ_FAKE_DELAY": "0", "QDQ_FAKE_HOLD": str(hold), **(env or {})}
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if "grouped_conv/b on fake" in line and "running for" in line:
            hold.unlink(missing_ok=True)
    hold.unlink(missing_ok=True)
    return lines, proc.wait(timeout=180)


def test_a_running_cell_says_which_bundle_engine_version_and_time(tmp_path: Path) -> None:
    """--heartbeat sets the interval, so the test waits a fraction of a second, not 15 s; the line reaches stderr
    while pytest captures the test's own output."""
    lines, status = _heartbeat_run(tmp_path, "--heartbeat", "0.1")
    assert status == 0, lines
    progress = [x for x in lines if x.startswith("[cells] ")]
    assert any(re.fullmatch(r"\[cells\] grouped_conv/b on fake \S+: running for \d+ s", x) for x in progress), lines
    assert progress[-1].startswith("[cells] grouped_conv/b on fake ") and " pass after " in progress[-1]


def test_the_heartbeat_interval_comes_from_the_environment(tmp_path: Path) -> None:
    lines, status = _heartbeat_run(tmp_path, env={"QDQ_HEARTBEAT_S": "0.1"})
    assert status == 0 and any("grouped_conv/b on fake" in x and "running for" in x for x in lines), lines


def test_the_heartbeat_interval_is_checked_and_0_turns_it_off(monkeypatch) -> None:
    import pytest

    from engines.pytest_cells import HEARTBEAT_S, heartbeat_interval

    config = type("Config", (), {"getoption": lambda self, name: None})()
    monkeypatch.delenv("QDQ_HEARTBEAT_S", raising=False)
    assert heartbeat_interval(config) == HEARTBEAT_S == 15
    monkeypatch.setenv("QDQ_HEARTBEAT_S", "0")
    assert heartbeat_interval(config) == 0, "0: no heartbeat thread at all"
    for bad in ("nan", "-1", "soon"):
        monkeypatch.setenv("QDQ_HEARTBEAT_S", bad)
        with pytest.raises(pytest.UsageError, match="QDQ_HEARTBEAT_S"):
            heartbeat_interval(config)


@pytest.mark.slow
def test_a_run_that_ran_no_cell_fails_and_says_so(tmp_path: Path) -> None:
    """Exit 1 is failing cells, the verdicts' business: a run broken before its cells must never look like one (no
    bundles is exit 4, saying so, never collection errors with exit 1 and a "successful" nox session)."""
    empty = tmp_path / "none"
    empty.mkdir()
    fake, results = "tests.engines.fakes:PlumbingEngine", tmp_path / "r.jsonl"
    cmd = [sys.executable, *cells_argv(tmp_path, fake, results), "-q", "--bundles", str(empty)]
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO)}
    broken = subprocess.run([*cmd, "-n", "2"], cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert broken.returncode == 4 and "no bundles under" in broken.stderr, broken.stdout + broken.stderr
    _fake_bundle(empty, "a-ok")
    none_selected = [sys.executable, *cells_argv(tmp_path, fake, results, only_cases=("no_such_case",)), "-q",
                     "--bundles", str(empty)]
    nothing = subprocess.run(none_selected, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert nothing.returncode == 5 and "(0 cells in all)" in nothing.stdout, nothing.stdout + nothing.stderr
    ran = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert ran.returncode == 0 and "run now: 1 pass" in ran.stdout and "(1 cells in all)" in ran.stdout, ran.stdout


def test_a_cell_has_no_timeout_but_the_one_its_run_names(tmp_path: Path) -> None:
    """The test suite's own per-test timeout (pyproject.toml) never reaches a cell: the cell runner's pytest has none
    unless --timeout names one (pytest-timeout says which in the header)."""
    empty = tmp_path / "none"
    _fake_bundle(empty, "a-ok")
    cmd = [sys.executable, *cells_argv(tmp_path, "tests.engines.fakes:PlumbingEngine", tmp_path / "r.jsonl"),
           "--bundles", str(empty), "--collect-only", "-p", "no:xdist"]
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO)}
    plain = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    named = subprocess.run([*cmd, "--timeout", "7"], cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert "collected 1 item" in plain.stdout and "collected 1 item" in named.stdout, plain.stdout + named.stdout
    assert "timeout:" not in plain.stdout and "timeout: 7.0s" in named.stdout, plain.stdout + named.stdout


def test_a_cell_test_is_found_in_the_plans_table_and_an_unknown_one_stops_the_run() -> None:
    """A test's column and bundle come from the plan (engines.plan.cell_refs); a test id of no column is an error,
    never the first column's cell."""
    from engines.plan import CellRef, Column, cell_refs
    from engines.pytest_cells import UnknownCell, cell_of

    present = ["grouped_conv/a", "grouped_conv/b", "silu_qdq/c"]
    columns = [Column("onnxruntime", label="ort-1.31.1"),
               Column("onnxruntime", label="ort-1.31.1,x64quantprecision=1", only_cases=("silu_qdq",))]
    refs = cell_refs(columns, present, lambda bundle: False)
    assert refs == {"ort-1.31.1|grouped_conv/a": CellRef(0, "grouped_conv/a"),
                    "ort-1.31.1|grouped_conv/b": CellRef(0, "grouped_conv/b"),
                    "ort-1.31.1|silu_qdq/c": CellRef(0, "silu_qdq/c"),
                    "ort-1.31.1,x64quantprecision=1|silu_qdq/c": CellRef(1, "silu_qdq/c")}
    config = type("Config", (), {"_qdq_cells": refs, "_qdq_columns": []})()
    assert cell_of(config, "engines/runner.py::test_cell[ort-1.31.1,x64quantprecision=1|silu_qdq/c]") == \
        CellRef(1, "silu_qdq/c")
    with pytest.raises(UnknownCell, match="not a cell of this run's plan"):
        cell_of(config, "engines/runner.py::test_cell[ort-1.16.3|grouped_conv/a]")
    with pytest.raises(ValueError, match="two columns of the plan give the test id"):
        cell_refs([Column("onnxruntime"), Column("openvino")], present, lambda bundle: False)


def test_a_target_column_builds_its_cases_and_the_bundles_built_per_target() -> None:
    """A TensorRT-RTX target column (per_target) takes its only_cases' bundles and every bundle whose case.json says
    trt.per_target (the conformance bundles of float8, float4 and int4 forms), and no other; engines.run decides the
    same from the bundles' case.json."""
    from engines.plan import Column
    from engines.run import selection

    present = ["fp8_qdq/a", "onnx_node_tests/quantizelinear_e4m3fn-opset21", "onnx_node_tests/quantizelinear-opset21",
               "grouped_conv/b"]
    flagged = {"onnx_node_tests/quantizelinear_e4m3fn-opset21"}
    column = Column("tensorrt-rtx", options={"target": "SM89"}, only_cases=("fp8_qdq",), per_target=True)
    assert column.select(present, lambda b: False, lambda b: b in flagged) == [
        "fp8_qdq/a", "onnx_node_tests/quantizelinear_e4m3fn-opset21"]
    assert Column("tensorrt-rtx", per_target=True).select(present, lambda b: False, lambda b: b in flagged) == \
        sorted(flagged)
    metas = {b: {"trt": {"per_target": True}} if b in flagged else {"trt": {}} for b in present}
    assert selection(column, metas) == ["fp8_qdq/a", "onnx_node_tests/quantizelinear_e4m3fn-opset21"]


@pytest.mark.slow
def test_a_cell_the_timeout_kills_says_it_timed_out_and_the_report_shows_it(tmp_path: Path) -> None:
    """pytest-timeout's thread method kills the slow engine's worker: the cell is "crashed", its reason "timed out
    after 2 s (the cell timeout)", never "the engine's process died"; the heartbeat's last line and the per-node report
    say those words."""
    import os

    from core.cell import Cell
    from matrix.nodes import node_report, write_node_reports

    bundles, results = tmp_path / "bundles", tmp_path / "out.jsonl"
    _fake_bundle(bundles, "slow")
    cmd = [sys.executable, *cells_argv(tmp_path, "tests.engines.fakes:SlowEngine", results), "-q", "-n", "1",
           "--bundles", str(bundles), "--timeout", "2", "--timeout-method", "thread", "--heartbeat", "0.5"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "QDQ_FAKE_DELAY": "30"}
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    (cell,) = [json.loads(line) for line in results.read_text().splitlines()][1:]
    assert (cell["status"], cell["reason"]) == ("crashed", "timed out after 2 s (the cell timeout)"), \
        proc.stdout + proc.stderr
    assert "cell timeout" in cell["explanation"] and "died" not in cell["explanation"]
    ended = [x for x in proc.stderr.splitlines() if x.startswith("[cells] grouped_conv/slow") and " after " in x]
    assert re.fullmatch(r".*: crashed after \d+ s: timed out after 2 s \(the cell timeout\)", ended[-1]), ended
    md = write_node_reports(node_report([Cell.from_dict(cell)], {}), tmp_path / "rep", "slow")[0].read_text()
    assert "timed out after 2 s (the cell timeout)" in md, md


def test_one_node_bundles_run_in_batches_of_the_columns_size_and_the_others_alone() -> None:
    """A column with `batch` gathers its one-node bundles (their case's Case.one_node) into tests of up to that many,
    each where its first bundle was; any other bundle is a test of its own, and a column without `batch` has no
    batch."""
    from engines.plan import CellRef, Column, cell_refs

    present = ["grouped_conv/a", "onnx_node_tests/n1", "onnx_node_tests/n2", "silu_qdq/c", "onnx_node_tests/n3"]
    one_node = lambda bundle: bundle.startswith("onnx_node_tests/")  # noqa: E731
    refs = cell_refs([Column("onnxruntime", batch=2)], present, lambda bundle: False, one_node=one_node)
    assert refs == {"grouped_conv/a": CellRef(0, "grouped_conv/a"),
                    "batch 1": CellRef(0, "", ("onnx_node_tests/n1", "onnx_node_tests/n2")),
                    "silu_qdq/c": CellRef(0, "silu_qdq/c"),
                    "onnx_node_tests/n3": CellRef(0, "onnx_node_tests/n3")}  # a batch of one is a plain test
    assert [r.bundles for r in refs.values()] == [("grouped_conv/a",), ("onnx_node_tests/n1", "onnx_node_tests/n2"),
                                                   ("silu_qdq/c",), ("onnx_node_tests/n3",)]
    assert list(cell_refs([Column("onnxruntime")], present, lambda bundle: False, one_node=one_node)) == present
    from engines.pytest_cells import _catalogue, _one_node

    assert _one_node("onnx_node_tests/quantizelinear-opset21") and not _one_node("grouped_conv/a")
    # a quick engine: every reproducer of the catalogue joins the batches; a user's model (an external case) stays alone
    present = ["grouped_conv/a", "onnx_node_tests/n1", "user/m1", "silu_qdq/c", "onnx_node_tests/n3"]
    catalogue = lambda bundle: not bundle.startswith("user/")  # noqa: E731
    refs = cell_refs([Column("onnxruntime", batch=3)], present, lambda bundle: False,
                     one_node=one_node, catalogue=catalogue)
    assert [r.bundles for r in refs.values()] == [("grouped_conv/a", "onnx_node_tests/n1", "silu_qdq/c"),
                                                   ("user/m1",), ("onnx_node_tests/n3",)]
    assert list(refs)[:2] == ["batch 1", "user/m1"]
    refs = cell_refs([Column("tensorrt", batch=3)], present, lambda bundle: False, one_node=one_node,
                     catalogue=catalogue)  # TensorRT on a GPU: only the one-node bundles batch
    assert [r.bundles for r in refs.values()] == [("grouped_conv/a",), ("onnx_node_tests/n1", "onnx_node_tests/n3"),
                                                   ("user/m1",), ("silu_qdq/c",)]
    assert _catalogue("grouped_conv/a") and not _catalogue("user_model/x") and not _catalogue("no_such_case/x")


def test_every_reproducer_joins_batches_only_where_a_cell_takes_milliseconds() -> None:
    """engines.run batches every reproducer on the CPU engines and TensorRT-RTX's ahead-of-time builds, and only the
    one-node bundles on TensorRT (a build on a GPU takes seconds to minutes, and a batch shares one cell's timeout)."""
    from engines.plan import Column
    assert Column("onnxruntime").quick() and Column("openvino").quick() and Column("tensorrt-rtx").quick()
    assert not Column("tensorrt").quick() and not Column("tests.engines.fakes:PlumbingEngine").quick()


@pytest.mark.slow
def test_a_batch_whose_process_dies_costs_one_cell(tmp_path: Path, capsys) -> None:
    """A batch of one-node bundles on a test double whose process dies on one of them (and whose harness raises on
    another): engines.run runs what the batch ended without one bundle per test, so every other cell is the engine's
    real result, the dying bundle gets its crash cell and the raising one its harness error, exactly as each alone."""
    from engines import run as runner

    bundles, results = tmp_path / "bundles", tmp_path / "out.jsonl"
    names = ["a-ok", "b-crash", "c-ok", "d-harness", "e-ok"]
    for name in names:
        write_fake_bundle(bundles, name, case="onnx_node_tests")
    argv = ["--engine", "tests.engines.fakes:PlumbingEngine", "--bundles", str(bundles), "--results", str(results),
            "-n", "2", "--batch", "8"]
    status = runner.main(argv)
    said = capsys.readouterr().out
    cells = [json.loads(line) for line in results.read_text().splitlines()[1:] if '"bundle"' in line]
    by_name = {c["bundle"].split("/")[1]: c for c in cells}
    assert sorted(c["bundle"].split("/")[1] for c in cells) == names, said  # each bundle once
    assert [by_name[n]["status"] for n in ("a-ok", "c-ok", "e-ok")] == ["pass"] * 3, said
    assert by_name["b-crash"]["status"] == "crashed" and "died" in by_name["b-crash"]["explanation"]
    _assert_a_harness_error(by_name["d-harness"])
    assert "cells of batches or runs that ended early run again, one per test" in said, said
    assert "its process ended" not in said, said  # the batch's xdist worker died, not the run
    assert "5 run" in said and "not recorded" not in said, said
    assert status == 1  # the crashed and the harness's cells fail their tests; the others still ran


@pytest.mark.slow
@pytest.mark.parametrize("batch, kept", [("0", 2), ("8", 0)])  # a batch hands its cells back when it ends
def test_a_run_in_its_own_process_that_dies_costs_one_cell(tmp_path: Path, capsys, batch: str, kept: int) -> None:
    """A run of one worker runs its cells in its own process (no xdist); where that process dies on one bundle, the
    cells it recorded stand, and engines.run runs the rest one per test under xdist: the dying bundle gets its crash
    cell, every other bundle its real result, and each bundle is in the file once."""
    from engines import run as runner

    bundles, results = tmp_path / "bundles", tmp_path / "out.jsonl"
    names = ["a-ok", "b-ok", "c-crash", "d-ok", "e-harness", "f-ok"]
    for name in names:
        write_fake_bundle(bundles, name, case="onnx_node_tests")
    argv = ["--engine", "tests.engines.fakes:PlumbingEngine", "--bundles", str(bundles), "--results", str(results),
            "-n", "1", "--batch", batch]
    status = runner.main(argv)
    said = capsys.readouterr().out
    cells = [json.loads(line) for line in results.read_text().splitlines()[1:] if '"bundle"' in line]
    by_name = {c["bundle"].split("/")[1]: c for c in cells}
    assert sorted(c["bundle"].split("/")[1] for c in cells) == names, said  # each bundle once
    assert [by_name[n]["status"] for n in ("a-ok", "b-ok", "d-ok", "f-ok")] == ["pass"] * 4, said
    assert by_name["c-crash"]["status"] == "crashed" and "died" in by_name["c-crash"]["explanation"]
    _assert_a_harness_error(by_name["e-harness"])
    # one bundle per test: the first process recorded a-ok and b-ok before the crash; the rest ran again one per test
    assert "its process ended (signal" in said and f"after recording {kept} cells" in said, said
    assert f"{6 - kept} cells of batches or runs that ended early run again, one per test" in said, said
    assert "6 run" in said and "not recorded" not in said, said
    assert status == 1


def test_versions_of_one_engine_are_dealt_whole_to_the_runs_back_and_forth() -> None:
    """The same cells on several versions of one engine: each version's columns go whole to one run, the latest first
    to the run with the least work (a later version builds more and costs more, so the runs end together); versions
    of unequal cells, or fewer versions than runs, are cut in order by cells as before."""
    from engines.plan import Column
    from engines.run import _shares

    def version(v: str, *sizes: int) -> list:
        return [Column(engine="tensorrt-rtx", version=v, python=f"/env-{v}/python", options={"target": str(i)},
                       bundles=tuple(f"b/{k}" for k in range(n))) for i, n in enumerate(sizes)]

    v1, v2, v3, v4 = (version(v, 635, 8, 103, 103) for v in ("1.4", "1.5", "1.6", "1.7"))
    assert _shares(v1 + v2 + v3 + v4, 2) == [v1 + v4, v2 + v3]
    assert _shares(v1 + v2 + v3, 2) == [v3, v1 + v2]
    assert _shares(v1 + v2 + v3 + v4, 3) == [v4, v3, v1 + v2]
    odd = version("1.8", 635, 8)  # not the same cells: in order, by cells
    for given in (v1 + odd, v1):  # two versions of unequal cells, one version: in order, about equal cells
        shares = _shares(given, 2)
        assert len(shares) == 2 and all(shares) and [c for s in shares for c in s] == given
    assert _shares(v1 + odd, 2) == [v1[:3], v1[3:] + odd]


def test_the_biggest_run_is_cut_into_whole_columns_of_about_equal_cells() -> None:
    """With runs in their own process, the interpreter with the most cells gets one run per worker: its columns in
    order, never one split (a results file keeps its one writer), each share non-empty and about equal in cells; a
    single column keeps its xdist workers, and without own_process nothing is cut."""
    from engines.plan import Column
    from engines.run import _parts

    def columns(*sizes: int, version: str = "v") -> list:
        return [Column(engine="x", version=f"{version}{i}", bundles=tuple(f"b/{k}" for k in range(n)))
                for i, n in enumerate(sizes)]

    rtx = columns(635, 8, 103, 103, 103, 103, 103) * 4
    ort = columns(635, version="ort")
    parts = _parts({"trt": rtx, "ort": ort}, "trt", 2, True)
    assert [(p, len(c), n) for p, c, n in parts] == [("trt", 14, 1), ("trt", 14, 1), ("ort", 1, 1)]
    assert [c for _, share, _ in parts[:2] for c in share] == rtx  # in order, each column once
    assert [sum(len(c.bundles) for c in share) for _, share, _ in parts[:2]] == [2316, 2316]
    assert [(p, n) for p, _, n in _parts({"trt": columns(100, 1)}, "trt", 3, True)] == [("trt", 3)]  # too few columns
    assert [(p, n) for p, _, n in _parts({"trt": columns(5)}, "trt", 2, True)] == [("trt", 2)]
    assert [(p, n) for p, _, n in _parts({"trt": rtx, "ort": ort}, "trt", 2, False)] == [("trt", 2), ("ort", 1)]
