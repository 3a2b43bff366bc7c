"""A reference that is no engine under test, for a model whose quantized operators ONNX Runtime would run itself.

A Q/DQ model's reference is ONNX Runtime on CPU with every optimization off: its Q/DQ nodes run as float simulation,
never as the integer kernels the ONNX Runtime column runs. A QOperator model (QLinearConv, QLinearMatMul) or a
dynamically quantized one (DynamicQuantizeLinear, ConvInteger, MatMulInteger, onnxruntime's com.microsoft ops) has no
Q/DQ to simulate: ONNX Runtime with optimizations off runs the very integer kernels under test, and its column would be
compared with itself. Such a model's reference is onnx.reference, onnx's own operator definitions in numpy, after
onnxruntime's com.microsoft quantized ops are written in standard operators (`standard_form`): com.microsoft QLinear*
as DequantizeLinear -> float operator -> QuantizeLinear, DynamicQuantizeMatMul and MatMulIntegerToFloat as
DynamicQuantizeLinear/MatMulInteger and the scales (exactly), QGemm as MatMulInteger, its int32 bias, the scales and
a rounding QuantizeLinear (as ONNX Runtime's kernel computes it), DynamicQuantizeLSTM as an LSTM of its dequantized
weights (its activations stay float: said in the record). Where onnx.reference still cannot run the model, ONNX
Runtime may run the rewritten model only if no integer operator is left in it; otherwise there is no reference, and
the record says why.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from cases.pattern import ORT_CONTRIB, onnx_opset
from check.forms import quantized_op

# com.microsoft QLinear* ops as (float op, (data, scale, zero point) input triples, (scale, zero point) of the output).
QLINEAR_CONTRIB = {
    "QLinearAdd": ("Add", ((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearMul": ("Mul", ((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearSigmoid": ("Sigmoid", ((0, 1, 2),), (3, 4)),
    "QLinearLeakyRelu": ("LeakyRelu", ((0, 1, 2),), (3, 4)),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", ((0, 1, 2),), (3, 4)),
    "QLinearAveragePool": ("AveragePool", ((0, 1, 2),), (3, 4)),
}
APPROXIMATE = {"DynamicQuantizeLSTM": "an LSTM of its dequantized weights: its activations are not quantized"}


def needs_independent(model: Any) -> bool:
    """Whether ONNX Runtime would run the model's quantized operators as the integer kernels it is judged on."""
    return any(quantized_op(n.op_type) or n.op_type == "DynamicQuantizeLinear" for n in model.graph.node)


def standard_form(model: Any) -> Tuple[Any, Dict[str, int]]:
    """The model with onnxruntime's com.microsoft quantized ops written in standard operators, and how many of each op
    were rewritten; the model itself is not changed."""
    from onnx import ModelProto, helper, numpy_helper

    out = ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    constants = {t.name: t for t in graph.initializer}
    done: Dict[str, int] = {}
    nodes: List[Any] = []
    for node in graph.node:
        made = None
        if node.domain == ORT_CONTRIB and node.op_type in QLINEAR_CONTRIB and not _attr(node, "channels_last", 0):
            made = _qlinear(helper, node, *QLINEAR_CONTRIB[node.op_type])
        elif node.domain == ORT_CONTRIB and node.op_type == "DynamicQuantizeMatMul":
            made = _dynamic_matmul(helper, node)
        elif node.domain == ORT_CONTRIB and node.op_type == "MatMulIntegerToFloat":
            made = _integer_to_float(helper, node)
        elif node.domain == ORT_CONTRIB and node.op_type == "QGemm":
            made = _qgemm(helper, node)
        elif node.domain == ORT_CONTRIB and node.op_type == "DynamicQuantizeLSTM":
            made = _lstm(helper, numpy_helper, node, constants, graph)
        if made is None:
            nodes.append(node)
            continue
        nodes.extend(made)
        done[node.op_type] = done.get(node.op_type, 0) + 1
    del graph.node[:]
    graph.node.extend(nodes)
    if not any(o.domain in ("", "ai.onnx") for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid("", 13))
    return out, done


