"""Run one reproducer on a TensorRT-family engine in its own process, so that a crash costs one cell.

    <python with tensorrt> engines/tensorrt/worker.py request.json   # prints the result.json path
    <python with tensorrt> engines/tensorrt/worker.py --serve        # many requests, one path per stdin line
    <python with tensorrt> engines/tensorrt/worker.py --probe        # prints versions, capabilities and GPU as JSON
    ... worker.py --module tensorrt_rtx --serve                      # TensorRT for RTX: the same stages

Runs inside the engine's interpreter: Python 3.9+, standard library, numpy and the module (tensorrt or
tensorrt_rtx) only, plus the files beside it, loaded as the private package `qdq_trt` (never by a name
that would shadow the standard library's `inspect`). What the module offers is looked up once by name
(capabilities.py) and recorded in every result as options.api; no choice depends on a version number.

Stages: "load" (ONNX parsed, build.py), "build" (a serialized plan, build.py), then, where this machine
can hold the engine, deserialization, the engine's layer listing and "run" (execute.py). A TensorRT-RTX
plan built ahead of time for GPUs this machine does not have stops after "build" with the reason
(result.not_run_here). Each stage's exception becomes that stage's error; result.json is rewritten after
every stage, and every logger message is appended to log.jsonl as it comes, so a crash still leaves evidence.

Request JSON: {"model", "inputs" (npz path), "out" (folder), "target_nodes", "target_ops" (node -> ONNX op),
"profile" (input -> {"min", "opt", "max"}: the optimization profile of a network with dynamic inputs; an input
it leaves out takes its inputs.npz shape; a static network gets no profile), "gpu" ({"present", "label",
"reason"}: what the adapter found), "trt": {"int8" (default true), "fp16",
"strongly_typed", "parser_flags" (OnnxParserFlag names; "-NAME" clears one), "plugins" (plugin names the
model needs), "plugin_api", "workspace_mb", "tactics" ("default" or "tensorrt-only"), "target"
(TensorRT-RTX: "default" or a ComputeCapability name such as "SM86"), "verbose_log" (true: the verbose build
below even where no GPU is)}}.

A request that fails at load or build on a GPU (or asks with trt.verbose_log) is parsed and built once more with every
logger message kept, VERBOSE included: NVIDIA asks for that log with a "Could not find any implementation" report. Its
last VERBOSE_LOG_BYTES go to out/build-verbose.log and result.verbose_log says how many bytes it had and kept; the
first attempt's fields stay the cell's. Before it starts, result.json says it started (verbose_log.state), so a crash
or a hang of the second build is told from the first's.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Python puts this folder first on sys.path; its inspect.py would shadow the standard library's.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]

import collections  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402
from typing import Any, Dict, List, Optional  # noqa: E402

RESULT_MARK = "QDQ-RESULT "  # serve mode: the line that answers one request
MIN_SEVERITY = "INFO"  # recorded; the adapter keeps WARNING and worse for the cell's log
# VERBOSE messages worth keeping: the layer listing (TensorRT-RTX logs it at VERBOSE), CPU-only AOT, targets.
KEEP_VERBOSE = ("Layers:", "Engine Layer Information", " (foreignNode) Using legacy CPU-only mode",
                "Number of target compute capabilities")
MODULES = ("tensorrt", "tensorrt_rtx")
VERBOSE_LOG_BYTES = 2 << 20  # the verbose build log keeps its last 2 MiB
VERBOSE_LOG = "build-verbose.log"


def _siblings() -> types.ModuleType:
    """The files beside this one as the package `qdq_trt`, so that they import each other relatively."""
    package = sys.modules.get("qdq_trt")
    if package is None:
        package = types.ModuleType("qdq_trt")
        package.__path__ = [HERE]  # type: ignore[attr-defined]
        sys.modules["qdq_trt"] = package
    return package


_siblings()
tinspect = importlib.import_module("qdq_trt.inspect")
gpu = importlib.import_module("qdq_trt.gpu")
capabilities = importlib.import_module("qdq_trt.capabilities")
lifeline = importlib.import_module("qdq_trt.lifeline")


class Result:
    """The result being gathered; written to out/result.json after every stage."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.data: Dict[str, Any] = {
            "stage": "", "error": "", "log": [], "parser_errors": [], "network_layers": [],
            "network_dtypes": {}, "inspector": {}, "precision": {}, "options": {"notes": []},
            "timings": {}, "versions": {}, "outputs": "", "listing": {}, "not_run_here": "",
        }

    def note(self, text: str) -> None:
        self.data["options"]["notes"].append(text)

    def write(self) -> str:
        """result.json, without the log: LogSink appends each message to log.jsonl as it comes, which the adapter reads
        (a build's "Layers:" listing is most of the log, and result.json is written after every stage)."""
        path = os.path.join(self.out, "result.json")
        data = {k: v for k, v in self.data.items() if k != "log"}
        text = json.dumps(data, default=str)  # dumps, not dump(obj, file): only dumps uses json's C encoder
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        return path


