"""NVIDIA/TensorRT#3844, #3055, #3314: the type of a QuantizeLinear output, and INT8 plugins between Q/DQ.

#3844 asks why TensorRT's network definition reports a QuantizeLinear layer's output as FLOAT, and
shows an INT8-only plugin (supportsFormatCombination accepts kINT8 in kCHW4/kCHW32 only) failing
with "could not find any supported formats consistent with input/output data types".
#3055 builds input -> Q -> DQ -> Plugin -> Q -> DQ -> output around an INT8-only plugin and fails
with "Assertion !n->candidateRequirements.empty() failed" (TensorRT 8.5.3.1 and 8.6.0.12, RTX 3090);
the maintainer's Q -> Plugin -> DQ form worked for the reporter.

The plugin: the ONNX parser imports an op it has no importer for as a plugin whose creator name is
the op_type, with the version and namespace taken from the `plugin_version` and `plugin_namespace`
attributes ("Searching for plugin: <op_type>, plugin_version: 1, plugin_namespace: ..." in its log).
TensorRT 10 Python plugins register as "<namespace>::<name>" (tensorrt.plugin.register). So the node
is op_type `Int8Identity` in ONNX domain `qdq_matrix`, with plugin_version "1" and plugin_namespace
"qdq_matrix": one name that a C++ creator ("Int8Identity", "1", "qdq_matrix") and a Python plugin
("qdq_matrix::Int8Identity") can both register. To reproduce #3055 the plugin must accept INT8
(linear) input and output only; it copies its input. Both threads used the IPluginV2 API (#3055's
log names IPluginV2IOExt/IPluginV2DynamicExt; #3844's supportsFormatCombination takes a
PluginTensorDesc), so the `plugin` axis also asks for `Int8IdentityV2`, the IPluginV2DynamicExt
twin that engines/tensorrt/plugins.py registers beside the IPluginV3 `Int8Identity`.
"""

from __future__ import annotations

from cases.base import Case, Expectation, Signature
from cases.common import NONZERO_ZERO_POINT, nonzero_zero_point_fails

ISSUE_3844 = "https://github.com/NVIDIA/TensorRT/issues/3844"
ISSUE_3055 = "https://github.com/NVIDIA/TensorRT/issues/3055"
ISSUE_3314 = "https://github.com/NVIDIA/TensorRT/issues/3314"

PLUGIN_NAMESPACE = "qdq_matrix"  # also the ONNX domain of the node
PLUGIN_VERSION = "1"
PLUGIN_OPS = {"v2": "Int8IdentityV2", "v3": "Int8Identity"}  # plugin API -> op_type and plugin name

VARIANTS = ("q_dq_chain", "q_graph_output", "plugin_qdq_around", "plugin_q_direct")
PLUGIN_VARIANTS = ("plugin_qdq_around", "plugin_q_direct")


def plugin_id(api: str) -> str:
    """The "namespace::name" a TensorRT plugin registers under for one plugin API."""
    return f"{PLUGIN_NAMESPACE}::{PLUGIN_OPS[api]}"


def _valid(params: dict) -> bool:
    if params["variant"] not in PLUGIN_VARIANTS:
        return params["plugin"] == "none"
    # The plugin is INT8-only, as in #3055; uint8 activations only make sense without it.
    return params["plugin"] != "none" and params["activation"] == "int8"


def _issue_3055(version: str) -> tuple:
    hardware = "NVIDIA RTX 3090"
    return (
        Expectation(
            "tensorrt", f"=={version}", "fail", ISSUE_3055, stage="build", signature="candidate_requirements",
            where={"variant": ("plugin_qdq_around",), "activation": ("int8",), "plugin": ("v2",)}, hardware=hardware,
        ),
        Expectation(
            "tensorrt", f"=={version}", "pass", ISSUE_3055,
            where={"variant": ("plugin_q_direct",), "activation": ("int8",), "plugin": ("v2",)}, hardware=hardware,
            note="the maintainer's Q -> plugin -> DQ workaround; the reporter (8.5.3.1 & 8.6.0.12) said it worked",
        ),
    )


CASE = Case(
    id="q_output_type",
    seed="000",
    title="QuantizeLinear output type and INT8 plugins between Q/DQ",
    links=(ISSUE_3844, ISSUE_3055, ISSUE_3314),
    axes={"variant": VARIANTS, "activation": ("int8", "uint8"), "plugin": ("none", "v2", "v3")},
    target_nodes=("node_of_x_q", "node_of_p"),
    signatures=(
        Signature(
            "no_supported_formats",
            r"could not find any supported formats consistent with input/output data types",
            "error",
            ISSUE_3844,
        ),
        Signature(
            "candidate_requirements",
            r"Assertion !n->candidateRequirements\.empty\(\) failed",
            "error",
            ISSUE_3055,
        ),
        NONZERO_ZERO_POINT,
    ),
    expectations=_issue_3055("8.5.3.1") + _issue_3055("8.6.0.12") + (nonzero_zero_point_fails({"activation": ("uint8",)}),),
    builder="generators.q_output_type:build",
    valid=_valid,
)
