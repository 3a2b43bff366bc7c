"""Faults around processes: a killed controller or a killed process group leaves no worker behind; a killed run's
owner file is recognised as stale and removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import List

import pytest

from engines.results import clean_stale_owners, owner_path
from tests.engines.fakes import cells_argv, write_fake_bundle
from tests.engines.trt_stand_in import FAKE_TRT

REPO = Path(__file__).resolve().parents[2]
MARK = "QDQ_FAULT_MARK"  # in the environment of every process a run starts, and of nothing else
ENGINE = "tests.faults.serving:ServingStandIn"

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="processes are found through /proc")


def _marked(mark: str) -> List[int]:
    """The live processes (zombies left out) whose environment carries this mark."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"{MARK}={mark}".encode() in environ.split(b"\0") and state != "Z":
            found.append(int(entry))
    return found


def _serving(mark: str) -> List[int]:
    """The marked TensorRT workers in serve mode."""
    out = []
    for pid in _marked(mark):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--serve" in argv and any(a.endswith(b"worker.py") for a in argv):
            out.append(pid)
    return out


def _described(pids: List[int]) -> List[str]:
    """What a process left running is: pid, parent and command line."""
    out = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
        out.append(f"{pid} (parent {parent}): {argv[:200]}")
    return out


def _wait(condition, limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(what)


def _start(tmp_path: Path, runner: List[str]) -> "tuple[subprocess.Popen, str]":
    """A run of two hanging TensorRT cells (each in its xdist worker's serving worker.py), in a session of its own."""
    bundles = tmp_path / "bundles"
    for name in ("a", "b"):
        write_fake_bundle(bundles, name)
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark, "FAKE_TRT_HANG": "build",
           "PYTHONPATH": os.pathsep.join([str(FAKE_TRT), str(REPO)])}
    env.pop("QDQ_PARENT_PID", None)
    proc = subprocess.Popen([sys.executable, *runner, "--bundles", str(bundles)], cwd=REPO, env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, mark


def _clean_up(proc: subprocess.Popen, mark: str) -> None:
    """Whatever a failed test left running, ended by pid (never by name)."""
    for pid in [proc.pid, *_marked(mark)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait(timeout=30)


@pytest.mark.slow
def test_sigkill_of_the_controller_leaves_no_worker(tmp_path: Path) -> None:
    """pytest's controller killed with SIGKILL while both serving workers are in a build: its xdist workers and their
    serving workers (each in a session of its own, out of reach of a group kill) end with it."""
    proc, mark = _start(tmp_path, [*cells_argv(tmp_path, ENGINE, tmp_path / "out.jsonl"), "-q", "-n", "2"])
    try:
        _wait(lambda: len(_serving(mark)) == 2, 120, "two serving workers never started")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        _wait(lambda: not _marked(mark), 15, f"left running after the controller died: {_described(_marked(mark))}")
    finally:
        _clean_up(proc, mark)


@pytest.mark.slow
def test_sigkill_of_the_whole_group_of_a_run_leaves_no_worker(tmp_path: Path) -> None:
    """`kill -9` of the process group of `python -m engines.run` (as of `nox -s matrix`, or a session timeout): the
    serving workers, in sessions of their own, end too."""
    proc, mark = _start(tmp_path, ["-m", "engines.run", "--engine", ENGINE, "-n", "2", "--results",
                                   str(tmp_path / "out.jsonl")])
    try:
        _wait(lambda: len(_serving(mark)) == 2, 120, "two serving workers never started")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        _wait(lambda: not _marked(mark), 15, f"left running after the group was killed: {_described(_marked(mark))}")
    finally:
        _clean_up(proc, mark)


def test_a_worker_whose_parent_is_gone_before_it_starts_ends_at_once(tmp_path: Path) -> None:
    """The parent died before the child set its guards (the race a parent-death signal alone misses)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    code = "from engines.tensorrt import lifeline; lifeline.keep(); import time; time.sleep(30)"
    started = time.monotonic()
    child = subprocess.run([sys.executable, "-c", code], cwd=REPO, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(REPO), "QDQ_PARENT_PID": str(dead.pid)})
    assert child.returncode == -signal.SIGKILL and time.monotonic() - started < 20


def test_a_killed_runs_owner_file_is_recognised_and_removed(tmp_path: Path) -> None:
    results = tmp_path / "onnxruntime-1.31.1-cpu.jsonl"
    results.write_text("")
    stale = owner_path(results)
    stale.write_text(json.dumps({"pid": 999999, "machine": "x", "date": "", "command": "killed"}))
    orphan = owner_path(tmp_path / "gone.jsonl")  # its results file is gone too
    orphan.write_text("{}")
    held = tmp_path / "held.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print(1, flush=True); "
        "time.sleep(60)"), str(held)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "1"
        owner_path(held).write_text("{}")
        assert sorted(clean_stale_owners(tmp_path)) == sorted([stale, orphan])
        assert owner_path(held).exists() and not stale.exists() and not orphan.exists()
    finally:
        holder.kill()
        holder.wait()


def _check_argv(model: Path, root: Path) -> List[str]:
    return ["-m", "check", str(model), "--engine", "tensorrt-rtx", "--out", str(root / "b"), "--results",
            str(root / "r"), "--reports", str(root / "rep")]


# What nox is to `python -m check`: a parent that names itself in $QDQ_PARENT_PID (the noxfile's _env()) and waits.
_LIKE_NOX = ("import os, subprocess, sys; "
             "sys.exit(subprocess.call(sys.argv[1:], env=dict(os.environ, QDQ_PARENT_PID=str(os.getpid()))))")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigkill_of_the_caller_of_check_during_an_rtx_build_leaves_nothing(tmp_path: Path) -> None:
    """`kill -9` of what started `python -m check` (nox) while TensorRT-RTX builds: check, its pytest and the engine
    workers all end within seconds, the plan folder goes with the next run, and an immediate rerun runs."""
    pytest.importorskip("tensorrt_rtx", reason="TensorRT for RTX is in the test group on x86-64")
    from tests.check.models import qdq_conv_stack

    model = qdq_conv_stack(tmp_path / "stack.onnx", blocks=60)
    mark = uuid.uuid4().hex
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, MARK: mark, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
    env.pop("QDQ_PARENT_PID", None)
    caller = subprocess.Popen([sys.executable, "-c", _LIKE_NOX, sys.executable, *_check_argv(model, tmp_path)],
                              cwd=REPO, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: any(p != caller.pid and _is_worker(p) for p in _marked(mark)), 240, "no TensorRT-RTX worker "
              "started")
        os.kill(caller.pid, signal.SIGKILL)
        caller.wait(timeout=30)
        deadline = time.monotonic() + 5
        while _marked(mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _marked(mark), "left running 5 s after the kill: " + "; ".join(_described(_marked(mark)))
        assert list(tmp.glob("qdq-plan-*")), "the killed run's plan folder should still be there, to be reaped"
        again = subprocess.run([sys.executable, *_check_argv(model, tmp_path)], cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=500)
        assert "in use by another run" not in again.stdout + again.stderr
        assert again.returncode in (0, 1), again.stdout[-2000:] + again.stderr[-2000:]
        assert not list(tmp.glob("qdq-plan-*")), "the killed run's plan folder was not reaped"
    finally:
        _clean_up(caller, mark)


def _is_worker(pid: int) -> bool:
    """A TensorRT-family worker process (worker.py), the one that holds a build."""
    try:
        return any(a.endswith(b"worker.py") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"))
    except OSError:
        return False