def _attr(node: Any, name: str, default: int) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), default)


def _input(node: Any, k: int) -> str:
    return node.input[k] if len(node.input) > k else ""


def _qlinear(helper: Any, node: Any, op: str, triples: Tuple[Tuple[int, int, int], ...],
             output: Tuple[int, int]) -> List[Any]:
    """A com.microsoft QLinear op as DequantizeLinear of each input -> the float op -> QuantizeLinear."""
    base = f"{node.name}__std"
    made, floats = [], []
    for k, (x, s, z) in enumerate(triples):
        floats.append(f"{base}_x{k}")
        made.append(helper.make_node("DequantizeLinear", [_input(node, x), _input(node, s), _input(node, z)],
                                     [floats[-1]], name=f"{base}_dq{k}"))
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name != "channels_last"}
    made.append(helper.make_node(op, floats, [f"{base}_y"], name=f"{base}_op", **attrs))
    made.append(helper.make_node("QuantizeLinear", [f"{base}_y", _input(node, output[0]), _input(node, output[1])],
                                 [node.output[0]], name=node.name))
    return made


def _scaled(helper: Any, node: Any, acc: str, scales: List[str], bias: str) -> List[Any]:
    """int32 accumulator -> float, times each scale, plus the bias: the tail of the dynamic matrix products."""
    base = f"{node.name}__std"
    made = [helper.make_node("Cast", [acc], [f"{base}_accf"], to=1, name=f"{base}_cast")]
    current = f"{base}_accf"
    for k, scale in enumerate(scales):
        last = k == len(scales) - 1 and not bias
        target = node.output[0] if last else f"{base}_s{k}"
        made.append(helper.make_node("Mul", [current, scale], [target], name=node.name if last else f"{base}_mul{k}"))
        current = target
    if bias:
        made.append(helper.make_node("Add", [current, bias], [node.output[0]], name=node.name))
    return made


def _dynamic_matmul(helper: Any, node: Any) -> List[Any]:
    """DynamicQuantizeMatMul(A, B, b_scale, b_zero_point, bias) as DynamicQuantizeLinear(A), MatMulInteger, scales."""
    base = f"{node.name}__std"
    a = [f"{base}_aq", f"{base}_as", f"{base}_az"]
    made = [helper.make_node("DynamicQuantizeLinear", [node.input[0]], a, name=f"{base}_dql"),
            helper.make_node("MatMulInteger", [a[0], node.input[1], a[2], _input(node, 3)], [f"{base}_acc"],
                             name=f"{base}_mmi")]
    return made + _scaled(helper, node, f"{base}_acc", [a[1], node.input[2]], _input(node, 4))


def _integer_to_float(helper: Any, node: Any) -> List[Any]:
    """MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias) as MatMulInteger -> scales."""
    base = f"{node.name}__std"
    made = [helper.make_node("MatMulInteger", [node.input[0], node.input[1], _input(node, 4), _input(node, 5)],
                             [f"{base}_acc"], name=f"{base}_mmi")]
    return made + _scaled(helper, node, f"{base}_acc", [node.input[2], node.input[3]], _input(node, 6))


