"""The worker's "load" and "build" stages: parse the ONNX model, configure, build a serialized plan.

Runs inside the TensorRT interpreter (standard library and the TensorRT-family module only). Every
choice follows the capability record (`capabilities.detect`), never a version number: network flags,
weak-typing precision flags, tactic sources, TensorRT-RTX's target architectures. The build stops at the
serialized plan; deserialization and inspection are the next stage (`execute.py`), which TensorRT-RTX
cannot reach on a machine without one of its GPUs.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import inspect as tinspect
from . import timing


def stage_load(trt: Any, caps: Dict[str, Any], req: Dict[str, Any], result: Any, logger: Any) -> Optional[tuple]:
    """Parse the ONNX model; returns (builder, network, parser) or None after a parse failure."""
    opts = req.get("trt") or {}
    options = result.data["options"]
    builder = trt.Builder(logger)
    flags, used = 0, []
    if caps["explicit_batch"]:
        flags |= 1 << int(tinspect.lookup_flag(trt.NetworkDefinitionCreationFlag, "EXPLICIT_BATCH"))
        used.append("EXPLICIT_BATCH")
    options["strongly_typed"] = False
    if caps["typing"] == "always strong":
        options["strongly_typed"] = True
        result.note(f"{caps['module']} {caps['version']} networks are always strongly typed; no network flag set")
    elif opts.get("strongly_typed"):
        if caps["typing"] == "weak":
            result.note("network flag STRONGLY_TYPED not in this TensorRT; built weakly typed")
        else:
            flags |= 1 << int(tinspect.lookup_flag(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED"))
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
        descs = [describe(e) for e in result.data["parser_errors"]]
        result.data["error"] = "ONNX parse failed: " + ("; ".join(descs) or "no parser error given")
        return None
    return builder, network, parser


def set_parser_flags(trt: Any, parser: Any, names: List[str], result: Any) -> None:
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


def describe(error: Dict[str, Any]) -> str:
    """A parser error as one text: its description, and the node and function where it adds something."""
    desc = str(error.get("desc", ""))
    node = error.get("node_name") or ""
    where = ", ".join(str(x) for x in (
        f"node {node}" + (f" ({error['node_operator']})" if error.get("node_operator") else "") if node else "",
        error.get("func") or "") if x and not str(x).startswith("<"))
    return f"{desc} [{where}]" if where and (node not in desc or len(desc) < 20) else desc


def network_layers(network: Any) -> List[List[str]]:
    """(layer name, layer type, output dtype, output tensor) for every layer output, before the build."""
    rows = []
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        for j in range(layer.num_outputs):
            tensor = layer.get_output(j)
            rows.append([layer.name, tinspect.enum_name(layer.type), tinspect.enum_name(tensor.dtype), tensor.name])
    return rows


def stage_build(trt: Any, caps: Dict[str, Any], loaded: tuple, req: Dict[str, Any], result: Any) -> Optional[Any]:
    """Configure and build the serialized plan; returns it, or None with the error recorded."""
    builder, network, _ = loaded
    opts = req.get("trt") or {}
    config = configure(trt, caps, builder, opts, result)
    if config is None:
        return None
    if opts.get("int8_ranges") == "trtexec":
        set_dummy_ranges(trt, network, result)
    if not add_profile(builder, network, config, req, result):
        return None
    cache = _timing_cache(caps, opts, config, result)
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        result.data["error"] = "build_serialized_network returned None" + last_error(result)
        return None
    result.data["plan_bytes"] = int(getattr(serialized, "nbytes", 0) or len(bytes(serialized)))
    if caps["aot"]:
        result.data["options"].update(plan_targets(serialized))
    if cache is not None:
        try:
            cache.save(config, result)
        except Exception as e:  # the plan is built; a cache that cannot be written costs time, not the cell
            result.note(f"timing cache: not saved ({type(e).__name__}: {e})")
    return serialized


def add_profile(builder: Any, network: Any, config: Any, req: Dict[str, Any], result: Any) -> bool:
    """An optimization profile for every dynamic network input: min, opt and max from the request's "profile",
    else the input's shape in inputs.npz. A static network gets none, so it builds exactly as without this.
    Recorded in options.profile; False with the error where an input has no shape to give."""
    dynamic = [network.get_input(i) for i in range(network.num_inputs)]
    dynamic = [t for t in dynamic if -1 in tuple(t.shape)]
    if not dynamic:
        return True
    given = req.get("profile") or {}
    arrays: Optional[Dict[str, List[int]]] = None
    profile = builder.create_optimization_profile()
    used: Dict[str, Dict[str, Any]] = {}
    for tensor in dynamic:
        entry = given.get(tensor.name)
        if entry is not None:
            shapes = [list(entry["min"]), list(entry["opt"]), list(entry["max"])]
            source = "request"
        else:
            arrays = arrays if arrays is not None else input_shapes(req)
            if tensor.name not in arrays:
                result.data["error"] = (f"input {tensor.name} has dynamic shape {list(tensor.shape)}, and neither the "
                                        "request's profile nor inputs.npz gives its shape")
                return False
            shapes, source = [arrays[tensor.name]] * 3, "inputs.npz"
        profile.set_shape(tensor.name, *shapes)
        used[tensor.name] = {"min": shapes[0], "opt": shapes[1], "max": shapes[2], "from": source}
    config.add_optimization_profile(profile)
    result.data["options"]["profile"] = used
    return True


def input_shapes(req: Dict[str, Any]) -> Dict[str, List[int]]:
    """The shape of each array in the request's inputs.npz."""
    import numpy as np

    with np.load(req["inputs"]) as f:
        return {k: [int(d) for d in f[k].shape] for k in f.files}


