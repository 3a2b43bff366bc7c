"""TensorRT and TensorRT for RTX: each bundle runs in worker.py under an interpreter that has the module.

The interpreter (`python`) may be this one, an NGC container's, an air-gapped box's, or the GPU
runner's `bin/python-trt-VERSION`. Neither module is ever imported in this process. TensorRT-RTX is
the same family with other data (module name, ahead-of-time targets, its build log as the layer
listing): `RtxAdapter` reuses every stage.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from core.cell import pack_text
from core.engines import ENGINES
from core.words import LABELS, file_name
from engines.base import EngineInfo, Observation, plugins_needed
from engines.tensorrt import gpu, lifeline
from engines.tensorrt.inspect import log_text, version_matches
from engines.tensorrt.plugins import python_plugins
from generators.bundle import Bundle

WORKER = Path(__file__).resolve().parent / "worker.py"
REPO = WORKER.parents[2]
RESULT_MARK = b"QDQ-RESULT "  # worker.py's serve-mode answer line
STDERR_TAIL = 4000  # characters of the worker's stderr kept in a crashed cell's log
SERVERS_KEPT = 3  # serving workers one process keeps alive (least recently used closed first)
# Where each request's folder (request, result, log, outputs) is made and removed, once per cell: $QDQ_SCRATCH, else
# /dev/shm where it is writable with SCRATCH_FREE bytes free (in memory: 0.1 ms of CPU a cell against 0.5 ms on a
# disk's file system, measured here), else the system's temporary folder (a container's 64 MiB /dev/shm is not used).
SCRATCH_ENV = "QDQ_SCRATCH"
SCRATCH_FREE = 1 << 30
# TensorRT-RTX's CPU-only builds allocate and free buffers above glibc's mmap threshold on every build, and each
# comes back as fresh page faults: measured on 1.7.1.116, 20 builds in one worker took 1.28 s of system time and
# 669k minor faults, and 0.11 s and 31k with these (peak RSS the same). A value the user sets wins; other C
# libraries ignore them (mallopt(3)).
RTX_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20), "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}


class Adapter:
    """TensorRT through a subprocess worker; a crash or hang costs one cell."""

    name = "tensorrt"
    module = "tensorrt"
    static_not_run = False  # cannot_run also reads the interpreter's cuDNN and cuBLAS (engines.reuse)

    @classmethod
    def same_machine(cls, hardware: str, detail: Mapping[str, str]) -> bool:
        """Whether a cell's hardware is this machine's GPU (its label as this machine renders it), without starting a
        worker (engines.run)."""
        return hardware == gpu.detect().label

    def __init__(
        self, python: Optional[str] = None, version: Optional[str] = None, timeout: float = 600, isolate: bool = False,
        tactics: Optional[str] = None, timing_cache: Optional[str] = None,
    ) -> None:
        self.python = python or sys.executable
        spec = ENGINES["tensorrt"]
        # "default": TensorRT's default tactic sources; "tensorrt-only": no cuBLAS/cuBLASLt/cuDNN tactics.
        self.tactics = tactics or os.environ.get(spec.option("tactics").env) or spec.option("tactics").default
        self.timing_cache = timing_cache or spec.option("timing_cache").default
        spec.check({"tactics": self.tactics, "timing_cache": self.timing_cache})
        self.version = version
        self.timeout = timeout
        # isolate: one process per cell (slow: TensorRT and CUDA start each time); otherwise one
        # serving process per adapter, replaced after a crash.
        self.isolate = isolate
        self._info: Optional[EngineInfo] = None
        self._gpu: Optional[gpu.GpuInfo] = None
        self._report: Optional[Dict[str, Any]] = None  # the worker's probe answer
        self._server: Optional[_Server] = None

    @property
    def title(self) -> str:
        return ENGINES[self.name].title

    def options(self) -> Dict[str, str]:
        """This adapter's own engine options (core.engines), as the cells record them."""
        return {"tactics": self.tactics, "timing_cache": self.timing_cache}

    def timing_cache_path(self) -> str:
        """The shared cache file of this version, GPU and tactic setting ("" when off or not yet probed)."""
        info = self._info
        if self.timing_cache != "on" or info is None or not info.available:
            return ""
        folder = Path(os.environ.get("QDQ_TIMING_CACHE_DIR") or REPO / "results" / "timing-cache")
        gpu_label = file_name(info.hardware, LABELS)
        return str(folder / f"{self.module}-{info.version}-{gpu_label}-{self.tactics}.cache")

    def probe(self) -> EngineInfo:
        """GPU first (no engine import), then the worker's own report of versions and capabilities."""
        if self._info is None:
            self._info = self._probe()
        return self._info

    def _probe(self) -> EngineInfo:
        found = self._gpu = gpu.detect()
        if not found.present:
            return self._unavailable("not_run", found.reason, hardware=gpu.NO_GPU, detail=found.detail())
        return self._probe_worker(found.label, found.detail())

    def _probe_worker(self, hardware: str, detail: Dict[str, str]) -> EngineInfo:
        try:
            report = self._report = self._worker_probe()
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            return self._unavailable("skipped", f"{self.title} probe failed in {self.python}: {e}", hardware, detail)
        if "tensorrt" not in report:
            reason = f"{self.module} not importable in {self.python}: {report.get('tensorrt_error', 'unknown error')}"
            return self._unavailable("skipped", reason, hardware, detail)
        if "numpy" not in report:
            reason = f"numpy not importable in {self.python}: {report.get('numpy_error', 'unknown error')}"
            return self._unavailable("skipped", reason, hardware, detail, version=report["tensorrt"])
        actual = report["tensorrt"]
        if self.version and not version_matches(self.version, actual):
            reason = f"requested {self.title} {self.version}, but {self.python} has {actual}"
            return self._unavailable("skipped", reason, hardware, detail)
        versions = {self.module: actual, "python": report.get("python", ""), "numpy": report["numpy"]}
        if self.module == "tensorrt":
            versions.update(cudnn=report.get("cudnn", "unknown"), cublas=report.get("cublas", "unknown"))
        if report.get("payload"):
            versions["payload"] = ", ".join(f"{k}=={v}" for k, v in sorted(report["payload"].items()))
        if report.get("stand_in"):  # a test double: its cells are marked so that no report takes them
            versions["stand_in"] = report["stand_in"]
        versions.update({k: v for k, v in detail.items() if k in ("driver", "cuda_driver")})
        # the machine as the worker saw it: its operating system and container (ISSUE.md's Environment)
        detail = dict(detail, **{k: str(report[k]) for k in ("os", "container") if report.get(k)})
        return EngineInfo(
            name=self.name, version=actual, hardware=self._hardware(hardware, report), available=True,
            hardware_detail=detail, versions=versions, variant=self._variant(),
            capabilities=report.get("capabilities") or {}, origin=str(report.get("origin") or ""),
        )

    def _hardware(self, label: str, report: Dict[str, Any]) -> str:
        return label

    def _variant(self) -> Dict[str, str]:
        return ENGINES[self.name].variant(self.options())

    def _worker_env(self) -> Optional[Dict[str, str]]:
        """The environment of worker processes (None: this process's)."""
        return None

    def _unavailable(
        self, status: str, reason: str, hardware: str, detail: Dict[str, str], version: str = ""
    ) -> EngineInfo:
        return EngineInfo(
            name=self.name, version=version or self.version or "unknown", hardware=hardware, available=False,
            unavailable_status=status, reason=reason, hardware_detail=detail, variant=self._variant(),
        )

    def _worker_probe(self) -> Dict[str, Any]:
        """The worker's report for this interpreter and module: asked once per process (every column of one
        engine version shares it; what a column sets goes in its requests, not in the probe)."""
        key = _probe_key(self.python, self.module)
        if key not in _PROBES:
            _PROBES[key] = self._ask_probe()
        return _PROBES[key]

    def _ask_probe(self) -> Dict[str, Any]:
        out = subprocess.run(
            [self.python, str(WORKER), "--module", self.module, "--probe"], capture_output=True, text=True,
            timeout=self.timeout, env=lifeline.child_env(),
        )
        if out.returncode != 0:
            raise ValueError(f"exit status {out.returncode}: {_tail(out.stderr)}")
        lines = out.stdout.strip().splitlines()
        if not lines:
            raise ValueError(f"no output; stderr: {_tail(out.stderr)}")
        return json.loads(lines[-1])

    def cannot_run(self, bundle: Bundle) -> str:
        """What this module cannot host (our Python plugins before TensorRT 10); cuDNN paths where cuDNN is a stub."""
        info = self.probe()
        if not info.available:
            return ""
        caps = info.capabilities
        wanted = python_plugins(plugins_needed(bundle))
        if wanted and caps and not caps.get("python_plugins"):
            return (f"needs plugin {', '.join(wanted)}; the suite's plugins are Python plugins (IPluginV3, "
                    f"TensorRT >= 10), which {self.title} {info.version} does not have")
        if self.module != "tensorrt":
            return ""
        cudnn = bundle.meta.get("trt", {}).get("needs_cudnn") or _instancenorm_plugin(bundle, info)
        if cudnn and info.versions.get("cudnn", "").startswith(("stub", "missing")):
            return f"needs cuDNN ({cudnn}), and this interpreter's cuDNN is {info.versions['cudnn']}"
        stubs = [k for k in ("cudnn", "cublas") if info.versions.get(k, "").startswith(("stub", "missing"))]
        if self.tactics == "default" and stubs and caps.get("default_tactics_use_cudnn"):
            return (f"TensorRT {info.version}'s default tactic sources call cuBLAS/cuDNN, and this interpreter's "
                    f"{' and '.join(stubs)} {'is' if len(stubs) == 1 else 'are'} not real "
                    "(run with --trt-tactics tensorrt-only)")
        return ""

    def run(self, bundle: Bundle) -> Observation:
        """Parse, build and (where this machine can) run one bundle in the worker."""
        with tempfile.TemporaryDirectory(prefix="qdq-trt-", dir=scratch()) as tmp:
            request = self._write_request(bundle, Path(tmp))
            if self.isolate:
                rc, stderr, crashed = self._run_worker(request, Path(tmp))
            else:
                rc, stderr, crashed = self._ask_server(request)
            obs = self._observe(Path(tmp), rc, stderr, crashed)
            if obs.verbose_log.get("state") == "started":  # the second, verbose build died: the first is the cell
                obs.options.setdefault("notes", []).append(f"the verbose rebuild did not finish: {crashed}")
                obs = replace(obs, crashed="", verbose_log={})
                return obs
            if crashed and crashed == _signal_text(-rc):  # died of a signal, not of a timeout: engines.reuse
                obs.options["crash_signal"] = _signal_name(-rc)
            return obs

    def _ask_server(self, request: Path) -> tuple:
        """(return code, stderr of this request, crash description) from the serving worker."""
        if self._server is None or self._server.closed:
            self._server = _serving(self.python, self.module, self._worker_env())
        rc, stderr, crashed = self._server.ask(request, self.timeout)
        if rc != 0:
            self._server.close()
            self._server = None
        return rc, stderr, crashed

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def _request_trt(self, bundle: Bundle) -> Dict[str, Any]:
        settings = ENGINES[self.name].settings  # the workspace pool, unless the bundle sets its own
        return dict(settings, **(bundle.meta.get("trt") or {}), tactics=self.tactics,
                    timing_cache=self.timing_cache_path())

    def _write_request(self, bundle: Bundle, tmp: Path) -> Path:
        found = self._gpu or gpu.detect()
        request = {
            "bundle": bundle.id,
            "model": str(bundle.model_path.resolve()),
            "inputs": str((bundle.path / "inputs.npz").resolve()),
            "target_nodes": list(bundle.meta.get("target_nodes") or []),
            "target_ops": target_ops(bundle),
            "profile": dict(bundle.meta.get("profile") or {}),  # min/opt/max of each dynamic input (user models)
            "gpu": {"present": found.present, "label": found.label, "reason": found.reason},
            "trt": self._request_trt(bundle),
            "out": str(tmp / "out"),
        }
        path = tmp / "request.json"
        path.write_text(json.dumps(request))
        return path

    def _run_worker(self, request: Path, tmp: Path) -> tuple:
        """(return code, stderr, crash description); the worker runs in its own session so a hang is killed whole,
        and dies with this process (engines.tensorrt.lifeline)."""
        with open(tmp / "stderr.txt", "w+") as err, open(tmp / "stdout.txt", "w+") as out:
            proc = subprocess.Popen(
                [self.python, str(WORKER), "--module", self.module, str(request)], stdout=out, stderr=err,
                cwd=str(tmp), start_new_session=True, env=lifeline.child_env(self._worker_env()),
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
        listing = result.get("listing") or {}
        verbose = dict(result.get("verbose_log") or {})
        if verbose.get("state") == "done":
            verbose = verbose_record(verbose)
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
            not_run_here="" if error or crashed else str(result.get("not_run_here") or ""),
            listing=pack_listing(listing.get("kind", ""), listing.get("text", "")) if listing else {},
            parser_errors=[dict(e) for e in result.get("parser_errors") or [] if isinstance(e, dict)],
            verbose_log=verbose,
        )


