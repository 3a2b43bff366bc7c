"""Run one reproducer on TensorRT in its own process, so that a crash costs one cell.

    <python with tensorrt> engines/tensorrt/worker.py request.json   # prints the result.json path
    <python with tensorrt> engines/tensorrt/worker.py --serve        # many requests, one path per stdin line
    <python with tensorrt> engines/tensorrt/worker.py --probe        # prints versions and GPU as JSON

Runs inside the TensorRT interpreter: Python 3.9+, standard library, numpy and tensorrt only (plus
its sibling files inspect.py, gpu.py and, on TensorRT >= 10, plugins.py, loaded by path). Works
across TensorRT 8.5 .. 11.x by looking enums up by name; on 11.x (NOT VERIFIED ON REAL TENSORRT) every
network is strongly typed and no API that 11.0 removed is touched (see removed_in_11). Stages: "load" (ONNX parsed), "build"
(engine built and deserialized), "run" (executed with device memory from the CUDA driver API).
Each stage's exception becomes that stage's error; result.json is rewritten after every stage, and
every logger message is appended to log.jsonl as it comes, so a crash still leaves evidence.

Request JSON: {"model", "inputs" (npz path), "out" (folder), "target_nodes", "trt": {"int8" (default
true), "fp16", "strongly_typed", "parser_flags" (OnnxParserFlag names; "-NAME" clears one),
"plugins" (plugin names the model needs), "plugin_api", "workspace_mb", "tactics" ("default": TensorRT's
default tactic sources; "tensorrt-only": no cuBLAS/cuBLASLt/cuDNN)}}.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Python puts this folder first on sys.path; its inspect.py would shadow the standard library's.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]

import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from typing import Any, Dict, List, Optional  # noqa: E402

RESULT_MARK = "QDQ-RESULT "  # serve mode: the line that answers one request
MIN_SEVERITY = "INFO"  # recorded; the adapter keeps WARNING and worse for the cell's log
DEFAULT_WORKSPACE_MB = 1024
# NVIDIA, "Migrating from TensorRT 10.x to 11.x": weak typing, INT8 calibration and dynamic ranges are gone.
MIGRATION_11 = "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html"


def load_sibling(name: str) -> Any:
    """Import a file next to this one under a private module name."""
    spec = importlib.util.spec_from_file_location(f"qdq_trt_{name}", os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tinspect = load_sibling("inspect")
gpu = load_sibling("gpu")


class Result:
    """The result being gathered; written to out/result.json after every stage."""

    def __init__(self, out: str) -> None:
        self.out = out
        self.data: Dict[str, Any] = {
            "stage": "", "error": "", "log": [], "parser_errors": [], "network_layers": [],
            "network_dtypes": {}, "inspector": {}, "precision": {}, "options": {"notes": []},
            "timings": {}, "versions": {}, "outputs": "",
        }

    def note(self, text: str) -> None:
        self.data["options"]["notes"].append(text)

    def write(self) -> str:
        path = os.path.join(self.out, "result.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.data, f, indent=1, default=str)
        os.replace(path + ".tmp", path)
        return path


class LogSink:
    """Where the process's one TensorRT logger writes: the request being run, and its log.jsonl."""

    def __init__(self) -> None:
        self.result: Optional[Result] = None
        self.stream: Any = None

    def attach(self, result: Result) -> None:
        self.result = result
        self.stream = open(os.path.join(result.out, "log.jsonl"), "a")

    def detach(self) -> None:
        if self.stream is not None:
            self.stream.close()
        self.result, self.stream = None, None


def make_logger(trt: Any, sink: LogSink) -> Any:
    """A TensorRT logger that keeps every message in the current result and appends it to log.jsonl at once."""
    limit = tinspect.severity_rank(MIN_SEVERITY)

    class Logger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            name = tinspect.enum_name(severity)
            if sink.result is None or tinspect.severity_rank(name) > limit:
                return
            entry = {"severity": name, "msg": str(msg)}
            sink.result.data["log"].append(entry)
            sink.stream.write(json.dumps(entry) + "\n")
            sink.stream.flush()

    return Logger()


