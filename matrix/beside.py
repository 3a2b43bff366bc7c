"""Work beside the report on the machine's other core: a child forked once the cells are loaded inherits them (nothing
is pickled to it; only its answer, a small view, comes back through a pipe), and its failure is the report's.

The child never outlives its parent: leaving the block kills and reaps it, and on Linux it is killed when its parent
dies (PR_SET_PDEATHSIG), whatever killed the parent. Where os.fork does not exist, the work runs in this process."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import traceback
from typing import Any, Callable, Iterator, Optional, Tuple

PR_SET_PDEATHSIG = 1  # linux/prctl.h


class SideDied(RuntimeError):
    """The child ended without its answer: killed by a signal, or exited without saying why."""


@contextlib.contextmanager
def beside(work: Callable[[], Any]) -> Iterator[Callable[[], Any]]:
    """Run work in a child forked now; yield a function that waits for its answer and raises its error (the child's
    own exception, its traceback as a note) or SideDied. Leaving the block, a child still running is killed and
    reaped."""
    if not hasattr(os, "fork"):
        yield _here(work)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(work, write)  # never returns
    os.close(write)
    side = _Side(pid, read)
    try:
        yield side.answer
    finally:
        side.end()


def _here(work: Callable[[], Any]) -> Callable[[], Any]:
    """work run in this process, once, when its answer is first asked for."""
    done: list = []

    def answer() -> Any:
        if not done:
            done.append(work())
        return done[0]

    return answer


def _child(work: Callable[[], Any], write: int) -> None:
    """The child: die with the parent, do the work, send (ok, answer or error, traceback), and exit without running
    anything of the parent's (no atexit, no buffers flushed twice)."""
    status = 1
    try:
        parent = os.getppid()
        _die_with_parent()
        if os.getppid() != parent:  # the parent died before the child could ask to die with it
            os._exit(status)
        try:
            sent: Tuple[bool, Any, str] = (True, work(), "")
            status = 0
        except BaseException as e:  # noqa: BLE001 (every error is the report's, Ctrl-C included)
            sent = (False, e, "".join(traceback.format_exception(type(e), e, e.__traceback__)))
        try:
            data = pickle.dumps(sent, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # an error that does not pickle: its traceback says it
            data = pickle.dumps((False, None, sent[2]), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write, "wb") as pipe:
            pipe.write(data)
    finally:
        os._exit(status)


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (nothing elsewhere: the block still reaps it)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _Side:
    """The parent's end of one child: its pid, the pipe its answer comes through, and the answer once read."""

    def __init__(self, pid: int, read: int) -> None:
        self.pid, self.read = pid, read
        self.reaped: Optional[int] = None
        self.sent: Optional[Tuple[bool, Any, str]] = None

    def answer(self) -> Any:
        """Wait for the child; its answer, or its error raised here."""
        if self.sent is None:
            with os.fdopen(self.read, "rb") as pipe:
                self.read = -1
                data = pipe.read()
            self.reaped = os.waitpid(self.pid, 0)[1]
            self.sent = _unpickled(data) or (False, None, "")
        ok, value, told = self.sent
        if ok and self.reaped == 0:
            return value
        if isinstance(value, BaseException):
            note = getattr(value, "add_note", None)  # Python 3.11+; before it, the child's traceback goes unsaid
            if note:
                note(f"raised in the report's side process (pid {self.pid}):\n{told.rstrip()}")
            raise value
        raise SideDied(f"the report's side process (pid {self.pid}) {said_status(self.reaped or 0)}"
                       + (f":\n{told.rstrip()}" if told else " before it sent its answer"))

    def end(self) -> None:
        """Kill the child if it still runs, and reap it: it never outlives the block."""
        if self.read >= 0:
            os.close(self.read)
            self.read = -1
        if self.reaped is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self.reaped = os.waitpid(self.pid, 0)[1]


def _unpickled(data: bytes) -> Optional[Tuple[bool, Any, str]]:
    """The child's (ok, answer or error, traceback), or None where it sent nothing whole."""
    try:
        return pickle.loads(data) if data else None
    except Exception:
        return None


def said_status(status: int) -> str:
    """A wait status in words: "was killed by signal 9 (SIGKILL)" or "exited with status 1"."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {number} ({name})"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"