def _qgemm(helper: Any, node: Any) -> List[Any]:
    """QGemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point) as ONNX Runtime computes it
    (contrib_ops/cpu/quantization/quant_gemm.cc): the int32 accumulator C + (A - a_zero_point)(B - b_zero_point)
    (MatMulInteger, after transA/transB), times alpha * a_scale * b_scale (per column where b_scale is), divided by
    y_scale, all in float32 and in that order; then rounded half to even and offset by y_zero_point (QuantizeLinear
    with scale 1, as its requantization does), or left float where there is no y_zero_point."""
    from onnx import TensorProto

    base = f"{node.name}__std"
    made: List[Any] = []
    operands = []
    for k, flag in ((0, "transA"), (3, "transB")):
        name = node.input[k]
        if _attr(node, flag, 0):
            made.append(helper.make_node("Transpose", [name], [f"{base}_t{k}"], name=f"{base}_transpose{k}",
                                         perm=[1, 0]))
            name = f"{base}_t{k}"
        operands.append(name)
    acc = f"{base}_acc"
    made.append(helper.make_node("MatMulInteger", [operands[0], operands[1], node.input[2], node.input[5]], [acc],
                                 name=f"{base}_mmi"))
    if _input(node, 6):
        made.append(helper.make_node("Add", [acc, node.input[6]], [f"{base}_accc"], name=f"{base}_bias"))
        acc = f"{base}_accc"
    alpha = next((float(a.f) for a in node.attribute if a.name == "alpha"), 1.0)
    made += [helper.make_node("Cast", [acc], [f"{base}_accf"], to=TensorProto.FLOAT, name=f"{base}_cast"),
             helper.make_node("Constant", [], [f"{base}_alpha"], name=f"{base}_alpha",
                              value=helper.make_tensor(f"{base}_alpha", TensorProto.FLOAT, [], [alpha])),
             helper.make_node("Mul", [f"{base}_alpha", node.input[1]], [f"{base}_sa"], name=f"{base}_sa"),
             helper.make_node("Mul", [f"{base}_sa", node.input[4]], [f"{base}_sab"], name=f"{base}_sab")]
    scale = f"{base}_sab"
    if _input(node, 7):
        made.append(helper.make_node("Div", [scale, node.input[7]], [f"{base}_sy"], name=f"{base}_sy"))
        scale = f"{base}_sy"
    if not _input(node, 8):
        return made + [helper.make_node("Mul", [f"{base}_accf", scale], [node.output[0]], name=node.name)]
    return made + [
        helper.make_node("Mul", [f"{base}_accf", scale], [f"{base}_y"], name=f"{base}_scale"),
        helper.make_node("Constant", [], [f"{base}_one"], name=f"{base}_one",
                         value=helper.make_tensor(f"{base}_one", TensorProto.FLOAT, [], [1.0])),
        helper.make_node("QuantizeLinear", [f"{base}_y", f"{base}_one", node.input[8]], [node.output[0]],
                         name=node.name)]


def _lstm(helper: Any, numpy_helper: Any, node: Any, constants: Mapping[str, Any], graph: Any) -> Optional[List[Any]]:
    """DynamicQuantizeLSTM as an LSTM of its dequantized weights (W and R: [directions, input, 4 hidden] -> LSTM's
    [directions, 4 hidden, input]); None where its weights or their scales are not constants."""
    names = {k: _input(node, k) for k in (1, 2, 8, 9, 10, 11)}
    if any(names[k] not in constants for k in (1, 2, 8, 10)):
        return None
    weights = []
    for data, scale, zero in ((1, 8, 9), (2, 10, 11)):
        q = numpy_helper.to_array(constants[names[data]]).astype(np.float32)
        s = numpy_helper.to_array(constants[names[scale]]).astype(np.float32)
        z = numpy_helper.to_array(constants[names[zero]]).astype(np.float32) if names[zero] in constants else 0.0
        s = s.reshape(s.shape[0], 1, -1) if s.ndim else s
        z = z.reshape(z.shape[0], 1, -1) if np.ndim(z) else z
        name = f"{node.name}__std_w{data}"
        graph.initializer.append(numpy_helper.from_array(((q - z) * s).transpose(0, 2, 1).astype(np.float32), name))
        weights.append(name)
    inputs = [node.input[0], *weights, *[_input(node, k) for k in range(3, 8)]]
    while inputs and not inputs[-1]:
        inputs.pop()
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return [helper.make_node("LSTM", inputs, list(node.output), name=node.name, **attrs)]