# TensorRT-RTX plans: a bit per target architecture in byte 32 of the 64-byte header (b"vtrt" first). Not
# documented: observed on 1.5-1.7, each single target setting its own bit (SM80 0x02 ... SM121 0x20; SM75
# 0x01) and the default build 0x7e, the documentation's "8.0, 8.6, 8.9, 12.0, and later".
_TARGET_BITS = (("SM75", 0x01), ("SM80", 0x02), ("SM86", 0x04), ("SM89", 0x08), ("SM120", 0x10), ("SM121", 0x20))


def plan_targets(serialized: Any) -> Dict[str, Any]:
    """The architectures a TensorRT-RTX plan says it targets, read from its header (undocumented)."""
    header = bytes(memoryview(serialized)[:64])
    if len(header) < 33 or header[:4] != b"vtrt":
        return {}
    mask = header[32]
    names = [name for name, bit in _TARGET_BITS if mask & bit]
    rest = mask & ~sum(bit for _, bit in _TARGET_BITS)
    if rest:
        names.append(f"bit {rest:#04x} (no ComputeCapability name)")
    return {"plan_targets": names, "plan_targets_from": "plan header byte 32 (undocumented; observed on 1.5-1.7)"}


def _timing_cache(caps: Dict[str, Any], opts: Dict[str, Any], config: Any, result: Any) -> Optional[Any]:
    """The shared timing cache of this version, GPU and tactic setting, where asked for and possible."""
    options = result.data["options"]
    path = opts.get("timing_cache") or ""
    options["timing_cache"] = "off"
    if not path:
        return None
    if caps["aot"]:  # TensorRT-RTX: a timing cache forces a GPU query, breaking CPU-only builds (its docs)
        result.note("timing cache: off for ahead-of-time builds")
        return None
    cache = timing.shared(path)
    if cache is None or not cache.attach(config, result):
        return None
    options["timing_cache"] = "shared"
    return cache


def configure(trt: Any, caps: Dict[str, Any], builder: Any, opts: Dict[str, Any], result: Any) -> Optional[Any]:
    """A builder config: DETAILED profiling, precision flags where weakly typed, tactic sources, workspace,
    and TensorRT-RTX's target architecture."""
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
        if name not in caps["precision_flags"]:
            result.note(f"builder flag {name} not in this TensorRT")
            continue
        config.set_flag(tinspect.lookup_flag(trt.BuilderFlag, name))
        options[key] = True
        flags.append(name)
    options["builder_flags"] = flags
    _tactics(trt, config, opts, options)
    workspace = int(opts["workspace_mb"]) << 20  # the engine's setting (core/engines.py), in every request
    pool = tinspect.lookup_flag(getattr(trt, "MemoryPoolType", None), "WORKSPACE")
    if pool is not None and hasattr(config, "set_memory_pool_limit"):
        config.set_memory_pool_limit(pool, workspace)
    else:
        config.max_workspace_size = workspace
    options["workspace_bytes"] = workspace
    if caps["compute_capabilities"]:
        return config if set_target(trt, config, str(opts.get("target") or "default"), result) else None
    return config


def _tactics(trt: Any, config: Any, opts: Dict[str, Any], options: Dict[str, Any]) -> None:
    """"default": TensorRT's own choice (cuBLAS/cuDNN included); "tensorrt-only": its own kernels only."""
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


def set_target(trt: Any, config: Any, target: str, result: Any) -> bool:
    """TensorRT-RTX: build for one GPU architecture ("SM86"), or leave the builder's own default set."""
    options = result.data["options"]
    options["target"] = target
    if target == "default":
        return True
    member = tinspect.lookup_flag(getattr(trt, "ComputeCapability", None), target)
    if member is None:
        result.data["error"] = f"this version has no ComputeCapability.{target}"
        result.data["not_applicable"] = f"{target} is not a target of this version"
        return False
    config.num_compute_capabilities = 1
    if config.set_compute_capability(member, 0) is False:
        result.data["error"] = f"set_compute_capability({target}) refused" + last_error(result)
        return False
    return True


def set_dummy_ranges(trt: Any, network: Any, result: Any, in_range: float = 2.0, out_range: float = 4.0) -> None:
    """What `trtexec --int8` does without a calibration cache: a dummy dynamic range on every tensor.

    Layer inputs without a range get +-2 (+-4 into a concatenation), layer outputs +-4 (+-2 out of a
    pooling layer), so that an INT8 build needs no calibrator.
    """
    concat = tinspect.lookup_flag(trt.LayerType, "CONCATENATION")
    pooling = tinspect.lookup_flag(trt.LayerType, "POOLING")
    count, refused = 0, 0
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        tensors = [(layer.get_input(j), out_range if layer.type == concat else in_range)
                   for j in range(layer.num_inputs)]
        tensors += [(layer.get_output(j), in_range if layer.type == pooling else out_range)
                    for j in range(layer.num_outputs)]
        for tensor, r in tensors:
            if tensor is None or getattr(tensor, "dynamic_range", None) is not None:
                continue
            ok = tensor.set_dynamic_range(-r, r)
            count, refused = count + 1, refused + (ok is False)
    result.data["options"]["int8_ranges"] = f"trtexec dummy ranges on {count} tensors ({refused} refused)"


# A trailer TensorRT-RTX 1.4 logs after every failed build: never the cause.
_TRAILERS = ("catchCudaError",)


def last_error(result: Any) -> str:
    """": <the last ERROR the logger gave>", skipping known trailers that follow the real cause."""
    errors = [m["msg"] for m in result.data["log"] if m["severity"] in ("ERROR", "INTERNAL_ERROR")]
    causes = [e for e in errors if not any(t in e for t in _TRAILERS)] or errors
    return f": {causes[-1]}" if causes else ""
