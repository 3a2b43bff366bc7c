"""Faults around the results file: kill -9 and resume, two runs at once, damaged files, damaged bundles."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import numpy as np
import pytest

from core.schema import check_lines
from matrix.merge import load_results
from tests.engines.fakes import cells_argv, write_fake_bundle

REPO = Path(__file__).resolve().parents[2]
NAMES = [f"b{i:02d}" for i in range(12)]


def _bundles(tmp_path: Path) -> Path:
    root = tmp_path / "bundles"
    for name in NAMES:
        write_fake_bundle(root, name)
    return root


def _cmd(bundles: Path, results: Path, *args: str) -> List[str]:
    """The cell runner on one column of the slow fake engine, in one process (a plan of its own beside the bundles)."""
    return [sys.executable, *cells_argv(bundles.parent / "plans", "tests.engines.fakes:SlowEngine", results), "-q",
            "-p", "no:xdist", "--bundles", str(bundles), *args]


def _env(delay: float) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "QDQ_FAKE_DELAY": str(delay)}


def _run(bundles: Path, results: Path, *args: str, delay: float = 0.0) -> subprocess.CompletedProcess:
    return subprocess.run(_cmd(bundles, results, *args), cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=_env(delay))


def _cells(results: Path) -> List[dict]:
    records = [json.loads(line) for line in results.read_text().splitlines()]
    return [r for r in records if r.get("kind") != "session"]


def _wait_for_cells(results: Path, n: int, proc: subprocess.Popen, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and len(_cells_so_far(results)) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"the run did not reach {n} cells")


def _cells_so_far(results: Path) -> List[str]:
    return [line for line in results.read_text().splitlines() if '"kind": "session"' not in line and line.strip()]


def test_second_run_reuses_every_cell(tmp_path: Path) -> None:
    bundles, results = _bundles(tmp_path), tmp_path / "out.jsonl"
    first = _run(bundles, results)
    assert first.returncode == 0, first.stdout + first.stderr
    second = _run(bundles, results)
    assert f"cells: {len(NAMES)} reused from earlier runs, run now: none" in second.stdout, second.stdout
    assert sorted(c["bundle"] for c in _cells(results)) == sorted(f"grouped_conv/{n}" for n in NAMES)
    third = _run(bundles, results, "--fresh")
    assert f"cells: 0 reused from earlier runs, run now: {len(NAMES)} pass" in third.stdout, third.stdout
    assert sorted(c["bundle"] for c in _cells(results)) == sorted(f"grouped_conv/{n}" for n in NAMES)  # replaced


def test_changed_bundle_is_run_again(tmp_path: Path) -> None:
    """A cell is reused only for the same digest: a regenerated bundle runs again."""
    bundles, results = _bundles(tmp_path), tmp_path / "out.jsonl"
    assert _run(bundles, results).returncode == 0
    import shutil

    shutil.rmtree(bundles / "grouped_conv" / "b03")
    path = write_fake_bundle(bundles, "b03")
    np.savez(path / "expected.npz", y=np.arange(4, dtype=np.float32) * 2)  # a new reference ...
    meta = json.loads((path / "case.json").read_text())
    from generators.bundle import Bundle, digest, meta_digest

    b = Bundle(path, meta)
    meta["digest"] = digest((path / "model.onnx").read_bytes(), b.inputs(), b.expected())  # ... a new digest
    meta["meta_digest"] = meta_digest(meta)
    (path / "case.json").write_text(json.dumps(meta))
    second = _run(bundles, results)
    assert f"cells: {len(NAMES) - 1} reused from earlier runs" in second.stdout, second.stdout


@pytest.mark.slow
def test_kill_9_then_resume_loses_no_finished_cell(tmp_path: Path) -> None:
    bundles, results = _bundles(tmp_path), tmp_path / "out.jsonl"
    for kill_after in (3, 7):  # killed twice, at different points, then finished
        proc = subprocess.Popen(_cmd(bundles, results), cwd=REPO, env=_env(0.3), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _wait_for_cells(results, kill_after, proc)
        before = _cells_so_far(results)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert _cells_so_far(results)[: len(before)] == before  # nothing that finished is lost
    with results.open("a") as f:  # a line cut off mid-write, as a kill can leave it
        f.write('{"schema": "qdq-matrix/cell/1", "bundle": "grouped_conv/b1')
    done = _run(bundles, results)
    assert done.returncode == 0, done.stdout + done.stderr
    bundles_seen = [c["bundle"] for c in _cells(results)]
    assert sorted(bundles_seen) == sorted(f"grouped_conv/{n}" for n in NAMES)  # each exactly once
    checked = check_lines(results.read_text())  # a test double's cells never merge (engine "fake"): plumbing only
    assert not checked.bad and len([r for n, r in checked.records if r.get("kind") != "session"]) == len(NAMES)


def test_second_run_on_the_same_file_is_refused_naming_the_first(tmp_path: Path) -> None:
    bundles, results, hold = _bundles(tmp_path), tmp_path / "out.jsonl", tmp_path / "hold"
    hold.write_text("the first run waits after its first cell while this file exists\n")
    first = subprocess.Popen(_cmd(bundles, results), cwd=REPO, env={**_env(0.0), "QDQ_FAKE_HOLD": str(hold)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_cells(results, 1, first)
        second = _run(bundles, results)
        assert second.returncode != 0
        message = second.stdout + second.stderr
        assert "is in use by another run" in message and f"pid {first.pid}" in message, message
        waiting = subprocess.Popen(_cmd(bundles, results, "--results-wait", "120"), cwd=REPO, env=_env(0.0),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        hold.unlink()  # the first run goes on; the waiting one takes the file when it ends, then reuses its cells
        out, err = waiting.communicate(timeout=180)
        assert waiting.returncode == 0, out + err
    finally:
        hold.unlink(missing_ok=True)
        first.wait(timeout=120)
    assert first.returncode == 0
    assert sorted(c["bundle"] for c in _cells(results)) == sorted(f"grouped_conv/{n}" for n in NAMES)
    assert f"cells: {len(NAMES)} reused" in out


def test_a_file_that_is_not_results_is_never_appended_to(tmp_path: Path) -> None:
    bundles, results = _bundles(tmp_path), tmp_path / "notes.txt"
    results.write_text("my notes\n")
    proc = _run(bundles, results)
    assert proc.returncode != 0 and "not a qdq-matrix results file" in proc.stdout + proc.stderr
    assert results.read_text() == "my notes\n"


@pytest.mark.parametrize("damage", ["model", "inputs", "case", "missing", "truncated"])
def test_corrupt_bundle_is_not_run_never_judged(tmp_path: Path, damage: str) -> None:
    bundles, results = _bundles(tmp_path), tmp_path / "out.jsonl"
    path = bundles / "grouped_conv" / "b05"
    if damage == "model":
        (path / "model.onnx").write_bytes(b"changed on disk")
    elif damage == "inputs":
        np.savez(path / "inputs.npz", x=np.ones((1, 4), np.float32))
    elif damage == "case":
        meta = json.loads((path / "case.json").read_text())
        meta["target_nodes"] = ["someone edited this"]
        (path / "case.json").write_text(json.dumps(meta))
    elif damage == "missing":
        (path / "expected.npz").unlink()
    else:
        data = (path / "inputs.npz").read_bytes()
        (path / "inputs.npz").write_bytes(data[: len(data) // 2])
    proc = _run(bundles, results)
    cells = {c["bundle"]: c for c in _cells(results)}
    bad = cells["grouped_conv/b05"]
    assert (bad["status"], bad["verdict"]) == ("not_run", "not run"), proc.stdout
    assert bad["reason"].startswith("bundle corrupt: "), bad["reason"]
    others = [c for b, c in cells.items() if b != "grouped_conv/b05"]
    assert others and all(c["status"] == "pass" for c in others)


def _good_line(bundle: str = "grouped_conv/x") -> str:
    from core.cell import Cell

    return Cell(bundle=bundle, case="grouped_conv", params={}, digest="d", engine="onnxruntime", engine_version="0",
                hardware="hw", status="pass", verdict="undocumented").to_json()


@pytest.mark.parametrize("content,expect", [
    ("{not json\n" + "{}\n", "not JSON"),
    ('{"schema": "someone-else/1", "x": 1}\n', "not a qdq-matrix record"),
    ("\x00\x01garbage\xff\n", "not JSON"),
    ('"' + "x" * 3_000_000 + '\n' + "{}\n", "not JSON"),
])
def test_damaged_results_file_is_refused_by_line_and_others_kept(tmp_path: Path, content: str, expect: str) -> None:
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text(_good_line() + "\n")
    bad.write_text(_good_line("grouped_conv/y") + "\n" + content, errors="surrogateescape")
    merged = load_results([good, bad])
    assert [c.bundle for c in merged.cells] == ["grouped_conv/x"]  # the good file is intact
    refused = [p for p in merged.errors if "bad.jsonl" in p.file]
    assert refused and refused[0].line == 2 and expect in refused[0].message, merged.problems


def test_truncated_results_file_keeps_its_complete_cells(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text(_good_line("grouped_conv/a") + "\n" + _good_line("grouped_conv/b")[:40])
    merged = load_results([path])
    assert [c.bundle for c in merged.cells] == ["grouped_conv/a"] and not merged.errors
    assert any("cut off" in p.message for p in merged.problems)


def _ort_run(bundles: Path, results: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engines.run", "--engine", "onnxruntime", "-n", "1", "--bundles",
                           str(bundles), "--results", str(results), *extra], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.slow
def test_fresh_replaces_the_files_cells_and_every_count_agrees(tmp_path: Path) -> None:
    """engines.run's decision, the session summary and its last line count the same cells as the file holds; a
    --fresh run replaces the cells it runs again instead of adding copies (the report then has no duplicates)."""
    from generators.write import write_all

    bundles, results = tmp_path / "bundles", tmp_path / "results" / "ort.jsonl"
    params = {"cpg": [3], "weights": ["per_channel"], "activation": ["int8"], "output_qdq": [True],
              "epilogue": ["none", "relu"]}
    write_all(["grouped_conv"], params, root=bundles)
    first = _ort_run(bundles, results)
    assert first.returncode == 0, first.stdout + first.stderr
    write_all(["grouped_conv"], dict(params, epilogue=["swish"]), root=bundles)  # one bundle more
    second = _ort_run(bundles, results)
    assert ": 2 reused, 1 to run" in second.stdout, second.stdout
    assert "cells: 2 reused from earlier runs, run now: 1 " in second.stdout and "(3 cells in all)" in second.stdout
    assert "engines.run: 2 cells reused, 1 run (" in second.stdout
    assert len(_cells(results)) == 3
    for _ in range(2):
        fresh = _ort_run(bundles, results, "--fresh")
        assert fresh.returncode == 0 and ": 0 reused, 3 to run" in fresh.stdout, fresh.stdout + fresh.stderr
        assert "engines.run: 0 cells reused, 3 run (" in fresh.stdout
        assert len(_cells(results)) == len({c["bundle"] for c in _cells(results)}) == 3  # replaced, not appended
    merged = load_results([results])
    assert len(merged.cells) == 3 and not [p for p in merged.problems if p.duplicate]


def test_a_killed_runs_second_copies_go_when_the_next_run_ends(tmp_path: Path) -> None:
    """A --fresh run killed midway leaves two cells of some bundles in one column; the next run on the file, even
    one that writes nothing, keeps the later of each, and the session headers of the cells kept."""
    from core.cell import Cell
    from engines.base import EngineInfo
    from engines.results import ResultsWriter

    info = EngineInfo(name="onnxruntime", version="0", hardware="hw", available=True)
    path = tmp_path / "out.jsonl"
    first = ResultsWriter(path, info, {"date": "2026-11-24T00:00:00Z"})
    for name in ("a", "b"):
        first.write(Cell(bundle=f"grouped_conv/{name}", case="grouped_conv", params={}, digest="d",
                         engine="onnxruntime", engine_version="0", hardware="hw", status="fail", verdict="new failure"))
    first.close()
    header, a, _ = path.read_text().splitlines()
    again = json.loads(a)
    again["status"] = "pass"
    with path.open("a") as f:  # the killed --fresh run: its header and a new cell of a, then nothing
        f.write(header + "\n" + json.dumps(again, sort_keys=True) + "\n")
    resumed = ResultsWriter(path, info, {"date": "2026-11-24T00:00:02Z"})
    resumed.close()
    assert {c["bundle"]: c["status"] for c in _cells(path)} == {"grouped_conv/a": "pass", "grouped_conv/b": "fail"}
    assert len(_cells(path)) == 2 and path.read_text().count('"kind": "session"') == 2


@pytest.mark.slow
def test_a_run_waiting_for_the_lock_writes_to_the_file_the_first_run_replaced(tmp_path: Path) -> None:
    """The first run (--fresh) replaces the file when it ends (a new file renamed over it) while a second waits for
    the lock on the old one: the second opens the new file, and no cell lands in the one renamed away."""
    bundles, results, hold = _bundles(tmp_path), tmp_path / "out.jsonl", tmp_path / "hold"
    assert _run(bundles, results).returncode == 0
    hold.write_text("the first run waits after its first cell while this file exists\n")
    first = subprocess.Popen(_cmd(bundles, results, "--fresh"), cwd=REPO, env={**_env(0.0), "QDQ_FAKE_HOLD": str(hold)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_cells(results, len(NAMES) + 1, first)
        (bundles / "grouped_conv" / "b00" / "expected.npz").unlink()  # the second run has one cell to write
        waiting = subprocess.Popen(_cmd(bundles, results, "--results-wait", "120"), cwd=REPO, env=_env(0.0),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        hold.unlink()
        out, err = waiting.communicate(timeout=180)
        assert waiting.returncode in (0, 1), out + err
    finally:
        hold.unlink(missing_ok=True)
        first.wait(timeout=120)
    cells = {c["bundle"]: c["status"] for c in _cells(results)}
    assert len(_cells(results)) == len(NAMES) == len(cells)  # one each: the first run's, then the second's b00
    assert cells["grouped_conv/b00"] == "not_run" and f"cells: {len(NAMES) - 1} reused" in out


def test_a_line_over_the_limit_refuses_its_file_by_line(tmp_path: Path) -> None:
    from core.results import MAX_LINE_BYTES

    path = tmp_path / "huge.jsonl"
    path.write_text(_good_line("grouped_conv/a") + "\n" + '{"x": "' + "x" * MAX_LINE_BYTES + '"}\n')
    merged = load_results([path])
    refused = [p for p in merged.errors if "huge.jsonl" in p.file]
    assert not merged.cells and refused and refused[0].line == 2 and "4 MiB" in refused[0].message, merged.problems


def _in_child(code: str, *args: str) -> subprocess.CompletedProcess:
    """Python code in a child with a deadline: a reader that blocks on a FIFO or reads /dev/zero forever fails the
    test by its timeout instead of hanging the suite."""
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_dev_zero_link_and_a_fifo_in_results_are_refused_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "good.jsonl").write_text(_good_line("grouped_conv/a") + "\n")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    os.mkfifo(folder / "fifo.jsonl")
    code = ("import sys, time; from matrix.merge import load_results; t = time.monotonic(); "
            "m = load_results([sys.argv[1]]); print(round(time.monotonic() - t, 3)); "
            "print(*sorted(f'{p.file}: {p.message}' for p in m.errors), sep='\\n'); print(len(m.cells))")
    done = _in_child(code, str(folder))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "1"  # the regular file's cell stands
    assert any("fifo.jsonl" in s and "FIFO" in s for s in lines), lines
    assert any("zero.jsonl" in s and "symbolic link out of its folder" in s for s in lines), lines


def test_observe_check_names_a_link_to_a_device_in_the_observed_folder(tmp_path: Path) -> None:
    from matrix import observed

    root = tmp_path / "observed"
    root.mkdir()
    manifest = observed.Manifest(root)
    (root / "trt.jsonl").symlink_to("/dev/zero")
    assert any("trt.jsonl" in p and "symbolic link" in p for p in observed.verify(manifest)), observed.verify(manifest)
