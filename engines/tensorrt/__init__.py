"""TensorRT adapter: runs each bundle in worker.py under any interpreter that has TensorRT.

The interpreter (`python`) may be this one, an NGC container's, an air-gapped box's, or the GPU
runner's `bin/python-trt-VERSION`. TensorRT is never imported in this process.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from cases.engines import ENGINES
from engines.base import EngineInfo, Observation, plugins_needed
from engines.tensorrt import gpu
from engines.tensorrt.inspect import TACTICS_CHOICES, log_text, parse_version, version_matches
from engines.tensorrt.plugins import python_plugins
from generators.bundle import Bundle

WORKER = Path(__file__).resolve().parent / "worker.py"
RESULT_MARK = b"QDQ-RESULT "  # worker.py's serve-mode answer line
STDERR_TAIL = 4000  # characters of the worker's stderr kept in a crashed cell's log


class Adapter:
    """TensorRT through a subprocess worker; a crash or hang costs one cell."""

    name = "tensorrt"

    def __init__(
        self, python: Optional[str] = None, version: Optional[str] = None, timeout: float = 600, isolate: bool = False,
        tactics: Optional[str] = None,
    ) -> None:
        self.python = python or sys.executable
        # "default": TensorRT's default tactic sources; "tensorrt-only": no cuBLAS/cuBLASLt/cuDNN tactics.
        self.tactics = tactics or os.environ.get("QDQ_TRT_TACTICS") or "default"
        if self.tactics not in TACTICS_CHOICES:
            raise ValueError(f"TensorRT tactics must be one of {', '.join(TACTICS_CHOICES)}, not {self.tactics!r}")
        self.version = version
        self.timeout = timeout
        # isolate: one process per cell (slow: TensorRT and CUDA start each time); otherwise one
        # serving process per adapter, replaced after a crash.
        self.isolate = isolate
        self._info: Optional[EngineInfo] = None
        self._server: Optional[_Server] = None

    def probe(self) -> EngineInfo:
        """GPU first (no TensorRT import), then the worker's own report of its versions."""
        if self._info is None:
            self._info = self._probe()
        return self._info

    def _probe(self) -> EngineInfo:
        found = gpu.detect()
        if not found.present:
            return self._unavailable("not_run", found.reason, hardware=gpu.NO_GPU, detail=found.detail())
        hardware, detail = found.label, found.detail()
        try:
            report = self._worker_probe()
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            return self._unavailable("skipped", f"TensorRT probe failed in {self.python}: {e}", hardware, detail)
        if "tensorrt" not in report:
            reason = f"tensorrt not importable in {self.python}: {report.get('tensorrt_error', 'unknown error')}"
            return self._unavailable("skipped", reason, hardware, detail)
        if "numpy" not in report:
            reason = f"numpy not importable in {self.python}: {report.get('numpy_error', 'unknown error')}"
            return self._unavailable("skipped", reason, hardware, detail, version=report["tensorrt"])
        actual = report["tensorrt"]
        if self.version and not version_matches(self.version, actual):
            reason = f"requested TensorRT {self.version}, but {self.python} has {actual}"
            return self._unavailable("skipped", reason, hardware, detail)
        versions = {"tensorrt": actual, "python": report.get("python", ""), "numpy": report["numpy"],
                    "cudnn": report.get("cudnn", "unknown"), "cublas": report.get("cublas", "unknown")}
        if report.get("payload"):
            versions["payload"] = ", ".join(f"{k}=={v}" for k, v in sorted(report["payload"].items()))
        if report.get("stand_in"):  # a test double: its cells are marked so that no report takes them
            versions["stand_in"] = report["stand_in"]
        versions.update({k: v for k, v in detail.items() if k in ("driver", "cuda_driver")})
        return EngineInfo(
            name=self.name, version=actual, hardware=hardware, available=True,
            hardware_detail=detail, versions=versions, variant=self._variant(),
        )

    def _variant(self) -> Dict[str, str]:
        return ENGINES[self.name].variant({"tactics": self.tactics})

    def _unavailable(
        self, status: str, reason: str, hardware: str, detail: Dict[str, str], version: str = ""
    ) -> EngineInfo:
        return EngineInfo(
            name=self.name, version=version or self.version or "unknown", hardware=hardware, available=False,
            unavailable_status=status, reason=reason, hardware_detail=detail, variant=self._variant(),
        )

    def _worker_probe(self) -> Dict[str, Any]:
        out = subprocess.run(
            [self.python, str(WORKER), "--probe"], capture_output=True, text=True, timeout=self.timeout,
        )
        if out.returncode != 0:
            raise ValueError(f"exit status {out.returncode}: {_tail(out.stderr)}")
        lines = out.stdout.strip().splitlines()
        if not lines:
            raise ValueError(f"no output; stderr: {_tail(out.stderr)}")
        return json.loads(lines[-1])

    def cannot_run(self, bundle: Bundle) -> str:
        """Our Python plugins on TensorRT < 10 (TensorRT's own plugins run); cuDNN paths where cuDNN is a stub."""
        wanted = python_plugins(plugins_needed(bundle))
        info = self.probe()
        if not info.available:
            return ""
        if wanted and parse_version(info.version)[:1] < (10,):
            return (f"needs plugin {', '.join(wanted)}; the suite's plugins are TensorRT Python plugins "
                    f"(TensorRT >= 10), and none is built for TensorRT {info.version}")
        cudnn = bundle.meta.get("trt", {}).get("needs_cudnn") or _instancenorm_plugin(bundle, info.version)
        if cudnn and info.versions.get("cudnn", "").startswith(("stub", "missing")):
            return f"needs cuDNN ({cudnn}), and this interpreter's cuDNN is {info.versions['cudnn']}"
        stubs = [k for k in ("cudnn", "cublas") if info.versions.get(k, "").startswith(("stub", "missing"))]
        if self.tactics == "default" and stubs and parse_version(info.version)[:1] < (10,):
            return (f"TensorRT {info.version}'s default tactic sources call cuBLAS/cuDNN, and this interpreter's "
                    f"{' and '.join(stubs)} {'is' if len(stubs) == 1 else 'are'} not real "
                    "(run with --trt-tactics tensorrt-only)")
        return ""

    def run(self, bundle: Bundle) -> Observation:
        """Parse, build and run one bundle in a fresh worker process."""
        with tempfile.TemporaryDirectory(prefix="qdq-trt-") as tmp:
            request = self._write_request(bundle, Path(tmp))
            if self.isolate:
                rc, stderr, crashed = self._run_worker(request, Path(tmp))
            else:
                rc, stderr, crashed = self._ask_server(request)
            return self._observe(Path(tmp), rc, stderr, crashed)

    def _ask_server(self, request: Path) -> tuple:
        """(return code, stderr of this request, crash description) from the serving worker."""
        if self._server is None:
            self._server = _Server(self.python)
        rc, stderr, crashed = self._server.ask(request, self.timeout)
        if rc != 0:
            self._server.close()
            self._server = None
        return rc, stderr, crashed

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def _write_request(self, bundle: Bundle, tmp: Path) -> Path:
        request = {
            "bundle": bundle.id,
            "model": str(bundle.model_path.resolve()),
            "inputs": str((bundle.path / "inputs.npz").resolve()),
            "target_nodes": list(bundle.meta.get("target_nodes") or []),
            "trt": dict(bundle.meta.get("trt") or {}, tactics=self.tactics),
            "out": str(tmp / "out"),
        }
        path = tmp / "request.json"
        path.write_text(json.dumps(request, indent=1))
        return path

    def _run_worker(self, request: Path, tmp: Path) -> tuple:
        """(return code, stderr, crash description); the worker runs in its own session so a hang is killed whole."""
        with open(tmp / "stderr.txt", "w+") as err, open(tmp / "stdout.txt", "w+") as out:
            proc = subprocess.Popen(
                [self.python, str(WORKER), str(request)], stdout=out, stderr=err, cwd=str(tmp),
                start_new_session=True,
            )
            try:
                rc = proc.wait(timeout=self.timeout)
                crashed = _signal_text(-rc) if rc < 0 else ""
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc, crashed = proc.returncode, f"timeout after {self.timeout:g} s"
            err.seek(0)
            return rc, err.read(), crashed

    def _observe(self, tmp: Path, rc: int, stderr: str, crashed: str) -> Observation:
        out = tmp / "out"
        result = _read_json(out / "result.json") or {}
        messages = _read_log(out / "log.jsonl") or result.get("log") or []  # the file has a crash's last words
        log = _log_with_parser_errors(messages, result.get("parser_errors") or [])
        error = result.get("error", "")
        if (crashed or (rc != 0 and not error)) and stderr.strip():
            log = "\n".join(x for x in (log, f"[worker stderr] {_tail(stderr)}") if x)
        if rc != 0 and not crashed and not error:
            error = f"worker exited with status {rc}: {_tail(stderr, 500)}"
        outputs: Dict[str, np.ndarray] = {}
        if result.get("outputs") and Path(result["outputs"]).is_file():
            with np.load(result["outputs"]) as f:
                outputs = {name: f[f"arr_{i}"] for i, name in enumerate(result.get("output_names") or [])}
        return Observation(
            stage=result.get("stage", ""),
            error=error,
            log=log,
            outputs=outputs,
            precision=result.get("precision") or {},
            network_dtypes=result.get("network_dtypes") or {},
            options=_options(result),
            timings=result.get("timings") or {},
            crashed=crashed,
        )


