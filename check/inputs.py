"""Generated inputs a model accepts: floats over the range the model's first QuantizeLinear of them was calibrated for,
indices inside the table they index, masks that leave a real sequence unpadded.

A float input that reaches a QuantizeLinear through ops that keep its values (Identity, Reshape, Transpose, Cast to
a float, Unsqueeze, Squeeze, Flatten, ...) is drawn uniform over the range that quantizer represents, read from its
per-tensor scale s and zero point z: [s (qmin - z), s (qmax - z)] (uint8 z = 0: [0, 255 s]; int8 z = 0:
[-128 s, 127 s]). A calibrated model declares the range of its data there; [-1, 1) lands on a few of a pixel model's
256 levels. Where no such quantizer is found (a per-channel one, a float8 one, a computed scale), floats are
uniform in [-1, 1). An integer input that reaches the indices of a Gather, GatherElements or GatherND (or the ids
of ONNX Runtime's EmbedLayerNormalization), directly or through ops that keep its values (Cast, Unsqueeze, Reshape,
Squeeze, Flatten, Expand, ...), is drawn in [0, size of the indexed dimension), the size read from the table's
initializer, Constant, or the initializer behind its DequantizeLinear. A mask: see MASK_RULE. Every input's rule
is recorded with its reason (case.json `input_generation`); an integer input with no indexing use gets small
integers and is named as a guess, so that a reference that then fails can ask for `--inputs`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from check import CheckError

# Ops whose output holds the values of their first input (rearranged, repeated or retyped).
KEEP_VALUES = ("Cast", "CastLike", "Identity", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Expand", "Transpose",
               "Tile", "Slice", "Concat", "Split", "Gather")
# Ops that index a table: op type -> (indices input, table input).
INDEXING = {"Gather": (1, 0), "GatherElements": (1, 0), "GatherND": (1, 0)}
# com.microsoft EmbedLayerNormalization: input_ids index the word table, segment_ids the segment table.
EMBED = {0: 2, 1: 4}
EMBED_MASK = 7
MASK_NAME = re.compile(r"mask", re.IGNORECASE)
# A mask whose name says padding (key_padding_mask, src_key_padding_mask, pad_mask) or names a side (src_mask,
# tgt_mask, memory_mask: PyTorch's nn.Transformer, where True means "ignore"): 1 / True marks what is left out.
PADDING_NAME = re.compile(r"pad|(^|[_.])(src|tgt|source|target|memory|enc|dec|encoder|decoder)_?mask", re.IGNORECASE)
REAL_SHARE = 0.75  # a padded sequence: the first 3/4 of the mask's last axis is real, the rest padding
MASK_RULE = ("masks leave a real sequence: an attention_mask-style integer or float mask (1 = attend) is ones; a "
             "boolean mask, or one named for padding or a side (key_padding_mask, src_mask: 1 = left out), is 0 / "
             "False on the first 3/4 of its last axis and 1 / True on the rest, so that neither reading of it makes "
             "every token padding")
# Ops whose output holds the values of their first input, for a float input on its way to its QuantizeLinear.
KEEP_FLOAT = ("Identity", "Reshape", "Transpose", "Cast", "CastLike", "Unsqueeze", "Squeeze", "Flatten", "Expand",
              "Tile", "Slice", "Concat", "Split")
FLOAT_TYPES = (1, 10, 11, 16)  # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16: a Cast to one of them keeps the values
SEGMENT_NAME = re.compile(r"token_type|segment", re.IGNORECASE)
GUESS_HIGH = 10  # integers with no known range: [0, 10)


@dataclass(frozen=True)
class Rule:
    """How one input is generated, and why: `known` is False where the valid range is a guess."""

    kind: str  # uniform, quantizer_range, indices, ones, zeros, padded_tail, integers, booleans
    why: str
    high: int = 0  # indices and integers: values in [0, high)
    known: bool = True
    span: Tuple[float, float] = (-1.0, 1.0)  # uniform and quantizer_range: floats in [span[0], span[1])

    def to_json(self) -> Dict[str, Any]:
        """case.json's `input_generation` entry: {rule, why, known}, and `range` for floats."""
        said: Dict[str, Any] = {"rule": self.kind, "why": self.why, "known": self.known}
        if self.kind in ("uniform", "quantizer_range"):
            said["range"] = [float(self.span[0]), float(self.span[1])]
        return said