class Session:
    """What one worker process keeps between requests: TensorRT, its logger, registered plugins."""

    def __init__(self) -> None:
        import tensorrt as trt

        self.trt = trt
        self.sink = LogSink()
        self.logger = make_logger(trt, self.sink)
        self.plugins: Optional[Dict[str, str]] = None  # ours, once registered


def trt_major(trt: Any) -> int:
    version = tinspect.parse_version(getattr(trt, "__version__", "0"))
    return version[0] if version else 0


def stage_load(trt: Any, req: Dict[str, Any], result: Result, logger: Any) -> Any:
    """Parse the ONNX model; returns (builder, network, parser) or None after a parse failure."""
    opts = req.get("trt") or {}
    options = result.data["options"]
    builder = trt.Builder(logger)
    flags, used = 0, []
    explicit = tinspect.lookup_flag(trt.NetworkDefinitionCreationFlag, "EXPLICIT_BATCH")
    if explicit is not None and trt_major(trt) < 10:
        flags |= 1 << int(explicit)
        used.append("EXPLICIT_BATCH")
    options["strongly_typed"] = False
    if trt_major(trt) >= 11:  # STRONGLY_TYPED is deprecated there: always on. NOT VERIFIED ON REAL TENSORRT
        options["strongly_typed"] = True
        result.note("TensorRT 11 networks are always strongly typed; no network flag set")
    elif opts.get("strongly_typed"):  # exists from TensorRT 9: NOT VERIFIED ON REAL TENSORRT (8.5/8.6 lack it)
        strong = tinspect.lookup_flag(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED")
        if strong is None:
            result.note("network flag STRONGLY_TYPED not in this TensorRT; built weakly typed")
        else:
            flags |= 1 << int(strong)
            used.append("STRONGLY_TYPED")
            options["strongly_typed"] = True
    options["network_flags"] = used
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    set_parser_flags(trt, parser, opts.get("parser_flags") or [], result)
    ok = parser.parse_from_file(str(req["model"]))
    result.data["parser_errors"] = parser_errors(parser)
    result.data["network_layers"] = network_layers(network)
    result.data["network_dtypes"] = tinspect.network_dtypes(result.data["network_layers"])
    if not ok:
        descs = [e["desc"] for e in result.data["parser_errors"]]
        result.data["error"] = "ONNX parse failed: " + ("; ".join(descs) or "no parser error given")
        return None
    return builder, network, parser


def set_parser_flags(trt: Any, parser: Any, names: List[str], result: Result) -> None:
    """Set (or, for "-NAME", clear) OnnxParserFlag members by name; record what the parser ends with."""
    enum = getattr(trt, "OnnxParserFlag", None)
    applied = []
    for raw in names:
        name = raw.lstrip("-")
        member = tinspect.lookup_flag(enum, name)
        if member is None:
            result.note(f"parser flag {name} not in this TensorRT")
            continue
        (parser.clear_flag if raw.startswith("-") else parser.set_flag)(member)
        applied.append(raw)
    result.data["options"]["parser_flags"] = applied
    members = tinspect.enum_members(enum)
    if members and hasattr(parser, "get_flag"):
        result.data["options"]["parser_flags_effective"] = sorted(n for n, m in members.items() if parser.get_flag(m))


def parser_errors(parser: Any) -> List[Dict[str, Any]]:
    """Every parser error with the fields this TensorRT version offers."""
    errors = []
    for i in range(parser.num_errors):
        e = parser.get_error(i)
        entry: Dict[str, Any] = {"desc": str(e.desc())}
        for field in ("code", "node", "node_name", "node_operator", "file", "line", "func"):
            fn = getattr(e, field, None)
            if callable(fn):
                try:
                    entry[field] = tinspect.enum_name(fn()) if field == "code" else fn()
                except Exception as exc:  # a field this version declares but cannot give
                    entry[field] = f"<{exc}>"
        errors.append(entry)
    return errors


def network_layers(network: Any) -> List[List[str]]:
    """(layer name, layer type, output dtype, output tensor) for every layer output, before the build."""
    rows = []
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        for j in range(layer.num_outputs):
            tensor = layer.get_output(j)
            rows.append([layer.name, tinspect.enum_name(layer.type), tinspect.enum_name(tensor.dtype), tensor.name])
    return rows


def stage_build(trt: Any, loaded: Any, req: Dict[str, Any], result: Result, logger: Any) -> Any:
    """Build, deserialize and inspect the engine; returns the engine or None."""
    builder, network, _ = loaded
    config = configure(trt, builder, req.get("trt") or {}, result)
    if (req.get("trt") or {}).get("int8_ranges") == "trtexec":
        set_dummy_ranges(trt, network, result)
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        result.data["error"] = "build_serialized_network returned None" + last_error(result)
        return None
    engine = trt.Runtime(logger).deserialize_cuda_engine(serialized)
    if engine is None:
        result.data["error"] = "deserialize_cuda_engine returned None" + last_error(result)
        return None
    try:
        text = engine.create_engine_inspector().get_engine_information(trt.LayerInformationFormat.JSON)
        result.data["inspector"] = json.loads(text, strict=False)  # 8.6 puts control characters in strings
        result.data["precision"] = tinspect.layer_precision(result.data["inspector"], req.get("target_nodes") or [])
    except Exception as e:  # the inspector is evidence, not a stage
        result.note(f"engine inspector failed: {type(e).__name__}: {e}")
    return engine


def configure(trt: Any, builder: Any, opts: Dict[str, Any], result: Result) -> Any:
    """A builder config: precision flags, DETAILED profiling, TensorRT's own tactics, a modest workspace."""
    options = result.data["options"]
    config = builder.create_builder_config()
    verbosity = tinspect.lookup_flag(getattr(trt, "ProfilingVerbosity", None), "DETAILED", "VERBOSE")
    if verbosity is not None:
        config.profiling_verbosity = verbosity
        options["profiling_verbosity"] = tinspect.enum_name(verbosity)
    flags = []
    for key, name in (("int8", "INT8"), ("fp16", "FP16")):
        wanted = opts.get(key, key == "int8")
        options[key] = False
        if not wanted:
            continue
        if options.get("strongly_typed"):
            result.note(f"BuilderFlag.{name} not set: a strongly typed network takes its types from the model")
            continue
        member = tinspect.lookup_flag(trt.BuilderFlag, name)
        if member is None:
            result.note(f"builder flag {name} not in this TensorRT")
            continue
        config.set_flag(member)
        options[key] = True
        flags.append(name)
    options["builder_flags"] = flags
    # "default": TensorRT's own choice (cuBLAS/cuDNN included); "tensorrt-only": its own kernels only.
    tactics = opts.get("tactics") or "default"
    if tactics == "tensorrt-only":
        mask, sources = tinspect.tactic_sources_mask(trt)
        if sources and hasattr(config, "set_tactic_sources"):
            config.set_tactic_sources(mask)
    else:
        mask = config.get_tactic_sources() if hasattr(config, "get_tactic_sources") else None
        sources = tinspect.tactic_source_names(trt, mask)
    options["tactics"] = tactics
    options["tactic_sources"] = sources
    workspace = int(opts.get("workspace_mb", DEFAULT_WORKSPACE_MB)) << 20
    pool = tinspect.lookup_flag(getattr(trt, "MemoryPoolType", None), "WORKSPACE")
    if pool is not None and hasattr(config, "set_memory_pool_limit"):
        config.set_memory_pool_limit(pool, workspace)
    else:
        config.max_workspace_size = workspace
    options["workspace_bytes"] = workspace
    return config


def set_dummy_ranges(trt: Any, network: Any, result: Result, in_range: float = 2.0, out_range: float = 4.0) -> None:
    """What `trtexec --int8` does without a calibration cache: a dummy dynamic range on every tensor.

    Layer inputs without a range get +-2 (+-4 into a concatenation), layer outputs +-4 (+-2 out of a
    pooling layer), so that an INT8 build needs no calibrator.
    """
    concat = tinspect.lookup_flag(trt.LayerType, "CONCATENATION")
    pooling = tinspect.lookup_flag(trt.LayerType, "POOLING")
    count, refused = 0, 0
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        tensors = [(layer.get_input(j), out_range if layer.type == concat else in_range) for j in range(layer.num_inputs)]
        tensors += [(layer.get_output(j), in_range if layer.type == pooling else out_range)
                    for j in range(layer.num_outputs)]
        for tensor, r in tensors:
            if tensor is None or getattr(tensor, "dynamic_range", None) is not None:
                continue
            ok = tensor.set_dynamic_range(-r, r)
            count, refused = count + 1, refused + (ok is False)
    result.data["options"]["int8_ranges"] = f"trtexec dummy ranges on {count} tensors ({refused} refused)"


def last_error(result: Result) -> str:
    errors = [m["msg"] for m in result.data["log"] if m["severity"] in ("ERROR", "INTERNAL_ERROR")]
    return f": {errors[-1]}" if errors else ""


def stage_run(trt: Any, engine: Any, req: Dict[str, Any], result: Result) -> Dict[str, Any]:
    """Execute once with the bundle's inputs; returns outputs by name."""
    import numpy as np

    with np.load(req["inputs"]) as f:
        inputs = {k: f[k] for k in f.files}
    cuda = gpu.CudaDriver()
    cuda.init()
    cuda.use_primary_context(cuda.device(0))
    context = engine.create_execution_context()
    if context is None:
        raise RuntimeError("create_execution_context returned None" + last_error(result))
    if trt_major(trt) < 10:  # num_bindings and the bindings API went in 10.0
        result.data["options"]["io_api"] = "bindings"
        return run_bindings(engine, context, inputs, cuda, result)
    result.data["options"]["io_api"] = "tensors"
    return run_tensors(trt, engine, context, inputs, cuda, result)


def host_input(inputs: Dict[str, Any], name: str, trt_dtype: Any) -> Any:
    import numpy as np

    if name not in inputs:
        raise KeyError(f"engine input {name!r} is not in inputs.npz (it has {sorted(inputs)})")
    return np.ascontiguousarray(inputs[name], dtype=tinspect.numpy_dtype_name(trt_dtype))


def run_bindings(engine: Any, context: Any, inputs: Dict[str, Any], cuda: Any, result: Result) -> Dict[str, Any]:
    """TensorRT 8.x: bindings API and execute_v2."""
    import numpy as np

    n = engine.num_bindings
    ptrs: List[int] = [0] * n
    hosts: Dict[int, Any] = {}
    try:
        for i in range(n):
            if engine.binding_is_input(i):
                arr = host_input(inputs, engine.get_binding_name(i), engine.get_binding_dtype(i))
                if -1 in tuple(engine.get_binding_shape(i)):
                    context.set_binding_shape(i, arr.shape)
                ptrs[i] = cuda.alloc(arr.nbytes)
                cuda.to_device(ptrs[i], arr)
        for i in range(n):
            if not engine.binding_is_input(i):
                dtype = tinspect.numpy_dtype_name(engine.get_binding_dtype(i))
                hosts[i] = np.empty(tuple(context.get_binding_shape(i)), dtype=dtype)
                ptrs[i] = cuda.alloc(hosts[i].nbytes)
        if not context.execute_v2(ptrs):
            raise RuntimeError("execute_v2 returned False" + last_error(result))
        cuda.synchronize()
        for i, arr in hosts.items():
            cuda.from_device(arr, ptrs[i])
        return {engine.get_binding_name(i): arr for i, arr in hosts.items()}
    finally:
        for p in ptrs:
            if p:
                cuda.free(p)


def run_tensors(
    trt: Any, engine: Any, context: Any, inputs: Dict[str, Any], cuda: Any, result: Result
) -> Dict[str, Any]:
    """TensorRT 10.x: named I/O tensors and execute_async_v3 on a stream of our own. NOT VERIFIED ON REAL TENSORRT."""
    import numpy as np

    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    is_input = {n: engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT for n in names}
    ptrs: Dict[str, int] = {}
    hosts: Dict[str, Any] = {}
    stream = 0
    try:
        for name in [n for n in names if is_input[n]]:
            arr = host_input(inputs, name, engine.get_tensor_dtype(name))
            if -1 in tuple(engine.get_tensor_shape(name)):
                context.set_input_shape(name, arr.shape)
            ptrs[name] = cuda.alloc(arr.nbytes)
            cuda.to_device(ptrs[name], arr)
            context.set_tensor_address(name, ptrs[name])
        for name in [n for n in names if not is_input[n]]:
            dtype = tinspect.numpy_dtype_name(engine.get_tensor_dtype(name))
            hosts[name] = np.empty(tuple(context.get_tensor_shape(name)), dtype=dtype)
            ptrs[name] = cuda.alloc(hosts[name].nbytes)
            context.set_tensor_address(name, ptrs[name])
        stream = cuda.stream()
        if not context.execute_async_v3(stream):
            raise RuntimeError("execute_async_v3 returned False" + last_error(result))
        cuda.stream_synchronize(stream)
        for name, arr in hosts.items():
            cuda.from_device(arr, ptrs[name])
        return hosts
    finally:
        for p in ptrs.values():
            cuda.free(p)
        if stream:
            cuda.stream_destroy(stream)


def prepare_plugins(session: Session, opts: Dict[str, Any], result: Result) -> None:
    """Register TensorRT's own plugins and, on TensorRT >= 10, ours (once a process); note any still missing."""
    trt = session.trt
    options = result.data["options"]
    wanted = list(opts.get("plugins") or [])
    namespace = opts.get("plugin_namespace", "")
    options.update(plugins=wanted, plugin_api=opts.get("plugin_api", ""))
    notes: List[str] = []
    if session.plugins is None:
        session.plugins = {}
        init = getattr(trt, "init_libnvinfer_plugins", None)
        if init is not None:
            init(session.logger, "")
        if trt_major(trt) >= 10:
            try:
                session.plugins = load_sibling("plugins").register(trt, gpu.CudaDriver())
            except Exception as e:  # the parse that follows shows the effect; this says why
                session.plugins = {"error": f"our Python plugins failed to register: {type(e).__name__}: {e}"}
    ours = session.plugins
    if "error" in ours:
        notes.append(ours["error"])
    elif ours:
        options["plugins_registered"] = ours
    if any("::" in p for p in wanted) and trt_major(trt) < 10:  # "qdq_matrix::..." are ours; bare names TensorRT's
        notes.append(f"Python plugins need TensorRT >= 10; this is {trt.__version__}")
    builtin = [p for p in wanted if "::" not in p and not namespace]
    if builtin:
        options["plugin_creators"] = creator_versions(trt, builtin)
    have = registered_plugins(trt)
    have.update(name for name, status in ours.items() if status == "registered")
    full = [p if "::" in p or not namespace else f"{namespace}::{p}" for p in wanted]
    missing = [p for p in full if p not in have]
    if missing:
        notes.insert(0, f"not provided by this TensorRT: {', '.join(missing)}")
    if missing or notes:
        options["plugins_missing"] = "; ".join(notes)


def removed_in_11(trt: Any, opts: Dict[str, Any]) -> str:
    """Why the request's documented path needs an API TensorRT 11.0 removed, or "". NOT VERIFIED ON REAL TENSORRT."""
    if trt_major(trt) < 11:
        return ""
    if "calibrator" in opts or opts.get("int8_ranges"):  # implicit INT8: BuilderFlag.INT8 + calibrator/ranges
        return f"INT8 calibration removed in TensorRT 11.0 ({MIGRATION_11})"
    return ""


def creator_versions(trt: Any, names: List[str]) -> Dict[str, List[str]]:
    """The versions the registry holds of each plugin name (TensorRT's own share a name across versions)."""
    registry = trt.get_plugin_registry()
    creators = getattr(registry, "all_creators", None)
    if creators is None:
        creators = getattr(registry, "plugin_creator_list", [])
    found: Dict[str, List[str]] = {n: [] for n in names}
    for c in creators:
        if getattr(c, "name", "") in found:
            found[c.name].append(str(getattr(c, "plugin_version", "")))
    return {n: sorted(v) for n, v in found.items()}


def registered_plugins(trt: Any) -> set:
    """Plugin names in the registry, bare and as "namespace::name"."""
    registry = trt.get_plugin_registry()
    creators = getattr(registry, "all_creators", None)
    if creators is None:
        creators = getattr(registry, "plugin_creator_list", [])
    names = set()
    for c in creators:
        name, ns = getattr(c, "name", ""), getattr(c, "plugin_namespace", "")
        names.add(name)
        if ns:
            names.add(f"{ns}::{name}")
    return names


def run_request(path: str, session: Optional[Session] = None) -> str:
    """Run every stage for one request; returns the result.json path."""
    with open(path) as f:
        req = json.load(f)
    result = Result(req["out"])
    os.makedirs(result.out, exist_ok=True)
    result.data["versions"] = {"python": platform.python_version()}
    try:
        import numpy as np

        session = session or Session()
    except Exception as e:
        result.data["error"] = f"import failed: {type(e).__name__}: {e}"
        return result.write()
    trt, logger = session.trt, session.logger
    result.data["versions"].update(tensorrt=trt.__version__, numpy=np.__version__)
    session.sink.attach(result)
    try:
        try:
            prepare_plugins(session, req.get("trt") or {}, result)
        except Exception as e:
            result.note(f"plugin registration failed: {type(e).__name__}: {e}")
        result.write()
        removed = removed_in_11(trt, req.get("trt") or {})
        if removed:
            result.data["options"]["not_applicable"] = removed
            return result.write()
        loaded = timed(result, "load", lambda: stage_load(trt, req, result, logger))
        if loaded is None:
            return result.write()
        engine = timed(result, "build", lambda: stage_build(trt, loaded, req, result, logger))
        if engine is None:
            return result.write()
        outputs = timed(result, "run", lambda: stage_run(trt, engine, req, result))
        if outputs is not None:
            # Positional arrays plus a name list: an output called "file" would collide with savez's own argument.
            result.data["outputs"] = os.path.join(result.out, "outputs.npz")
            result.data["output_names"] = list(outputs)
            np.savez(result.data["outputs"], *outputs.values())
        return result.write()
    finally:
        session.sink.detach()


def serve() -> int:
    """Answer request paths read from stdin, one per line, with RESULT_MARK + result path on stdout.

    One process serves many cells, so TensorRT is imported and CUDA set up once; the adapter starts
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
                session = Session()
            except Exception:  # run_request reports the import failure in the result
                session = None
        out = run_request(path, session)
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


def probe() -> Dict[str, Any]:
    """Versions of Python, numpy and TensorRT in this interpreter, and its GPU."""
    info: Dict[str, Any] = {"python": platform.python_version(), "executable": sys.executable}
    try:
        import numpy as np

        info["numpy"] = np.__version__
    except Exception as e:
        info["numpy_error"] = f"{type(e).__name__}: {e}"
    try:
        import tensorrt as trt

        info["tensorrt"] = trt.__version__
        info["stand_in"] = str(getattr(trt, "__qdq_stand_in__", "") or "")  # a test double says so
    except Exception as e:
        info["tensorrt_error"] = f"{type(e).__name__}: {e}"
    g = gpu.detect()
    info["gpu"] = dict(g.detail(), label=g.label, present=g.present, reason=g.reason)
    info["cudnn"] = cudnn_status()
    info["cublas"] = cublas_status()
    if os.environ.get("QDQ_GPU_PAYLOAD"):  # tools/gpu-payload's launcher: what the payload pinned
        try:
            with open(os.environ["QDQ_GPU_PAYLOAD"]) as f:
                info["payload"] = json.load(f)["tensorrt"][info.get("tensorrt", "")]
        except (OSError, ValueError, KeyError) as e:
            info["payload"] = {"error": f"{type(e).__name__}: {e}"}
    return info


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
    """The cuDNN that TensorRT's plugins would call: its version, "stub" (a library that only lets them load), or why none."""
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
    args = sys.argv[1:] if argv is None else argv
    if args == ["--probe"]:
        print(json.dumps(probe()))
        return 0
    if args == ["--serve"]:
        return serve()
    if len(args) != 1:
        sys.stderr.write("usage: worker.py request.json | worker.py --serve | worker.py --probe\n")
        return 2
    print(run_request(args[0]))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: TensorRT objects destroyed after the CUDA context can crash the
    # process once every result is already written, which would read as a crash of the cell.
    os._exit(code)
