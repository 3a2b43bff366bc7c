"""Helper threads that never take the process's signals.

    start_quiet(threading.Thread(target=..., daemon=True))

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
from typing import FrozenSet

ASYNC_SIGNALS: FrozenSet[int] = frozenset(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)


def start_quiet(thread: threading.Thread) -> threading.Thread:
    """Start the thread with the process's asynchronous signals blocked in it (where the platform has
    pthread_sigmask; elsewhere it is started as it is); the starting thread's own mask is as it was after."""
    if not hasattr(signal, "pthread_sigmask"):
        thread.start()
        return thread
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ASYNC_SIGNALS)
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    return thread