def index_bounds(model: Any) -> Dict[str, Tuple[int, str]]:
    """Per graph input that indexes a table: (exclusive upper bound, which node and table say so)."""
    graph = model.graph
    consumers: Dict[str, List[Tuple[Any, int]]] = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, k))
    shapes = _table_shapes(graph)
    found: Dict[str, Tuple[int, str]] = {}
    for vi in graph.input:
        for bound in _bounds_from(vi.name, consumers, shapes):
            if vi.name not in found or bound[0] < found[vi.name][0]:
                found[vi.name] = bound
    return found


def _bounds_from(start: str, consumers: Mapping[str, List[Tuple[Any, int]]],
                 shapes: Mapping[str, Tuple[int, ...]]) -> List[Tuple[int, str]]:
    """Walk from a tensor through value-keeping ops to every node that indexes a table with it."""
    bounds: List[Tuple[int, str]] = []
    seen, todo = {start}, [start]
    while todo:
        tensor = todo.pop()
        for node, k in consumers.get(tensor, []):
            bound = _indexed_size(node, k, shapes)
            if bound is not None:
                bounds.append(bound)
            elif node.op_type in KEEP_VALUES and k == 0 and node.domain in ("", "ai.onnx"):
                for out in node.output:
                    if out and out not in seen:
                        seen.add(out)
                        todo.append(out)
    return bounds


def _indexed_size(node: Any, k: int, shapes: Mapping[str, Tuple[int, ...]]) -> Optional[Tuple[int, str]]:
    """(size of the dimension this node indexes with its input k, where from), or None if k does not index."""
    if node.domain == "com.microsoft" and node.op_type == "EmbedLayerNormalization" and k in EMBED:
        table = node.input[EMBED[k]] if len(node.input) > EMBED[k] else ""
        return _size(node, table, shapes.get(table), 0)
    if node.domain not in ("", "ai.onnx") or node.op_type not in INDEXING or INDEXING[node.op_type][0] != k:
        return None
    table = node.input[INDEXING[node.op_type][1]]
    shape = shapes.get(table)
    if node.op_type == "GatherND":
        batch = _attr(node, "batch_dims", 0)
        return _size(node, table, shape, None, batch)
    return _size(node, table, shape, _attr(node, "axis", 0))


def _size(node: Any, table: str, shape: Optional[Tuple[int, ...]], axis: Optional[int],
          batch_dims: int = 0) -> Optional[Tuple[int, str]]:
    """The indexed dimension's size (GatherND: the smallest dimension it may index) with its provenance."""
    if not shape:
        return None
    if axis is None:
        dims = shape[batch_dims:]
        size = min(dims) if dims else 0
        where = f"dimensions {batch_dims}.. of {table} {list(shape)}"
    else:
        axis = axis + len(shape) if axis < 0 else axis
        if not 0 <= axis < len(shape):
            return None
        size, where = shape[axis], f"dimension {axis} of {table} {list(shape)}"
    if size <= 0:
        return None
    return size, f"indexes {node.op_type} {node.name or node.output[0]} ({where})"


def _table_shapes(graph: Any) -> Dict[str, Tuple[int, ...]]:
    """Static shapes of tensors a table can come from: initializers, Constants, and DequantizeLinear/Cast/
    Identity of those."""
    shapes = {t.name: tuple(int(d) for d in t.dims) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            value = next((a.t for a in node.attribute if a.name == "value" and a.HasField("t")), None)
            if value is not None:
                shapes[node.output[0]] = tuple(int(d) for d in value.dims)
    changed = True
    while changed:  # carry shapes through DequantizeLinear, Cast and Identity, in any node order
        changed = False
        for node in graph.node:
            if node.op_type in ("DequantizeLinear", "Cast", "Identity") and node.input and node.output:
                if node.input[0] in shapes and node.output[0] not in shapes:
                    shapes[node.output[0]] = shapes[node.input[0]]
                    changed = True
    return shapes


def _attr(node: Any, name: str, default: int) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), default)


