"""Reading what TensorRT reports, without TensorRT: network dtypes, enums by name, logs, tactic sources, versions.

Pure Python 3.9+, standard library only. The adapter imports it as `engines.tensorrt.inspect`;
the worker loads it by path (its file name would shadow the standard `inspect` module on sys.path).
Which layer computed a node, and in what precision, is engines/tensorrt/layers.py's.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

SEVERITIES = ("INTERNAL_ERROR", "ERROR", "WARNING", "INFO", "VERBOSE")  # most severe first
# What the "tensorrt-only" tactics choice leaves out (for stub cuBLAS/cuDNN): TensorRT's own kernels only.
EXCLUDED_TACTIC_SOURCES = ("CUBLAS", "CUBLAS_LT", "CUDNN")
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


def enum_name(value: Any) -> str:
    """The member name of a TensorRT enum value or its str(): DataType.FLOAT -> "FLOAT". A pybind11 enum's name is
    kept per type and value: pybind11 looks it up anew on every access (about 5 us, a new object each time), and a
    build's network listing asks for two per layer output."""
    kind = type(value)
    if type(kind).__name__ != "pybind11_type":
        return _name(value)
    key = (kind, int(value))
    name = _ENUM_NAMES.get(key)
    if name is None:
        name = _ENUM_NAMES[key] = _name(value)
    return name


_ENUM_NAMES: Dict[Tuple[type, int], str] = {}


def _name(value: Any) -> str:
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