class RtxAdapter(Adapter):
    """TensorRT for RTX through the same worker and stages: parse and ahead-of-time build on any machine;
    deserialization and the run only on a GPU of an architecture the plan targets."""

    name = "tensorrt-rtx"
    module = "tensorrt_rtx"
    static_not_run = True  # cannot_run reads the bundle and the version's capabilities (engines.reuse)

    @classmethod
    def same_machine(cls, hardware: str, detail: Mapping[str, str]) -> bool:
        """Whether a cell was built on this machine: its recorded GPU (name and compute capability), or none, is the
        one here (the label's build targets follow the version, which the reuse key holds)."""
        found = gpu.detect()
        here = (found.name, found.compute_capability) if found.present else ("", "")
        return (detail.get("name", ""), detail.get("compute_capability", "")) == here

    def __init__(self, python: Optional[str] = None, version: Optional[str] = None, timeout: float = 600,
                 isolate: bool = False, target: Optional[str] = None, plugin_link: Optional[str] = None) -> None:
        super().__init__(python=python, version=version, timeout=timeout, isolate=isolate, tactics="default")
        self.target = target or "default"
        self.plugin_link = plugin_link or "none"
        ENGINES[self.name].check(self.options())
        self._link_dir: Optional[tempfile.TemporaryDirectory] = None

    def options(self) -> Dict[str, str]:
        return {"target": self.target, "plugin_link": self.plugin_link}

    def _worker_env(self) -> Optional[Dict[str, str]]:
        """glibc's allocator told to keep freed memory (RTX_MALLOC); with plugin_link, LD_LIBRARY_PATH also names a
        folder holding libtensorrt_rtx.so -> the wheel's .so.1."""
        env = {**RTX_MALLOC, **os.environ}
        library = (self._report or {}).get("library", "")
        if self.plugin_link == "none" or not library:
            return env
        if self._link_dir is None:
            self._link_dir = tempfile.TemporaryDirectory(prefix="qdq-rtx-link-")
            os.symlink(library, os.path.join(self._link_dir.name, "libtensorrt_rtx.so"))
        path = os.environ.get("LD_LIBRARY_PATH", "")
        return dict(env, LD_LIBRARY_PATH=os.pathsep.join(x for x in (self._link_dir.name, path) if x))

    def _probe(self) -> EngineInfo:
        """No GPU needed: the build runs on the CPU (NVIDIA, "CPU-Only AOT"); a GPU only decides whether it runs."""
        found = self._gpu = gpu.detect()
        return self._probe_worker(_machine(found), found.detail())

    def _hardware(self, label: str, report: Dict[str, Any]) -> str:
        """"no GPU: ahead-of-time build (default: SM80 SM86 SM89 SM120 SM121)", or ": ahead-of-time build"
        where the variant names the one target."""
        if self.target != "default":
            return f"{label}: ahead-of-time build"
        targets = [t for t in (report.get("capabilities") or {}).get("compute_capabilities", []) if t != "SM75"]
        return f"{label}: ahead-of-time build (default: {' '.join(targets)})" if targets else label

    def _request_trt(self, bundle: Bundle) -> Dict[str, Any]:
        settings = ENGINES[self.name].settings  # no timing cache: it breaks CPU-only builds
        return dict(settings, **(bundle.meta.get("trt") or {}), target=self.target)


