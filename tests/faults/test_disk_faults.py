"""Faults of the disk: a read-only or full results folder, one that fills up during a run, a read-only reports folder.

Each is one line that names the folder and the errno, a non-zero exit, and counts that say what really ran. The
read-only and full folders are real: a bind mount remounted read-only, a tiny tmpfs, each in a mount namespace of
the test's own (`unshare`; skipped where the machine allows none).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from tests.engines.fakes import cells_argv, write_fake_bundle

REPO = Path(__file__).resolve().parents[2]
# Cells any machine may merge: CPU cells, committed (a subprocess sees the machine as it is, and a local TensorRT cell
# on a machine with no GPU is refused).
SAMPLE = REPO / "reports" / "observed" / "cpu-avx2-emulated" / "onnxruntime-1.31.1.jsonl"
READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0"'
FULL = 'mount -t tmpfs -o size=4k tmpfs "$0" && head -c 4096 /dev/zero > "$0/filler"'
FILLS_UP = 'mount -t tmpfs -o size=8k tmpfs "$0"'  # the owner file takes a page, the results file one more


def _namespaces() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


confined = pytest.mark.skipif(not _namespaces(), reason="no mount namespace for a user here (unshare -rm)")


def _run(argv: List[str], folder: Path = None, mount: str = "") -> subprocess.CompletedProcess:
    """argv under this interpreter, with `mount` applied to folder first in a namespace of its own."""
    command = [sys.executable, *argv]
    if mount:
        command = ["unshare", "-rm", "sh", "-c", f'{mount} && shift && exec "$@"', str(folder), "-", *command]
    env = {**os.environ, "PYTHONPATH": str(REPO), "QDQ_FAKE_DELAY": "0"}
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=180, env=env)


def _bundles(tmp_path: Path, n: int = 12) -> Path:
    root = tmp_path / "bundles"
    for i in range(n):
        write_fake_bundle(root, f"b{i:02d}")
    return root


def _cells_run(tmp_path: Path, results: Path, *extra: str) -> List[str]:
    return ["-m", "engines.run", "--engine", "tests.engines.fakes:SlowEngine", "-n", "1", "--bundles",
            str(_bundles(tmp_path)), "--results", str(results), *extra]


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text and "INTERNALERROR" not in text, text
    return lines[0]


def test_a_results_folder_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    """Portable (no namespace): the folder cannot be made, a file has its name."""
    blocker = tmp_path / "results"
    blocker.write_text("a file where the folder should be\n")
    done = _run(_cells_run(tmp_path, blocker / "out.jsonl"))
    assert done.returncode == 3, done.stdout + done.stderr
    line = _one_line(done.stderr)
    assert line.startswith("engines.run: cannot write in ") and "/results/: EEXIST (File exists)" in line
    assert "reused" not in done.stdout  # nothing was decided, let alone run


@confined
def test_a_read_only_results_folder_is_one_line_naming_it_and_the_errno(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    done = _run(_cells_run(tmp_path, folder / "out.jsonl"), folder, READ_ONLY)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "/results/: EROFS (Read-only file system)" in _one_line(done.stderr)
    assert "run" not in done.stdout and not list(folder.iterdir())


@confined
def test_a_full_results_folder_is_one_line_naming_it_and_the_errno(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    done = _run(_cells_run(tmp_path, folder / "out.jsonl"), folder, FULL)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "/results/: ENOSPC (No space left on device)" in _one_line(done.stderr)


@confined
def test_pytest_on_a_read_only_results_folder_is_a_usage_error_not_an_internal_error(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    argv = [*cells_argv(tmp_path / "plans", "tests.engines.fakes:SlowEngine", folder / "o.jsonl"), "-q",
            "-p", "no:xdist", "--bundles", str(_bundles(tmp_path))]
    done = _run(argv, folder, READ_ONLY)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "/results/: EROFS (Read-only file system)" in _one_line(done.stderr)


@confined
def test_a_folder_that_fills_up_during_a_run_stops_it_and_the_counts_say_what_ran(tmp_path: Path) -> None:
    """The disk fills after a few cells: the run stops at once (no cell runs that cannot be kept), exit 3, and
    engines.run counts the cells the file holds, not the cells it planned."""
    folder = tmp_path / "results"
    folder.mkdir()
    shell = f'{FILLS_UP} && shift && "$@"; code=$?; cp "$0/out.jsonl" "$0.copy"; exit $code'
    command = ["unshare", "-rm", "sh", "-c", shell, str(folder), "-", sys.executable,
               *_cells_run(tmp_path, folder / "out.jsonl")]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": str(REPO), "QDQ_FAKE_DELAY": "0"})
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr and "INTERNALERROR" not in done.stdout + done.stderr
    text = Path(f"{folder}.copy").read_text()
    assert text.endswith("\n")  # whole lines only: a cell the disk took part of was cut off again
    kept = [json.loads(x) for x in text.splitlines() if '"bundle"' in x]
    last = done.stdout.strip().splitlines()[-1]
    assert 0 < len(kept) < 12
    assert last.startswith(f"engines.run: 0 cells reused, {len(kept)} run, {12 - len(kept)} not recorded (cannot "
                           "write in "), last
    assert "ENOSPC" in last and "pytest exit 3" in last


@confined
def test_a_read_only_reports_folder_is_one_line_naming_it_and_the_errno(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    done = _run(["-m", "matrix", "report", "--results", str(SAMPLE), "--out", str(folder)], folder, READ_ONLY)
    assert done.returncode == 3, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("matrix report: ")]
    assert len(errors) == 1 and "/reports/: EROFS (Read-only file system)" in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def _check_model(tmp_path: Path) -> Path:
    from tests.check.models import qdq_conv

    return qdq_conv(tmp_path / "mine.onnx")


@confined
@pytest.mark.parametrize("flag,mount", [("--results", READ_ONLY), ("--reports", READ_ONLY), ("--out", READ_ONLY),
                                        ("--results", FULL), ("--reports", FULL), ("--out", FULL)])
def test_check_on_a_folder_it_cannot_write_is_one_line_and_exit_3(tmp_path: Path, flag: str, mount: str) -> None:
    """A full disk or a read-only folder is the machine's fault: one line with the errno and exit 3 (an environment
    error), never a traceback, never exit 2 (a usage error) or 1 (an engine failed the model)."""
    folder = tmp_path / "refusing"
    folder.mkdir()
    model = _check_model(tmp_path)
    paths = {"--out": tmp_path / "b", "--results": tmp_path / "r", "--reports": tmp_path / "rep", flag: folder}
    done = _run(["-m", "check", str(model), "--engine", "onnxruntime",
                 *[a for k, v in paths.items() for a in (k, str(v))]], folder, mount)
    assert done.returncode == 3, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("check: ")]
    assert len(errors) == 1 and ("EROFS" if mount == READ_ONLY else "ENOSPC") in errors[0], done.stderr
    assert "Traceback" not in done.stderr
