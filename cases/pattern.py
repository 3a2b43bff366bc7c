"""The lint's side of a case: the graph pattern it reproduces, declared beside its expectations, run by one engine.

ruff's model: each case declares what it matches (`Pattern`: the op types it visits and a matcher over one node of
an indexed graph), and one engine (check.lint) builds the index once per model ({name: node}, producers, consumers per
tensor, constants) and runs every case's matcher on the nodes of the op types it visits, so the cost stays linear in
the model. A matcher says which of the case's parameters the user's graph decides (`Match.params`, a partial variant);
the engine turns that into findings from the case's expectations and its observed cells. Adding a case adds its rule.

This module imports neither onnx nor numpy: check.lint builds the index from a loaded model and hands it the constants
as arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

QUANT_OPS = ("QuantizeLinear", "DequantizeLinear")
INTEGER_OPS = ("ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul")
ORT_CONTRIB = "com.microsoft"  # ONNX Runtime's contrib operators' domain (QOperator's QLinearAdd, DynamicQuantizeLSTM)
COMPUTE_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")
# Ops a weight passes through between its DequantizeLinear and its consumer (exporters' layout ops).
LAYOUT_OPS = ("Transpose", "Cast", "Reshape", "Identity")
# ONNX TensorProto element types a DequantizeLinear's output_dtype names, as numpy spells them.
ONNX_FLOAT_TYPES = {1: "float32", 10: "float16", 16: "bfloat16"}


@dataclass(frozen=True)
class Match:
    """One place in a user's graph that a case's pattern matched: the node a finding speaks for, the case's parameters
    the graph decides (a partial variant: an axis the graph cannot tell is left out), and what to read from the
    reproducer's observed cells (`target`: its node whose precision speaks for this node; "" the cell's fusion)."""

    node: str
    params: Mapping[str, Any] = field(default_factory=dict)
    rule: str = ""  # one of the pattern's rules; "" its first
    target: str = ""
    fix: str = ""  # overrides the pattern's fix
    note: str = ""  # what this match adds to the case's words (e.g. "if the plugin is an IPluginV3")


@dataclass(frozen=True)
class Pattern:
    """What a case reproduces, as a lint rule: the rules it reports (name -> a reader's few words), the op types whose
    nodes it visits (() every node), its matcher, and the producer fix where the case knows one. `controls` names the
    sweep's reproducers that do not show the problem (each entry a filter like an expectation's `where`): the matcher
    declines exactly those. A graph can show more than one known problem: `also_matches` names the other cases whose
    reproducers this pattern matches too, `matched_by` the other cases whose patterns match this case's reproducers;
    each such pair is said once, by either case, so that a new case states its own in its module
    (tests/cases/test_patterns.py runs every pattern on every reproducer and holds them to it)."""

    rules: Mapping[str, str]
    ops: Tuple[str, ...]
    match: Callable[["Graph", Any], Iterable[Match]]
    fix: str = ""
    controls: Tuple[Mapping[str, Tuple[Any, ...]], ...] = ()
    also_matches: Tuple[str, ...] = ()
    matched_by: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.rules:
            raise ValueError("a pattern names at least one rule and its words")

    @property
    def rule(self) -> str:
        """The rule a match names when it names none."""
        return next(iter(self.rules))

    def find(self, g: "Graph", node: Any) -> List[Match]:
        """Every match at one node (nothing for a node of another op type)."""
        if self.ops and node.op_type not in self.ops:
            return []
        return list(self.match(g, node))


class Graph:
    """A read-only index of one ONNX graph, built once: producers, consumers per tensor, constants and their dtypes,
    graph inputs' and outputs' names, declared shapes."""

    def __init__(self, nodes: Sequence[Any], const: Mapping[str, Any], outputs: Iterable[str],
                 shapes: Optional[Mapping[str, Tuple[Any, ...]]] = None) -> None:
        self.nodes = list(nodes)
        self.const: Dict[str, Any] = dict(const)
        self.dtypes = {k: str(v.dtype) for k, v in self.const.items()}
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.consumers: Dict[str, List[Any]] = {}
        for n in self.nodes:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.outputs = set(outputs)
        self.shapes = dict(shapes or {})
        ops = {n.op_type for n in self.nodes}
        # Quantized in any form the lint knows: Q/DQ, a dynamic quantizer, an integer op
        self.quantized = bool(ops & set(QUANT_OPS + INTEGER_OPS + ("DynamicQuantizeLinear",)))

    def op(self, tensor: str) -> str:
        """The op type that writes a tensor ("" for an input or an initializer)."""
        n = self.producer.get(tensor)
        return n.op_type if n is not None else ""

    def users(self, tensor: str) -> List[Any]:
        """The nodes that read a tensor."""
        return self.consumers.get(tensor, [])

    def dtype(self, tensor: str) -> str:
        """A constant's numpy dtype name ("" for a tensor that is no constant)."""
        return self.dtypes.get(tensor, "")


