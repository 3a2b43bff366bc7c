"""TensorRT readiness lint: what each documented TensorRT (and TensorRT-RTX) version will do with a Q/DQ graph,
before any engine runs.

The catalogue is the lint. Every case declares the graph pattern it reproduces (cases/<id>.py, `pattern=`,
cases.pattern): one engine here indexes the model once and runs every case's matcher on the nodes of the op types it
visits; a match names the case's parameters the graph decides, and the predictions are what that case's expectations
(their PEP 440 ranges and sources) and its observed cells (reports/observed/<hardware>/trt-*.jsonl and rtx-*.jsonl, read
by check.observations; their versions made ranges by check.versions) say for them, with the case's seed and fix. A few
rules rest on a document rather than a case (SOURCE_RULES: the parser's zero-point check, onnx-tensorrt's operator
tables, the 8.x Conv importer, the explicit-quantization guide) and cite it. Where nothing matches, the lint says "no
known problem matched": no prediction that the model builds. Each finding says its basis as fields: "documented" (an
upstream URL is its source) or "observed" (its source is the results file or folder it was read from), and the catalogue
case it was matched to. A version-specific prediction needs either. Predictions have four values, so a report can put
them next to what TensorRT did:

    "parse fails"  the ONNX parser refuses the node       "build fails"  the builder finds no implementation
    "float"        it runs, the node in a float kernel    "int8"         it runs, the node in an INT8 kernel

    python -m check.lint model.onnx [--json]
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence, Tuple

from cases.common import (  # noqa: F401 (FIX_STATIC_QDQ, FIX_SYMMETRIC_INT8, QUANTIZE_STATIC: re-exported)
    CONV_WITHOUT_KERNEL_SHAPE,
    DQ_INT32_RTX,
    DQ_NON_ACTIVATION,
    FIX_STATIC_QDQ,
    FIX_SYMMETRIC_INT8,
    OPERATORS_MD,
    QUANTIZE_STATIC,
)
from cases.pattern import COMPUTE_OPS, INTEGER_OPS, QUANT_OPS, Graph, Match, node_name  # noqa: F401 (re-exported)
from check.observations import OBSERVED, ResultsFileError, model_cells, observed_cells
from check.versions import check_specifier, runs, specifier
from core.cli import ArgumentParser
from core.outcome import outcome
from matrix.predict import (  # noqa: F401 (re-exported)
    ENGINE,
    ENGINES,
    FAILURES,
    FINDING_BASES,
    PREDICTED_STAGES,
    PREDICTIONS,
    Comparison,
    basis_of,
    claims,
    compare,
    covers,
    failure_prediction,
    node_outcome,
)

FIX_SYMMETRIC_WEIGHTS = (f'{QUANTIZE_STATIC}(..., weight_type=QuantType.QInt8, '
                         'extra_options={"WeightSymmetric": True})')
FIX_FLOAT_BIAS = f'{QUANTIZE_STATIC}(..., extra_options={{"QuantizeBias": False}})'
# The versions the QOperator rule speaks for: the operator tables the old dynamic-quantize rule read (8.4 to 10.15).
QOPERATOR_VERSIONS = ">=8.4,<10.16"
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
# Ops a widened weight passes through between its Cast and its consumer (scale, zero point, layout).
_WIDENING = ("Cast", "Mul", "Sub", "Add", "Reshape", "Transpose", "Unsqueeze", "Squeeze", "Identity")
# What a table with a predicted failure says once: the stages behind it are not predicted (matrix.predict.reached).
UNREACHED = ("A network the parser refuses never reaches the builder, and one the builder refuses runs no kernel: for "
             "an engine version predicted to fail at parse (or build), no later stage is predicted.")
NO_KNOWN_PROBLEM = ("No known problem matched: no catalogue case's pattern and no source-cited rule matched this "
                    "graph. This is no prediction that it parses or builds: a failure here is news for the catalogue.")


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
        check_specifier(self.versions)

    def learned_from(self, cases: Collection[str]) -> bool:
        """Whether this finding was read from observed cells of one of these catalogue cases (what a held-out score
        leaves out for the models those cases were made from, or for a case's own reproducers): a source rule's
        observation counts as read from the cases whose cells gave it (rule_cases)."""
        if self.basis != "observed":
            return False
        return self.case in cases if self.case else bool(set(rule_cases(self.source)) & set(cases))


def rule_cases(source: str) -> Tuple[str, ...]:
    """The catalogue cases whose observed cells a source rule's observation was read from (none for any other)."""
    from cases.common import (
        NONZERO_ZERO_POINT_RTX,
        NONZERO_ZERO_POINT_RTX_CASES,
        NONZERO_ZERO_POINT_RTX_INT8,
        NONZERO_ZERO_POINT_RTX_INT8_CASES,
    )

    return {NONZERO_ZERO_POINT_RTX.source: NONZERO_ZERO_POINT_RTX_CASES,
            NONZERO_ZERO_POINT_RTX_INT8.source: NONZERO_ZERO_POINT_RTX_INT8_CASES}.get(source, ())


class LintInputError(Exception):
    """The model cannot be read: not a file, not ONNX."""


def index(model: Any) -> Graph:
    """The graph index every rule and every case's matcher queries, built once per model (cases.pattern.Graph)."""
    from onnx import numpy_helper

    const: Dict[str, Any] = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            const[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    shapes = {v.name: tuple(d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim)
              for v in model.graph.input}
    return Graph(model.graph.node, const, [o.name for o in model.graph.output], shapes)


def lint_model(model: Any, observed: Optional[Path] = OBSERVED, reach: bool = True) -> List[Finding]:
    """Every finding for one loaded ModelProto, in graph order, each with its rule's words (RULE_WORDS), each claim
    about a node once (matrix.predict.claims: a node matched under two forms the graph cannot tell apart), and with
    `reach` none for a stage a predicted earlier failure keeps the engine version from (matrix.predict.reached: no
    build or precision prediction where the parser is predicted to refuse the model)."""
    g = index(model)
    cells = observed_cells(observed) if observed is not None else []
    words = rule_words()
    patterns = case_patterns()
    found: List[Finding] = []
    for n in g.nodes:
        for rule in SOURCE_RULES:
            found.extend(replace(f, words=words[f.rule]) for f in rule(g, n, cells))
        for case, pattern in patterns.get(n.op_type, []) + patterns.get("", []):
            for m in pattern.find(g, n):
                rule = m.rule or pattern.rule
                found.extend(replace(f, words=words[rule]) for f in case_findings(case, rule, m, pattern.fix, cells))
    return [Finding(**f) for f in claims(found, reach)]


def lint_path(path: Path, observed: Optional[Path] = OBSERVED, reach: bool = True) -> List[Finding]:
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
    return lint_model(model, observed, reach)


# ---- rules: (graph, node, observed cells) -> findings ----

# ---- the engine: every case's pattern, run on the nodes of the op types it visits ----

@functools.lru_cache(maxsize=None)
def _patterns() -> Tuple[Tuple[Any, Any], ...]:
    """(case, pattern) for every seed case of the catalogue, in seed order (cases.all_cases)."""
    from cases import all_cases

    return tuple((c, c.pattern) for c in all_cases() if c.pattern is not None)


def case_patterns() -> Dict[str, List[Tuple[Any, Any]]]:
    """The case patterns by the op type they visit ("" for a pattern that visits every node)."""
    by_op: Dict[str, List[Tuple[Any, Any]]] = {}
    for case, pattern in _patterns():
        for op in pattern.ops or ("",):
            by_op.setdefault(op, []).append((case, pattern))
    return by_op


def rule_words() -> Dict[str, str]:
    """Every rule a finding names, in the few words a report says it in: the source rules' and every case pattern's
    (matrix.models reads them from the findings, never from a table of its own)."""
    words = dict(SOURCE_RULE_WORDS)
    for _, pattern in _patterns():
        for rule, said in pattern.rules.items():
            if words.setdefault(rule, said) != said:
                raise ValueError(f"rule {rule!r} is said two ways: {words[rule]!r} and {said!r}")
    return words


def case_findings(case: Any, rule: str, m: Match, fix: str, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """One match's findings: the case's TensorRT and TensorRT-RTX expectations for the parameters the graph decides,
    then its observed cells of those parameters, each naming the case and its seed."""
    note = m.note
    fix = m.fix or fix
    return (catalogue_findings(m.node, rule, case.id, m.params, fix, note=note)
            + observed_findings(m.node, rule, cells, case.id, m.params, fix, note=note, target=m.target))


# ---- rules that rest on a document, not on a case: each cites its source ----

def zero_point_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """Q/DQ with a non-zero zero point: the parser asserts symmetric quantization (uint8 activations land here).
    Source: onnx-tensorrt's operators.md and its importer's assertion (cases.common.NONZERO_ZERO_POINT); TensorRT for
    RTX 1.7.1.116 refuses uint8 activations with the same assertion (observed: NONZERO_ZERO_POINT_RTX)."""
    from cases.common import (
        NONZERO_ZERO_POINT,
        NONZERO_ZERO_POINT_RTX,
        NONZERO_ZERO_POINT_RTX_INT8,
        nonzero_zero_point_fails,
    )

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
    found = [Finding(node_name(n), rule, expectation.versions, "parse fails", expectation.source, detail, fix)]
    # what the cells show: uint8 activations at 128 (the catalogue's); int8 at quantize_static's own non-zero zero
    # points (the producer blocks': an activation's, and a quantized Add constant's in the transformer); nothing
    # observed of a uint8 constant
    rtx = NONZERO_ZERO_POINT_RTX if rule == "uint8_activation" else \
        NONZERO_ZERO_POINT_RTX_INT8 if str(zp.dtype) == "int8" else None
    if rtx is not None:
        found.append(Finding(node_name(n), rule, rtx.versions, "parse fails", rtx.source,
                             f"{n.op_type} zero point {zp.dtype} {_values(zp)}; {rtx.note}; seen on {rtx.hardware}",
                             fix, rtx.engine, basis="observed"))
    return found


def int32_dq_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """DequantizeLinear of something that is not an INT8 activation or weight (an INT32 bias). Source: onnx-tensorrt's
    operators.md (8.x tables); TensorRT for RTX 1.7.1.116 refuses an INT32 one too (observed: DQ_INT32_RTX)."""
    if n.op_type != "DequantizeLinear" or n.input[0] not in g.const:
        return []
    dtype = str(g.const[n.input[0]].dtype)
    if dtype in ("int8", "uint8"):
        return []
    detail = (f"DequantizeLinear of a {dtype} initializer ({n.input[0]}); operators.md lists DequantizeLinear "
              "for INT8 input only (8.x tables); onnxruntime's quantize_static writes Conv/Gemm biases this way")
    found = [Finding(node_name(n), "dq_non_activation", DQ_NON_ACTIVATION.versions, "parse fails",
                     DQ_NON_ACTIVATION.source, detail, FIX_FLOAT_BIAS)]
    if dtype == "int32":
        rtx = DQ_INT32_RTX
        found.append(Finding(node_name(n), "dq_non_activation", rtx.versions, "parse fails", rtx.source,
                             f"DequantizeLinear of an int32 initializer ({n.input[0]}); {rtx.note}; seen on "
                             f"{rtx.hardware}", FIX_FLOAT_BIAS, rtx.engine, basis="observed"))
    return found


def qoperator_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """QLinearConv and QLinearMatMul (the QOperator format): no TensorRT importer. Source: onnx-tensorrt's
    operators.md (the tables list them as not supported); no case reproduces them."""
    if n.op_type not in ("QLinearConv", "QLinearMatMul"):
        return []
    detail = (f"{n.op_type}: onnx-tensorrt's operators.md lists it as not supported (the 8.4 and 8.5 tables; 7.2 "
              "already); quantize_static in QOperator format writes it")
    return [Finding(node_name(n), "integer_op", QOPERATOR_VERSIONS, "parse fails", OPERATORS_MD, detail,
                    FIX_STATIC_QDQ)]


def conv_kernel_shape_rule(g: Graph, n: Any, cells: Sequence[Dict[str, Any]]) -> List[Finding]:
    """A Conv whose weights come from DequantizeLinear and that has no kernel_shape attribute (8.x parser). Source:
    onnx-tensorrt 8.6-GA's convMultiInput (cases.common.CONV_WITHOUT_KERNEL_SHAPE)."""
    if n.op_type != "Conv" or len(n.input) < 2 or g.op(n.input[1]) != "DequantizeLinear":
        return []
    if any(a.name == "kernel_shape" for a in n.attribute):
        return []
    detail = ("8.x convMultiInput compares the weight tensor's spatial dims with kernel_shape and, without the "
              "attribute, fails: 'The input tensor shape misaligns with the input kernel shape.'; 10.x reads the "
              "kernel size from the weights")
    return [Finding(node_name(n), "conv_without_kernel_shape", CONV_WITHOUT_KERNEL_SHAPE.versions, "parse fails",
                    CONV_WITHOUT_KERNEL_SHAPE.source, detail, FIX_KERNEL_SHAPE)]


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


# The rules that rest on a document, in the words a report says them in; every case pattern brings its own
# (cases.pattern.Pattern.rules), so rule_words() is the whole registry. A rule missing there stops lint_model.
SOURCE_RULE_WORDS = {
    "dq_non_activation": "INT32 bias DQ",
    "uint8_activation": "uint8 activation (non-zero zero point)",
    "nonzero_zero_point": "non-zero zero point",
    "integer_op": "integer op (ConvInteger/MatMulInteger)",
    "conv_without_kernel_shape": "Conv without kernel_shape",
    "float_model": "a float model (no Q/DQ)",
    "widened_weights": "integer weights widened without a DQ",
}
def __getattr__(name: str) -> Any:
    """RULE_WORDS: the whole rule registry (rule_words), read when asked, so importing the lint loads no case."""
    if name == "RULE_WORDS":
        return rule_words()
    raise AttributeError(name)


SOURCE_RULES = (zero_point_rule, int32_dq_rule, qoperator_rule, conv_kernel_shape_rule, float_model_rule,
                widened_weights_rule)


def catalogue_findings(node: str, rule: str, case_id: str, params: Mapping[str, Any], fix: str,
                       note: str = "") -> List[Finding]:
    """Findings from the case's TensorRT and TensorRT-RTX expectations whose parameter filter the graph's parameters
    meet (an axis the graph does not decide meets no filter on it). An expectation for TensorRT-RTX build targets
    (`when={"target": ...}`) gives one finding per target, for that setting; one for any other setting (a CPU level, an
    engine option) is left out."""
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
        detail = f"{case_words(case_id)} ({_params(params)})" + (f"; {note}" if note else "") \
            + (f"; {e.note}" if e.note else "") + (f"; seen on {e.hardware}" if e.hardware else "")
        for setting in [f"target={t}" for t in when.get("target", ())] or [""]:
            out.append(Finding(node, rule, e.versions, predicted, e.source, detail, fix, e.engine, setting,
                               case=case_id))
    return out


def case_words(case_id: str) -> str:
    """A case as a finding cites it: "catalogue case 032 two_conv_fanout_qdq"."""
    from cases import get_case

    seed = get_case(case_id).seed
    return f"catalogue case {seed} {case_id}" if seed else f"catalogue case {case_id}"


def _predicted(outcome: str, stage: Optional[str]) -> Optional[str]:
    if outcome == "fail":
        return failure_prediction(stage or "") or None
    return {"int8": "int8", "not_int8": "float"}.get(outcome)


# ---- observed cells as knowledge (check.observations reads them) ----

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
    """Findings from observed cells of the matching reproducers: one per engine and run of equal outcomes over its
    versions. Where the graph leaves an axis open, a version speaks where all its reproducers agree."""
    seen_at: Dict[str, Dict[str, Dict[str, Tuple[str, str]]]] = {}
    for c in cells:
        if c.get("case") != case_id or any(c.get("params", {}).get(k) != v for k, v in params.items()):
            continue
        said = observed_outcome(c, target)
        if said is not None:
            seen_at.setdefault(c.get("engine", ENGINE), {}).setdefault(c["engine_version"], {})[said] = \
                (c["_file"], c.get("hardware", ""))
    out: List[Finding] = []
    for engine in sorted(seen_at, key=lambda e: (e != ENGINE, e)):
        seen = {v: next(iter(o.items())) for v, o in seen_at[engine].items() if len(o) == 1}
        for lo, hi in runs({v: said for v, (said, _) in seen.items()}):
            said, (path, hardware) = seen[lo]
            path = path if lo == hi else str(Path(path).parent)
            detail = f"observed: {case_words(case_id)} ({_params(params)}) on {hardware}"
            detail += f"; {note}" if note else ""
            out.append(Finding(node, rule, specifier(lo, hi), said, path, detail, fix, engine, basis="observed",
                               case=case_id))
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
        return "\n".join(lines + [NO_KNOWN_PROBLEM, ""])
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
    if any(f.predicted in FAILURES for f in findings):
        lines += ["", UNREACHED]
    if fixes:
        lines += ["", "Avoid with:"] + [f"{i}. `{fix}`" for i, fix in enumerate(fixes, 1)]
    return "\n".join(lines) + "\n"


def basis_words(basis: str, case: str) -> str:
    """A finding's basis for a reader: "observed (seed 024 silu_qdq)", "documented"."""
    if not case:
        return basis
    from cases import get_case

    try:
        seed = get_case(case).seed
    except KeyError:  # a case this catalogue no longer has (an older bundle's finding)
        seed = ""
    return f"{basis} (seed {seed} {case})" if seed else f"{basis} ({case})"


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
    except (LintInputError, ResultsFileError) as e:
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


if __name__ == "__main__":
    sys.exit(main())