def _machine(found: gpu.GpuInfo) -> str:
    """The machine part of a TensorRT-RTX hardware label: its GPU, or "no GPU"."""
    return found.label if found.present else "no GPU"


def target_ops(bundle: Bundle) -> Dict[str, str]:
    """Each target node's ONNX op type (the attribution picks the layer that performs that op); {} without onnx."""
    return bundle.target_ops()


def pack_listing(kind: str, text: str) -> Dict[str, str]:
    """A layer listing kept with its cell, compressed: the evidence can be re-derived later without a GPU."""
    data = base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    return {"kind": kind, "encoding": "zlib+base64", "data": data}


def verbose_record(said: Dict[str, Any]) -> Dict[str, Any]:
    """The worker's verbose build log as a cell keeps it (core.cell: packed text, its size and what was kept); {} where
    the file is gone."""
    try:
        text = Path(said["file"]).read_text(encoding="utf-8", errors="replace")
    except (OSError, KeyError):
        return {}
    return dict(pack_text(text), bytes=int(said.get("bytes", 0)), kept=int(said.get("kept", 0)))


def unpack_listing(listing: Dict[str, str]) -> str:
    """The text of a listing packed by pack_listing ("" where there is none)."""
    if not listing or listing.get("encoding") != "zlib+base64":
        return ""
    return zlib.decompress(base64.b64decode(listing["data"])).decode("utf-8")


