"""Reading what TensorRT reports, without TensorRT: inspector JSON, network dtypes, enums by name, logs.

Pure Python 3.9+, standard library only. The adapter imports it as `engines.tensorrt.inspect`;
the worker loads it by path (its file name would shadow the standard `inspect` module on sys.path).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

SEVERITIES = ("INTERNAL_ERROR", "ERROR", "WARNING", "INFO", "VERBOSE")  # most severe first
# What the "tensorrt-only" tactics choice leaves out (for stub cuBLAS/cuDNN): TensorRT's own kernels only.
EXCLUDED_TACTIC_SOURCES = ("CUBLAS", "CUBLAS_LT", "CUDNN")
TACTICS_CHOICES = ("default", "tensorrt-only")
KNOWN_TACTIC_SOURCES = ("CUBLAS", "CUBLAS_LT", "CUDNN", "EDGE_MASK_CONVOLUTIONS", "JIT_CONVOLUTIONS")
# trt.DataType member name -> numpy dtype name (trt.nptype uses np.bool, gone in numpy 1.24)
NUMPY_DTYPES = {
    "FLOAT": "float32",
    "HALF": "float16",
    "INT8": "int8",
    "INT32": "int32",
    "INT64": "int64",
    "UINT8": "uint8",
    "BOOL": "bool",
}
_FORMAT_DTYPES = ("Int8", "UInt8", "Int32", "Int64", "Int4", "FP32", "FP16", "BF16", "FP8", "Half", "Float", "Bool")
_FORMAT_DTYPE_RE = re.compile(r"\b(" + "|".join(_FORMAT_DTYPES) + r")\b", re.IGNORECASE)

Inspector = Union[str, Mapping[str, Any]]


def enum_name(value: Any) -> str:
    """The member name of a TensorRT enum value or its str(): DataType.FLOAT -> "FLOAT"."""
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value).split(".")[-1]


def numpy_dtype_name(trt_dtype: Any) -> str:
    """The numpy dtype for a TensorRT DataType (or its name); ValueError where numpy has none."""
    name = trt_dtype if isinstance(trt_dtype, str) and "." not in trt_dtype else enum_name(trt_dtype)
    if name not in NUMPY_DTYPES:
        raise ValueError(f"TensorRT data type {name} has no numpy equivalent for host buffers")
    return NUMPY_DTYPES[name]


def enum_members(enum_cls: Any) -> Dict[str, Any]:
    """Name -> member of a pybind11 or Python enum class; {} for None."""
    if enum_cls is None:
        return {}
    members = getattr(enum_cls, "__members__", None)
    if isinstance(members, Mapping):
        return dict(members)
    return {n: getattr(enum_cls, n) for n in dir(enum_cls) if n.isupper() and not n.startswith("_")}


def lookup_flag(enum_cls: Any, *names: str) -> Optional[Any]:
    """The first of `names` that this enum has, or None: flags differ across TensorRT versions."""
    members = enum_members(enum_cls)
    for name in names:
        if name in members:
            return members[name]
    return None


def tactic_sources_mask(trt: Any, exclude: Sequence[str] = EXCLUDED_TACTIC_SOURCES) -> Tuple[int, List[str]]:
    """The tactic-source bit mask of every source this TensorRT has except `exclude`, and their names."""
    members = enum_members(getattr(trt, "TacticSource", None))
    if not members:
        return 0, []
    names = sorted(n for n in members if n not in exclude)
    mask = 0
    for name in names:
        mask |= 1 << int(members[name])
    return mask, names


def tactic_source_names(trt: Any, mask: Optional[int]) -> List[str]:
    """The names of the tactic sources set in `mask` (a builder config's default); [] where unknown."""
    members = enum_members(getattr(trt, "TacticSource", None))
    if mask is None:
        return []
    return sorted(n for n, m in members.items() if mask & (1 << int(m)))


def parse_version(version: str) -> Tuple[int, ...]:
    """Leading numeric components of a version string: "8.6.1.post1" -> (8, 6, 1)."""
    parts = []
    for piece in version.split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
        if m.group() != piece:
            break
    return tuple(parts)


def version_matches(requested: str, actual: str) -> bool:
    """Whether the installed version is the requested one: "8.6" matches "8.6.1.6", not "8.5.3.1"."""
    want, have = parse_version(requested), parse_version(actual)
    return bool(want) and have[: len(want)] == want


def severity_rank(name: str) -> int:
    return SEVERITIES.index(name) if name in SEVERITIES else len(SEVERITIES)


def log_text(messages: Iterable[Mapping[str, str]], min_severity: str = "WARNING") -> str:
    """Logger messages at `min_severity` or worse, one per line: "[WARNING] text"."""
    limit = severity_rank(min_severity)
    return "\n".join(
        f"[{m.get('severity', '?')}] {m.get('msg', '')}"
        for m in messages
        if severity_rank(m.get("severity", "")) <= limit
    )


def network_dtypes(layers: Iterable[Sequence[str]]) -> Dict[str, str]:
    """Output dtypes before the build, from rows (layer, type, dtype[, tensor]): keyed by tensor, else layer."""
    found: Dict[str, str] = {}
    for row in layers:
        key = row[3] if len(row) > 3 and row[3] else row[0]
        found[key] = enum_name(row[2])
    return found


def io_tensors(inspector: Inspector) -> List[str]:
    """The engine's I/O tensor names: 8.x/10.x "Bindings" (names), 11.x "I/O Tensors" (objects with "Name")."""
    data = json.loads(inspector) if isinstance(inspector, str) else inspector
    if not isinstance(data, Mapping):
        return []
    if "I/O Tensors" in data:  # 11.x, from NVIDIA's IEngineInspector migration page: NOT VERIFIED ON REAL TENSORRT
        return [str(t.get("Name", "")) for t in data["I/O Tensors"] if isinstance(t, Mapping)]
    return [str(t) for t in data.get("Bindings", [])]


def engine_layers(inspector: Inspector) -> List[Any]:
    """The engine's layers from the inspector's JSON: dicts when DETAILED, names otherwise."""
    data = json.loads(inspector) if isinstance(inspector, str) else inspector
    layers = data.get("Layers", []) if isinstance(data, Mapping) else []
    return [json.loads(x) if isinstance(x, str) and x.startswith("{") else x for x in layers]


def layer_precision(inspector: Inspector, target_nodes: Iterable[str]) -> Dict[str, Dict[str, str]]:
    """Per target ONNX node: did its engine layer run in INT8, and the inspector text that says so."""
    layers = engine_layers(inspector)
    return {node: _node_precision(layers, node) for node in target_nodes}


def _node_precision(layers: List[Any], node: str) -> Dict[str, str]:
    named = [layer for layer in layers if _mentions_node(layer, node)]
    if not named:
        return {"precision": "unknown", "evidence": f"no engine layer names {node} (fused away or removed)"}
    primary = [layer for layer in named if not _is_inserted_copy(layer)] or named
    judged = [_judge_layer(layer) for layer in primary]
    for wanted in ("int8", "float", "unknown"):
        for precision, evidence in judged:
            if precision == wanted:
                return {"precision": precision, "evidence": evidence}
    return {"precision": "unknown", "evidence": f"engine layers name {node}, but none could be read"}


def _mentions_node(layer: Any, node: str) -> bool:
    pattern = r"(?<!\w)" + re.escape(node) + r"(?!\w)"
    if isinstance(layer, str):
        return re.search(pattern, layer) is not None
    if not isinstance(layer, Mapping):
        return False
    texts = [layer.get(k) for k in ("Name", "Metadata", "Origin")]
    return any(isinstance(t, str) and re.search(pattern, t) for t in texts)


def _is_inserted_copy(layer: Any) -> bool:
    name = layer if isinstance(layer, str) else str(layer.get("Name", ""))
    return name.startswith("Reformatting CopyNode")


def _judge_layer(layer: Any) -> Tuple[str, str]:
    if isinstance(layer, str) or not (layer.get("Inputs") or layer.get("Outputs") or layer.get("Weights")):
        name = layer if isinstance(layer, str) else layer.get("Name", "?")
        return "unknown", f"engine layer '{name}' found, but the inspector gave no formats (not DETAILED)"
    weights = _weights_type(layer)
    ins = [_io_format(t) for t in layer.get("Inputs", [])]
    outs = [_io_format(t) for t in layer.get("Outputs", [])]
    in_types = [_io_dtype(t) for t in layer.get("Inputs", [])]
    out_types = [_io_dtype(t) for t in layer.get("Outputs", [])]
    int8 = weights == "Int8" or "Int8" in in_types + out_types
    parts = []
    if weights:
        parts.append(f"weights {weights}")
    if ins:
        parts.append(f"input {in_types[0]} ({ins[0]})")
    if outs:
        parts.append(f"output {out_types[0]} ({outs[0]})")
    tactic = layer.get("TacticName") or layer.get("TacticValue")
    if tactic:
        parts.append(f"tactic {tactic}")
    evidence = f"layer '{layer.get('Name', '?')}' {layer.get('LayerType', '?')}: " + ", ".join(parts)
    return ("int8" if int8 else "float"), evidence


def _weights_type(layer: Mapping[str, Any]) -> str:
    weights = layer.get("Weights")
    return str(weights.get("Type", "")) if isinstance(weights, Mapping) else ""


def _io_format(tensor: Any) -> str:
    """The format text: 8.x/10.x "Format/Datatype"; 11.x splits it into "Format" and "DataType"."""
    if isinstance(tensor, Mapping):
        return str(tensor.get("Format/Datatype", tensor.get("Format", "")))
    return str(tensor)


def _io_dtype(tensor: Any) -> str:
    """The data type word of a layer input/output: 11.x's own "DataType" field, else read from the format text."""
    if isinstance(tensor, Mapping) and "Format/Datatype" not in tensor and tensor.get("DataType"):
        return _format_dtype(str(tensor["DataType"]))
    return _format_dtype(_io_format(tensor))


def _format_dtype(fmt: str) -> str:
    """The data type word in an inspector format string: "Row major linear FP32" -> "FP32"."""
    m = _FORMAT_DTYPE_RE.search(fmt)
    if not m:
        return "?"
    word = m.group(1)
    return next(d for d in _FORMAT_DTYPES if d.lower() == word.lower())
