"""core.threads.start_quiet: helper threads block the process's asynchronous signals, so that Ctrl-C, a supervisor's
SIGTERM and pytest-timeout's SIGALRM reach the main thread (which Python runs handlers on) wherever the kernel would
have put them. Read from /proc: each thread's blocked-signal mask (SigBlk), as the kernel holds it.

The helpers that use it: the report's side reader (matrix.beside), engines.run's waiters and output readers, the
controller's heartbeat, check's progress ticker, and lifeline's watcher (its own copy, standard library only).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.threads import ASYNC_SIGNALS, start_quiet

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not Path("/proc/thread-self/status").exists(), reason="Linux's /proc")


def blocked(native_id: int) -> set:
    """The signals a thread of this process blocks (its SigBlk line)."""
    for line in Path(f"/proc/self/task/{native_id}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            mask = int(line.split()[1], 16)
            return {n for n in range(1, 65) if mask >> (n - 1) & 1}
    raise AssertionError("no SigBlk line")


def _parked(start) -> tuple:
    """A thread started by `start`, parked until released: (its native id, the release)."""
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    start(thread)
    for _ in range(200):
        if thread.native_id is not None:
            break
        time.sleep(0.01)
    return thread.native_id, release


def test_a_quiet_thread_blocks_the_process_signals_and_its_starter_does_not():
    mine = blocked(threading.get_native_id())
    quiet, release_quiet = _parked(start_quiet)
    plain, release_plain = _parked(lambda t: t.start())
    try:
        assert ASYNC_SIGNALS >= {signal.SIGINT, signal.SIGTERM, signal.SIGALRM}
        assert blocked(quiet) >= ASYNC_SIGNALS
        assert not blocked(plain) & {signal.SIGINT, signal.SIGTERM}  # the control: a thread started as usual
        assert blocked(threading.get_native_id()) == mine  # the starter's own mask as it was
        assert signal.SIGSEGV not in blocked(quiet)  # a thread's own faults are not blocked
    finally:
        release_quiet.set()
        release_plain.set()


def test_the_report_side_reader_is_quiet():
    from matrix.beside import beside

    with beside(lambda: time.sleep(60)):  # leaving the block ends the child
        reader = next(t for t in threading.enumerate() if t.name == "qdq-beside-reader")
        assert blocked(reader.native_id) >= ASYNC_SIGNALS


def test_the_heartbeat_and_progress_threads_are_quiet():
    import io

    from check.progress import Ticker
    from engines.pytest_cells import Heartbeat

    beat = Heartbeat(lambda nodeid: nodeid, interval=60, out=io.StringIO())
    with Ticker("checking", interval=60, out=lambda line: None):
        ticker = next(t for t in threading.enumerate() if t.name == "qdq-prepare-progress")
        assert blocked(ticker.native_id) >= ASYNC_SIGNALS
    assert blocked(beat._thread.native_id) >= ASYNC_SIGNALS


LIFELINE = """
import json, os, threading
from engines.tensorrt import lifeline
lifeline.watch(os.getppid())
watcher = next(t for t in threading.enumerate() if t.name == "qdq-lifeline")
def sigblk(path):
    return next(int(line.split()[1], 16) for line in open(path) if line.startswith("SigBlk:"))
print(json.dumps({"watcher": sigblk(f"/proc/self/task/{watcher.native_id}/status"),
                  "main": sigblk("/proc/thread-self/status")}))
"""


def test_the_lifeline_watcher_is_quiet():
    done = subprocess.run([sys.executable, "-c", LIFELINE], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert all(seen["watcher"] >> (n - 1) & 1 for n in ASYNC_SIGNALS)
    assert not seen["main"] >> (signal.SIGINT - 1) & 1


# A Ctrl-C that lands while os.fork runs its at-fork callbacks: sent by one registered after the others (so that it
# runs after logging's, as a real SIGINT can), to this very process, unblocked. Without the signals held around the
# fork, Python drops its KeyboardInterrupt there ("Exception ignored") and the parent goes on waiting for a child that
# sleeps a minute.
SIGINT_DURING_FORK = """
import os, signal, sys, time
import logging
signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal (a suite started with & ignores it)
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGINT))
{body}
"""
BESIDE = """
from matrix.beside import beside
with beside(lambda: time.sleep(60)) as side:
    side.answer()
"""
ISOLATED = """
from check.isolated import run_isolated
run_isolated(lambda: time.sleep(60))
"""

GENERATORS = """
import generators.__main__ as main
main._helper_main = lambda *args: time.sleep(60)  # the helper writer, made long
main._helper_beside([], None, main._Shared(0)).join()
"""


@pytest.mark.parametrize("body", [BESIDE, ISOLATED, GENERATORS],
                         ids=["matrix.beside", "check.isolated", "generators.write"])
def test_a_ctrl_c_during_the_fork_is_acted_on(body: str):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", SIGINT_DURING_FORK.format(body=body)], cwd=REPO,
                          capture_output=True, text=True, timeout=50, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "KeyboardInterrupt" in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode != 0 and time.monotonic() - started < 30


# A signal whose handler has run just before the main thread blocks wakes nothing: _thread.interrupt_main() is that
# (the handler's flag set, no signal to end a wait), sent while engines.run waits for its runs to end.
WAIT_ALL = """
import _thread, signal, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal (a suite started with & ignores it)
from engines.run import _wait_all

class Run:
    def wait(self):
        time.sleep(60)
        return 0

threading.Timer(0.5, _thread.interrupt_main).start()
_wait_all([Run()], lambda i: None)
"""


def test_engines_run_acts_on_ctrl_c_while_it_waits_for_its_runs():
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", WAIT_ALL], cwd=REPO, capture_output=True, text=True, timeout=50,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "KeyboardInterrupt" in done.stderr, done.stderr
    assert time.monotonic() - started < 30


def test_a_process_that_cannot_start_gives_the_signals_back():
    """start_held: where the fork itself fails, the mask hold_signals set is undone before the error goes on (the
    generators' writer and check's isolated run start their children so)."""
    from core.threads import hold_signals, start_held

    class Refused:
        def start(self):
            raise OSError("fork refused")

    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    held = hold_signals()
    assert signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with pytest.raises(OSError, match="fork refused"):
        start_held(Refused(), held)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
