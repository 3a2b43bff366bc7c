"""core/tempdirs.py: a killed owner's folder is reaped by the next run; a live owner's, or one being made, never is."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.tempdirs import OWNER, owned, reap


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_dead_owners_folder_is_reaped_and_a_live_ones_kept(tmp_path: Path) -> None:
    dead, live, making, torn = (tmp_path / f"qdq-x-{n}" for n in ("dead", "live", "making", "torn"))
    for folder in (dead, live, making, torn):
        folder.mkdir()
    (dead / OWNER).write_text(f"{_dead_pid()} 1")
    (torn / OWNER).write_text("")  # half-written by a process that is making it: not a line to act on
    with owned("qdq-x-", str(tmp_path)) as mine:  # reaps first
        assert not dead.exists()
        (live / OWNER).write_text(Path(mine, OWNER).read_text())  # this process: running
        assert reap("qdq-x-", str(tmp_path)) == 0
        assert not dead.exists() and live.exists() and making.exists() and torn.exists() and Path(mine).exists()
    assert not Path(mine).exists()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process states are read from /proc")
def test_a_zombie_owner_counts_as_gone(tmp_path: Path) -> None:
    """A killed owner that nobody has reaped yet is a zombie: its /proc entry stays, but it runs no more."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])

    def stat() -> list:
        return Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()

    deadline = time.monotonic() + 30
    while stat()[0] != "Z" and time.monotonic() < deadline:  # exited, not yet waited for
        time.sleep(0.01)
    folder = tmp_path / "qdq-x-zombie"
    folder.mkdir()
    (folder / OWNER).write_text(f"{proc.pid} {stat()[19]}")
    assert reap("qdq-x-", str(tmp_path)) == 1 and not folder.exists()
    proc.wait()
