"""The float twin of a Q/DQ model: the quantized model with its quantization taken out, so that a user bundle measures
its quantization loss (the simulated Q/DQ reference against a float model) without `--float-model`.

Every QuantizeLinear -> DequantizeLinear pair becomes an Identity of the QuantizeLinear's input (the DequantizeLinear's
output keeps its name, so graph outputs and consumers stay as they are), or a Clip to the pair's range where that range
starts at 0 (a Relu where its scale is per channel): a quantizer folds a Relu or a Clip (Relu6, HardSwish's Clip(0, 6))
into such a pair and removes it (onnxruntime's does), and only the pair's range remembers it. A twin that kept only the
floor computed HardSwish unbounded: 1.8 dB from the real float model of a PaddleOCR classifier, NaN on a recognizer.
Keeping the ceiling leaves out that pair's saturation at its top (a folded Relu's calibrated maximum) from the loss.
Every DequantizeLinear of a constant is
folded into a float initializer, scale * (q - zero point), per tensor, per axis or per block, as the operator defines
it. What cannot be undone is kept and said with its reason: a pair whose two scales differ (a requantization), a
DequantizeLinear of a graph input or of another operator's output, one whose constants cannot be read. The float
originals of the weights are not in a quantized model, so the twin keeps the weights' quantized values: its loss is
the activations' quantization (`--float-model` measures both). Nodes inside subgraphs are left as they are.

A constant over FOLD_BYTES (a weight, not a scale) is not folded: its DequantizeLinear stays in the twin, where the
reference's runner computes the same scale * (q - zero point) when it runs the twin, so the twin's outputs are the
same and the weights are neither read nor held again as floats (four times their int8 bytes). With its external data
not loaded, the twin's weights stay in the files the model names; only scales, zero points and small constants are read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union

import numpy as np

from cases.pattern import onnx_opset

QUANTIZE = "QuantizeLinear"
DEQUANTIZE = "DequantizeLinear"
LOWEST = {"int4": -8, "uint4": 0}  # ml_dtypes' 4-bit integers, which numpy's iinfo does not know; floats have none
FOLD_BYTES = 1 << 20  # a quantized constant larger than this keeps its DequantizeLinear in the twin


def float_twin(model: Any, base_dir: Union[str, Path] = "", fold_bytes: int = FOLD_BYTES
               ) -> Tuple[Any, Dict[str, Any]]:
    """(the twin, what was done: {"pairs": Q/DQ pairs removed, "relu": how many of them became a Relu, "folded":
    constants folded, "dequantized_at_run": DequantizeLinear nodes of constants over `fold_bytes` kept to run as
    they are, "kept": [{node, op, why}]}) for an onnx ModelProto, its external data loaded or not (then read from
    `base_dir` where a small constant needs it); the model itself is not changed."""
    from onnx import ModelProto, helper, numpy_helper

    twin = ModelProto()
    twin.CopyFrom(model)
    graph = twin.graph
    constants: Dict[str, Any] = {i.name: i for i in graph.initializer}
    constants.update({n.output[0]: _attribute_tensor(n) for n in graph.node if n.op_type == "Constant" and n.output
                      and _attribute_tensor(n) is not None})
    producer = {o: n for n in graph.node for o in n.output}
    arrays: Dict[str, np.ndarray] = {}  # constants read once, folded ones added as they are made

    def array(name: str) -> np.ndarray:
        if name not in arrays:
            arrays[name] = numpy_helper.to_array(constants[name], base_dir=str(base_dir))
        return arrays[name]

    nodes, folded, kept, pairs, relus, at_run = [], [], [], 0, 0, 0
    bounds: Dict[str, np.ndarray] = {}  # the Clips' floors and ceilings, new constants of the twin's own
    clip_inputs = onnx_opset(model) >= 11  # Clip's min and max are inputs from opset 11, attributes before
    for node in graph.node:
        if node.op_type != DEQUANTIZE or not node.input:
            nodes.append(node)
            continue
        source = producer.get(node.input[0])
        if source is not None and source.op_type == QUANTIZE:
            why = _pair_differs(source, node, lambda name: name in constants or name in arrays, array)
            if why:
                kept.append({"node": node.name, "op": DEQUANTIZE, "why": why})
                nodes.append(node)
                continue
            floor = _starts_at_zero(source, array)
            top = _top(source, array) if floor else None
            if top is None:
                nodes.append(helper.make_node("Relu" if floor else "Identity", [source.input[0]], [node.output[0]],
                                              name=node.name))
            else:  # the folded activation's whole range: a Relu6 or HardSwish's Clip(0, 6) had a ceiling too
                bound = f"{node.name or node.output[0]}__twin_max"
                zero_name = f"{node.name or node.output[0]}__twin_min"
                bounds.update({zero_name: np.zeros((), np.float32), bound: np.asarray(top, np.float32)})
                nodes.append(helper.make_node("Clip", [source.input[0], zero_name, bound], [node.output[0]],
                                              name=node.name) if clip_inputs else
                             helper.make_node("Clip", [source.input[0]], [node.output[0]], name=node.name,
                                              min=0.0, max=float(top)))
            pairs += 1
            relus += floor
            continue
        if node.input[0] in constants and _nbytes(constants[node.input[0]]) > fold_bytes:
            nodes.append(node)  # a weight: the runner dequantizes it as folding would, from where it is stored
            at_run += 1
            continue
        if node.input[0] in constants or node.input[0] in arrays:
            try:
                value = dequantize(node, [array(i) if i else None for i in node.input])
            except Exception as e:  # a type or layout numpy cannot read here
                kept.append({"node": node.name, "op": DEQUANTIZE, "why": f"its constant cannot be folded: {_first(e)}"})
                nodes.append(node)
                continue
            arrays[node.output[0]] = value
            folded.append(node.output[0])
            continue
        kept.append({"node": node.name, "op": DEQUANTIZE, "why": "it dequantizes a graph input or another node's "
                     "output, not a QuantizeLinear or a constant"})
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(numpy_helper.from_array(arrays[name], name) for name in folded)
    graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in bounds.items())
    _drop_unused(graph)
    kept += [{"node": n.name, "op": QUANTIZE, "why": "its output is read by more than a DequantizeLinear (a graph "
              "output or another operator)"} for n in graph.node if n.op_type == QUANTIZE]
    return twin, {"pairs": pairs, "relu": relus, "folded": len(folded), "dequantized_at_run": at_run, "kept": kept}


def dequantize(node: Any, inputs: List[Optional[np.ndarray]]) -> np.ndarray:
    """A DequantizeLinear of constants as the operator defines it: (x - zero point) * scale, the scale per tensor, per
    `axis` or per `block_size` elements along it; the result in the scale's type (or `output_dtype`)."""
    from onnx import helper

    x, scale = inputs[0], inputs[1]
    zero = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if x is None or scale is None:
        raise ValueError("no input or scale")
    axis = int(attrs.get("axis", 1)) % max(x.ndim, 1)
    block = int(attrs.get("block_size", 0))
    out_dtype = helper.tensor_dtype_to_np_dtype(int(attrs["output_dtype"])) if attrs.get("output_dtype") else \
        scale.dtype
    zero_point = np.zeros((), x.dtype) if zero is None else _spread(zero, x.shape, axis, block)
    if np.dtype(x.dtype).kind in "iu":  # integers: exact differences, as the operator computes them
        centred = (x.astype(np.int64) - np.asarray(zero_point).astype(np.int64)).astype(np.float32)
    else:  # INT4, FP8, FP4 (ml_dtypes types): every value is exact in float32
        centred = x.astype(np.float32) - np.asarray(zero_point).astype(np.float32)
    return (centred * _spread(scale.astype(np.float32), x.shape, axis, block)).astype(out_dtype)


