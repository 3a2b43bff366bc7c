"""Work beside the report on the machine's other core: a child forked once the cells are loaded inherits them (nothing
is pickled to it; only its answer, a small view, comes back through a pipe), and its failure is the report's.

The child sends its answer as soon as it has it, then goes on with work whose result is files only; the report reads
the pipe on a thread of its own, so the child never waits for it. The child never outlives its parent: leaving the
block kills and reaps it, and on Linux it is killed when its parent dies (PR_SET_PDEATHSIG), whatever killed the
parent. Where os.fork does not exist, both parts run in this process."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import traceback
from typing import Any, BinaryIO, Callable, Iterator, List, Optional, Tuple

from core.threads import WAIT_SLICE_S, hold_signals, release_signals, start_quiet
from core.words import signal_text

PR_SET_PDEATHSIG = 1  # linux/prctl.h
Message = Tuple[bool, Any, str]  # (ok, the answer or the error, the error's traceback)


class SideDied(RuntimeError):
    """The child ended without saying it was done: killed by a signal, or exited without a word."""


class Side:
    """The report's end of the work beside it: its answer, and the wait for the rest of its work."""

    def answer(self) -> Any:
        """The answer of the first part, waited for; the child's error raised here."""
        raise NotImplementedError

    def wait(self) -> None:
        """Wait until the child has done all its work (its files are whole); its error raised here."""
        raise NotImplementedError


@contextlib.contextmanager
def beside(first: Callable[[], Any], then: Callable[[Any], None] = lambda answer: None) -> Iterator[Side]:
    """Run first, then then(its answer), in a child forked now; yield its Side. Leaving the block, a child still
    running is killed and reaped."""
    if not hasattr(os, "fork"):
        yield _Here(first, then)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    held = hold_signals()  # a Ctrl-C during the fork would be dropped in an at-fork callback (core.threads)
    try:
        pid = os.fork()
    except BaseException:
        release_signals(held)
        raise
    if pid == 0:
        release_signals(held)
        os.close(read)
        _child(first, then, write)  # never returns
    os.close(write)
    side: Optional[_Child] = None
    try:
        side = _Child(pid, read)
        release_signals(held)  # a signal held during the fork is acted on here, where the child is ended after it
        held = None
        yield side
    finally:
        if side is not None:
            side.end()
        else:  # the reader could not be started: the child is ended all the same
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        release_signals(held)


class _Here(Side):
    """Both parts run in this process, when the answer is first asked for (no os.fork here)."""

    def __init__(self, first: Callable[[], Any], then: Callable[[Any], None]) -> None:
        self.first, self.then = first, then
        self.done: List[Any] = []

    def answer(self) -> Any:
        if not self.done:
            self.done.append(self.first())
            self.then(self.done[0])
        return self.done[0]

    def wait(self) -> None:
        self.answer()


def _child(first: Callable[[], Any], then: Callable[[Any], None], write: int) -> None:
    """The child: die with the parent, send first's answer, do then, say done (or send the error), and exit without
    running anything of the parent's (no atexit, no buffers flushed twice)."""
    status = 1
    try:
        parent = os.getppid()
        _die_with_parent()
        if os.getppid() != parent:  # the parent died before the child could ask to die with it
            os._exit(status)
        with os.fdopen(write, "wb") as pipe:
            try:
                answer = first()
                _send(pipe, (True, answer, ""))
                then(answer)
                _send(pipe, (True, None, ""))
                status = 0
            except BaseException as e:  # noqa: BLE001 (every error is the report's, Ctrl-C included)
                _send(pipe, (False, e, "".join(traceback.format_exception(type(e), e, e.__traceback__))))
    finally:
        os._exit(status)


def _send(pipe: BinaryIO, message: Message) -> None:
    """One message down the pipe, whole; an error that does not pickle goes as its traceback alone."""
    try:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        data = pickle.dumps((False, None, message[2]), protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(data)
    pipe.flush()


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (nothing elsewhere: the block still reaps it)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _Child(Side):
    """The parent's end of one child: its pid, a thread that reads its messages as they come, its wait status."""

    def __init__(self, pid: int, read: int) -> None:
        self.pid = pid
        self.messages: List[Optional[Message]] = []  # None: the end, nothing more comes
        self.arrived = threading.Condition()
        # the report's Ctrl-C must reach its main thread, which may be waiting for this one (core.threads)
        self.reader = start_quiet(threading.Thread(target=self._read, args=(os.fdopen(read, "rb"),),
                                                   name="qdq-beside-reader", daemon=True))
        self.reaped: Optional[int] = None

    def _read(self, pipe: BinaryIO) -> None:
        """Every message the child sends, until it closes the pipe (or sends a message cut off: it died)."""
        with pipe:
            while True:
                try:
                    message = pickle.load(pipe)
                except Exception:
                    message = None
                last = message is None or not message[0] or len(self.messages) == 1
                with self.arrived:
                    if message is not None:
                        self.messages.append(message)
                    if last:
                        self.messages.append(None)
                    self.arrived.notify_all()
                if last:
                    return

    def answer(self) -> Any:
        with self.arrived:
            while not self.messages:
                self.arrived.wait(WAIT_SLICE_S)
            first = self.messages[0]
        if first is not None and first[0]:
            return first[1]
        self.wait()  # raises the child's error, or how it died
        raise SideDied(f"the report's side process (pid {self.pid}) sent no answer")

    def wait(self) -> None:
        _join(self.reader)
        self._reap()
        sent = [m for m in self.messages if m is not None]
        if len(sent) == 2 and all(ok for ok, _, _ in sent) and self.reaped == 0:
            return
        ok, error, told = sent[-1] if sent else (True, None, "")
        if isinstance(error, BaseException):
            note = getattr(error, "add_note", None)  # Python 3.11+; before it, the child's traceback goes unsaid
            if note:
                note(f"raised in the report's side process (pid {self.pid}):\n{told.rstrip()}")
            raise error
        raise SideDied(f"the report's side process (pid {self.pid}) {said_status(self.reaped or 0)}"
                       + (f":\n{told.rstrip()}" if not ok and told else " before it said it was done"))

    def _reap(self) -> None:
        if self.reaped is None:
            self.reaped = os.waitpid(self.pid, 0)[1]

    def end(self) -> None:
        """Kill the child if it still runs, and reap it: it never outlives the block."""
        if self.reaped is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        _join(self.reader)
        self._reap()


def _join(thread: threading.Thread) -> None:
    """Wait for a thread to end, in slices (WAIT_SLICE_S)."""
    while thread.is_alive():
        thread.join(WAIT_SLICE_S)


def said_status(status: int) -> str:
    """A wait status in words: "was killed by signal 9 (SIGKILL)" or "exited with status 1"."""
    if os.WIFSIGNALED(status):
        return f"was killed by {signal_text(os.WTERMSIG(status))}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"
