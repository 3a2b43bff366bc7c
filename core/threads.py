"""Helper threads that never take the process's signals, and signals held back while a process forks.

    start_quiet(threading.Thread(target=..., daemon=True))
    held = hold_signals(); pid = os.fork(); ...; release_signals(held)
    held = hold_signals(); start_held(context.Process(target=..., args=(..., held)), held); ...; release_signals(held)

The kernel hands a signal sent to a process (Ctrl-C's SIGINT, a supervisor's SIGTERM, pytest-timeout's SIGALRM) to any
of its threads that does not block it, not always the main one (Linux picks another where the main thread already has
a signal pending). Python runs its handlers on the main thread only, and a main thread blocked in a wait (a lock, a
queue, a child's exit) is woken only where the signal landed on it: landed on a helper thread, Ctrl-C waited for the
next message or the next child to end, as long as that took. A thread started here blocks those signals from its
first instruction (it inherits the mask of the thread that starts it, set just around its start), so they reach the
main thread. Errors in a thread of its own (SIGSEGV and the like) are not blocked. A process started from such a
thread (subprocess, fork) would inherit the mask, and Ctrl-C or SIGTERM would not reach it: these threads read,
write, wait and sleep, and start nothing.
"""

from __future__ import annotations

import signal
import threading
from typing import AbstractSet, Any, FrozenSet, Optional

# The longest a main thread waits at once where it must act on Ctrl-C (the report for its side process, engines.run for
# its runs): a wait without an end can miss a signal that lands just before the thread blocks (its handler has run, the
# wait has not begun, and nothing wakes it); waited in slices, it is acted on within one.
WAIT_SLICE_S = 0.2
ASYNC_SIGNALS: FrozenSet[int] = frozenset(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)


def start_quiet(thread: threading.Thread) -> threading.Thread:
    """Start the thread with the process's asynchronous signals blocked in it (where the platform has
    pthread_sigmask; elsewhere it is started as it is); the starting thread's own mask is as it was after."""
    held = hold_signals()
    try:
        thread.start()
    finally:
        release_signals(held)
    return thread


def hold_signals() -> Optional[AbstractSet[int]]:
    """Block the process's asynchronous signals in this thread; returns the mask to give release_signals (None where
    the platform has no pthread_sigmask).

    Around os.fork (multiprocessing's fork included): Python runs the callbacks registered with os.register_at_fork
    inside it (logging's `_releaseLock` in the parent, whenever logging is imported), and an exception raised in one,
    the KeyboardInterrupt of a Ctrl-C that lands then, is printed as "Exception ignored" and dropped. Seen: the report
    went on waiting for its side process after a SIGINT, about once in 300 forks with two CPU hogs beside. Held, the
    signal waits until release_signals, then is acted on there; the child starts with the signals held too and
    releases them itself."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, ASYNC_SIGNALS)


def start_held(process: Any, held: Optional[AbstractSet[int]]) -> None:
    """Start a process that forks, made while hold_signals' mask `held` is in force (its target releases it in the
    child); where the start itself fails, the signals are released before the error goes on. The caller releases
    them once it can end the child (a signal held during the fork is acted on there)."""
    try:
        process.start()
    except BaseException:
        release_signals(held)
        raise


def release_signals(held: Optional[AbstractSet[int]]) -> None:
    """This thread's mask as hold_signals found it: a signal that came meanwhile is delivered now."""
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