_PROBES: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
_SERVERS: "OrderedDict[Tuple[str, str, str], _Server]" = OrderedDict()


@functools.lru_cache(maxsize=None)
def scratch() -> Optional[str]:
    """The folder request folders are made in (SCRATCH_ENV), chosen once per process; None: the system's temporary
    folder."""
    if os.environ.get(SCRATCH_ENV):
        return os.environ[SCRATCH_ENV]
    if not (os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK)):
        return None
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if st.f_bavail * st.f_frsize >= SCRATCH_FREE else None


# Who runs a probe, which its answer does not depend on: pytest's test, the xdist worker and the terminal size it
# was given, the lifeline parent.
_RUNNER_ONLY = ("PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID",
                "LINES", "COLUMNS", lifeline.PARENT_ENV)


def _probe_key(python: str, module: str) -> Tuple[str, str, str]:
    """A probe's answer is asked once per interpreter, module and environment (but who runs it)."""
    return python, module, json.dumps(sorted((k, v) for k, v in os.environ.items() if k not in _RUNNER_ONLY))


def probe_answers() -> List[List[Any]]:
    """The probe answers this process holds, as JSON: an xdist worker takes its controller's (adopt_probe_answers)
    rather than start the same probe again, once per worker and engine version."""
    return [[list(key), answer] for key, answer in _PROBES.items()]


