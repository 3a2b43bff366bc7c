"""Progress on long work before any engine runs: while a model is prepared (shape inference, its inputs, the
reference, the float twin, the lint ...), a line every 15 s names the step it is on and how long the model has
taken so far ("preparing m.onnx: building the float twin (45 s)"), so a long silence is never a hang.

check.bundle names its steps with step(); a Ticker started around the work prints them. Without a Ticker, step()
does nothing.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Callable, List, Optional, Type

from core.threads import start_quiet

INTERVAL_S = 15.0
_ACTIVE: List["Ticker"] = []


def step(words: str) -> None:
    """The work now on this step ("building the float twin"), as the running Ticker says it."""
    for ticker in _ACTIVE:
        ticker.step = words


class Ticker:
    """Every `interval` seconds, "<what>: <step> (N s)" from a thread of its own, until the work ends."""

    def __init__(self, what: str, interval: float = 0.0, out: Optional[Callable[[str], None]] = None) -> None:
        self.what = what
        self.step = "starting"
        self.interval = interval or INTERVAL_S
        self._out = out or _print
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="qdq-prepare-progress", daemon=True)

    def __enter__(self) -> "Ticker":
        _ACTIVE.append(self)
        start_quiet(self._thread)
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException],
                 trace: Optional[TracebackType]) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        _ACTIVE.remove(self)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._out(f"{self.what}: {self.step} ({time.monotonic() - self._start:.0f} s)")


def _print(line: str) -> None:
    try:
        print(line, flush=True)
    except (OSError, ValueError):  # the terminal went away: progress is not worth a failed check
        pass