class VerboseText:
    """Every logger message of one verbose build, as text lines; only the last VERBOSE_LOG_BYTES are kept."""

    def __init__(self, limit: int = VERBOSE_LOG_BYTES) -> None:
        self.limit = limit
        self.lines: "collections.deque[str]" = collections.deque()
        self.total = 0  # bytes of every line given
        self.kept = 0  # bytes of the lines still held

    def add(self, severity: str, msg: str) -> None:
        line = f"[{severity}] {msg}\n"
        size = len(line.encode("utf-8"))
        self.lines.append(line)
        self.total += size
        self.kept += size
        while self.kept > self.limit and len(self.lines) > 1:
            self.kept -= len(self.lines.popleft().encode("utf-8"))

    def write(self, path: str) -> Dict[str, Any]:
        """The kept lines to `path`; what result.verbose_log records of them."""
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(self.lines)
        return {"state": "done", "file": path, "bytes": self.total, "kept": self.kept}


class LogSink:
    """Where the process's one TensorRT logger writes: the request being run and its log.jsonl, or, during a verbose
    build, only the verbose text."""

    def __init__(self) -> None:
        self.result: Optional[Result] = None
        self.stream: Any = None
        self.verbose: Optional[VerboseText] = None

    def attach(self, result: Result) -> None:
        self.result = result
        self.stream = open(os.path.join(result.out, "log.jsonl"), "a")

    def detach(self) -> None:
        if self.stream is not None:
            self.stream.close()
        self.result, self.stream = None, None


def make_logger(trt: Any, sink: LogSink) -> Any:
    """A logger that keeps INFO and worse (and the VERBOSE layer listing) and appends each to log.jsonl at once."""
    limit = tinspect.severity_rank(MIN_SEVERITY)
    named: Dict[Any, tuple] = {}  # severity -> (its name, whether it is worse than the limit): a build logs hundreds

    class Logger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            try:  # each message brings a new enum object: its int is the cheap key (its hash and == are two calls)
                key = int(severity)
            except (TypeError, ValueError):
                key = severity
            known = named.get(key)
            if known is None:
                name = tinspect.enum_name(severity)
                known = named[key] = (name, tinspect.severity_rank(name) > limit)
            name, below = known
            if sink.verbose is not None:
                sink.verbose.add(name, str(msg))
                return
            if sink.result is None:
                return
            if below and not str(msg).startswith(KEEP_VERBOSE):
                return
            entry = {"severity": name, "msg": str(msg)}
            sink.result.data["log"].append(entry)
            sink.stream.write(json.dumps(entry) + "\n")
            sink.stream.flush()

    return Logger()


class Session:
    """What one worker process keeps between requests: the module, its capabilities, logger, plugins."""

    def __init__(self, module: str = "tensorrt") -> None:
        self.trt = importlib.import_module(module)
        self.caps = capabilities.detect(self.trt, module)
        self.sink = LogSink()
        self.logger = make_logger(self.trt, self.sink)
        self.plugins: Optional[Dict[str, str]] = None  # ours, once registered
        self.numpy = numpy_version()  # once: the metadata lookup takes about a millisecond


