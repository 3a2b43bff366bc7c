"""An INT8 constant fed straight into a plugin: https://github.com/NVIDIA/TensorRT/issues/3919.

TensorRT 10.0.1 refused an INT8 initializer that feeds an IPluginV3 plugin directly ("Quantized constant
is only allowed before DQ or PLUGIN_V2 node"); the same graph with an IPluginV2 plugin built, and the
reporter found it fixed in 10.1. Forms:
  int8_const_to_plugin_v3  INT8 initializer -> Int8IdentityV3 (IPluginV3) -> DQ -> Add(x) -> y
  int8_const_to_plugin_v2  INT8 initializer -> Int8IdentityV2 (IPluginV2) -> DQ -> Add(x) -> y
  int8_const_dq_op         INT8 initializer -> DQ -> Add(x) -> y, the form the message allows

The custom ops live in ONNX domain "qdq_matrix" with the attributes plugin_namespace="qdq_matrix" and
plugin_version="1": the ONNX parser's fallback importer looks a plugin creator up by the node's op_type,
plugin_version (default "1") and plugin_namespace (default ""; since 10.10 it also tries the node's
domain), and a tensorrt.plugin (Python) plugin registered as "qdq_matrix::Int8IdentityV3" has exactly
that name and namespace. Each plugin is an identity over one INT8 linear tensor.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Signature
from cases.common import ONNX_OP_IMPORTERS_10_1, rtx_plugins_unsupported
from cases.pattern import (
    INTEGER_OPS,
    QUANT_OPS,
    Graph,
    Match,
    Pattern,
    activation_dq,
    matches,
    node_name,
    plugin_node,
    quantized_after,
)

ISSUE_3919 = "https://github.com/NVIDIA/TensorRT/issues/3919"
QDP_ONNX = (
    "https://github.com/NVIDIA/TensorRT/tree/main/samples/python/quickly_deployable_plugins#onnx-model-with-a-plugin"
)

PLUGIN_DOMAIN = "qdq_matrix"  # ONNX domain and TensorRT plugin namespace
PLUGIN_OPS = {"int8_const_to_plugin_v3": ("Int8IdentityV3", "v3"), "int8_const_to_plugin_v2": ("Int8IdentityV2", "v2")}

QUANTIZED_CONSTANT = Signature(
    name="quantized_constant",
    # #3919 (10.0.1): "Error[2]: [qdqGraphOptimizer.cpp::matchQuantizedConstantPluginOrDQ::4004] Error Code 2:
    # Internal Error (L__self___conv1.weight: Quantized constant is only allowed before DQ or PLUGIN_V2 node)".
    # Later builders (a TensorRT 10.3 log) end it "... before DQ or PLUGIN_V2 or kPLUGIN_V3 node".
    pattern=r"Quantized constant is only allowed before DQ or PLUGIN_V2(?: or kPLUGIN_V3)? node",
    kind="error",
    source=ISSUE_3919,
    short="quantized constant not before DQ",
)


def int8_dq_constant(g: Graph, tensor: str) -> bool:
    """tensor is the DequantizeLinear output of an INT8 initializer."""
    p = g.producer.get(tensor)
    return p is not None and p.op_type == "DequantizeLinear" and g.dtype(p.input[0]) == "int8"


def scalar_int8_dq(g: Graph, tensor: str) -> bool:
    """tensor is the DequantizeLinear output of a 0-d INT8 initializer (seed 025's constant)."""
    return int8_dq_constant(g, tensor) and g.const[g.producer[tensor].input[0]].ndim == 0


def quantized_producer(g: Graph, tensor: str) -> str:
    """ "matmul" / "conv" where tensor is a MatMul/Gemm/Conv output (directly or through its Q -> DQ) whose weights
    come through DequantizeLinear, else ""."""
    p = g.producer.get(tensor)
    if p is not None and p.op_type == "DequantizeLinear":
        q = g.producer.get(p.input[0])
        p = g.producer.get(q.input[0]) if q is not None and q.op_type == "QuantizeLinear" else None
    if p is None or p.op_type not in ("MatMul", "Gemm", "Conv") or len(p.input) < 2 or g.op(p.input[1]) != \
            "DequantizeLinear":
        return ""
    return "conv" if p.op_type == "Conv" else "matmul"


def match_int8_constant(g: Graph, n: Any) -> List[Match]:
    """An INT8 initializer into a plugin (#3919: IPluginV3 or IPluginV2), or INT8 initializer -> DequantizeLinear -> Add
    where the Add is no bias after a quantized op (seed 018) and no requantized Add (seed 025)."""
    if plugin_node(n):
        if n.op_type in QUANT_OPS + INTEGER_OPS or not any(g.dtype(i) == "int8" for i in n.input):
            return []
        return [Match(node_name(n), {"form": form}, note=f"if the plugin is an {api}")
                for form, api in (("int8_const_to_plugin_v3", "IPluginV3"), ("int8_const_to_plugin_v2", "IPluginV2"))]
    if n.op_type != "Add":
        return []
    consts = [i for i in n.input if int8_dq_constant(g, i) and not scalar_int8_dq(g, i)]
    other = [i for i in n.input if i not in consts]
    if not consts or (other and quantized_producer(g, other[0])):
        return []
    if other and activation_dq(g, other[0]) is not None and quantized_after(g, n.output[0]) is not None:
        return []
    return matches(n, {"form": "int8_const_dq_op"})


PATTERN = Pattern(
    rules={"int8_constant_into_plugin": "INT8 constant into a plugin", "dq_constant_into_add": "DQ constant into Add"},
    ops=(),
    match=lambda g, n: [m if m.params.get("form") != "int8_const_dq_op" else
                        Match(m.node, m.params, rule="dq_constant_into_add") for m in match_int8_constant(g, n)],
)


CASE = Case(
    id="quantized_constant_plugin",
    seed="004",
    title="INT8 constant feeding a plugin directly: IPluginV3 refused in TensorRT 10.0",
    links=(ISSUE_3919, QDP_ONNX, ONNX_OP_IMPORTERS_10_1),
    axes={"form": ("int8_const_to_plugin_v3", "int8_const_to_plugin_v2", "int8_const_dq_op")},
    # The plugin node for the plugin forms; the Add fed by the DQ for the DQ form.
    target_nodes=("node_of_w_id", "node_of_y"),
    signatures=(QUANTIZED_CONSTANT,),
    expectations=(
        rtx_plugins_unsupported({"form": ("int8_const_to_plugin_v3", "int8_const_to_plugin_v2")}),
        Expectation(
            engine="tensorrt",
            versions=">=10.0,<10.1",
            outcome="fail",
            stage="build",
            signature="quantized_constant",
            source=ISSUE_3919,
            where={"form": ("int8_const_to_plugin_v3",)},
            hardware="NVIDIA RTX 4000 Ada",
            note="seen on 10.0.1; the reporter: 'it was missed when PLUGIN_V3 was updated in TensorRT 10.0'",
        ),
        Expectation(
            engine="tensorrt",
            versions=">=10.1",
            outcome="pass",
            source=ISSUE_3919,
            where={"form": ("int8_const_to_plugin_v3",)},
            note="the reporter, closing the thread: 'It is fixed in V10.1.' (no release note names it); read as "
            "from 10.1 on, 11.x included: no 10.x or 11.x source read here says it came back",
        ),
        Expectation(
            engine="tensorrt",
            versions="==10.0.1.*",
            outcome="pass",
            source=ISSUE_3919,
            where={"form": ("int8_const_to_plugin_v2",)},
            hardware="NVIDIA RTX 4000 Ada",
            note="the reporter: 'There is no issue when changing Plugin V3 to Plugin V2.'",
        ),
    ),
    builder="generators.quantized_constant_plugin:build",
    pattern=PATTERN,
)
