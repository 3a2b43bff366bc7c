"""The size budget: what a model needs in memory, counted from its declared shapes before anything is allocated.

Two budgets, each a flag of `python -m check` and an environment variable:

- **inputs** (`--max-input-bytes`, `$QDQ_MAX_INPUT_BYTES`, default 2 GiB): the model's inputs at the shape they are
  generated and run at (the opt shape, after `--shape` and the defaults for open dimensions; an `--inputs` file's
  arrays as its headers declare them), summed; and the largest tensor the graph computes from them, by ONNX shape
  inference on the graph alone (weights left out). Every engine and the reference hold these.
- **weights** (`--max-model-bytes`, `$QDQ_MAX_MODEL_BYTES`, default 4 GiB): every initializer and Constant tensor,
  subgraphs included, external data too, each counted from its dims and type, never read. A bundle copies them, and
  the lint, the float twin and the reference each hold them again.

A model over either is unusable (exit status 4), its size and the budget in the reason; the other models go on.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from check import CheckError
from core.words import first_few

GIB = 1 << 30
DEFAULT_MAX_INPUT_BYTES = 2 * GIB
DEFAULT_MAX_MODEL_BYTES = 4 * GIB
INPUT_ENV, MODEL_ENV = "QDQ_MAX_INPUT_BYTES", "QDQ_MAX_MODEL_BYTES"
INPUT_FLAG, MODEL_FLAG = "--max-input-bytes", "--max-model-bytes"
# Bits per element of ONNX types numpy has no width for (TensorProto numbers): 4-bit integers and FP4 are packed.
PACKED_BITS = {21: 4, 22: 4, 23: 4}  # UINT4, INT4, FLOAT4E2M1
UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 10 ** 6, "mb": 10 ** 6, "g": 10 ** 9, "gb": 10 ** 9,
         "t": 10 ** 12, "tb": 10 ** 12, "kib": 1 << 10, "mib": 1 << 20, "gib": GIB, "tib": 1 << 40}
SHOWN = 3  # tensors named in a reason


@dataclass(frozen=True)
class Budget:
    """The most bytes a model's inputs (and any one tensor computed from them) and its weights may take."""

    inputs: int = DEFAULT_MAX_INPUT_BYTES
    weights: int = DEFAULT_MAX_MODEL_BYTES

    @classmethod
    def from_env(cls, inputs: Optional[int] = None, weights: Optional[int] = None) -> "Budget":
        """The flags' values where given, else the environment's, else the defaults; CheckError for an environment
        variable that is not a size."""
        return cls(inputs if inputs is not None else _env(INPUT_ENV, DEFAULT_MAX_INPUT_BYTES),
                   weights if weights is not None else _env(MODEL_ENV, DEFAULT_MAX_MODEL_BYTES))


@dataclass(frozen=True)
class Sized:
    """One tensor as the budget counts it: name, shape, element type and bytes."""

    name: str
    shape: Tuple[int, ...]
    dtype: str
    bytes: int

    def said(self) -> str:
        """"x: 1x3x20000x20000 float32"."""
        return f"{self.name}: {'x'.join(map(str, self.shape)) or 'scalar'} {self.dtype}"


def parse_size(text: str) -> int:
    """A size in bytes from "2147483648", "2GiB", "500 MB", "1.5e9" (k, M, G, T are powers of 1000; KiB, MiB, GiB,
    TiB of 1024); ValueError for anything else, or for a size below one byte."""
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    unit = found.group(2).lower() if found else ""
    if not found or unit not in UNITS:
        raise ValueError(f"{text!r} is not a size (give bytes, or a number with kB, MB, GB, KiB, MiB, GiB)")
    value = float(found.group(1)) * UNITS[unit]
    if not value >= 1 or value == float("inf"):
        raise ValueError(f"{text!r}: give a size of at least one byte")
    return int(value)


def show_size(n: int) -> str:
    """Bytes as a reader says them: "8.9 GiB", "512 MiB", "200 bytes"."""
    for unit, size in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def _env(name: str, default: int) -> int:
    said = os.environ.get(name, "").strip()
    if not said:
        return default
    try:
        return parse_size(said)
    except ValueError as e:
        raise CheckError(f"${name}: {e}") from None


def element_bits(elem_type: int) -> int:
    """Bits per element of an ONNX element type; 0 where it has no fixed width (strings, undefined)."""
    from onnx import helper

    if elem_type in PACKED_BITS:
        return PACKED_BITS[elem_type]
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:  # undefined, or a type this onnx does not know
        return 0
    return 0 if dtype.kind in "OSU" else dtype.itemsize * 8


def _type_name(elem_type: int) -> str:
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except Exception:  # a type numpy has no name for
        try:
            return helper.tensor_dtype_to_string(elem_type).replace("TensorProto.", "").lower()
        except Exception:
            return f"type {elem_type}"


def sized(name: str, shape: Sequence[int], elem_type: int) -> Sized:
    """One tensor's bytes from its shape and ONNX element type (a packed 4-bit type rounds up to whole bytes)."""
    elements = 1
    for d in shape:
        elements *= int(d)
    size = (elements * element_bits(elem_type) + 7) // 8
    return Sized(name, tuple(int(d) for d in shape), _type_name(elem_type), size)


def weights(model: Any) -> List[Sized]:
    """Every initializer and Constant tensor of the model, subgraphs included, external data too: sized from dims."""
    return [sized(t.name or where, t.dims, t.data_type) for t, where in _tensors(model.graph)]


