"""engines.run, the cell runner's command: it asks the results files first, and starts the runner (pytest) only for the
rest, once for every column with work; a column is fields from the command line to the results file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List

import pytest

from cases import get_case
from engines import run as runner
from generators.write import write_bundle

CHAINS = [{"variant": "q_dq_chain", "activation": a, "plugin": "none"} for a in ("int8", "uint8")]


@pytest.fixture
def bundles(tmp_path: Path) -> Path:
    """Two catalogue reproducers that ONNX Runtime runs in milliseconds."""
    for params in CHAINS:
        write_bundle(get_case("q_output_type"), params, tmp_path / "bundles")
    return tmp_path / "bundles"


@pytest.fixture
def launches(monkeypatch) -> List[int]:
    """How many cells each pytest run the controller starts is given."""
    seen: List[int] = []
    launch = runner.launch

    def counted(decisions, *args, **kwargs):
        seen.append(sum(len(d.run) for d in decisions))
        return launch(decisions, *args, **kwargs)

    monkeypatch.setattr(runner, "launch", counted)
    return seen


def cells(path: Path) -> List[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if "bundle" in r]


@pytest.mark.slow
def test_a_column_whose_cells_are_stored_starts_nothing_and_says_how_many_it_reused(bundles, tmp_path, launches,
                                                                                   capsys):
    argv = ["--engine", "onnxruntime", "--bundles", str(bundles), "--results", str(tmp_path / "ort.jsonl"), "-n", "1"]
    assert runner.main(argv) == 0
    assert launches == [2] and {c["status"] for c in cells(tmp_path / "ort.jsonl")} == {"pass"}
    capsys.readouterr()
    assert runner.main(argv) == 0
    said = capsys.readouterr().out
    assert launches == [2], "nothing was left to run, yet pytest was started"
    assert ": 2 reused" in said and "nothing to run here" in said and len(cells(tmp_path / "ort.jsonl")) == 2, said
    assert runner.main([*argv, "--fresh"]) == 0 and launches == [2, 2]  # --fresh runs everything again


def test_every_column_with_work_runs_in_one_launch(bundles, tmp_path, launches, capsys):
    """One launch for both columns: with two workers they are two runs of one process each, side by side, each line
    tagged with its engine version."""
    argv = ["--engine", "onnxruntime", "--bundles", str(bundles), "-n", "2",
            "--column", json.dumps({"results": str(tmp_path / "all.jsonl")}),
            "--column", json.dumps({"results": str(tmp_path / "none.jsonl"),
                                    "options": {"graph_optimization_level": "ORT_DISABLE_ALL"}})]
    assert runner.main(argv) == 0
    assert launches == [4]
    assert len(cells(tmp_path / "all.jsonl")) == len(cells(tmp_path / "none.jsonl")) == 2
    assert {c["variant"].get("graph_optimization_level") for c in cells(tmp_path / "none.jsonl")} == {
        "ORT_DISABLE_ALL"}
    assert capsys.readouterr().out.count("cells: 0 reused from earlier runs, run now: 2 pass") == 2
    header = json.loads((tmp_path / "none.jsonl").read_text().splitlines()[0])
    options = [c["run"]["cell_options"] for c in cells(tmp_path / "none.jsonl")]
    assert header["cell_options"] == options[0] == options[1], "the column's options, one JSON object everywhere"
    assert options[0]["graph_optimization_level"] == "ORT_DISABLE_ALL"


@pytest.mark.parametrize("spec, said", [
    ("target=SM75 only=fp8_qdq", "not a JSON object"),
    ('["tensorrt-rtx"]', "not a JSON object of column fields"),
    ('{"only": "plugins"}', "no column field 'only'"),
    ('{"options": {"target": 75}}', "options is an object of strings"),
    ('{"only_cases": "fp8_qdq"}', "only_cases is a list of strings"),
])
def test_a_column_is_a_json_object_of_its_fields_or_a_usage_error(bundles, spec, said, launches, capsys):
    assert runner.main(["--engine", "onnxruntime", "--bundles", str(bundles), "--column", spec]) == 2
    assert said in capsys.readouterr().err and launches == []


def test_a_column_spec_is_read_once_into_its_fields():
    args = runner._parser().parse_args(["--engine", "tensorrt-rtx", "--engine-version", "1.7.1.116",
                                        "--trt-python", "/p/python", "--column", "{}", "--column", json.dumps(
                                            {"options": {"target": "SM75"}, "only_cases": ["fp8_qdq"]})])
    default, sm75 = runner.columns_from(args)
    assert (sm75.engine, sm75.version, sm75.python, sm75.only_cases) == ("tensorrt-rtx", "1.7.1.116", "/p/python",
                                                                        ("fp8_qdq",))
    assert sm75.options["target"] == "SM75" and default.options["target"] == "default"
    assert default.label != sm75.label and "target=SM75" in sm75.label

def test_a_gpu_column_this_machine_cannot_run_is_written_not_run_without_pytest(bundles, tmp_path, launches,
                                                                              monkeypatch):
    from engines.tensorrt import gpu

    monkeypatch.setattr(gpu, "detect", lambda *a, **k: gpu.GpuInfo(present=False, reason=gpu.NO_GPU))
    out = tmp_path / "trt.jsonl"
    argv = ["--engine", "tensorrt", "--engine-version", "8.6.0", "--bundles", str(bundles), "--results", str(out)]
    assert runner.main(argv) == 0 and launches == []
    assert [(c["status"], c["reason"]) for c in cells(out)] == [("not_run", gpu.NO_GPU)] * 2
    size = out.stat().st_size
    assert runner.main(argv) == 0 and out.stat().st_size == size  # unchanged cells are not written again


def test_an_in_process_engine_runs_under_the_interpreter_that_has_it_beside_the_others(bundles, tmp_path, launches,
                                                                                    capsys):
    version = runner.installed_version("onnxruntime")
    other = ["--bundles", str(bundles), "--column", json.dumps({"engine": "onnxruntime", "version": "0.0.1",
                                                                 "results": str(tmp_path / "o.jsonl")})]
    assert runner.main(other) == 2 and "not 0.0.1" in capsys.readouterr().err and launches == []
    python = tmp_path / "python-with-ort"  # another environment's interpreter, as a nox session's would be
    python.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    argv = ["--bundles", str(bundles), "-n", "1",
            "--column", json.dumps({"engine": "onnxruntime", "version": version, "python": str(python),
                                    "results": str(tmp_path / "a.jsonl")}),
            "--column", json.dumps({"engine": "onnxruntime", "version": version, "results": str(tmp_path / "b.jsonl"),
                                    "options": {"graph_optimization_level": "ORT_DISABLE_ALL"}})]
    assert runner.main(argv) == 0 and launches == [4]
    said = capsys.readouterr().out
    assert said.count(f"  [ort {version}] cells: 0 reused from earlier runs, run now: 2 pass") == 2, said


def test_a_run_with_no_bundle_to_run_fails(bundles, tmp_path, capsys):
    argv = ["--engine", "onnxruntime", "--bundles", str(bundles), "--only-case", "no_such_case",
            "--results", str(tmp_path / "x.jsonl")]
    assert runner.main(argv) == 5 and "no bundle is selected" in capsys.readouterr().out
    assert runner.main(["--engine", "onnxruntime", "--bundles", str(tmp_path / "none")]) == 2


def test_a_tensorrt_column_on_a_gpu_machine_is_not_probed_to_decide_it_is_not_idle(monkeypatch):
    """Where a GPU is here the column runs: engines.run starts no TensorRT worker to learn it (pytest probes once)."""
    from engines import pytest_cells
    from engines.plan import Column
    from engines.tensorrt import gpu

    monkeypatch.setattr(gpu, "detect", lambda *a, **k: gpu.GpuInfo(present=True, reason=""))
    monkeypatch.setattr(pytest_cells, "make_engine_for", lambda column: pytest.fail("a worker was started"))
    assert runner.idle_probe(Column(engine="tensorrt", version="8.6.0")) is None
    monkeypatch.setattr(gpu, "detect", lambda *a, **k: gpu.GpuInfo(present=False, reason="no GPU"))
    with pytest.raises(pytest.fail.Exception):  # no GPU: the probe says why, with nothing started (the adapter's)
        runner.idle_probe(Column(engine="tensorrt", version="8.6.0"))


def test_the_cell_runner_is_product_code_and_tests_hold_tests_only():
    """What engines.run starts is engines/runner.py with its plugin: no path under tests/ produces a cell."""
    from engines.plan import RUNNER, pytest_args

    repo = Path(runner.__file__).resolve().parents[1]
    assert RUNNER.is_file() and RUNNER.parent == repo / "engines"
    assert not any("tests" in Path(a).parts for a in pytest_args(Path("p.json")))
    assert not (repo / "tests" / "cells").exists()


def test_a_run_with_unexpected_cells_says_what_pytest_exit_1_means_in_the_same_line(bundles, tmp_path, monkeypatch,
                                                                                       capsys):
    """Exit 1 is cells with unexpected verdicts, results like any other: the session succeeds, and its last line says
    why pytest's status is 1 (issue 40: a successful nox -s matrix said only "pytest exit 1")."""
    monkeypatch.setattr(runner, "launch", lambda decisions, *args, **kwargs: runner.Launched(
        1, sum(len(d.run) for d in decisions), 0))  # plumbing only: what a pytest run with failing cells reports
    argv = ["--engine", "onnxruntime", "--bundles", str(bundles), "--results", str(tmp_path / "ort.jsonl")]
    assert runner.main(argv) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("engines.run: 0 cells reused, 2 run (") and last.endswith(
        "pytest exit 1: some cells have unexpected verdicts, which are results, not a failed run)"), last