def qdq_form(model: Any) -> Tuple[Any, Dict[str, int]]:
    """The model with QLinearConv, QLinearMatMul, QGemm and the com.microsoft QLinear ops written as DequantizeLinear
    -> float operator -> QuantizeLinear (a constant int32 bias folded to float), so that the float twin (check.twin)
    can undo them as it undoes any Q/DQ pair; and how many of each op were rewritten."""
    from onnx import ModelProto, helper, numpy_helper

    first = ModelProto()
    first.CopyFrom(model)
    gemms = _rewrite(first, lambda node, constants: _qgemm_qdq(helper, numpy_helper, node, constants, first.graph)
                     if node.domain == ORT_CONTRIB and node.op_type == "QGemm" else None)
    out, done = standard_form(first)
    done.update(gemms)
    for op, count in _rewrite(out, lambda node, constants: _qlinear_compute(helper, numpy_helper, node, constants,
                                                                            out.graph)
                              if node.domain in ("", "ai.onnx") and node.op_type in ("QLinearConv", "QLinearMatMul")
                              else None).items():
        done[op] = done.get(op, 0) + count
    return out, done


def _rewrite(model: Any, make: Any) -> Dict[str, int]:
    """Each node of the model's graph replaced by the nodes `make(node, constants)` gives (None: kept as it is), in
    place; how many of each op were replaced."""
    constants = {t.name: t for t in model.graph.initializer}
    done: Dict[str, int] = {}
    nodes: List[Any] = []
    for node in model.graph.node:
        made = make(node, constants)
        if made is None:
            nodes.append(node)
            continue
        nodes.extend(made)
        done[node.op_type] = done.get(node.op_type, 0) + 1
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return done


def _qgemm_qdq(helper: Any, numpy_helper: Any, node: Any, constants: Mapping[str, Any],
               graph: Any) -> Optional[List[Any]]:
    """QGemm (A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point) as DequantizeLinear of A
    and B -> Gemm (alpha, transA, transB; C folded to float: C * alpha * a_scale * b_scale, the scale ONNX Runtime's
    kernel gives it) -> QuantizeLinear, or the Gemm's float output where there is no y_zero_point; None where the
    bias's scales are not constants, or where a y_scale has no y_zero_point."""
    if _input(node, 7) and not _input(node, 8):
        return None
    base = f"{node.name}__qdq"
    alpha = next((float(a.f) for a in node.attribute if a.name == "alpha"), 1.0)
    trans_b = _attr(node, "transB", 0)
    b_scale = constants.get(node.input[4])
    per_column = b_scale is not None and int(np.prod(b_scale.dims)) > 1
    if b_scale is None and _input(node, 6):
        return None
    made = [helper.make_node("DequantizeLinear", node.input[0:3], [f"{base}_a"], name=f"{base}_dqa"),
            helper.make_node("DequantizeLinear", node.input[3:6], [f"{base}_b"], name=f"{base}_dqb",
                             **({"axis": 0 if trans_b else 1} if per_column else {}))]
    inputs = [f"{base}_a", f"{base}_b"]
    if _input(node, 6):
        if node.input[6] not in constants or node.input[1] not in constants:
            return None
        scale = (np.float64(alpha) * numpy_helper.to_array(constants[node.input[1]]).astype(np.float64)
                 * numpy_helper.to_array(b_scale).astype(np.float64))
        value = numpy_helper.to_array(constants[node.input[6]]).astype(np.float64) * scale
        graph.initializer.append(numpy_helper.from_array(value.astype(np.float32), f"{base}_c"))
        inputs.append(f"{base}_c")
    quantized = bool(_input(node, 8))
    made.append(helper.make_node("Gemm", inputs, [f"{base}_y" if quantized else node.output[0]],
                                 name=f"{base}_gemm" if quantized else node.name, alpha=alpha,
                                 transA=_attr(node, "transA", 0), transB=trans_b))
    if quantized:
        made.append(helper.make_node("QuantizeLinear", [f"{base}_y", node.input[7], node.input[8]], [node.output[0]],
                                     name=node.name))
    return made