def _tensors(graph: Any) -> Iterator[Tuple[Any, str]]:
    """(tensor, the node it belongs to) for every stored tensor of a graph and its subgraphs, each once."""
    for t in graph.initializer:
        yield t, t.name
    for n in graph.node:
        for a in n.attribute:
            if a.HasField("t"):
                yield a.t, n.name or (n.output[0] if n.output else n.op_type)
            for t in a.tensors:
                yield t, n.name or n.op_type
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _tensors(g)


def inputs_at(declared: Mapping[str, Tuple[np.dtype, Sequence[Any]]], shapes: Mapping[str, Any]) -> List[Sized]:
    """The inputs at the shape they are generated at (each InputShape's opt)."""
    from onnx import helper

    return [sized(n, shapes[n].opt, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
            for n, (dtype, _) in declared.items() if n in shapes]


def npz_inputs(path: Path) -> List[Sized]:
    """The arrays of an .npz file as their headers declare them, none read; [] where it is not an .npz numpy can read
    (the inputs' own check says why)."""
    from onnx import helper

    found = []
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                        np.lib.format.read_array_header_2_0
                    shape, _, dtype = read(f)  # the header only
                try:
                    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
                except Exception:  # an object or structured array: its own check refuses it
                    continue
                found.append(sized(info.filename[: -len(".npy")], shape, elem))
    except (OSError, ValueError, zipfile.BadZipFile):
        return []
    return found


def largest_computed(model: Any, shapes: Mapping[str, Any]) -> Optional[Sized]:
    """The largest tensor the graph computes with its inputs at their opt shape, by ONNX shape inference on a copy of
    the graph without its weights (their shapes declared as inputs instead): nothing is allocated, and a weight-heavy
    model costs no copy of its weights. None where inference cannot say (a custom op, an error)."""
    from onnx import TensorProto, shape_inference

    try:
        inferred = shape_inference.infer_shapes(_skeleton(model, shapes), strict_mode=False)
    except Exception:  # a graph the checker's inference refuses: the engines and the reference will say more
        return None
    computed = {o for n in inferred.graph.node for o in n.output}
    best: Optional[Sized] = None
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        if vi.name not in computed or not vi.type.HasField("tensor_type"):
            continue
        ttype = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in ttype.shape.dim]
        if not ttype.HasField("shape") or any(d < 0 for d in dims) or ttype.elem_type == TensorProto.UNDEFINED:
            continue
        found = sized(vi.name, dims, ttype.elem_type)
        if best is None or found.bytes > best.bytes:
            best = found
    return best


SMALL = 64  # elements: a weight this small keeps its values (a Reshape's shape, a Resize's scales)


def _skeleton(model: Any, shapes: Mapping[str, Any]) -> Any:
    """The model's graph for shape inference: inputs fixed at their opt shape, small constants kept with their values,
    every other initializer a graph input of its shape (no bytes), value_info dropped."""
    from onnx import ModelProto, helper

    out = ModelProto()
    out.ir_version = model.ir_version
    out.opset_import.extend(model.opset_import)
    g, src = out.graph, model.graph
    g.name = src.name
    g.node.extend(src.node)
    g.output.extend(src.output)
    kept = set()
    for t in src.initializer:
        elements = 1
        for d in t.dims:
            elements *= int(d)
        if elements <= SMALL and t.data_location != 1:  # not TensorProto.EXTERNAL
            g.initializer.append(t)
        else:
            g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        kept.add(t.name)
    for vi in src.input:
        if vi.name in kept:
            continue
        fixed = g.input.add()
        fixed.CopyFrom(vi)
        if vi.name in shapes and vi.type.HasField("tensor_type"):
            dims = fixed.type.tensor_type.shape
            del dims.dim[:]
            for d in shapes[vi.name].opt:
                dims.dim.add().dim_value = int(d)
    return out


def check_weights(model: Any, budget: Budget) -> None:
    """CheckError where the model's weights are over the budget, with their size and the largest of them."""
    found = weights(model)
    total = sum(s.bytes for s in found)
    if total > budget.weights:
        raise CheckError(f"weights need {show_size(total)} ({_largest(found)}), over the {show_size(budget.weights)} "
                         f"budget ({MODEL_FLAG} or ${MODEL_ENV})")


def check_inputs(found: Sequence[Sized], budget: Budget, where: str = "inputs") -> None:
    """CheckError where the inputs are over the budget, with their size and shapes."""
    total = sum(s.bytes for s in found)
    if total > budget.inputs:
        raise CheckError(f"{where} need {show_size(total)} ({_largest(found)}), over the {show_size(budget.inputs)} "
                         f"budget ({INPUT_FLAG} or ${INPUT_ENV})")


def check_computed(model: Any, shapes: Mapping[str, Any], budget: Budget, settable: bool) -> None:
    """CheckError where one tensor the graph computes from its inputs is over the inputs' budget; `settable`: an
    input leaves a dimension open, so --shape can make it smaller."""
    largest = largest_computed(model, shapes)
    if largest is not None and largest.bytes > budget.inputs:
        remedy = "give a smaller shape with --shape" if settable else \
            f"its inputs' shapes are fixed, so only a larger {INPUT_FLAG} lets it through"
        raise CheckError(f"the tensor {largest.said()} computed from these inputs needs {show_size(largest.bytes)}, "
                         f"over the {show_size(budget.inputs)} budget ({INPUT_FLAG} or ${INPUT_ENV}); {remedy}")


def _largest(found: Sequence[Sized]) -> str:
    return first_few([s.said() for s in sorted(found, key=lambda s: -s.bytes)], SHOWN)