class _Server:
    """A worker in serve mode: one request path per stdin line, one RESULT_MARK line back."""

    def __init__(self, python: str) -> None:
        # A file, not a pipe: whatever the worker wrote is there once it has exited, even after a signal.
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        self._read_to = 0  # stderr before this offset belongs to earlier requests
        self.proc = subprocess.Popen(
            [python, str(WORKER), "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            start_new_session=True,
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
                crashed = _signal_text(-rc) if rc < 0 else ""
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

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self._stderr.close()


def _options(result: Dict[str, Any]) -> Dict[str, Any]:
    options = dict(result.get("options") or {})
    if not options.get("notes"):
        options.pop("notes", None)
    if result.get("versions"):
        options["versions"] = result["versions"]
    return options


def _log_with_parser_errors(messages: List[Dict[str, str]], parser_errors: List[Dict[str, Any]]) -> str:
    """WARNING-and-worse logger lines, plus any parser error the logger did not already print."""
    text = log_text(messages)
    extra = [f"[PARSER] {e['desc']}" for e in parser_errors if e.get("desc") and e["desc"] not in text]
    return "\n".join(x for x in [text] + extra if x)


def _read_json(path: Path) -> Optional[Dict[str, Any]]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_log(path: Path) -> List[Dict[str, str]]:
    """log.jsonl as written so far (a crash can cut its last line short)."""
    messages = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            messages.append(json.loads(line))
        except ValueError:
            continue
    return messages


def _signal_text(num: int) -> str:
    try:
        return f"signal {num} ({signal.Signals(num).name})"
    except ValueError:
        return f"signal {num}"


def _tail(text: str, limit: int = STDERR_TAIL) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _instancenorm_plugin(bundle: Bundle, version: str) -> str:
    """NATIVE_INSTANCENORM arrived in 8.6: before it, InstanceNormalization is always the cuDNN plugin."""
    flags = bundle.meta.get("trt", {}).get("parser_flags") or []
    if "NATIVE_INSTANCENORM" in flags and parse_version(version)[:2] < (8, 6):
        return f"TensorRT {version} has no NATIVE_INSTANCENORM flag, so InstanceNormalization_TRT (cuDNN) runs"
    return ""
