"""TensorRT readiness lint: what each documented TensorRT (and TensorRT-RTX) version will do with a Q/DQ graph,
before any engine runs.

Knowledge comes from the catalogue (cases/*.py expectations, their PEP 440 ranges and sources) and from observed
cells (reports/observed/<hardware>/trt-*.jsonl and rtx-*.jsonl): a user's node is matched to a catalogue variant and the
predictions are what the sources and the observed runs say for that variant. Rules with no catalogue variant
cite their own source. Each finding says its basis as fields: "documented" (an upstream URL is its source) or
"observed" (its source is the results file or folder it was read from), and the catalogue case it was matched to.
A version-specific prediction needs either. Predictions have four values, so a report can put them next to what
TensorRT did:

    "parse fails"  the ONNX parser refuses the node       "build fails"  the builder finds no implementation
    "float"        it runs, the node in a float kernel    "int8"         it runs, the node in an INT8 kernel

    python -m check.lint model.onnx [--json]
"""

from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence, Tuple

from cases.common import CONV_WITHOUT_KERNEL_SHAPE, DQ_NON_ACTIVATION, ISSUE_3844, OPERATORS_MD
from core.cli import ArgumentParser
from core.outcome import outcome
from core.results import read_results
from matrix.predict import (  # noqa: F401 (re-exported)
    ENGINE,
    ENGINES,
    FINDING_BASES,
    PREDICTED_STAGES,
    PREDICTIONS,
    Comparison,
    basis_of,
    compare,
    covers,
    failure_prediction,
    node_outcome,
)

REPO = Path(__file__).resolve().parent.parent
OBSERVED = REPO / "reports" / "observed"
QUANTIZE_STATIC = "onnxruntime.quantization.quantize_static"
FIX_SYMMETRIC_INT8 = (f'{QUANTIZE_STATIC}(..., quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, '
                      'extra_options={"ActivationSymmetric": True})')
FIX_SYMMETRIC_WEIGHTS = (f'{QUANTIZE_STATIC}(..., weight_type=QuantType.QInt8, '
                         'extra_options={"WeightSymmetric": True})')
FIX_FLOAT_BIAS = f'{QUANTIZE_STATIC}(..., extra_options={{"QuantizeBias": False}})'
FIX_STATIC_QDQ = f"{QUANTIZE_STATIC}(..., quant_format=QuantFormat.QDQ) instead of quantize_dynamic / QOperator"
FIX_KERNEL_SHAPE = "write the Conv's kernel_shape attribute (torch.onnx does; onnx.helper graphs often do not)"
EXPLICIT_QUANTIZATION = ("https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/"
                         "quantized-types-explicit-quantization.html")
FIX_QUANTIZE = ("quantize it for TensorRT: python -m modelopt.onnx.quantization --onnx_path model.onnx "
                "--quantize_mode int8 --calibration_data calib.npz (NVIDIA ModelOpt), or "
                f"{QUANTIZE_STATIC}(..., quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, "
                "weight_type=QuantType.QInt8, per_channel=True, extra_options={\"ActivationSymmetric\": True, "
                "\"WeightSymmetric\": True, \"QuantizeBias\": False})")
FIX_WIDENED = ("give the weights to a DequantizeLinear (the int8 initializer, its scale, zero point 0) instead of "
               "Cast -> Mul, and Q/DQ on the activations, as ModelOpt or quantize_static in QDQ format write them")
COMPUTE_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")
# Ops a widened weight passes through between its Cast and its consumer (scale, zero point, layout).
_WIDENING = ("Cast", "Mul", "Sub", "Add", "Reshape", "Transpose", "Unsqueeze", "Squeeze", "Identity")
QUANT_OPS = ("QuantizeLinear", "DequantizeLinear")
INTEGER_OPS = ("ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul")


@dataclass(frozen=True)
class Finding:
    """One prediction for one node over one version range, with its source."""

    node: str
    rule: str
    versions: str  # PEP 440 specifier set over TensorRT versions; "" is every version
    predicted: str  # one of PREDICTIONS
    source: str  # URL, or the observed results file
    detail: str = ""
    fix: str = ""  # the producer option that avoids it, where one does
    engine: str = ENGINE
    setting: str = ""  # the column setting it speaks for, e.g. "target=SM86" (a TensorRT-RTX build target); "" any
    words: str = ""  # the rule in a reader's few words (RULE_WORDS), what a report says instead of the rule's name
    basis: str = ""  # "documented" (source is an upstream URL) or "observed" (source is cells we ran); "" derives it
    case: str = ""  # the catalogue case whose expectation or cells it comes from; "" for a rule's own source

    def __post_init__(self) -> None:
        if self.predicted not in PREDICTIONS:
            raise ValueError(f"prediction {self.predicted!r} is not one of {PREDICTIONS}")
        if not self.basis:
            object.__setattr__(self, "basis", basis_of(self.source))
        if self.basis not in FINDING_BASES:
            raise ValueError(f"basis {self.basis!r} is not one of {FINDING_BASES}")
        from packaging.specifiers import SpecifierSet

        SpecifierSet(self.versions)

    def covers(self, version: str) -> bool:
        """Whether this finding speaks about one TensorRT version."""
        return covers(self.versions, version)

    def learned_from(self, cases: Collection[str]) -> bool:
        """Whether this finding was read from observed cells of one of these catalogue cases (what a held-out score
        leaves out for the models those cases were made from, or for a case's own reproducers)."""
        return self.basis == "observed" and self.case in cases


class LintInputError(Exception):
    """The model cannot be read: not a file, not ONNX."""


