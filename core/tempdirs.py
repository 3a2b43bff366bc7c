"""Temporary folders that a killed process does not leave behind: each names its owner, and the next run reaps those
whose owner is gone.

    with owned("qdq-plan-") as tmp: ...   # removed on every exit but SIGKILL
    reap("qdq-plan-")                     # what a SIGKILLed owner left: removed by the next process that asks
    cells = CellFolders("qdq-ort-")       # one owned folder made at the first cell, a fresh one inside it per cell
    with cells.cell() as tmp: ...

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Iterator, Optional, Set, Tuple

OWNER = ".owner"  # in each folder: "<pid> <start time>" of the process that made it


def _start_time(pid: int) -> Optional[str]:
    """A process's start time in clock ticks since boot (Linux /proc), "" where this system cannot say, None for a
    process that does not exist."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else fields[19]  # a zombie has ended: only its exit status is left
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return ""
    return "" if not Path("/proc").is_dir() else None


def _me() -> str:
    return f"{os.getpid()} {_start_time(os.getpid()) or ''}".strip()


def alive(owner: str) -> bool:
    """Whether the process an .owner line names still runs (a reused pid with another start time does not count);
    a line that names no pid counts as running."""
    pid, _, started = owner.strip().partition(" ")
    if not pid.isdigit():
        return True  # not a line this module wrote whole: never removed on a guess
    now = _start_time(int(pid))
    return now is not None and (not started or not now or now == started)


def reap(prefix: str, where: Optional[str] = None) -> int:
    """Remove the folders `prefix`* in the temporary folder whose owner no longer runs; returns how many."""
    removed = 0
    root = Path(where or tempfile.gettempdir())
    for folder in root.glob(prefix + "*"):
        try:
            owner = (folder / OWNER).read_text()
        except OSError:
            continue  # not ours, or still being made: never removed on a guess
        if not alive(owner):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


# (prefix, folder) pairs this process has reaped: once is enough, since it removes its own folders itself, and a
# reap lists the whole temporary folder (an ONNX Runtime cell asked for one each, hundreds of times a run)
_REAPED: Set[Tuple[str, Optional[str]]] = set()


@contextlib.contextmanager
def owned(prefix: str, where: Optional[str] = None) -> Iterator[str]:
    """A temporary folder that names this process as its owner; removed on leaving, and reaped by the next process
    that asks for one with the same prefix where this process was killed before it could remove it."""
    if (prefix, where) not in _REAPED:
        reap(prefix, where)
        _REAPED.add((prefix, where))
    tmp = tempfile.mkdtemp(prefix=prefix, dir=where)
    try:
        part = Path(tmp, OWNER + ".part")  # written whole, then renamed: a reaper never reads half a line
        part.write_text(_me())
        os.replace(part, Path(tmp, OWNER))
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class CellFolders:
    """A fresh folder for each cell, inside one folder this process owns for all its cells (owned: made at the first
    cell, so its owner is read and written once, not once a cell); the owned folder is removed at close() or at exit,
    and reaped by the next process that asks for one with the same prefix after a kill."""

    def __init__(self, prefix: str, where: Optional[str] = None) -> None:
        self.prefix, self.where = prefix, where
        self._folder: Optional[str] = None
        self._remove: Optional[weakref.finalize] = None

    @contextlib.contextmanager
    def cell(self) -> Iterator[str]:
        """One cell's folder, removed with what it holds when the block ends."""
        if self._folder is None:
            stack = contextlib.ExitStack()
            self._folder = stack.enter_context(owned(self.prefix, self.where))
            self._remove = weakref.finalize(self, stack.close)
        tmp = tempfile.mkdtemp(prefix="cell-", dir=self._folder)
        try:
            yield tmp
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def close(self) -> None:
        """Remove the owned folder now (a later cell makes a new one)."""
        if self._remove is not None:
            self._remove()
            self._folder = self._remove = None