def _embed_masks(model: Any) -> Dict[str, str]:
    """Inputs that are the mask of an EmbedLayerNormalization: name -> node."""
    found = {}
    for node in model.graph.node:
        if node.op_type == "EmbedLayerNormalization" and len(node.input) > EMBED_MASK and node.input[EMBED_MASK]:
            found[node.input[EMBED_MASK]] = node.name or node.output[0]
    return found


def quantizer_ranges(model: Any) -> Dict[str, Tuple[float, float, str]]:
    """Per float graph input that reaches a per-tensor integer QuantizeLinear through value-keeping ops: (low, high,
    which quantizer says so) of the range that quantizer represents; the first such quantizer in graph order."""
    graph = model.graph
    consumers: Dict[str, List[Tuple[Any, int]]] = {}
    order: Dict[int, int] = {}
    for position, node in enumerate(graph.node):
        order[id(node)] = position
        for k, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, k))
    constants = _constants(graph)
    found: Dict[str, Tuple[float, float, str]] = {}
    for vi in graph.input:
        quantizers = sorted(_quantizers_of(vi.name, consumers), key=lambda n: order[id(n)])
        for q in quantizers[:1]:
            span = _represented(q, constants)
            if span is not None:
                found[vi.name] = span
    return found


def _quantizers_of(start: str, consumers: Mapping[str, List[Tuple[Any, int]]]) -> List[Any]:
    """The QuantizeLinear nodes a tensor reaches as their data through ops that keep its values."""
    found: List[Any] = []
    seen, todo = {start}, [start]
    while todo:
        tensor = todo.pop()
        for node, k in consumers.get(tensor, []):
            if node.domain not in ("", "ai.onnx") or k != 0:
                continue
            if node.op_type == "QuantizeLinear":
                found.append(node)
            elif node.op_type in KEEP_FLOAT and (node.op_type != "Cast" or _attr(node, "to", 0) in FLOAT_TYPES):
                for out in node.output:
                    if out and out not in seen:
                        seen.add(out)
                        todo.append(out)
    return found


def _constants(graph: Any) -> Dict[str, Any]:
    """Initializers and Constant outputs by name (tensor protos, not read)."""
    found = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            value = next((a.t for a in node.attribute if a.name == "value" and a.HasField("t")), None)
            if value is not None:
                found[node.output[0]] = value
    return found


def _represented(q: Any, constants: Mapping[str, Any]) -> Optional[Tuple[float, float, str]]:
    """(low, high, words) of what a per-tensor integer QuantizeLinear represents, None where it is not one."""
    from onnx import numpy_helper

    scale_name = q.input[1] if len(q.input) > 1 else ""
    zp_name = q.input[2] if len(q.input) > 2 else ""
    if scale_name not in constants or (zp_name and zp_name not in constants):
        return None
    if any(constants[n].data_location == 1 for n in (scale_name, zp_name) if n):  # external data: not read here
        return None
    scale = numpy_helper.to_array(constants[scale_name])
    zp = numpy_helper.to_array(constants[zp_name]) if zp_name else np.zeros((), np.uint8)
    if scale.size != 1 or zp.size != 1 or zp.dtype.kind not in "iu" or zp.dtype.itemsize > 2:
        return None  # per-channel or blocked, or a type numpy does not know as an integer (int4, float8)
    s, z, info = float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0]), np.iinfo(zp.dtype)
    if not np.isfinite(s) or s <= 0:
        return None
    low, high = s * (info.min - z), s * (info.max - z)
    where = f"the range QuantizeLinear {q.name or q.output[0]} represents ({zp.dtype.name}, scale {s:.6g}, " \
            f"zero point {z})"
    return low, high, where


def rules(model: Any, declared: Mapping[str, np.dtype]) -> Dict[str, Rule]:
    """How each declared input is generated, with the reason."""
    bounds = index_bounds(model)
    masks = _embed_masks(model)
    ranges = quantizer_ranges(model)
    found: Dict[str, Rule] = {}
    for name, dtype in declared.items():
        found[name] = _rule(name, np.dtype(dtype), bounds.get(name), masks.get(name), ranges.get(name))
    return found


