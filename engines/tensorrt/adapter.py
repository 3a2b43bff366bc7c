"""TensorRT's adapter: each bundle runs in worker.py under an interpreter that has the module.

The interpreter (`python`) may be this one, an NGC container's, an air-gapped box's, or the GPU
runner's `bin/python-trt-VERSION`. The module is never imported in this process: the worker runs it, in a process
of its own (engines.tensorrt.server), so a crash or a hang costs one cell.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

from core.engines import ENGINES
from core.tempdirs import CellFolders
from core.words import LABELS, file_name, signal_name, signal_text
from engines.base import EngineInfo, Observation, plugins_needed
from engines.tensorrt import gpu, lifeline, probes
from engines.tensorrt.inspect import log_text, version_matches
from engines.tensorrt.listing import pack_listing, verbose_record
from engines.tensorrt.plugins import python_plugins
from engines.tensorrt.server import WORKER, Server, serving
from generators.bundle import Bundle

REPO = WORKER.parents[2]
STDERR_TAIL = 4000  # characters of the worker's stderr kept in a crashed cell's log
# Where each request's folder (request, result, log, outputs) is made and removed, once per cell: $QDQ_SCRATCH, else
# /dev/shm where it is writable with SCRATCH_FREE bytes free (in memory: 0.1 ms of CPU a cell against 0.5 ms on a
# disk's file system, measured here), else the system's temporary folder (a container's 64 MiB /dev/shm is not used).
SCRATCH_ENV = "QDQ_SCRATCH"
SCRATCH_FREE = 1 << 30


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
        self._server: Optional[Server] = None
        # a request folder per cell, inside one the adapter owns (core.tempdirs): a killed run's is reaped by the next
        self._cells = CellFolders("qdq-trt-", scratch())

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
        return probes.asked_once(self.python, self.module, self._ask_probe)

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
        with self._cells.cell() as tmp:
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
            if crashed and crashed == signal_text(-rc):  # died of a signal, not of a timeout: engines.reuse
                obs.options["crash_signal"] = signal_name(-rc)
            return obs

    def _ask_server(self, request: Path) -> tuple:
        """(return code, stderr of this request, crash description) from the serving worker."""
        if self._server is None or self._server.closed:
            self._server = serving(self.python, self.module, self._worker_env())
        rc, stderr, crashed = self._server.ask(request, self.timeout)
        if rc != 0:
            self._server.close()
            self._server = None
        return rc, stderr, crashed

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._cells.close()

    def _request_trt(self, bundle: Bundle) -> Dict[str, Any]:
        settings = ENGINES[self.name].settings  # the workspace pool, unless the bundle sets its own
        return dict(settings, **(bundle.meta.get("trt") or {}), tactics=self.tactics,
                    timing_cache=self.timing_cache_path())

    def _write_request(self, bundle: Bundle, tmp: Path) -> Path:
        found = self._gpu or gpu.detect()
        request = {
            "bundle": bundle.id,
            "model": real_path(bundle.path, "model.onnx"),
            "inputs": real_path(bundle.path, "inputs.npz"),
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
                crashed = signal_text(-rc) if rc < 0 else ""
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


def target_ops(bundle: Bundle) -> Dict[str, str]:
    """Each target node's ONNX op type (the attribution picks the layer that performs that op); {} without onnx."""
    return bundle.target_ops()


def real_path(folder: Path, name: str) -> str:
    """str((folder / name).resolve()), with the folder's real path found once per process (a bundle's folder is met
    once per column; resolving asks the file system about every component of the path)."""
    path = os.path.join(_real_folder(os.path.abspath(folder)), name)
    return os.path.realpath(path) if os.path.islink(path) else path


@functools.lru_cache(maxsize=4096)
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)


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
        return json.loads(_read_bytes(path))
    except (OSError, ValueError):
        return None


def _read_bytes(path: Path) -> bytes:
    """A file's bytes: the worker writes ASCII JSON (json.dumps escapes the rest), which json.loads takes as bytes
    without a text layer in between."""
    with open(path, "rb") as f:
        return f.read()


def _read_log(path: Path) -> List[Dict[str, str]]:
    """log.jsonl as written so far (a crash can cut its last line short): every line in one parse where each is whole
    (a line each for a build's twenty-odd messages costs a call each), else line by line."""
    messages = []
    try:
        lines = _read_bytes(path).splitlines()
    except OSError:
        return []
    try:
        whole = json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:  # a line cut short, or one that is not JSON: each line alone, below
        whole = None
    if isinstance(whole, list) and len(whole) == len(lines):
        return whole
    for line in lines:
        try:
            messages.append(json.loads(line))
        except ValueError:
            continue
    return messages


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