def test_a_progress_line_after_pytests_dot_is_still_passed_on() -> None:
    """pytest -q prints a cell's "." before the controller's "<status> after N s" line reaches the same pipe: the
    line is passed on all the same (it was lost, so a finished cell was never said)."""
    import os

    said: List[str] = []
    script = ("import sys; sys.stdout.write('.[cells] m on ONNX Runtime 1.32.0: pass after 16 s\\n"
              "[cells] m: running\\n')")
    started = runner._Pytest([sys.executable, "-c", script], dict(os.environ), said.append)
    assert started.wait() == 0
    assert said == ["  m on ONNX Runtime 1.32.0: pass after 16 s", "  m: running"], said


def test_each_run_is_handed_on_as_it_ends_not_in_the_order_it_started():
    """engines.run remembers a run's columns as that run ends, while the others go on (the closing decisions were a
    second and more on one core after every engine had finished)."""
    import threading

    class Run:
        def __init__(self, gate: threading.Event, status: int) -> None:
            self.gate, self.status = gate, status

        def wait(self) -> int:
            self.gate.wait(5)
            return self.status

    first, second = threading.Event(), threading.Event()
    seen: List[int] = []

    def each(i: int) -> None:
        seen.append(i)
        first.set()  # the first run ends only once the second has been handed on

    second.set()
    assert runner._wait_all([Run(first, 0), Run(second, 1)], each) == [0, 1]
    assert seen == [1, 0]


