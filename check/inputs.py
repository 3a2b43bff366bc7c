"""Generated inputs a model accepts: indices inside the table they index, masks of ones, floats in [-1, 1).

An integer input that reaches the indices of a Gather, GatherElements or GatherND (or the ids of ONNX Runtime's
EmbedLayerNormalization), directly or through ops that keep its values (Cast, Unsqueeze, Reshape, Squeeze,
Flatten, Expand, ...), is drawn in [0, size of the indexed dimension), the size read from the table's initializer,
Constant, or the initializer behind its DequantizeLinear. An input named like a mask is ones. Every input's rule
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
SEGMENT_NAME = re.compile(r"token_type|segment", re.IGNORECASE)
GUESS_HIGH = 10  # integers with no known range: [0, 10)


@dataclass(frozen=True)
class Rule:
    """How one input is generated, and why: `known` is False where the valid range is a guess."""

    kind: str  # uniform, indices, ones, zeros, integers, booleans
    why: str
    high: int = 0  # indices and integers: values in [0, high)
    known: bool = True


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


def rules(model: Any, declared: Mapping[str, np.dtype]) -> Dict[str, Rule]:
    """How each declared input is generated, with the reason."""
    bounds = index_bounds(model)
    masks = _embed_masks(model)
    found: Dict[str, Rule] = {}
    for name, dtype in declared.items():
        found[name] = _rule(name, np.dtype(dtype), bounds.get(name), masks.get(name))
    return found


def _rule(name: str, dtype: np.dtype, bound: Optional[Tuple[int, str]], mask_of: Optional[str]) -> Rule:
    if mask_of or MASK_NAME.search(name):
        why = f"the mask of {mask_of}" if mask_of else "a mask, by its name"
        return Rule("ones", f"ones ({why})")
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
    if dtype.kind == "f":
        return Rule("uniform", "floats uniform in [-1, 1)")
    raise CheckError(f"input {name!r}: cannot generate data of type {dtype}; give it with --inputs x.npz")


def generate(rng: np.random.Generator, dtype: np.dtype, shape: Sequence[int], rule: Rule) -> np.ndarray:
    """Seeded data of one input by its rule."""
    dtype = np.dtype(dtype)
    if rule.kind == "ones":
        return np.ones(shape, dtype)
    if rule.kind == "zeros":
        return np.zeros(shape, dtype)
    if rule.kind in ("indices", "integers"):
        return rng.integers(0, rule.high, size=list(shape)).astype(dtype)
    if rule.kind == "booleans":
        return rng.integers(0, 2, size=list(shape)).astype(bool)
    return rng.uniform(-1.0, 1.0, size=list(shape)).astype(dtype)


def guessed(generation: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """The inputs whose valid range was a guess (case.json `input_generation`)."""
    return [name for name, entry in generation.items() if not entry.get("known", True)]
