"""No process of ours outlives the process that started it: a child dies with its parent.

    lifeline.keep(os.environ)   # at a child's start: die with the parent that named itself in $QDQ_PARENT_PID
    lifeline.child_env(env)     # what a parent gives a child it starts: its own pid in $QDQ_PARENT_PID

Two guards, either enough: on Linux the kernel sends SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG, which
works while native code holds the interpreter, as a TensorRT build does), and a daemon thread checks the parent's
pid every WATCH_S seconds (any POSIX system). A parent that was gone before the guards were set is noticed at once:
the child's parent is then no longer the pid the parent gave it.

A process that runs many cells also calls `few_collections()` once its imports are done (the cyclic garbage
collector kept off them).

Standard library only, Python 3.9+: the TensorRT worker loads it from beside itself in the engine's interpreter;
`engines.run`, the pytest controller and its xdist workers import it as `engines.tensorrt.lifeline`.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from typing import Dict, MutableMapping, Optional

PARENT_ENV = "QDQ_PARENT_PID"
WATCH_S = 0.5
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_ASYNC_SIGNALS = frozenset(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM",
                                                              "SIGUSR1", "SIGUSR2") if hasattr(signal, name))


def child_env(env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment for a child this process starts (env, else this process's): this pid as its parent."""
    return dict(os.environ if env is None else env, **{PARENT_ENV: str(os.getpid())})


def keep(environ: MutableMapping[str, str] = os.environ) -> Optional[int]:
    """Die with the parent named in $QDQ_PARENT_PID (taken out of environ, so that this process's own children are
    never told a parent that is not theirs); returns the pid watched, None where no parent was named.

    A named pid that is an ancestor further up is one that a process in between (one that keeps no lifeline) passed
    on: then the real parent is watched. A named pid that is no ancestor at all means the parent died before this
    process got here (it was handed to init or a subreaper)."""
    named = environ.pop(PARENT_ENV, "")
    if not named.isdigit():
        return None
    parent = os.getppid()
    if int(named) != parent and not _ancestor(int(named)):
        _die()
    watch(parent)
    return parent


def watch(parent: int) -> None:
    """SIGKILL this process when `parent` is no longer its parent."""
    _parent_death_signal()
    if os.getppid() != parent:  # it died before the kernel was asked to tell
        _die()
    thread = threading.Thread(target=_watch, args=(parent,), name="qdq-lifeline", daemon=True)
    # The process's signals must reach its main thread, not this one (core.threads.start_quiet says why; this module
    # stays standard-library-only for the worker and bug bundles, so it keeps its own copy)
    quiet = hasattr(signal, "pthread_sigmask")
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _ASYNC_SIGNALS) if quiet else None
    try:
        thread.start()
    finally:
        if quiet:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_S)
    _die()


def _parent_death_signal() -> None:
    """Linux: the kernel kills this process when the thread that started it ends (every starter of ours starts its
    children from the thread that lives as long as the process)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        # the process's own symbols, libc's among them: ctypes.util.find_library runs `ldconfig -p` in a subprocess
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # no libc to ask: the watching thread alone
        pass


def _ancestor(pid: int) -> bool:
    """Whether pid is this process's parent, grandparent or further up (Linux: /proc; elsewhere: whether it lives)."""
    current = os.getppid()
    for _ in range(256):
        if current == pid:
            return True
        if current <= 1:
            return False
        try:
            with open(f"/proc/{current}/stat", "rb") as f:
                current = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return _alive(pid)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def few_collections() -> None:
    """Keep the cyclic garbage collector off what a process that runs many cells imported (gc.freeze) and run it after
    20,000 allocations instead of 700: it went over the same long-lived modules again and again, about 5% of a fresh
    matrix's CPU. Nothing a cell computes depends on it."""
    import gc

    gc.freeze()
    gc.set_threshold(20000, 50, 100)