def _qlinear_compute(helper: Any, numpy_helper: Any, node: Any, constants: Mapping[str, Any],
                     graph: Any) -> Optional[List[Any]]:
    """QLinearConv (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B) or QLinearMatMul
    (a, ..., b, ..., y_scale, y_zero_point) as DequantizeLinear -> Conv/MatMul -> QuantizeLinear; None where a
    per-channel scale or the bias is not a constant."""
    conv = node.op_type == "QLinearConv"
    base = f"{node.name}__qdq"
    w_scale = constants.get(node.input[4])
    if w_scale is None:
        return None
    per_channel = int(np.prod(w_scale.dims)) > 1
    made = [helper.make_node("DequantizeLinear", node.input[0:3], [f"{base}_x"], name=f"{base}_dqx"),
            helper.make_node("DequantizeLinear", node.input[3:6], [f"{base}_w"], name=f"{base}_dqw",
                             **({"axis": 0 if conv else 1} if per_channel else {}))]
    inputs = [f"{base}_x", f"{base}_w"]
    bias = _input(node, 8) if conv else ""
    if bias:
        if bias not in constants or node.input[1] not in constants:
            return None
        scale = numpy_helper.to_array(constants[node.input[1]]) * numpy_helper.to_array(w_scale)
        value = numpy_helper.to_array(constants[bias]).astype(np.float64) * scale.astype(np.float64)
        graph.initializer.append(numpy_helper.from_array(value.astype(np.float32), f"{base}_b"))
        inputs.append(f"{base}_b")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    made.append(helper.make_node("Conv" if conv else "MatMul", inputs, [f"{base}_y"], name=f"{base}_op", **attrs))
    made.append(helper.make_node("QuantizeLinear", [f"{base}_y", node.input[6], _input(node, 7)], [node.output[0]],
                                 name=node.name))
    return made


def onnx_reference_run(model: Any, inputs: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The model's outputs from onnx.reference, its QuantizeLinear and DequantizeLinear read at any opset (the opset 13
    forms are the opset 19 ones for the integer types)."""
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.ops import op_dequantize_linear, op_quantize_linear

    class DequantizeLinear(_newest(op_dequantize_linear, "DequantizeLinear")):  # type: ignore[misc]
        op_domain = ""

    class QuantizeLinear(_newest(op_quantize_linear, "QuantizeLinear")):  # type: ignore[misc]
        op_domain = ""

    new_ops = [DequantizeLinear, QuantizeLinear] if onnx_opset(model) < 19 else []
    session = ReferenceEvaluator(model, new_ops=new_ops)
    names = [o.name for o in model.graph.output]
    return {n: np.asarray(a) for n, a in zip(names, session.run(names, dict(inputs)))}


def _newest(module: Any, op: str) -> Any:
    """onnx.reference's class of the op at its newest opset (the one whose schema the evaluator gives attributes of)."""
    suffixes = [n[len(op) + 1:] for n in dir(module) if n.startswith(op + "_")]
    versions = [int(v) for v in suffixes if v.isdigit()]
    return getattr(module, f"{op}_{max(versions)}")


def left_integer_ops(model: Any) -> List[str]:
    """The op types in the model that ONNX Runtime would run as integer kernels, each once."""
    return list(dict.fromkeys(n.op_type for n in model.graph.node if quantized_op(n.op_type)))


def words(record: Mapping[str, Any]) -> str:
    """What computed the reference, in a sentence's words."""
    rewritten = record.get("rewritten") or {}
    what = "the model as it is" if not rewritten else "the model with " + ", ".join(
        f"{n} {op}" for op, n in rewritten.items()) + " written in standard operators"
    approx = [APPROXIMATE[op] for op in rewritten if op in APPROXIMATE]
    note = f" ({'; '.join(approx)})" if approx else ""
    if record.get("engine") == "onnx.reference":
        return f"onnx.reference {record.get('version', '')} (onnx's own operator definitions) on {what}{note}"
    return (f"{record.get('engine', '')} {record.get('version', '')} on CPU, graph optimizations off, on {what}{note}: "
            "no integer operator left for it to run")