def adopt_probe_answers(answers: List[List[Any]]) -> None:
    """Answers another process got (probe_answers); one is used only where this process's interpreter, module and
    environment (but who runs it) are the same."""
    for key, answer in answers:
        _PROBES.setdefault(tuple(key), answer)


def _environment_key(env: Optional[Dict[str, str]]) -> str:
    """The environment a worker starts with (None: this process's, as it is now), as a key; pytest's name of the
    running test changes with every test and says nothing about the worker."""
    return json.dumps(sorted((k, v) for k, v in (env if env is not None else os.environ).items()
                             if k != "PYTEST_CURRENT_TEST"))


def _serving(python: str, module: str, env: Optional[Dict[str, str]]) -> "_Server":
    """A serving worker for this interpreter, module and environment, shared by every adapter of this process that
    asks with the same three (the columns of one engine version differ only in their requests); at most
    SERVERS_KEPT stay alive, the least recently used closed first."""
    key = (python, module, _environment_key(env))
    server = _SERVERS.pop(key, None)
    if server is None or server.closed:
        server = _Server(python, module, env)
    _SERVERS[key] = server
    while len(_SERVERS) > SERVERS_KEPT:
        _SERVERS.popitem(last=False)[1].close()
    return server


class _Server:
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
    name = _signal_name(num)
    return f"signal {num} ({name})" if name else f"signal {num}"


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return ""


def _tail(text: str, limit: int = STDERR_TAIL) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _instancenorm_plugin(bundle: Bundle, info: EngineInfo) -> str:
    """NATIVE_INSTANCENORM arrived in 8.6: where the parser lacks it (the worker's capability record says, never the
    version number), InstanceNormalization is the cuDNN plugin."""
    flags = bundle.meta.get("trt", {}).get("parser_flags") or []
    missing = "NATIVE_INSTANCENORM" not in (info.capabilities.get("parser_flags") or [])
    if "NATIVE_INSTANCENORM" in flags and missing:
        return f"TensorRT {info.version} has no NATIVE_INSTANCENORM flag, so InstanceNormalization_TRT (cuDNN) runs"
    return ""