class Graph:
    """A read-only view of one ONNX graph: producers, consumers and constant values."""

    def __init__(self, model: Any) -> None:
        from onnx import numpy_helper

        self.model = model
        self.nodes = list(model.graph.node)
        self.const: Dict[str, Any] = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        for n in self.nodes:
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
                self.const[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
        self.dtypes = {k: str(v.dtype) for k, v in self.const.items()}  # once: rules ask it per node
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.consumers: Dict[str, List[Any]] = {}
        for n in self.nodes:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.outputs = {o.name for o in model.graph.output}
        # Quantized in any form the lint knows: Q/DQ, a dynamic quantizer, an integer op
        self.quantized = any(n.op_type in QUANT_OPS + INTEGER_OPS + ("DynamicQuantizeLinear",) for n in self.nodes)

    def op(self, tensor: str) -> str:
        n = self.producer.get(tensor)
        return n.op_type if n is not None else ""

    def users(self, tensor: str) -> List[Any]:
        return self.consumers.get(tensor, [])


def node_name(node: Any) -> str:
    """The name TensorRT's parser gives a node: its own, or node_of_<first output>."""
    return node.name or f"node_of_{node.output[0]}"


def lint_model(model: Any, observed: Optional[Path] = OBSERVED) -> List[Finding]:
    """Every finding for one loaded ModelProto, in graph order, each with its rule's words (RULE_WORDS)."""
    g = Graph(model)
    cells = observed_cells(observed) if observed is not None else []
    found: List[Finding] = []
    for n in g.nodes:
        for rule in RULES:
            found.extend(replace(f, words=RULE_WORDS[f.rule]) for f in rule(g, n, cells))
    return found


def lint_path(path: Path, observed: Optional[Path] = OBSERVED) -> List[Finding]:
    """Lint a model file; LintInputError for a missing or non-ONNX file."""
    import onnx

    path = Path(path)
    if not path.is_file():
        raise LintInputError(f"no such model file: {path}")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf's DecodeError and friends
        raise LintInputError(f"{path} is not an ONNX model: {e}") from e
    if not model.graph.node:
        raise LintInputError(f"{path} has no graph nodes (not an ONNX model?)")
    return lint_model(model, observed)


# ---- rules: (graph, node, observed cells) -> findings ----

def zero_point_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """Q/DQ with a non-zero zero point: the parser asserts symmetric quantization (uint8 activations land here)."""
    from cases.common import NONZERO_ZERO_POINT, nonzero_zero_point_fails

    if n.op_type not in QUANT_OPS or len(n.input) < 3 or n.input[2] not in g.const:
        return []
    zp = g.const[n.input[2]]
    if not zp.any():
        return []
    weight = n.op_type == "DequantizeLinear" and n.input[0] in g.const
    unsigned = str(zp.dtype) == "uint8"
    rule = "uint8_activation" if unsigned and not weight else "nonzero_zero_point"
    expectation = nonzero_zero_point_fails({})
    fix = FIX_SYMMETRIC_WEIGHTS if weight else FIX_SYMMETRIC_INT8
    detail = (f"{n.op_type} zero point {zp.dtype} {_values(zp)}; the parser says "
              f"'TensorRT only supports symmetric quantization' ({NONZERO_ZERO_POINT.source})")
    out = [Finding(node_name(n), rule, expectation.versions, "parse fails", expectation.source, detail, fix)]
    if unsigned and not weight:
        out += observed_findings(node_name(n), rule, cells, "q_output_type", {"variant": "q_dq_chain",
                                 "activation": "uint8", "plugin": "none"}, fix)
    return out


def int32_dq_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """DequantizeLinear of something that is not an INT8 activation or weight (an INT32 bias)."""
    if n.op_type != "DequantizeLinear" or n.input[0] not in g.const:
        return []
    dtype = str(g.const[n.input[0]].dtype)
    if dtype in ("int8", "uint8"):
        return []
    detail = (f"DequantizeLinear of a {dtype} initializer ({n.input[0]}); operators.md lists DequantizeLinear "
              "for INT8 input only (8.x tables); onnxruntime's quantize_static writes Conv/Gemm biases this way")
    return [Finding(node_name(n), "dq_non_activation", DQ_NON_ACTIVATION.versions, "parse fails",
                    DQ_NON_ACTIVATION.source, detail, FIX_FLOAT_BIAS)]


def dynamic_quantize_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """DynamicQuantizeLinear and the integer ops: no TensorRT importer."""
    if n.op_type == "DynamicQuantizeLinear":
        users = {u.op_type for o in n.output for u in g.users(o)}
        variant = ("dql_matmulinteger" if "MatMulInteger" in users else
                   "dql_convinteger" if "ConvInteger" in users else "dql_alone")
        return (catalogue_findings(node_name(n), "dynamic_quantize_linear", "dynamic_quantize",
                                   {"variant": variant}, FIX_STATIC_QDQ)
                + observed_findings(node_name(n), "dynamic_quantize_linear", cells, "dynamic_quantize",
                                    {"variant": variant}, FIX_STATIC_QDQ))
    if n.op_type in INTEGER_OPS:
        detail = (f"{n.op_type}: operators.md lists it as not supported (ConvInteger and MatMulInteger in the 8.4 "
                  "to 10.15 tables per cases/dynamic_quantize.py; QLinearConv/QLinearMatMul read in the 7.2 table)")
        versions = catalogue_range("dynamic_quantize", {"variant": "dql_matmulinteger"})
        return [Finding(node_name(n), "integer_op", versions, "parse fails", OPERATORS_MD, detail, FIX_STATIC_QDQ,
                        case="dynamic_quantize")]
    return []


def conv_kernel_shape_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A Conv whose weights come from DequantizeLinear and that has no kernel_shape attribute (8.x parser)."""
    if n.op_type != "Conv" or len(n.input) < 2 or g.op(n.input[1]) != "DequantizeLinear":
        return []
    if any(a.name == "kernel_shape" for a in n.attribute):
        return []
    detail = ("8.x convMultiInput compares the weight tensor's spatial dims with kernel_shape and, without the "
              "attribute, fails: 'The input tensor shape misaligns with the input kernel shape.'; 10.x reads the "
              "kernel size from the weights")
    return [Finding(node_name(n), "conv_without_kernel_shape", CONV_WITHOUT_KERNEL_SHAPE.versions, "parse fails",
                    CONV_WITHOUT_KERNEL_SHAPE.source, detail, FIX_KERNEL_SHAPE)]


def grouped_conv_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """An INT8 grouped/depthwise Conv matched to the grouped_conv case (seed 003): channels per group, epilogue."""
    params = grouped_conv_params(g, n)
    if params is None:
        return []
    from cases import get_case

    case = get_case("grouped_conv")
    if any(params[k] not in case.axes[k] for k in params):
        return []
    fix = "" if params["activation"] == "int8" else FIX_SYMMETRIC_INT8
    return (catalogue_findings(node_name(n), "grouped_conv", "grouped_conv", params, fix)
            + observed_findings(node_name(n), "grouped_conv", cells, "grouped_conv", params, fix))


def q_graph_output_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A QuantizeLinear whose output is a graph output: TensorRT's network types it FLOAT (#3844)."""
    if n.op_type != "QuantizeLinear" or n.output[0] not in g.outputs:
        return []
    zp = g.const.get(n.input[2]) if len(n.input) > 2 else None
    activation = "uint8" if zp is not None and str(zp.dtype) == "uint8" else "int8"
    return observed_findings(node_name(n), "q_graph_output", cells, "q_output_type",
                             {"variant": "q_graph_output", "activation": activation, "plugin": "none"}, "",
                             note=f"the network definition types a Q output FLOAT ({ISSUE_3844})")


def int8_constant_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """An INT8 initializer feeding a node other than DequantizeLinear: a plugin (#3919), or refused."""
    hits = [i for i in n.input if i in g.const and str(g.const[i].dtype) == "int8"]
    if not hits or n.op_type in QUANT_OPS or n.op_type in INTEGER_OPS or n.op_type == "DynamicQuantizeLinear":
        return []
    plugin = n.domain not in ("", "ai.onnx")
    if not plugin:
        return []
    from cases.quantized_constant_plugin import CASE

    out = []
    for form in ("int8_const_to_plugin_v3", "int8_const_to_plugin_v2"):
        for f in catalogue_findings(node_name(n), "int8_constant_into_plugin", CASE.id, {"form": form}, ""):
            api = "IPluginV3" if form.endswith("v3") else "IPluginV2"
            out.append(replace(f, detail=f"if the plugin is an {api}: " + f.detail))
    return out


def dq_constant_elementwise_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """INT8 initializer -> DequantizeLinear -> Add. After a quantized MatMul/Gemm/Conv it is a bias Add, matched to
    bias_add_after_qdq (seed 018: observed on 8.5/8.6, an INT8 PointWise layer where a Q follows the Add, float
    where none does); elsewhere seed 004's DQ form (observed float)."""
    if n.op_type != "Add":
        return []
    consts = [i for i in n.input if _int8_dq_constant(g, i) and not _scalar_int8_dq(g, i)]  # 0-d: seed 025's rule
    if not consts:
        return []
    other = [i for i in n.input if i not in consts]
    op = _quantized_producer(g, other[0]) if other else ""
    if op:
        output_qdq = any(u.op_type == "QuantizeLinear" for u in g.users(n.output[0]))
        params = {"op": op, "bias": "int8_dq", "output_qdq": output_qdq}
        return observed_findings(node_name(n), "bias_add_after_qdq", cells, "bias_add_after_qdq", params, "",
                                 target="node_of_sum" if output_qdq else "node_of_y")
    if other and _dq_output(g, other[0]) and any(u.op_type == "QuantizeLinear" for u in g.users(n.output[0])):
        # Q/DQ on the other operand and after the Add: seed 025's shaped constant (observed INT8 on 8.5-8.6), not
        # seed 004's bare form, whose float input and output leave the Add in float.
        params = {"constant": "one_element", "op": "add"}
        return (catalogue_findings(node_name(n), "dq_constant_into_add", "scalar_quantized_constant", params, "")
                + observed_findings(node_name(n), "dq_constant_into_add", cells, "scalar_quantized_constant", params,
                                    "", target="node_of_sum"))
    return observed_findings(node_name(n), "dq_constant_into_add", cells, "quantized_constant_plugin",
                             {"form": "int8_const_dq_op"}, "")


def _dq_output(g: Graph, tensor: str) -> bool:
    """tensor is a DequantizeLinear output of an activation (a QuantizeLinear's output, not a constant)."""
    p = g.producer.get(tensor)
    return p is not None and p.op_type == "DequantizeLinear" and p.input[0] not in g.const


def _int8_dq_constant(g: Graph, tensor: str) -> bool:
    p = g.producer.get(tensor)
    return p is not None and p.op_type == "DequantizeLinear" and p.input[0] in g.const \
        and str(g.const[p.input[0]].dtype) == "int8"


def _quantized_producer(g: Graph, tensor: str) -> str:
    """ "matmul" / "conv" where tensor is a MatMul/Gemm/Conv output (directly or through its Q -> DQ) whose weights
    come through DequantizeLinear, else ""."""
    p = g.producer.get(tensor)
    if p is not None and p.op_type == "DequantizeLinear":
        q = g.producer.get(p.input[0])
        p = g.producer.get(q.input[0]) if q is not None and q.op_type == "QuantizeLinear" else None
    if p is None or p.op_type not in ("MatMul", "Gemm", "Conv") or len(p.input) < 2:
        return ""
    w = g.producer.get(p.input[1])
    if w is None or w.op_type != "DequantizeLinear":
        return ""
    return "conv" if p.op_type == "Conv" else "matmul"


def fp8_gemm_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A MatMul/Gemm whose weights are FP8 E4M3 through DequantizeLinear: seed 015 (fp8_qdq). TensorRT 8.x has no FP8;
    TensorRT-RTX builds FP8 GEMMs for compute capability 8.9 and later only, per target."""
    if n.op_type not in ("MatMul", "Gemm") or len(n.input) < 2 or not _fp8_dq(g, n.input[1]):
        return []
    op = "gemm" if n.op_type == "Gemm" else "matmul"
    return catalogue_findings(node_name(n), "fp8_gemm", "fp8_qdq", {"op": op}, "")


def _fp8_dq(g: Graph, tensor: str) -> bool:
    """tensor is a DequantizeLinear output whose input is FP8: an FP8 initializer, or a QuantizeLinear's FP8 output."""
    p = g.producer.get(tensor)
    if p is None or p.op_type != "DequantizeLinear":
        return False
    x = p.input[0]
    if x in g.const:
        return "float8" in str(g.const[x].dtype)
    zp = p.input[2] if len(p.input) > 2 else ""
    return zp in g.const and "float8" in str(g.const[zp].dtype)


def float_model_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A model with no Q/DQ (and no integer op or dynamic quantizer, which have rules of their own): TensorRT builds
    it in float, every compute node with it."""
    if n.op_type not in COMPUTE_OPS or g.quantized or widened_weight(g, n):
        return []
    detail = ("the model has no QuantizeLinear/DequantizeLinear: TensorRT quantizes explicitly, from the Q/DQ it "
              "finds (\"When TensorRT detects Q/DQ layers in a network, it builds an engine using explicit "
              "quantization\"), and this suite gives it no calibrator, so the network is built in float")
    return [Finding(node_name(n), "float_model", "", "float", EXPLICIT_QUANTIZATION, detail, FIX_QUANTIZE, engine)
            for engine in ENGINES]


def widened_weights_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A compute node whose weights are an integer initializer widened by Cast (-> Sub) -> Mul, with no
    DequantizeLinear: TensorRT sees float weights and computes the node in float. An INT8 initializer is TensorRT's
    quantized type, and a builder's quantized-constant check may refuse it before any float layer (#3919 on 10.0.1,
    where it fed a plugin); no source says what TensorRT-RTX does with it, so the lint predicts nothing for it there."""
    source = widened_weight(g, n)
    if not source:
        return []
    tensor, dtype = source
    why = (f"weights {tensor} are {dtype}, widened to float by Cast -> Mul with no DequantizeLinear: TensorRT's "
           "explicit quantization knows pre-quantized weights only through one (\"When using pre-quantized weights, "
           "an IDequantizeLayer is required between the weights and the linear operator that uses them\"), so this "
           f"{n.op_type} is no INT8 layer: it reads float weights")
    refused = dtype == "int8"  # TensorRT's quantized type; uint8 and wider integers are plain data to it
    also = ("; TensorRT 10.x's builder has the same quantized-constant check (#3919, 10.0.1: 'Quantized constant is "
            "only allowed before DQ or PLUGIN_V2 node'), which may refuse it before any float layer") if refused else ""
    return [Finding(node_name(n), "widened_weights", "", "float", EXPLICIT_QUANTIZATION, why + also, FIX_WIDENED,
                    engine) for engine in ((ENGINE,) if refused else ENGINES)]


def widened_weight(g: Graph, n: Any) -> Optional[Tuple[str, str]]:
    """(initializer, dtype) where a compute node's weight input is an integer initializer that reaches it through
    Cast and arithmetic (Mul, Sub, reshapes) without a DequantizeLinear; else None."""
    return widened_source(g.producer, g.dtypes, n)


def widened_source(producer: Mapping[str, Any], dtypes: Mapping[str, str], n: Any) -> Optional[Tuple[str, str]]:
    """widened_weight from a graph's producers and its constants' dtypes alone (check.bundle has no arrays)."""
    if n.op_type not in COMPUTE_OPS + ("Gather",) or len(n.input) < 2:
        return None
    for tensor in [n.input[0]] if n.op_type == "Gather" else list(n.input[:2]):
        found = _widened(producer, dtypes, tensor, depth=6, cast=False)
        if found:
            return found
    return None


def _widened(producer: Mapping[str, Any], dtypes: Mapping[str, str], tensor: str, depth: int,
             cast: bool) -> Optional[Tuple[str, str]]:
    if tensor in dtypes:
        return (tensor, dtypes[tensor]) if cast and dtypes[tensor].startswith(("int", "uint")) else None
    p = producer.get(tensor)
    if p is None or depth == 0 or p.op_type not in _WIDENING:
        return None
    if p.op_type == "Cast":
        return _widened(producer, dtypes, p.input[0], depth - 1, True)
    if cast:  # between the initializer and its Cast only the cast itself counts
        return None
    for i in p.input if p.op_type in ("Mul", "Sub", "Add") else p.input[:1]:
        found = _widened(producer, dtypes, i, depth - 1, False)
        if found:
            return found
    return None


# ---- the 2026 low-precision forms (seeds 014, 019-021): weights found through the layout ops exporters add ----

_LAYOUT_OPS = ("Transpose", "Cast", "Reshape", "Identity")
_GEMM_OPS = {"MatMul": "matmul", "Gemm": "gemm", "Conv": "conv"}


def weight_dequantize(g: Graph, tensor: str) -> Optional[Any]:
    """The DequantizeLinear (or TensorRT's TRT_MXFP8DequantizeLinear) whose output reaches `tensor` through layout ops
    only (Transpose, Cast, Reshape, Identity), and whose input is an initializer; None otherwise."""
    p = g.producer.get(tensor)
    while p is not None and p.op_type in _LAYOUT_OPS:
        p = g.producer.get(p.input[0])
    if p is None or p.op_type not in ("DequantizeLinear", "TRT_MXFP8DequantizeLinear") or p.input[0] not in g.const:
        return None
    return p


def _dtype(g: Graph, tensor: str) -> str:
    return str(g.const[tensor].dtype) if tensor in g.const else ""


def _attr(node: Any, name: str, default: Any = None) -> Any:
    return next((a.i for a in node.attribute if a.name == name), default)


def int4_gemm_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A MatMul/Gemm with INT4/UINT4 weights through DequantizeLinear: seed 014's support-matrix facts per TensorRT-RTX
    target (no INT4 GEMM for SM75) and the 8.x parser (no 4-bit type)."""
    dq = weight_dequantize(g, n.input[1]) if n.op_type in ("MatMul", "Gemm") and len(n.input) > 1 else None
    kind = _dtype(g, dq.input[0]) if dq is not None else ""
    if kind not in ("int4", "uint4"):
        return []
    params = {"op": _GEMM_OPS[n.op_type], "weights": kind}
    return catalogue_findings(node_name(n), "int4_gemm", "int4_blocked_weights", params, "")


def fp4_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A Conv/MatMul with FP4 E2M1 weights through DequantizeLinear. One scale level: seed 019 (#4833, W4A16 silently
    float; Blackwell-only on TensorRT-RTX), from the catalogue and its observed cells; FP8 block scales that are
    themselves dequantized (NVFP4): seed 020."""
    if n.op_type not in ("Conv", "MatMul") or len(n.input) < 2:
        return []
    dq = weight_dequantize(g, n.input[1])
    if dq is None or not _dtype(g, dq.input[0]).startswith("float4"):
        return []
    node = node_name(n)
    if _two_level(g, dq):
        params = {"double_scale": _scale_type(g, dq), "activations": "dynamic" if _dynamic_fp4(g, n) else "weight_only"}
        return (catalogue_findings(node, "nvfp4_gemm", "nvfp4_two_level_scales", params, "")
                + observed_findings(node, "nvfp4_gemm", cells, "nvfp4_two_level_scales", params, "",
                                    target="node_of_y"))
    params = {"op": _GEMM_OPS[n.op_type], "weights": "blocked" if _attr(dq, "block_size") else "per_tensor",
              "activations": "w4a4" if _fp4_activations(g, n.input[0]) else "w4a16"}
    return (catalogue_findings(node, "fp4_weight_only", "fp4_weight_only", params, "")
            + observed_findings(node, "fp4_weight_only", cells, "fp4_weight_only", params, "", target="node_of_y"))


def _two_level(g: Graph, dq: Any) -> bool:
    """The DQ's scale is itself a DequantizeLinear of an FP8 initializer (NVFP4's block scales)."""
    scale = g.producer.get(dq.input[1])
    return scale is not None and scale.op_type == "DequantizeLinear" and "float8" in _dtype(g, scale.input[0])


def _scale_type(g: Graph, dq: Any) -> str:
    """The second-level scale's type: float32 or float16."""
    scale = g.producer.get(dq.input[1])
    return "float16" if _dtype(g, scale.input[1]) == "float16" else "float32"


def _dynamic_fp4(g: Graph, n: Any) -> bool:
    """The activations come through TensorRT's TRT_FP4DynamicQuantize."""
    return _reaches(g, n.input[0], "TRT_FP4DynamicQuantize")


def _fp4_activations(g: Graph, tensor: str) -> bool:
    """The activations pass a QuantizeLinear -> DequantizeLinear whose zero point is FP4 (W4A4)."""
    p = g.producer.get(tensor)
    return p is not None and p.op_type == "DequantizeLinear" and len(p.input) > 2 and _dtype(g, p.input[2]).startswith(
        "float4")


def _reaches(g: Graph, tensor: str, op: str, depth: int = 6) -> bool:
    """Whether `op` produces `tensor` within `depth` producers (first inputs only)."""
    p = g.producer.get(tensor)
    while p is not None and depth > 0:
        if p.op_type == op:
            return True
        p, depth = g.producer.get(p.input[0]) if p.input else None, depth - 1
    return False


def mxfp8_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A MatMul with MXFP8 weights: ModelOpt's TRT_MXFP8DequantizeLinear or ONNX's DequantizeLinear-24 with float8e8m0
    block scales (seed 021), from the catalogue and its observed cells."""
    dq = weight_dequantize(g, n.input[1]) if n.op_type == "MatMul" and len(n.input) > 1 else None
    if dq is None:
        return []
    if dq.op_type == "TRT_MXFP8DequantizeLinear":
        form = "trt_custom"
    elif "float8_e8m0" in _dtype(g, dq.input[1]):
        form = "onnx_e8m0"
    else:
        return []
    dynamic = _reaches(g, n.input[0], "TRT_MXFP8DynamicQuantize")
    params = {"form": form, "activations": "dynamic" if dynamic else "weight_only"}
    return (catalogue_findings(node_name(n), "mxfp8_gemm", "mxfp8_block_scales", params, "")
            + observed_findings(node_name(n), "mxfp8_gemm", cells, "mxfp8_block_scales", params, "",
                                target="node_of_y"))


# ---- what checking real-architecture models found (seeds 024-025) ----

def silu_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A quantized Conv and its SiLU (Sigmoid(x) * x), matched to seed 024 (silu_qdq) by where the Q/DQ around the SiLU
    sit: quantize_static's form (a Q/DQ after the Conv, the Sigmoid and the Mul) fails to build on TensorRT 8.5.3.1
    and 8.6.0 (observed on the YOLO-style model); the other forms speak through their observed cells."""
    form = silu_form(g, n)
    if form is None:
        return []
    params = {"form": form}
    return (catalogue_findings(node_name(n), "silu_qdq", "silu_qdq", params, "")
            + observed_findings(node_name(n), "silu_qdq", cells, "silu_qdq", params, "", target="node_of_conv"))


def silu_form(g: Graph, conv: Any) -> Optional[str]:
    """The silu_qdq form of a dense Conv (a grouped one is seed 003's) with DequantizeLinear weights whose output is a
    SiLU, else None."""
    from cases.silu_qdq import QDQ_AFTER

    if conv.op_type != "Conv" or len(conv.input) < 2 or g.op(conv.input[1]) != "DequantizeLinear" \
            or next((a.i for a in conv.attribute if a.name == "group"), 1) != 1:
        return None
    x, after_conv = _through_qdq(g, conv.output[0])
    sigmoid = next((u for u in g.users(x) if u.op_type == "Sigmoid"), None)
    if sigmoid is None:
        return None
    gate, after_sigmoid = _through_qdq(g, sigmoid.output[0])
    mul = next((u for u in g.users(x) if u.op_type == "Mul" and gate in u.input), None)
    if mul is None:
        return None
    after_mul = any(u.op_type == "QuantizeLinear" for u in g.users(mul.output[0]))
    return next((f for f, where in QDQ_AFTER.items() if where == (after_conv, after_sigmoid, after_mul)), None)


def _through_qdq(g: Graph, tensor: str) -> Tuple[str, bool]:
    """The tensor a value's consumers read, and whether they read it through a QuantizeLinear -> DequantizeLinear."""
    q = next((u for u in g.users(tensor) if u.op_type == "QuantizeLinear"), None)
    dq = next((u for u in g.users(q.output[0]) if u.op_type == "DequantizeLinear"), None) if q is not None else None
    return (dq.output[0], True) if dq is not None else (tensor, False)


_SCALAR_OPS = {"Mul": ("mul", "node_of_product"), "Add": ("add", "node_of_sum")}
FIX_SCALAR_CONSTANT = (f'{QUANTIZE_STATIC}(..., nodes_to_exclude=["<this node>"]) keeps the constant in float; or '
                       "give its INT8 initializer the shape [1] instead of 0-d")


def scalar_constant_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A Mul or Add whose other operand is a 0-d INT8 initializer -> DequantizeLinear (quantize_static's GELU 0.5
    and 1), matched to seed 025 (scalar_quantized_constant): TensorRT-RTX 1.7.1.116 refuses it at build (observed)."""
    if n.op_type not in _SCALAR_OPS or not any(_scalar_int8_dq(g, i) for i in n.input):
        return []
    op, target = _SCALAR_OPS[n.op_type]
    params = {"constant": "scalar", "op": op}
    return (catalogue_findings(node_name(n), "scalar_quantized_constant", "scalar_quantized_constant", params,
                               FIX_SCALAR_CONSTANT)
            + observed_findings(node_name(n), "scalar_quantized_constant", cells, "scalar_quantized_constant", params,
                                FIX_SCALAR_CONSTANT, target=target))


def _scalar_int8_dq(g: Graph, tensor: str) -> bool:
    """tensor is the DequantizeLinear output of a 0-d INT8 initializer."""
    return _int8_dq_constant(g, tensor) and g.const[g.producer[tensor].input[0]].ndim == 0


# The rule registry: every rule a finding names, in the few words a report says it in (matrix.models reads them from
# the findings, never from a table of its own). A rule missing here stops lint_model (a test lints every form).
RULE_WORDS = {
    "dq_non_activation": "INT32 bias DQ",
    "uint8_activation": "uint8 activation (non-zero zero point)",
    "nonzero_zero_point": "non-zero zero point",
    "dynamic_quantize_linear": "DynamicQuantizeLinear",
    "integer_op": "integer op (ConvInteger/MatMulInteger)",
    "conv_without_kernel_shape": "Conv without kernel_shape",
    "grouped_conv": "INT8 grouped Conv",
    "q_graph_output": "Q as graph output",
    "int8_constant_into_plugin": "INT8 constant into a plugin",
    "bias_add_after_qdq": "bias Add after a Q/DQ MatMul or Conv",
    "dq_constant_into_add": "DQ constant into Add",
    "fp8_gemm": "FP8 GEMM",
    "int4_gemm": "INT4 weight-only GEMM",
    "fp4_weight_only": "FP4 weights",
    "nvfp4_gemm": "NVFP4 two-level scales",
    "mxfp8_gemm": "MXFP8 block scales",
    "float_model": "a float model (no Q/DQ)",
    "widened_weights": "integer weights widened without a DQ",
    "silu_qdq": "Q/DQ inside a SiLU after an INT8 Conv",
    "scalar_quantized_constant": "0-d quantized constant into Mul/Add",
}

RULES = (zero_point_rule, int32_dq_rule, dynamic_quantize_rule, conv_kernel_shape_rule, grouped_conv_rule,
         q_graph_output_rule, int8_constant_rule, dq_constant_elementwise_rule, fp8_gemm_rule, int4_gemm_rule, fp4_rule,
         mxfp8_rule, silu_rule, scalar_constant_rule, float_model_rule, widened_weights_rule)


# ---- matching a node to a catalogue variant ----

def grouped_conv_params(g: Graph, n: Any) -> Optional[Dict[str, Any]]:
    """grouped_conv's parameters for an INT8 Conv with group > 1, or None."""
    if n.op_type != "Conv" or len(n.input) < 2:
        return None
    group = next((a.i for a in n.attribute if a.name == "group"), 1)
    wdq, xdq = g.producer.get(n.input[1]), g.producer.get(n.input[0])
    if group <= 1 or wdq is None or xdq is None or wdq.op_type != "DequantizeLinear" \
            or xdq.op_type != "DequantizeLinear" or wdq.input[0] not in g.const:
        return None
    weights = g.const[wdq.input[0]]
    scale = g.const.get(wdq.input[1])
    zp = g.const.get(xdq.input[2]) if len(xdq.input) > 2 else None
    epilogue, tail = _epilogue(g, n.output[0])
    return {
        "cpg": int(weights.shape[1]),
        "weights": "per_channel" if scale is not None and scale.size > 1 else "per_tensor",
        "activation": "uint8" if zp is not None and str(zp.dtype) == "uint8" else "int8",
        "output_qdq": any(u.op_type == "QuantizeLinear" for u in g.users(tail)),
        "epilogue": epilogue,
    }


def _epilogue(g: Graph, out: str) -> Tuple[str, str]:
    """("none" | "relu" | "swish", the tensor the epilogue ends in) after a Conv output."""
    users = g.users(out)
    if len(users) == 1 and users[0].op_type == "Relu":
        return "relu", users[0].output[0]
    ops = {u.op_type: u for u in users}
    if len(users) == 2 and set(ops) == {"Sigmoid", "Mul"} and ops["Sigmoid"].output[0] in ops["Mul"].input:
        return "swish", ops["Mul"].output[0]
    return "none", out


def catalogue_findings(node: str, rule: str, case_id: str, params: Mapping[str, Any], fix: str) -> List[Finding]:
    """Findings from the case's TensorRT and TensorRT-RTX expectations whose parameter filter matches. An
    expectation for TensorRT-RTX build targets (`when={"target": ...}`) gives one finding per target, for that
    setting; one for any other setting (a CPU level, an engine option) is left out."""
    from cases import get_case

    out = []
    for e in get_case(case_id).expectations:
        when = dict(e.when or {})
        if e.engine not in ENGINES or set(when) - {"target"} \
                or any(params.get(k, object()) not in v for k, v in e.where.items()):
            continue
        predicted = _predicted(e.outcome, e.stage)
        if predicted is None:
            continue
        detail = f"catalogue case {case_id} ({_params(params)})" + (f"; {e.note}" if e.note else "") \
            + (f"; seen on {e.hardware}" if e.hardware else "")
        for setting in [f"target={t}" for t in when.get("target", ())] or [""]:
            out.append(Finding(node, rule, e.versions, predicted, e.source, detail, fix, e.engine, setting,
                               case=case_id))
    return out


def catalogue_range(case_id: str, params: Mapping[str, Any], engine: str = ENGINE) -> str:
    """The TensorRT versions a case's expectations say fail at the parser for these parameters, as one PEP 440 range:
    their ">=A,<B" ranges joined where they meet ("==V" inside one adds nothing); ValueError where they leave a gap."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from cases import get_case

    spans = []
    for e in get_case(case_id).expectations:
        if e.engine != engine or e.outcome != "fail" or e.stage != "load" \
                or any(params.get(k, object()) not in v for k, v in e.where.items()):
            continue
        bounds = {s.operator: Version(s.version) for s in SpecifierSet(e.versions)}
        if set(bounds) == {">=", "<"}:
            spans.append((bounds[">="], bounds["<"]))
    spans.sort()
    if not spans or any(b[0] > a[1] for a, b in zip(spans, spans[1:])):
        raise ValueError(f"{case_id}: its {engine} parse failures for {dict(params)} are not one range: {spans}")
    return f">={spans[0][0]},<{max(hi for _, hi in spans)}"


def _predicted(outcome: str, stage: Optional[str]) -> Optional[str]:
    if outcome == "fail":
        return failure_prediction(stage or "") or None
    return {"int8": "int8", "not_int8": "float"}.get(outcome)


# ---- observed cells as knowledge ----

def observed_cells(root: Optional[Path]) -> List[Dict[str, Any]]:
    """Every TensorRT and TensorRT-RTX cell record under reports/observed in its default setting (the cells of option
    or target sweeps skipped), read by core.results: a file it refuses gives none, and so does a file that root's
    MANIFEST.json does not list at the digest it has (matrix.observed: only a listed file is an observation)."""
    if root is None or not Path(root).is_dir():
        return []
    from matrix import observed

    try:
        listed = {rel: e.sha256 for rel, e in observed.load(Path(root)).entries.items()}
    except observed.ManifestError:
        return []
    paths = sorted(Path(root).glob("*/trt-*.jsonl")) + sorted(Path(root).glob("*/rtx-*.jsonl"))
    return [dict(c, _file=shown) for path in paths for shown in [_shown(path)]
            for c in _engine_records(path, os.stat(path).st_mtime_ns, listed.get(path.relative_to(root).as_posix()))
            if not c.get("variant")]


@functools.lru_cache(maxsize=None)
def _engine_records(path: Path, mtime: int, listed: Optional[str]) -> Tuple[Dict[str, Any], ...]:
    """The TensorRT-family cells of one results file as records; () where core.results refuses it or its bytes
    are not the sha256 the manifest lists (None: not listed). Read once per file version: the lint runs per model."""
    from matrix.observed import sha256

    found = read_results(path)
    if found.refused or sha256(found.data) != listed:
        return ()
    return tuple(asdict(c.cell) for c in found.cells if c.cell.engine in ENGINES)


def _shown(path: Path) -> str:
    """A results file as the repository names it (absolute outside the repository)."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def observed_outcome(cell: Mapping[str, Any], target: str = "") -> Optional[str]:
    """What a cell shows, in prediction words (for one target node where named); None where it cannot say."""
    said = outcome(cell)
    if said.status == "fail" and said.failed_stage in PREDICTED_STAGES:
        return failure_prediction(said.failed_stage)
    if said.worked and target:  # built: TensorRT-RTX built it where it cannot run; the listing says
        precision = (cell.get("precision") or {}).get(target, {}).get("precision")
        return precision if precision in ("int8", "float") else None
    if said.worked:
        return {True: "int8", False: "float"}.get(said.fused)
    return None


def observed_findings(node: str, rule: str, cells: Sequence[Dict[str, Any]], case_id: str,
                      params: Mapping[str, Any], fix: str, note: str = "", target: str = "") -> List[Finding]:
    """Findings from observed cells of the matching variant: one per engine and run of equal outcomes over its
    versions."""
    from matrix.merge import version_key

    ran: Dict[str, Dict[str, Tuple[str, str, str]]] = {}
    for c in cells:
        if c.get("case") != case_id or any(c.get("params", {}).get(k) != v for k, v in params.items()):
            continue
        outcome = observed_outcome(c, target)
        if outcome is not None:
            ran.setdefault(c.get("engine", ENGINE), {})[c["engine_version"]] = \
                (outcome, c["_file"], c.get("hardware", ""))
    out: List[Finding] = []
    for engine in sorted(ran, key=lambda e: (e != ENGINE, e)):
        seen = ran[engine]
        versions = sorted(seen, key=version_key)
        start = 0
        for i in range(1, len(versions) + 1):
            if i == len(versions) or seen[versions[i]][0] != seen[versions[start]][0]:
                lo, hi = versions[start], versions[i - 1]
                spec = f"=={lo}" if lo == hi else f">={lo},<={hi}"
                outcome, path, hardware = seen[lo]
                path = path if lo == hi else str(Path(path).parent)
                detail = f"observed: catalogue case {case_id} ({_params(params)}) on {hardware}"
                detail += f"; {note}" if note else ""
                out.append(Finding(node, rule, spec, outcome, path, detail, fix, engine, basis="observed",
                                   case=case_id))
                start = i
    return out


def _params(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _values(a: Any) -> str:
    flat = a.reshape(-1)
    shown = ", ".join(str(v) for v in flat[:4]) + (", ..." if flat.size > 4 else "")
    return f"[{shown}]"


# ---- prediction against observation: one implementation, in matrix.predict (reports read it from data) ----

# ---- output ----

def to_json(findings: Sequence[Finding]) -> str:
    return json.dumps({"schema": "qdq-matrix/lint/1", "findings": [asdict(f) for f in findings]}, indent=2) + "\n"


def to_markdown(findings: Sequence[Finding], title: str = "TensorRT readiness") -> str:
    """A table of findings in graph order; each producer fix is said once, below it."""
    lines = [f"# {title}", ""]
    if not findings:
        return "\n".join(lines + ["No findings: no catalogue rule matched this graph.", ""])
    fixes: List[str] = []
    for f in findings:
        if f.fix and f.fix not in fixes:
            fixes.append(f.fix)
    lines += [f"{len(findings)} findings on {len({f.node for f in findings})} nodes.", "",
              "| node | rule | engine | versions | predicted | basis | source | fix |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for f in findings:
        fix = f"[{fixes.index(f.fix) + 1}]" if f.fix else ""
        engine = f.engine + (f" · {f.setting}" if f.setting else "")
        lines.append(f"| `{f.node}` | {f.rule} | {engine} | `{f.versions or 'any'}` | **{f.predicted}** "
                     f"| {basis_words(f.basis, f.case)} | {f.source} | {fix} |")
    if fixes:
        lines += ["", "Avoid with:"] + [f"{i}. `{fix}`" for i, fix in enumerate(fixes, 1)]
    return "\n".join(lines) + "\n"


def basis_words(basis: str, case: str) -> str:
    """A finding's basis for a reader: "observed (silu_qdq)", "documented"."""
    return f"{basis} ({case})" if case else basis


def comparison_markdown(rows: Sequence[Comparison]) -> str:
    """Prediction next to observation; misses first, as news for the catalogue. A network's row (a parse or build
    failure no finding foresaw) says "the network"."""
    lines = ["| node | rule | engine | version | hardware | predicted | observed | | basis |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=lambda r: (r.agrees is not False, r.level != "model", r.node, r.label, r.version,
                                         r.hardware)):
        mark = {True: "agrees", False: "**miss: news for the catalogue**", None: "cannot say"}[r.agrees]
        node, rule = (f"`{r.node}`", r.rule) if r.level == "node" else ("the network", "no failure foreseen")
        lines.append(f"| {node} | {rule} | {r.label} | {r.version} | {r.hardware} | {r.predicted} "
                     f"| {r.observed} | {mark} | {basis_words(r.basis, r.case)} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = ArgumentParser(prog="python -m check.lint", description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--observed", type=Path, default=OBSERVED,
                        help="observed results folder (default: %(default)s)")
    parser.add_argument("--cells", type=Path, action="append", default=[],
                        help="results JSONL with this model's TensorRT or TensorRT-RTX cells: print prediction "
                             "against observation")
    args = parser.parse_args(argv)
    try:
        findings = lint_path(args.model, args.observed)
        cells = model_cells(args.cells, args.model)
    except LintInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.cells:
        rows = compare(findings, cells)
        if args.json:
            print(json.dumps([dict(asdict(r), news=r.news) for r in rows], indent=2))
        else:
            print(comparison_markdown(rows), end="")
        return 0
    print(to_json(findings) if args.json else to_markdown(findings, f"TensorRT readiness: {args.model.name}"), end="")
    return 0


def model_cells(paths: Sequence[Path], model: Path) -> List[Dict[str, Any]]:
    """The TensorRT and TensorRT-RTX cells of this model's bundle (cases.user_model.bundle_ids_for) in results files."""
    from cases.user_model import bundle_ids_for

    cells = engine_cells(paths)
    return [c for bundle in bundle_ids_for(model) for c in cells.get(bundle, [])]


def engine_cells(paths: Sequence[Path]) -> Dict[str, List[Dict[str, Any]]]:
    """The TensorRT and TensorRT-RTX cells in results files, by bundle id: each file read once, by core.results;
    LintInputError for a file that is missing or that it refuses."""
    cells: Dict[str, List[Dict[str, Any]]] = {}
    for path in paths:
        if not Path(path).is_file():
            raise LintInputError(f"no such results file: {path}")
        found = read_results(path)
        if found.refused:
            raise LintInputError(f"{path} is not a results file this suite reads ({found.why_refused})")
        changed = _manifest().refusal(Path(path), found.data)
        if changed:
            raise LintInputError(f"{path}: {changed}")
        for c in found.cells:
            if c.cell.engine in ENGINES:
                cells.setdefault(c.cell.bundle, []).append(asdict(c.cell))
    return cells


def _manifest() -> Any:
    """reports/observed/MANIFEST.json (one with no entries where it cannot be read: nothing is then refused here; the
    merge says why)."""
    from matrix import observed

    try:
        return observed.load(observed.OBSERVED)
    except observed.ManifestError:
        return observed.Manifest(observed.OBSERVED)


if __name__ == "__main__":
    sys.exit(main())