def run_request(path: str, session: Optional[Session] = None, module: str = "tensorrt") -> str:
    """Run every stage for one request; returns the result.json path."""
    with open(path) as f:
        req = json.load(f)
    result = Result(req["out"])
    os.makedirs(result.out, exist_ok=True)
    result.data["versions"] = {"python": platform.python_version()}
    try:
        session = session or Session(module)
    except Exception as e:
        result.data["error"] = f"import failed: {type(e).__name__}: {e}"
        result.data["cannot_run"] = f"{module} could not be imported ({type(e).__name__}: {e})"  # nothing was tried
        return result.write()
    trt, caps, logger = session.trt, session.caps, session.logger
    machine = req.get("gpu") or {}
    if module == "tensorrt" and not machine.get("present", True) and not getattr(trt, "__qdq_stand_in__", ""):
        result.data["cannot_run"] = f"{machine.get('reason') or gpu.NO_GPU} on this machine: TensorRT builds and " \
            "runs on an NVIDIA GPU"  # a stand-in is not TensorRT and needs none: its plumbing tests run anywhere
        return result.write()
    build = importlib.import_module("qdq_trt.build")
    execute = importlib.import_module("qdq_trt.execute")
    result.data["versions"].update({caps["module"]: trt.__version__, "numpy": session.numpy})
    result.data["options"]["api"] = caps
    opts = req.get("trt") or {}
    session.sink.attach(result)
    try:
        try:
            importlib.import_module("qdq_trt.plugins").prepare(session, caps, opts, result, gpu.CudaDriver())
        except Exception as e:
            result.note(f"plugin registration failed: {type(e).__name__}: {e}")
        result.write()
        if caps["implicit_int8"] and ("calibrator" in opts or opts.get("int8_ranges")):
            result.data["options"]["not_applicable"] = caps["implicit_int8"]
            return result.write()
        loaded = timed(result, "load", lambda: build.stage_load(trt, caps, req, result, logger))
        if loaded is None:
            return verbose_build(session, req, result)
        serialized = timed(result, "build", lambda: build.stage_build(trt, caps, loaded, req, result))
        if serialized is None:
            if result.data.get("not_applicable"):
                result.data["options"]["not_applicable"] = result.data.pop("not_applicable")
                result.data["error"] = ""
                return result.write()
            return verbose_build(session, req, result)
        engine = execute.stage_engine(trt, caps, serialized, req, result, logger)
        execute.layer_evidence(caps, req, result)
        if engine is None:
            return result.write()
        outputs = timed(result, "run", lambda: execute.stage_run(trt, caps, engine, req, result))
        if outputs is not None:
            # Positional arrays plus a name list: an output called "file" would collide with savez's own argument.
            result.data["outputs"] = os.path.join(result.out, "outputs.npz")
            result.data["output_names"] = list(outputs)
            importlib.import_module("numpy").savez(result.data["outputs"], *outputs.values())
        return result.write()
    finally:
        session.sink.detach()


def numpy_version() -> str:
    """numpy's version in this interpreter without importing numpy where it is not imported yet (about 0.1 s of a
    worker's start, and a TensorRT-RTX build on a machine without its GPU never uses numpy): its distribution's
    metadata, else numpy itself (which raises where numpy is missing)."""
    if "numpy" not in sys.modules:
        found = dist_info_version("numpy")
        if found:
            return found
        try:
            from importlib import metadata

            return metadata.version("numpy")
        except Exception:  # no distribution metadata: numpy says, or its ImportError does
            pass
    return importlib.import_module("numpy").__version__


