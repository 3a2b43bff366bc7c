"""How a user's model is quantized, read from its graph: the form its report names first, and the catalogue case that
documents what TensorRT does with that form.

- "qdq": QuantizeLinear/DequantizeLinear around float operators (`quantize_static` in QDQ format, ModelOpt, PyTorch's
  exporters): TensorRT's explicit quantization reads this form;
- "dynamic": DynamicQuantizeLinear with ConvInteger/MatMulInteger, as `onnxruntime.quantization.quantize_dynamic`
  writes it: seed 002 (cases/dynamic_quantize.py) documents that TensorRT's parser has no importer for these ops, and
  the model's cells are judged by seed 002's expectations where they speak (cases.user_model.UserModelCase);
- "qoperator": QLinearConv, QLinearMatMul and onnxruntime's com.microsoft QLinear* operators, as
  `quantize_static(..., quant_format=QuantFormat.QOperator)` writes them; no catalogue case reproduces it;
- "float": none of these.

A model can hold more than one form; a bundle records each (case.json `quantization`). Standard onnx graph reading
only: no engine.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Optional

from cases.common import OPERATORS_MD

DYNAMIC_OPS = ("DynamicQuantizeLinear", "ConvInteger", "MatMulInteger")
# onnxruntime's com.microsoft ops that quantize their float input themselves (quantize_dynamic writes them for LSTM,
# attention and, through ORT's fusions, MatMul): the dynamic form too, though seed 002 reproduces none of them.
DYNAMIC_CONTRIB = ("DynamicQuantizeLSTM", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QAttention")
# Ops that compute on quantized integers themselves: the integer ops, QOperator's QLinear* (onnx and com.microsoft),
# and onnxruntime's other com.microsoft quantized ops. Every one is a quantized node of the model (check.bundle).
QUANTIZED_OPS = frozenset({"ConvInteger", "MatMulInteger", "QGemm", "QEmbedLayerNormalization", "MatMulNBits",
                           "GatherBlockQuantized", "QOrderedMatMul", "QOrderedAttention", "QOrderedGelu",
                           "QOrderedLayerNormalization", *DYNAMIC_CONTRIB})


def quantized_op(op_type: str) -> bool:
    """An op that computes on quantized integers itself: ConvInteger, MatMulInteger, QLinear*, QGemm, ..."""
    return op_type in QUANTIZED_OPS or op_type.startswith("QLinear")
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")
FLOAT_COMPUTE = ("Conv", "ConvTranspose", "MatMul", "Gemm")
# seed 002's case and the axis its variants are named on
DYNAMIC_CASE, DYNAMIC_AXIS = "dynamic_quantize", "variant"


@dataclass(frozen=True)
class Form:
    """One quantization form found in a model: what it is called, the ops that show it, and what the catalogue says."""

    form: str  # "qdq", "dynamic", "qoperator"
    short: str  # the form in a few words, as each column's headline names it
    words: str  # the form in a reader's words, as the report's first lines name it
    ops: Dict[str, int]  # op type -> how many nodes of it the model has
    case: str = ""  # the catalogue case that documents TensorRT with this form ("" none)
    like: Optional[Dict[str, str]] = None  # the case's parameters this model matches (its expectations judge it)
    detail: str = ""  # what the sources say, where no case does
    source: str = ""  # the source of `detail`
    fix: str = ""  # how to quantize it so that TensorRT reads it

    def to_json(self) -> Dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", None)}


def forms(model: Any) -> List[Form]:
    """The quantization forms of a loaded ModelProto, in the order a report names them: the forms TensorRT cannot
    read first, QDQ last; [] for a float model."""
    from check.lint import FIX_STATIC_QDQ

    nodes = list(model.graph.node)
    counts: Dict[str, int] = {}
    for n in nodes:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    found = []
    dynamic = {op: counts[op] for op in DYNAMIC_OPS + DYNAMIC_CONTRIB if op in counts}
    if dynamic and any(op in DYNAMIC_OPS for op in dynamic):
        found.append(Form(
            "dynamic", "dynamic quantization (quantize_dynamic)",
            "dynamic quantization (DynamicQuantizeLinear, ConvInteger/MatMulInteger: onnxruntime's quantize_dynamic)",
            dynamic, DYNAMIC_CASE, {DYNAMIC_AXIS: dynamic_variant(model)}, fix=FIX_STATIC_QDQ))
    elif dynamic:  # com.microsoft ops alone: seed 002 (DynamicQuantizeLinear's parse failure) says nothing of them
        found.append(Form(
            "dynamic", "dynamic quantization (quantize_dynamic)",
            "dynamic quantization (onnxruntime's com.microsoft quantized ops: quantize_dynamic)", dynamic,
            detail="No catalogue case reproduces TensorRT with onnxruntime's com.microsoft quantized operators; "
                   "onnx-tensorrt's operators.md lists only the ONNX domain", source=OPERATORS_MD, fix=FIX_STATIC_QDQ))
    qlinear = {op: c for op, c in sorted(counts.items()) if op.startswith("QLinear") or op == "QGemm"}
    if qlinear:
        found.append(Form(
            "qoperator", "QOperator format",
            "QOperator format (QLinearConv/QLinearMatMul: quantize_static with QuantFormat.QOperator)", qlinear,
            detail="No catalogue case reproduces TensorRT with QLinearConv or QLinearMatMul; onnx-tensorrt's "
                   "operators.md lists both as not supported (its 8.4 and 8.5 tables)",
            source=OPERATORS_MD, fix=FIX_STATIC_QDQ))
    if qdq_compute(model):
        found.append(Form("qdq", "Q/DQ", "Q/DQ (QuantizeLinear/DequantizeLinear around float operators)",
                          {op: counts[op] for op in QDQ_OPS if op in counts}))
    return found


def qdq_compute(model: Any) -> bool:
    """Whether a float compute node (Conv, ConvTranspose, MatMul, Gemm) takes a DequantizeLinear's output: the form
    TensorRT's explicit quantization reads. A QOperator model's Q/DQ at its edges alone are not it."""
    dq = {o for n in model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    return any(n.op_type in FLOAT_COMPUTE and dq & set(n.input) for n in model.graph.node)


def dynamic_variant(model: Any) -> str:
    """The seed 002 variant whose expectations speak for this model: "ort_dynamic_conv" where a ConvInteger takes
    int8 weights (quantize_dynamic's default for a Conv: ONNX Runtime's uint8 x int8 ConvInteger, #12558/#15888),
    else "ort_dynamic_matmul" where a MatMulInteger is, else "dql_alone", whose expectations are the parser's only."""
    from onnx import TensorProto

    int8 = {t.name for t in model.graph.initializer if t.data_type == TensorProto.INT8}
    nodes = list(model.graph.node)
    if any(n.op_type == "ConvInteger" and len(n.input) > 1 and n.input[1] in int8 for n in nodes):
        return "ort_dynamic_conv"
    if any(n.op_type == "MatMulInteger" for n in nodes):
        return "ort_dynamic_matmul"
    return "dql_alone"


def record(model: Any) -> Dict[str, Any]:
    """case.json's `quantization`: the main form ("float" where there is none) and every form found."""
    found = forms(model)
    return {"form": found[0].form if found else "float", "forms": [f.to_json() for f in found]}


def like_params(quantization: Mapping[str, Any]) -> Dict[str, str]:
    """The bundle parameters that let the catalogue case of a model's form judge its cells (cases.user_model):
    {"like_case": case, "like_<axis>": value}; {} where no case documents the form."""
    for f in quantization.get("forms") or []:
        if f.get("case") and f.get("like"):
            return {"like_case": f["case"], **{f"like_{k}": str(v) for k, v in f["like"].items()}}
    return {}