def _spread(values: np.ndarray, shape: Tuple[int, ...], axis: int, block: int) -> Any:
    """A scale or zero point broadcast to the quantized tensor's shape: one value, one per `axis` index, or one per
    block of `block` elements along it."""
    if values.size == 1:
        return values.reshape(())
    if block:
        return np.repeat(values, block, axis=axis).take(range(shape[axis]), axis=axis)
    if values.ndim != 1 or values.size != shape[axis]:
        raise ValueError(f"{values.size} scales for axis {axis} of a tensor of shape {list(shape)}")
    return values.reshape([-1 if d == axis else 1 for d in range(len(shape))])


def _starts_at_zero(q: Any, array: Callable[[str], np.ndarray]) -> bool:
    """Whether a QuantizeLinear's range starts at 0 (its zero point is its type's lowest value: uint8 0, int8 -128):
    it clips every negative value, as the Relu or Clip a quantizer folds into it did (onnxruntime's quantizer removes a
    Relu before a Q/DQ whose range starts at 0). Without a zero point the type is uint8 (or `output_dtype`)."""
    from onnx import helper

    if len(q.input) > 2 and q.input[2]:
        zero = array(q.input[2])
        dtype = np.dtype(zero.dtype)
    else:
        said = next((helper.get_attribute_value(a) for a in q.attribute if a.name == "output_dtype"), 0)
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(said))) if said else np.dtype(np.uint8)
        zero = np.zeros((), dtype)
    lowest = LOWEST.get(dtype.name, np.iinfo(dtype).min if dtype.kind in "iu" else None)
    return lowest is not None and bool(np.all(np.asarray(zero).astype(np.int64) == lowest))