def test_a_column_of_a_run_that_ended_is_remembered(bundles, tmp_path):
    """Both columns of two side-by-side runs stand whole afterwards, and each is remembered (results/.decided)."""
    argv = ["--engine", "onnxruntime", "--bundles", str(bundles), "-n", "2",
            "--column", json.dumps({"results": str(tmp_path / "all.jsonl")}),
            "--column", json.dumps({"results": str(tmp_path / "none.jsonl"),
                                    "options": {"graph_optimization_level": "ORT_DISABLE_ALL"}})]
    assert runner.main(argv) == 0
    assert len(list((tmp_path / runner.DECIDED).glob("*.json"))) == 2


def test_a_column_not_remembered_as_its_run_ends_is_remembered_at_the_close(bundles, tmp_path, monkeypatch):
    """A failure of the early remembering (a results file it cannot read yet) neither stops the runs nor is lost: the
    closing pass decides the column again."""
    decide = runner.decide
    calls: List[str] = []

    def flaky(column, metas, store, fresh):
        calls.append(column.results)
        if len(calls) == 2:  # the first call decides before the launch; the second is the early remembering
            raise OSError("not readable yet")
        return decide(column, metas, store, fresh)

    monkeypatch.setattr(runner, "decide", flaky)
    argv = ["--engine", "onnxruntime", "--bundles", str(bundles), "-n", "1", "--results", str(tmp_path / "o.jsonl")]
    assert runner.main(argv) == 0
    assert len(calls) == 3 and len(list((tmp_path / runner.DECIDED).glob("*.json"))) == 1