def plugin_node(node: Any) -> bool:
    """A node TensorRT's parser imports as a plugin a user registers: an op of a domain other than ONNX's own, and not
    one of ONNX Runtime's contrib operators (ORT_CONTRIB: QOperator's QLinearAdd, QGemm, ...), for which TensorRT has
    neither an importer nor a plugin, and which it refuses as such."""
    return node.domain not in ("", "ai.onnx", ORT_CONTRIB)


def onnx_opset(model: Any) -> int:
    """The ONNX domain's opset a ModelProto imports, 0 where it names none."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def node_name(node: Any) -> str:
    """The name TensorRT's parser gives a node: its own, or node_of_<first output>."""
    return node.name or f"node_of_{node.output[0]}"


def attr(node: Any, name: str, default: Any = None) -> Any:
    """An attribute's value: an int, a list of ints, a string or a float; default where the node has none."""
    for a in node.attribute:
        if a.name == name:
            if a.ints:
                return list(a.ints)
            if a.s:
                return a.s.decode() if isinstance(a.s, bytes) else a.s
            return a.i if a.type == 2 else a.f if a.type == 1 else a.i
    return default


def activation_dq(g: Graph, tensor: str) -> Optional[Any]:
    """The DequantizeLinear that writes tensor from an activation (not an initializer), or None."""
    p = g.producer.get(tensor)
    return p if p is not None and p.op_type == "DequantizeLinear" and p.input[0] not in g.const else None


def constant_dq(g: Graph, tensor: str) -> Optional[Any]:
    """The DequantizeLinear that writes tensor from an initializer (quantized weights or a constant), or None."""
    p = g.producer.get(tensor)
    return p if p is not None and p.op_type == "DequantizeLinear" and p.input[0] in g.const else None


def weight_dequantize(g: Graph, tensor: str) -> Optional[Any]:
    """The DequantizeLinear (or TensorRT's TRT_MXFP8DequantizeLinear) whose output reaches `tensor` through layout ops
    only (Transpose, Cast, Reshape, Identity), and whose input is an initializer; None otherwise."""
    p = g.producer.get(tensor)
    while p is not None and p.op_type in LAYOUT_OPS:
        p = g.producer.get(p.input[0])
    if p is None or p.op_type not in ("DequantizeLinear", "TRT_MXFP8DequantizeLinear") or p.input[0] not in g.const:
        return None
    return p


def quantized_after(g: Graph, tensor: str) -> Optional[Any]:
    """The QuantizeLinear that reads a tensor, or None."""
    return next((u for u in g.users(tensor) if u.op_type == "QuantizeLinear"), None)


def through_qdq(g: Graph, tensor: str) -> Tuple[str, bool]:
    """The tensor a value's consumers read, and whether they read it through a QuantizeLinear -> DequantizeLinear."""
    q = quantized_after(g, tensor)
    dq = next((u for u in g.users(q.output[0]) if u.op_type == "DequantizeLinear"), None) if q is not None else None
    return (dq.output[0], True) if dq is not None else (tensor, False)


def zero_point_type(g: Graph, qdq: Any) -> str:
    """A Q/DQ's zero point dtype ("" where it has none or it is no constant)."""
    return g.dtype(qdq.input[2]) if len(qdq.input) > 2 else ""


def scale_size(g: Graph, qdq: Any) -> int:
    """The number of scales of a Q/DQ (1 per tensor; 0 where the scale is no constant)."""
    scale = g.const.get(qdq.input[1])
    return int(scale.size) if scale is not None else 0


def compute_with_weights(g: Graph, n: Any) -> Optional[Any]:
    """The weight DequantizeLinear of a Conv, ConvTranspose, MatMul or Gemm whose second input is one, else None."""
    if n.op_type not in COMPUTE_OPS or len(n.input) < 2:
        return None
    return constant_dq(g, n.input[1])


def matches(node: Any, params: Mapping[str, Any], **more: Any) -> List[Match]:
    """One match at a node, as a list (what a matcher returns)."""
    return [Match(node_name(node), dict(params), **more)]
