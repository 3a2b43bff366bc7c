"""The TensorRT family's worker processes, seen from the adapter: worker.py in serve mode, one request path per stdin
line and one RESULT_MARK line back, shared by the adapters of one process that ask with the same interpreter, module
and environment. Runs in the suite's process, never in an engine's environment.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import time
from collections import OrderedDict
from pathlib import Path
from typing import Dict, Optional, Tuple

from core.words import signal_text
from engines.tensorrt import lifeline

WORKER = Path(__file__).resolve().parent / "worker.py"
RESULT_MARK = b"QDQ-RESULT "  # worker.py's serve-mode answer line
SERVERS_KEPT = 3  # serving workers one process keeps alive (least recently used closed first)

_SERVERS: "OrderedDict[Tuple[str, str, str], Server]" = OrderedDict()


def _environment_key(env: Optional[Dict[str, str]]) -> str:
    """The environment a worker starts with (None: this process's, as it is now), as a key; pytest's name of the
    running test changes with every test and says nothing about the worker."""
    return json.dumps(sorted((k, v) for k, v in (env if env is not None else os.environ).items()
                             if k != "PYTEST_CURRENT_TEST"))


def serving(python: str, module: str, env: Optional[Dict[str, str]]) -> "Server":
    """A serving worker for this interpreter, module and environment, shared by every adapter of this process that
    asks with the same three (the columns of one engine version differ only in their requests); at most
    SERVERS_KEPT stay alive, the least recently used closed first."""
    key = (python, module, _environment_key(env))
    server = _SERVERS.pop(key, None)
    if server is None or server.closed:
        server = Server(python, module, env)
    _SERVERS[key] = server
    while len(_SERVERS) > SERVERS_KEPT:
        _SERVERS.popitem(last=False)[1].close()
    return server


class Server:
    """A worker in serve mode: one request path per stdin line, one RESULT_MARK line back.

    It runs in a session of its own, so that a hang is killed whole (os.killpg: the worker and anything it started)
    and a signal to this process's group (Ctrl-C, pytest-timeout, a kill of the group) never lands in the middle of
    a cell; it dies with this process all the same (engines.tensorrt.lifeline), a build under way included."""

    def __init__(self, python: str, module: str = "tensorrt", env: Optional[Dict[str, str]] = None) -> None:
        # A file, not a pipe: whatever the worker wrote is there once it has exited, even after a signal.
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        self._read_to = 0  # stderr before this offset belongs to earlier requests
        self.proc = subprocess.Popen(
            [python, str(WORKER), "--module", module, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, start_new_session=True, env=lifeline.child_env(env),
        )
        self._buffer = b""

    def ask(self, request: Path, timeout: float) -> tuple:
        """(return code, stderr since the last answer, crash description); stderr written at start-up counts."""
        try:
            self.proc.stdin.write(f"{request}\n".encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died; the read below says how
        deadline = time.monotonic() + timeout
        while True:
            line = self._line(deadline)
            if line is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                return self.proc.returncode, self._stderr_since_last(), f"timeout after {timeout:g} s"
            if line == b"":
                rc = self.proc.wait()
                crashed = signal_text(-rc) if rc < 0 else ""
                return rc if rc else 1, self._stderr_since_last(), crashed or f"worker exited with status {rc}"
            if line.startswith(RESULT_MARK):
                return 0, self._stderr_since_last(), ""

    def _line(self, deadline: float) -> Optional[bytes]:
        """The next stdout line; b"" at end of file; None when the deadline passes first."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return b""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _stderr_since_last(self) -> str:
        self._stderr.seek(self._read_to)
        data = self._stderr.read()
        self._read_to += len(data)
        return data.decode("utf-8", errors="replace")

    @property
    def closed(self) -> bool:
        return self._stderr.closed

    def close(self) -> None:
        if self.closed:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self._stderr.close()