def _top(q: Any, array: Callable[[str], np.ndarray]) -> Optional[float]:
    """The highest value a QuantizeLinear with one scale (per tensor) and an integer type represents,
    scale * (highest code - zero point); None for a per-axis scale, a float type or one that cannot be read."""
    try:
        scale = array(q.input[1])
        zero = array(q.input[2]) if len(q.input) > 2 and q.input[2] else None
    except Exception:  # a scale that is no constant
        return None
    if zero is None:  # uint8, unless output_dtype names another type
        if any(a.name == "output_dtype" for a in q.attribute):
            return None
        zero = np.zeros((), np.uint8)
    dtype = np.dtype(zero.dtype)
    if scale.size != 1 or zero.size != 1 or dtype.kind not in "iu":
        return None
    return float(scale.reshape(())) * float(np.iinfo(dtype).max - int(zero.reshape(())))


def _pair_differs(q: Any, dq: Any, constant: Callable[[str], bool], array: Callable[[str], np.ndarray]) -> str:
    """"" when a QuantizeLinear and the DequantizeLinear after it use one scale and zero point (by name or by value),
    else why the pair is kept."""
    for i, what in ((1, "scale"), (2, "zero point")):
        a = q.input[i] if len(q.input) > i else ""
        b = dq.input[i] if len(dq.input) > i else ""
        if a == b:
            continue
        if not (constant(a) and constant(b)):
            return f"its {what} is not its QuantizeLinear's ({a or 'none'} and {b or 'none'}), a requantization"
        x, y = array(a), array(b)
        if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y):
            return f"its {what} differs from its QuantizeLinear's, a requantization"
    return ""


def _nbytes(tensor: Any) -> int:
    """A constant's bytes from its dims and type, nothing read (a 4-bit element counted as a byte)."""
    from onnx import helper

    try:
        size = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except Exception:  # a type numpy does not know: as large as the largest
        size = 8
    return int(np.prod(tensor.dims, dtype=np.int64)) * size


def _attribute_tensor(node: Any) -> Any:
    return next((a.t for a in node.attribute if a.name == "value" and a.HasField("t")), None)


def _drop_unused(graph: Any) -> None:
    """Remove the nodes and initializers nothing reads any more: QuantizeLinear nodes whose DequantizeLinear went, the
    integer weights, scales and zero points that were folded; a graph output is always read. One pass with a count of
    readers per name: a node that goes gives its inputs one reader less."""
    readers: Dict[str, int] = {}
    for name in [o.name for o in graph.output] + [i for n in graph.node for i in [*n.input, *_subgraph_names(n)]]:
        readers[name] = readers.get(name, 0) + 1
    producers = {o: k for k, n in enumerate(graph.node) for o in n.output}
    droppable = (QUANTIZE, "Constant")
    dead: Set[int] = set()
    todo = [k for k, n in enumerate(graph.node) if n.op_type in droppable]
    while todo:
        k = todo.pop()
        n = graph.node[k]
        if k in dead or any(readers.get(o, 0) for o in n.output):
            continue
        dead.add(k)
        for i in [*n.input, *_subgraph_names(n)]:
            readers[i] -= 1
            if not readers[i] and i in producers and graph.node[producers[i]].op_type in droppable:
                todo.append(producers[i])
    if dead:
        kept = [n for k, n in enumerate(graph.node) if k not in dead]
        del graph.node[:]
        graph.node.extend(kept)
    read = {name for name, count in readers.items() if count}
    if any(i.name not in read for i in graph.initializer):
        kept_init = [i for i in graph.initializer if i.name in read]
        del graph.initializer[:]
        graph.initializer.extend(kept_init)
    produced = {o for n in graph.node for o in n.output} | {i.name for i in graph.input} | \
        {i.name for i in graph.initializer}
    if any(v.name not in produced for v in graph.value_info):
        kept_info = [v for v in graph.value_info if v.name in produced]
        del graph.value_info[:]
        graph.value_info.extend(kept_info)


def _subgraph_names(node: Any) -> Set[str]:
    """Every name a node's subgraphs read (an If or Loop body may read an outer initializer)."""
    found: Set[str] = set()
    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            for n in g.node:
                found.update(n.input)
                found.update(_subgraph_names(n))
    return found


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:200] if text else type(e).__name__