def _rule(name: str, dtype: np.dtype, bound: Optional[Tuple[int, str]], mask_of: Optional[str],
          span: Optional[Tuple[float, float, str]] = None) -> Rule:
    if mask_of or MASK_NAME.search(name):
        return _mask_rule(name, dtype, mask_of)
    if dtype.kind in "iu" and bound is not None:
        high, where = bound
        return Rule("indices", f"integers in [0, {high}): {where}", high=high)
    if dtype.kind in "iu" and SEGMENT_NAME.search(name):
        return Rule("zeros", "zeros (a segment id, by its name, with no table found)")
    if dtype.kind in "iu":
        return Rule("integers", f"integers in [0, {GUESS_HIGH}): a guess (no Gather or embedding indexed by it)",
                    high=GUESS_HIGH, known=False)
    if dtype.kind == "b":
        return Rule("booleans", "booleans at random")
    if dtype.kind == "f" and span is not None:
        low, high, where = span
        return Rule("quantizer_range", f"floats uniform in [{low:.6g}, {high:.6g}): {where}", span=(low, high))
    if dtype.kind == "f":
        return Rule("uniform", "floats uniform in [-1, 1) (no per-tensor QuantizeLinear of it declares a range)")
    form = " (float32 values, rounded to bfloat16, or its bits as uint16)" if dtype.name == "bfloat16" else ""
    raise CheckError(f"input {name!r}: cannot generate data of type {dtype}; give it with --inputs x.npz{form}")


def _mask_rule(name: str, dtype: np.dtype, mask_of: Optional[str]) -> Rule:
    """A mask's rule (MASK_RULE): ones where 1 means attend, else a padded tail."""
    if mask_of:
        return Rule("ones", f"ones (the mask of {mask_of}: 1 = attend)")
    if dtype.kind != "b" and not PADDING_NAME.search(name):
        return Rule("ones", "ones (a mask, by its name: 1 = attend, as an attention_mask)")
    said = "named for padding or a side, 1 = left out" if PADDING_NAME.search(name) else "a boolean mask"
    return Rule("padded_tail", f"a padded sequence ({said}): 0 / False on the first {REAL_SHARE:.0%} of its last axis, "
                               "1 / True on the rest")


def padded_tail(dtype: np.dtype, shape: Sequence[int]) -> np.ndarray:
    """0 / False on the first REAL_SHARE of the last axis, 1 / True after it (a scalar: 0)."""
    shape = list(shape)
    data = np.zeros(shape, dtype)
    if shape:
        data[..., int(np.ceil(REAL_SHARE * shape[-1])):] = 1
    return data


def generate(rng: np.random.Generator, dtype: np.dtype, shape: Sequence[int], rule: Rule) -> np.ndarray:
    """Seeded data of one input by its rule."""
    dtype = np.dtype(dtype)
    if rule.kind == "ones":
        return np.ones(shape, dtype)
    if rule.kind == "zeros":
        return np.zeros(shape, dtype)
    if rule.kind == "padded_tail":
        return padded_tail(dtype, shape)
    if rule.kind in ("indices", "integers"):
        return rng.integers(0, rule.high, size=list(shape)).astype(dtype)
    if rule.kind == "booleans":
        return rng.integers(0, 2, size=list(shape)).astype(bool)
    return rng.uniform(rule.span[0], rule.span[1], size=list(shape)).astype(dtype)


def guessed(generation: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """The inputs whose valid range was a guess (case.json `input_generation`)."""
    return [name for name, entry in generation.items() if not entry.get("known", True)]


def as_declared(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A given input in the type the model declares, where numpy cannot store that type: a bfloat16 input from an npz
    of its bits (uint16, or the 2-byte void numpy writes for ml_dtypes' bfloat16) or of floats (rounded to the nearest
    bfloat16); any other array as it is."""
    if np.dtype(dtype).name != "bfloat16" or a.dtype == dtype:
        return a
    if a.dtype == np.uint16 or (a.dtype.kind == "V" and a.dtype.itemsize == 2):
        return np.ascontiguousarray(a).view(dtype)
    if a.dtype.kind == "f":
        return a.astype(dtype)
    return a
