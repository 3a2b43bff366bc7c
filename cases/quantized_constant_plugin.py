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

from cases.base import Case, Expectation, Signature
from cases.common import ONNX_OP_IMPORTERS_10_1, rtx_plugins_unsupported

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
)
