"""Which engine layer computed each ONNX node, and in what precision, from TensorRT's own layer listing.

Pure Python 3.9+, standard library only: the adapter imports it as `engines.tensorrt.layers`, the worker
loads it by path. Two listings become one Layer record:
- the engine inspector's JSON (TensorRT 8.x-11.x, ProfilingVerbosity.DETAILED): 8.x/10.x give
  "Format/Datatype" and "Weights"; 11.x splits "Format" and "DataType"; 8.6 on adds "Metadata";
- TensorRT-RTX's VERBOSE build log, which with DETAILED profiling holds one message that starts with
  "Layers:" (one line per layer: Name, LayerType, Inputs, Constants, Outputs, TacticName, StreamId,
  Metadata), then "I/O Tensors:" (1.5 on) or "Bindings:" (1.4); no GPU is needed for it.

A target node is attributed to the layer that performs its operation, found through the engine's own
mapping, in order of trust: the layer metadata "[ONNX Layer: <node>]" where the version writes it, else
whole " + "-separated components of fused layer names. Nothing else: inserted helpers (NoOp, Shuffle,
Reformat and CopyNode, Constant, the reshapes and transposes the parser adds) are never the evidence for
a compute node's precision, and a node whose computing layer cannot be identified is "unknown", with
the candidate layers listed, never a neighbour's precision.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional

# Data type words in both listings -> one spelling.
_DTYPES = (
    ("uint8", ("UInt8",)), ("int8", ("Int8",)), ("int4", ("Int4",)), ("fp8", ("FP8", "Float8", "FP8E4M3", "E4M3")),
    ("fp4", ("FP4", "E2M1", "FP4E2M1")), ("int32", ("Int32",)), ("int64", ("Int64",)), ("bf16", ("BF16",)),
    ("fp16", ("FP16", "Half")), ("fp32", ("FP32", "Float")), ("bool", ("Bool",)),
)
_DTYPE_RE = re.compile(r"\b(" + "|".join(w for _, words in _DTYPES for w in words) + r")\b", re.IGNORECASE)
_DTYPE_OF = {w.lower(): d for d, words in _DTYPES for w in words}
FLOAT_TYPES = ("fp32", "fp16", "bf16")

# Layer types (lower case, as substrings) that perform each kind of ONNX operation.
_CONV = ("convolution", "correlation", "conv")
_COMPUTE = {
    "Conv": _CONV, "ConvInteger": _CONV, "QLinearConv": _CONV,
    "ConvTranspose": ("deconv",),
    # 8.x turns a MatMul with constant weights into a convolution; RTX calls it gemm
    "MatMul": ("gemm", "matrixmultiply", "matmul") + _CONV, "Gemm": ("gemm", "matrixmultiply", "matmul") + _CONV,
    "MatMulInteger": ("gemm", "matrixmultiply", "matmul") + _CONV,
    "MaxPool": ("pool",), "AveragePool": ("pool",), "GlobalAveragePool": ("pool", "reduce"),
    "Resize": ("resize",), "Softmax": ("softmax",), "Concat": ("concat",),
    "InstanceNormalization": ("norm", "plugin"), "LayerNormalization": ("norm", "kgen", "runtime_fusion"),
}
_POINTWISE = ("pointwise", "elementwise", "activation", "kgen", "runtime_fusion", "scale", "myelin")
# Kernels the compiler generates for a fused region (TensorRT-RTX's Myelin, 8.6's ForeignNode): they list
# every ONNX node they absorbed, but only their own inputs' and outputs' types.
_GENERATED = ("kgen", "runtime_fusion", "runtime_function", "myelin")
_QDQ = ("QuantizeLinear", "DequantizeLinear")
# Layers that only move or convert data around the real kernel.
_HELPER_TYPES = ("noop", "shuffle", "reformat", "constant", "copy", "reshape", "slice")
_HELPER_NAMES = re.compile(r"^(Reformatting CopyNode|reshape_(before|after)_|transpose_(before|after)_|"
                           r"squeeze_(before|after)_|unsqueeze_(before|after)_)")
_WEIGHTED = ("Conv", "ConvTranspose", "MatMul", "Gemm", "ConvInteger", "MatMulInteger")


@dataclass
class Tensor:
    name: str
    dtype: str  # one of the spellings above, "?" where the listing does not say
    format: str = ""
    size: int = 0  # element count where the listing gives dimensions


@dataclass
class Layer:
    """One engine layer, from whichever listing."""

    name: str
    type: str
    inputs: List[Tensor] = field(default_factory=list)
    weights: List[str] = field(default_factory=list)  # dtypes of weights / constants that are tensors of weights
    outputs: List[Tensor] = field(default_factory=list)
    tactic: str = ""
    metadata: List[str] = field(default_factory=list)  # ONNX node names from "[ONNX Layer: ...]"
    readable: bool = True  # False where the listing gave names only (not DETAILED)

    @property
    def components(self) -> List[str]:
        """Whole " + "-separated parts of a fused layer's name, and the nodes inside TensorRT 8.x's pointwise
        fusion notation: "PWN(PWN(a, b), c)" names a, b and c."""
        parts = [p.strip() for p in self.name.split(" + ")]
        inner = [n.strip() for p in parts if p.startswith("PWN(") for n in re.split(r"[(),]", p) if n.strip()]
        return parts + [n for n in inner if n != "PWN"]

    def names(self, node: str) -> bool:
        """The node is a whole part of this layer's name: a component, or " + "-separated parts that together are its
        name (a node whose own name holds " + ")."""
        return node in self.components or f" + {node} + " in f" + {self.name} + "

    @property
    def helper(self) -> bool:
        kind = self.type.lower()
        return any(h == kind or kind.startswith(h) for h in _HELPER_TYPES) or bool(_HELPER_NAMES.match(self.name))


def dtype(text: str) -> str:
    """The data type named in a format or type text: "Thirty-two wide ... Int8 format" -> "int8"."""
    m = _DTYPE_RE.search(str(text))
    return _DTYPE_OF[m.group(1).lower()] if m else "?"


# ---- the engine inspector's JSON -------------------------------------------------------------------

def from_inspector(inspector: Any) -> List[Layer]:
    """Layers from get_engine_information(LayerInformationFormat.JSON) (text or decoded)."""
    data = json.loads(inspector, strict=False) if isinstance(inspector, (str, bytes)) else inspector
    raw = data.get("Layers", []) if isinstance(data, Mapping) else []
    layers = []
    for item in raw:
        if isinstance(item, str) and item.startswith("{"):
            item = json.loads(item, strict=False)
        if isinstance(item, str):  # not DETAILED: names only
            layers.append(Layer(name=item, type="", readable=False))
            continue
        layers.append(Layer(
            name=str(item.get("Name", "")), type=str(item.get("LayerType", "")),
            inputs=[_inspector_tensor(t) for t in item.get("Inputs", [])],
            weights=_inspector_weights(item), outputs=[_inspector_tensor(t) for t in item.get("Outputs", [])],
            tactic=str(item.get("TacticName") or item.get("TacticValue") or ""),
            metadata=onnx_layers(str(item.get("Metadata", ""))),
            readable=bool(item.get("Inputs") or item.get("Outputs")),
        ))
    return layers


def _inspector_tensor(t: Any) -> Tensor:
    if not isinstance(t, Mapping):
        return Tensor(str(t), dtype(str(t)))
    fmt = str(t.get("Format/Datatype", t.get("Format", "")))
    # 11.x splits "Format/Datatype" into "Format" and "DataType", as NVIDIA's IEngineInspector migration page shows
    # (tests/data/trt/inspector-11.x-doc.json): NOT VERIFIED ON REAL TENSORRT
    word = t.get("DataType") if "Format/Datatype" not in t and t.get("DataType") else fmt
    return Tensor(str(t.get("Name", "")), dtype(str(word)), fmt)


def _inspector_weights(item: Mapping[str, Any]) -> List[str]:
    weights = item.get("Weights")
    if isinstance(weights, Mapping) and weights.get("Type") and int(weights.get("Count", 1) or 0) > 0:
        return [dtype(str(weights["Type"]))]
    return []


ONNX_LAYER = "[ONNX Layer: "
_SEPARATORS = "\x1e\x1f"  # between entries: none (TensorRT-RTX), \x1f or \x1e (8.6, 10.x)


def onnx_layers(metadata: str) -> List[str]:
    """Node names in "[ONNX Layer: a][ONNX Layer: b]" (TensorRT's layer metadata from the ONNX parser), each name as
    it is: an entry ends at the "]" followed by the end or the next entry, so a name may hold "[", "]" or a newline."""
    text, names = metadata or "", []
    at = text.find(ONNX_LAYER)
    while at >= 0:
        start = at + len(ONNX_LAYER)
        end = _entry_end(text, start)
        names.append(text[start:end])
        at = text.find(ONNX_LAYER, end)
    return names


def _entry_end(text: str, start: int) -> int:
    """The "]" that closes the entry begun at start: the first one followed by the end or by the next entry."""
    end = text.find("]", start)
    while end >= 0:
        after = end + 1
        while after < len(text) and text[after] in _SEPARATORS:
            after += 1
        if after == len(text) or text.startswith(ONNX_LAYER, after):
            return end
        end = text.find("]", end + 1)
    return len(text)


# ---- TensorRT-RTX's build log ------------------------------------------------------------------------

def layers_message(messages: Iterable[str]) -> str:
    """The builder's "Layers:" message among logger messages ("" when the log has none)."""
    return next((m for m in messages if m.startswith("Layers:")), "")


def from_build_log(message: str) -> List[Layer]:
    """Layers from the "Layers:" message a DETAILED build logs at VERBOSE (TensorRT-RTX 1.4 to 1.7)."""
    layers = []
    for record in _records(message):
        head, _, rest = record.partition(_TYPE)
        body, _, metadata = rest.partition(_METADATA)  # the last field: the node names, which may hold anything
        fields = _fields(f"LayerType: {body}")
        constants = [_log_tensor(t) for t in _items(fields.get("Constants", ""))]
        layers.append(Layer(
            name=head[len(_NAME):], type=fields.get("LayerType", ""),
            inputs=[_log_tensor(t) for t in _items(fields.get("Inputs", ""))],
            weights=_largest(constants), outputs=[_log_tensor(t) for t in _items(fields.get("Outputs", ""))],
            tactic=fields.get("TacticName", ""), metadata=onnx_layers(metadata),
        ))
    return layers


_NAME, _TYPE, _METADATA = "Name: ", ", LayerType: ", ", Metadata: "
_SECTION = re.compile(r"\n\n(?=[A-Z][A-Za-z/ ]*:\n)")  # "I/O Tensors:" (1.5 on), "Bindings:" (1.4), "Engine Metadata:"


def _records(message: str) -> List[str]:
    """One text per layer: a line that starts "Name: " begins one; any other line of the "Layers:" section goes on
    the line before it (a node name with a line break in it, inside the layer's name and its metadata)."""
    section = _SECTION.split(message, maxsplit=1)[0]
    records: List[str] = []
    for line in section.split("\n")[1:]:
        if line.startswith(_NAME) or not records:
            records.append(line)
        else:
            records[-1] += "\n" + line
    return [r for r in records if r.startswith(_NAME) and _TYPE in r]


_KEY = re.compile(r"([A-Za-z/]+): ")
_FIELD_MARKS = re.compile(r"[\[{(\]})]|, ")  # what _fields looks at: brackets and the ", " between fields
_BRACKETS = re.compile(r"[\[{(\]})]")


def _fields(text: str) -> Dict[str, str]:
    """'Key: value, Key: [ ... ], ...' split at bracket depth 0 -> {Key: value}; values keep inner brackets."""
    out: Dict[str, str] = {}
    depth, start = 0, 0
    for mark in _FIELD_MARKS.finditer(text):
        found = mark.group()
        if found in "[{(":
            depth += 1
        elif found in "]})":
            depth -= 1
        elif depth == 0 and _KEY.match(text, mark.end()):
            _field(text, start, mark.start(), out)
            start = mark.end()
    _field(text, start, len(text), out)
    return out


def _field(text: str, start: int, end: int, out: Dict[str, str]) -> None:
    """text[start:end] as "Key: value" into out (nothing where it does not start with a key)."""
    m = _KEY.match(text, start)
    if m:
        out[m.group(1)] = text[m.end():end].strip()


def _items(value: str) -> List[Dict[str, str]]:
    """'[ { A: 1, B: [2,3] }, { ... }]' -> [{A: "1", B: "[2,3]"}, ...]: the top-level braces of a list."""
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    items, depth, start = [], 0, 0
    for bracket in _BRACKETS.finditer(value):
        ch, i = bracket.group(), bracket.start()
        if ch in "[{(":
            if ch == "{" and depth == 0:
                start = i + 1
            depth += 1
        else:
            depth -= 1
            if ch == "}" and depth == 0:
                items.append(_fields(value[start:i].strip()))
    return items


def _log_tensor(t: Mapping[str, str]) -> Tensor:
    word = t.get("Datatype") or t.get("Format/Datatype") or t.get("DataType") or ""
    return Tensor(t.get("Name", ""), dtype(word), t.get("Format", t.get("Format/Datatype", "")),
                  _size(t.get("Dimensions", "")))


def _size(dims: str) -> int:
    numbers = [int(x) for x in re.findall(r"-?\d+", dims)]
    size = 1
    for n in numbers:
        size *= max(n, 1)
    return size if numbers else 0


def _largest(constants: List[Tensor]) -> List[str]:
    """The weights among a layer's constants: the largest tensor, not a scalar or a per-channel scale vector."""
    big = [t for t in constants if t.size > 1]
    return [max(big, key=lambda t: t.size).dtype] if big else []


# ---- attribution ----------------------------------------------------------------------------------

def attribute(layers: List[Layer], targets: Mapping[str, str]) -> Dict[str, Dict[str, Any]]:
    """Per target node (name -> ONNX op type, "" where unknown): its computing layer and precision, as fields
    (precision, layer, layer_type, inputs, weights, outputs, tactic, via) plus a sentence ("evidence")."""
    with_metadata = any(layer.metadata for layer in layers)
    return {node: _attribute(layers, node, op, with_metadata) for node, op in targets.items()}


def _attribute(layers: List[Layer], node: str, op: str, with_metadata: bool) -> Dict[str, Any]:
    # In order of trust: the layer metadata the parser wrote, then whole components of fused layer names
    # (8.6 writes metadata for most layers but not for its Q/DQ reformats; 8.5 writes none).
    candidates, via = [lay for lay in layers if node in lay.metadata], "metadata"
    if not candidates:
        candidates, via = [lay for lay in layers if lay.names(node)], "name component"
    if not candidates:
        how = "[ONNX Layer: ...] metadata or a name component" if with_metadata else "name component"
        return _unknown(f"no engine layer lists {node} (its {how}): fused away or removed", [])
    if any(not lay.readable for lay in candidates):
        names = [lay.name for lay in candidates]
        return _unknown(f"engine layers name {node}, but the listing gives no formats (not DETAILED)", names)
    chosen = _computing_layer(candidates, node, op)
    if chosen is None:
        names = [f"{lay.name} ({lay.type})" for lay in candidates]
        kind = f"{op} " if op else ""
        return _unknown(f"no layer that lists {node} performs a {kind}operation; only helpers or other kernels: "
                        + "; ".join(names), [lay.name for lay in candidates])
    return _entry(chosen, node, op, via, others=[lay.name for lay in candidates if lay is not chosen])


def _computing_layer(candidates: List[Layer], node: str, op: str) -> Optional[Layer]:
    """The candidate that performs the node's operation; None where none can be told apart."""
    if op in _QDQ:  # a Q or DQ is computed by a reformat or scale (8.x) or a generated kernel (RTX)
        named = [lay for lay in candidates if lay.names(node)]
        return (named or candidates)[0]
    if op == "Concat":  # TensorRT concatenates by copying each input into the output: those copies are the Concat
        copies = [lay for lay in candidates if lay.name.endswith(" copy") or "concat" in lay.type.lower()]
        if copies and len({tuple(t.dtype for t in lay.outputs) for lay in copies}) == 1:
            return copies[0]
    work = [lay for lay in candidates if not lay.helper]
    if op in _COMPUTE:
        kinds = _COMPUTE[op]
        typed = [lay for lay in work if any(k in lay.type.lower() for k in kinds)]
        if op in ("Conv", "ConvInteger", "QLinearConv"):
            typed = [lay for lay in typed if "deconv" not in lay.type.lower()]
        if not typed:  # absorbed into a generated kernel: that kernel computes it (the engine's own mapping says so)
            generated = [lay for lay in work if _generated(lay)]
            return generated[0] if len(generated) == 1 else None
        named = [lay for lay in typed if lay.names(node) or lay.name.startswith(node + "_myl")]
        return (named or typed)[0]
    if not op:  # op unknown: a compute-type layer first, else the only non-helper
        typed = [lay for lay in work if any(k in lay.type.lower() for ks in _COMPUTE.values() for k in ks)]
        pick = typed or (work if len(work) == 1 else [])
        return pick[0] if pick else None
    pointwise = [lay for lay in work if any(k in lay.type.lower() for k in _POINTWISE)]
    plugin = [lay for lay in work if "plugin" in lay.type.lower() or "custom" in lay.type.lower()]
    pick = plugin or pointwise or (work if len(work) == 1 else [])
    return pick[0] if pick else None


def _generated(layer: Layer) -> bool:
    return any(k in layer.type.lower() for k in _GENERATED)


def layer_precision(layer: Layer, op: str = "") -> str:
    """int8 / int4 / fp8 / fp4 / float / unknown for the layer that computes an `op` node."""
    if _generated(layer) and op not in _QDQ:
        # A generated kernel lists only its own inputs' and outputs' types: one that reads INT8 may dequantize
        # first (its name often starts "Cast, Mul"), one that reads floats may quantize inside. The node's own
        # precision is not in the listing.
        return "unknown"
    # a layer fed only by constants (an INT8 initializer into a plugin) takes them as its input
    act = layer.inputs[0].dtype if layer.inputs else (layer.weights[0] if layer.weights else "?")
    out = layer.outputs[0].dtype if layer.outputs else "?"
    if op == "QuantizeLinear":
        act = out
    weights = [w for w in layer.weights if w != "?"]
    if op in _WEIGHTED or (weights and not op):
        w = weights[0] if weights else ""
        if act in ("int8", "uint8") and w in ("int8", "uint8", ""):
            return "int8"
        if act in ("fp8", "fp4") and w in (act, ""):
            return act
        if act in FLOAT_TYPES and w in ("int4", "fp4"):  # weight-only: a GEMM that reads 4-bit weights itself
            return w
        if act in FLOAT_TYPES:
            return "float"
        return "unknown"
    if act in ("int8", "uint8"):
        return "int8"
    if act in ("fp8", "int4", "fp4"):
        return act
    if act in FLOAT_TYPES:
        return "float"
    return "unknown"


def _entry(layer: Layer, node: str, op: str, via: str, others: List[str]) -> Dict[str, Any]:
    precision = layer_precision(layer, op)
    ins = [t.dtype for t in layer.inputs]
    outs = [t.dtype for t in layer.outputs]
    parts = [f"input {ins[0]}" + (f" ({layer.inputs[0].format})" if layer.inputs[0].format else "")] if ins else []
    if layer.weights:
        parts.append(f"weights {', '.join(layer.weights)}")
    if outs:
        parts.append(f"output {outs[0]}" + (f" ({layer.outputs[0].format})" if layer.outputs[0].format else ""))
    if layer.tactic:
        parts.append(f"tactic {layer.tactic}")
    fused = ""
    if _generated(layer) and len(layer.metadata) > 1:
        fused = (f"; a generated ({layer.type}) kernel that fuses it with "
                 f"{', '.join(m for m in layer.metadata if m != node)}")
        if precision == "unknown":
            fused += "; the listing gives only the kernel's own input and output types, not the node's precision"
    evidence = f"layer '{layer.name}' {layer.type} (via {via}): " + ", ".join(parts) + fused
    entry: Dict[str, Any] = {
        "precision": precision, "evidence": evidence, "layer": layer.name, "layer_type": layer.type,
        "inputs": ins, "weights": list(layer.weights), "outputs": outs, "tactic": layer.tactic, "via": via,
    }
    if _generated(layer):  # a compiler-generated kernel: the report counts its nodes as fused, not as unknown
        entry["generated"] = True
    if others:
        entry["also_listed_in"] = others
    return entry


def _unknown(why: str, candidates: List[str]) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"precision": "unknown", "evidence": why, "via": ""}
    if candidates:
        entry["candidates"] = candidates
    return entry

