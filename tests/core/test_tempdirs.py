"""core/tempdirs.py: a killed owner's folder is reaped by the next run; a live owner's, or one being made, never is."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.tempdirs import OWNER, CellFolders, owned, reap


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


KILLED_MID_CELL = """
import os, signal, sys
from core.tempdirs import CellFolders
with CellFolders("qdq-x-", sys.argv[1]).cell() as tmp:
    open(os.path.join(tmp, "request.json"), "w").write("{}")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_cell_folders_share_one_owned_folder_and_a_killed_ones_is_reaped(tmp_path: Path) -> None:
    """The TensorRT and ONNX Runtime adapters' request folders: one owned folder, a fresh folder per cell inside it
    and gone after it; a run SIGKILLed mid-cell leaves its folder, which the next process's first cell removes."""
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_CELL, str(tmp_path)], cwd=Path(__file__).parents[2],
                            env={"PYTHONPATH": str(Path(__file__).parents[2])}, timeout=60)
    assert killed.returncode == -9
    left = list(tmp_path.glob("qdq-x-*"))
    assert len(left) == 1 and (left[0] / OWNER).is_file() and list(left[0].glob("cell-*/request.json"))
    cells = CellFolders("qdq-x-", str(tmp_path))
    for _ in range(2):
        with cells.cell() as tmp:
            assert Path(tmp).parent.parent == tmp_path and Path(tmp).name.startswith("cell-")
            Path(tmp, "result.json").write_text("{}")
        mine = list(tmp_path.glob("qdq-x-*"))
        assert len(mine) == 1 and mine[0] != left[0] and [p.name for p in mine[0].iterdir()] == [OWNER]
    cells.close()
    assert list(tmp_path.iterdir()) == []
