"""One model's preparation in a child process of its own, so that a crash or an allocation failure costs that model.

A model within the size budget can still take more memory than the machine gives (an address-space limit, a
container's cap): numpy raises MemoryError, while protobuf or an engine's C++ may abort or segfault and take the whole
process with it. `run_isolated` forks the preparation; its value or its exception comes back through a pipe, and a
child that died by a signal is `Crashed`, with the signal's name. Where fork is not available it runs in this process.
"""

from __future__ import annotations

import errno
import multiprocessing
import pickle
import signal
from typing import AbstractSet, Any, Callable, Optional, Tuple

from core.threads import hold_signals, release_signals, start_held


class Crashed(Exception):
    """The child process ended without an answer: killed by a signal (`signal`: its name) or an exit status."""

    def __init__(self, how: str, signal_name: str = "") -> None:
        super().__init__(how)
        self.signal = signal_name


def run_isolated(work: Callable[[], Any]) -> Any:
    """work() in a forked child: its value, or its exception raised here; Crashed where the child died without one."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return work()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    held = hold_signals()  # a Ctrl-C during the fork would be dropped in an at-fork callback (core.threads)
    child = context.Process(target=_child, args=(work, send, held))
    start_held(child, held)
    try:
        release_signals(held)  # a signal held during the fork is acted on here, where the child is ended after it
        send.close()
        answer = _answer(receive, child)
        child.join()
    except BaseException:  # Ctrl-C included: the child ends with the check (multiprocessing would wait for it)
        if child.is_alive():
            child.kill()
        child.join()
        raise
    finally:
        receive.close()
    if answer is None:
        raise Crashed(*_how(child.exitcode))
    kind, value = answer
    if kind == "raise":
        raise value
    return value


def out_of_memory(error: BaseException) -> bool:
    """Whether an exception is an allocation that failed: MemoryError, or an OSError with ENOMEM (an mmap refused)."""
    return isinstance(error, MemoryError) or (isinstance(error, OSError) and error.errno == errno.ENOMEM)


def _child(work: Callable[[], Any], send: Any, held: Optional[AbstractSet[int]] = None) -> None:
    """The child's side: its signals as they were before the fork, then run work and send ("value", result) or
    ("raise", the exception, or its words if it cannot be pickled)."""
    release_signals(held)
    try:
        answer: Tuple[str, Any] = ("value", work())
    except BaseException as e:  # anything: the parent decides what it means
        answer = ("raise", e)
    try:
        send.send_bytes(pickle.dumps(answer))
    except Exception as e:  # an exception (or value) that does not pickle: its type and words instead
        send.send_bytes(pickle.dumps(("raise", RuntimeError(f"{type(answer[1]).__name__}: {answer[1]}; {e}"))))
    send.close()


def _answer(receive: Any, child: Any) -> Optional[Tuple[str, Any]]:
    """The child's answer, or None where it ended without sending one."""
    while not receive.poll(0.2) and child.is_alive():
        pass
    try:
        return pickle.loads(receive.recv_bytes()) if receive.poll(0) else None
    except EOFError:  # the pipe closed with nothing in it
        return None


def _how(exitcode: Optional[int]) -> Tuple[str, str]:
    """(how a child that sent no answer ended, the signal's name or "")."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return name, name
    return f"exit status {exitcode}", ""