def dist_info_version(name: str) -> str:
    """The Version of the first `<name>-*.dist-info` on sys.path, as importlib.metadata finds it, read without
    importing importlib.metadata (its email parser costs a worker about 50 ms of CPU at every start); "" where the
    first path entry that has the distribution holds anything else (an .egg-info, two of them), for importlib.metadata
    to read."""
    prefix = name.lower() + "-"
    for entry in sys.path:
        try:
            names = [n for n in os.listdir(entry or os.curdir) if n.lower().startswith(prefix)
                     and n.lower().endswith((".dist-info", ".egg-info", ".egg"))]
        except OSError:
            continue
        if not names:
            continue
        if len(names) != 1 or not names[0].endswith(".dist-info"):
            return ""
        try:
            with open(os.path.join(entry or os.curdir, names[0], "METADATA"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line[len("Version:"):].strip()
                    if not line.strip():  # the headers end at the first empty line
                        break
        except OSError:
            pass
        return ""
    return ""


def wants_verbose(req: Dict[str, Any], result: Result) -> bool:
    """A failure at load or build on a GPU run, or a request that asks (repro.py --verbose)."""
    failed = bool(result.data["error"]) and result.data["stage"] in ("", "load")
    asked = bool((req.get("trt") or {}).get("verbose_log"))
    return asked or (failed and bool((req.get("gpu") or {}).get("present")))


def verbose_build(session: Session, req: Dict[str, Any], result: Result) -> str:
    """Parse and build once more with every logger message kept (wants_verbose); the first attempt's fields stay."""
    if not wants_verbose(req, result):
        return result.write()
    build = importlib.import_module("qdq_trt.build")
    result.data["verbose_log"] = {"state": "started"}
    result.write()
    again = Result(os.path.join(result.out, "verbose"))
    os.makedirs(again.out, exist_ok=True)
    again.data["versions"] = dict(result.data["versions"])
    quiet = dict(req, trt=dict(req.get("trt") or {}, timing_cache=""))  # the same build, without a cache's shortcut
    text = VerboseText()
    session.sink.verbose = text
    try:
        loaded = build.stage_load(session.trt, session.caps, quiet, again, session.logger)
        if loaded is not None:
            build.stage_build(session.trt, session.caps, loaded, quiet, again)
    except Exception as e:  # as a stage: the exception ends the log, the first attempt stays the result
        text.add("ERROR", f"verbose build: {type(e).__name__}: {e}")
    finally:
        session.sink.verbose = None
    result.data["verbose_log"] = text.write(os.path.join(result.out, VERBOSE_LOG))
    return result.write()


def serve(module: str = "tensorrt") -> int:
    """Answer request paths read from stdin, one per line, with RESULT_MARK + result path on stdout.

    One process serves many cells, so the module is imported and CUDA set up once; the adapter starts
    a fresh process after a crash. Anything else written to stdout (by native code) goes to stderr.
    """
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    session: Optional[Session] = None
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        if session is None:
            try:
                session = Session(module)
            except Exception:  # run_request reports the import failure in the result
                session = None
            lifeline.few_collections()
        out = run_request(path, session, module)
        proto.write(RESULT_MARK + out + "\n")
        proto.flush()
    return 0


def timed(result: Result, stage: str, fn: Any) -> Any:
    """Run one stage; on success mark it reached, on an exception record it as the stage's error."""
    start = time.perf_counter()
    try:
        value = fn()
    except Exception as e:
        result.data["error"] = f"{stage}: {type(e).__name__}: {e}"
        result.data["traceback"] = traceback.format_exc()
        value = None
    result.data["timings"][stage] = round(time.perf_counter() - start, 4)
    if value is not None:
        result.data["stage"] = stage
    result.write()
    return value


def probe(module: str = "tensorrt") -> Dict[str, Any]:
    """Versions of Python, numpy and the module in this interpreter, its capabilities, and its GPU."""
    info: Dict[str, Any] = {"python": platform.python_version(), "executable": sys.executable, "module": module}
    try:
        import numpy as np

        info["numpy"] = np.__version__
    except Exception as e:
        info["numpy_error"] = f"{type(e).__name__}: {e}"
    try:
        trt = importlib.import_module(module)
        info["tensorrt"] = trt.__version__
        info["origin"] = os.path.abspath(getattr(trt, "__file__", None) or "")  # which install (a reinstall shows)
        info["stand_in"] = str(getattr(trt, "__qdq_stand_in__", "") or "")  # a test double says so
        info["capabilities"] = capabilities.detect(trt, module)
        info["library"] = loaded_library("libtensorrt_rtx" if module == "tensorrt_rtx" else "libnvinfer") or ""
    except Exception as e:
        info["tensorrt_error"] = f"{type(e).__name__}: {e}"
    g = gpu.detect()
    info["gpu"] = dict(g.detail(), label=g.label, present=g.present, reason=g.reason)
    info["os"] = operating_system()
    info["container"] = container()
    info["cudnn"] = cudnn_status()
    info["cublas"] = cublas_status()
    if os.environ.get("QDQ_GPU_PAYLOAD"):  # tools/gpu-payload's launcher: what the payload pinned
        try:
            with open(os.environ["QDQ_GPU_PAYLOAD"]) as f:
                info["payload"] = json.load(f)["tensorrt"][info.get("tensorrt", "")]
        except (OSError, ValueError, KeyError) as e:
            info["payload"] = {"error": f"{type(e).__name__}: {e}"}
    return info


def operating_system() -> str:
    """"Ubuntu 22.04.4 LTS (Linux 5.15.0-105-generic)": /etc/os-release's PRETTY_NAME and the kernel release."""
    kernel = f"{platform.system()} {platform.release()}"
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path, encoding="utf-8") as f:
                fields = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        except OSError:
            continue
        name = fields.get("PRETTY_NAME", "").strip().strip('"')
        if name:
            return f"{name} ({kernel})"
    return kernel


# What an NGC container sets (NVIDIA_BUILD_ID, and the release of its framework), in the order they are said.
CONTAINER_ENV = ("NVIDIA_PYTORCH_VERSION", "TENSORRT_VERSION", "NVIDIA_TENSORRT_VERSION", "NVIDIA_BUILD_ID")


def container() -> str:
    """"none" on bare metal; "docker", "podman" or "container" (the kind), with NGC's version variables where set."""
    kind = ""
    if os.path.exists("/.dockerenv"):
        kind = "docker"
    elif os.path.exists("/run/.containerenv"):
        kind = "podman"
    elif os.environ.get("container"):
        kind = os.environ["container"]
    ngc = [f"{k}={os.environ[k]}" for k in CONTAINER_ENV if os.environ.get(k)]
    if ngc:
        return f"{kind or 'container'} (NGC: {', '.join(ngc)})"
    return kind or "none"


def loaded_library(stem: str) -> Optional[str]:
    """The path of `stem`.so.N already mapped into this process (TensorRT's bindings load cuBLAS/cuDNN), or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if os.path.basename(path).startswith(stem + ".so."):
                    return path
    except OSError:
        pass
    return None


def cublas_status() -> str:
    """The cuBLAS that TensorRT links: "libcublas.so.11 11.11.3", "stub (...)" or "missing"."""
    import ctypes

    for name in tuple(filter(None, [loaded_library("libcublas")])) + ("libcublas.so.12", "libcublas.so.11"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        label = os.path.basename(name)
        try:
            get = lib.cublasGetProperty
        except AttributeError:
            return f"stub ({label} has no cublasGetProperty)"
        parts = []
        for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            value = ctypes.c_int(-1)
            get(prop, ctypes.byref(value))
            parts.append(str(value.value))
        return f"{label} {'.'.join(parts)}"
    return "missing"


def cudnn_status() -> str:
    """The cuDNN that TensorRT's plugins would call: its version, "stub" (a library that only lets them load),
    or why none."""
    import ctypes

    for name in tuple(filter(None, [loaded_library("libcudnn")])) + ("libcudnn.so.8", "libcudnn.so.9", "libcudnn.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        name = os.path.basename(name)
        try:
            version = int(lib.cudnnGetVersion())
        except AttributeError:
            return f"stub ({name} has no cudnnGetVersion)"
        return f"stub ({name} reports version {version})" if version < 1000 else f"{name} {version}"
    return "missing"


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    module = os.environ.get("QDQ_TRT_MODULE") or "tensorrt"
    if args[:1] == ["--module"] and len(args) > 1:
        module, args = args[1], args[2:]
    if module not in MODULES:
        sys.stderr.write(f"worker.py: --module must be one of {', '.join(MODULES)}, not {module!r}\n")
        return 2
    if args == ["--probe"]:
        print(json.dumps(probe(module)))
        return 0
    if args == ["--serve"]:
        return serve(module)
    if len(args) != 1:
        sys.stderr.write("usage: worker.py [--module M] request.json | --serve | --probe\n")
        return 2
    print(run_request(args[0], module=module))
    return 0


if __name__ == "__main__":
    lifeline.keep()  # dies with the adapter's process, even mid-build: it runs in a session of its own
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: TensorRT objects destroyed after the CUDA context can crash the
    # process once every result is already written, which would read as a crash of the cell.
    os._exit(code)
