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

TensorRT 8.x cannot host Python plugins, so on 8.5/8.6 the thread's placements use a plugin from
TensorRT's own library (libnvinfer_plugin, registered by trt.init_libnvinfer_plugins): `plugin`
"trt_skip_layernorm" is CustomSkipLayerNormPluginDynamic version "1" with type_id 2 (kINT8). Why
that one, from NVIDIA/TensorRT plugin/skipLayerNormPlugin/ on tags 8.5.1, 8.5.2, 8.5.3 and v8.6.0:
- skipLayerNormPlugin.cpp, SkipLayerNormPluginDynamic::supportsFormatCombination: with type_id
  kINT8, input 0 must be INT8 in kCHW32 (kCHW4 when ld < 32), and the skip input and the output
  must match it: INT8 in and out, nothing else, like the INT8-only plugins of #3055 and #3844
  (#3844's was a LayerNorm accepting INT8 kCHW4/kCHW32 only). Its source is public for every 8.x
  release, unlike the registry's "LayerNorm" and "GroupNorm", whose formats cannot be read.
- configurePlugin: inputs are [S, B, ld, 1, 1]; creator fields ld, type_id, beta, gamma (bias
  optional; validateRequiredAttributesExist names the four). No SM check on this path.
- skipLayerNormKernel.cu, computeSkipLayerNormDQQ: the INT8 kernel exists for ld 768 and 1024
  only (8.5 logs "SkipLayerNormDQQ - FATAL: unsupported hidden layer size" and calls exit(0);
  8.6 throws), so ld is 768 and the format is kCHW32, which with H = W = 1 lays out like linear.
  skiplnDQQ computes in __half: y = gamma * (h - mean) / sqrt(var) + beta with h = DQ(x) + DQ(skip)
  + bias, variance E[h^2] - mean^2, and no epsilon.
Versions 3 and 4 (skipLayerNormInt8InterleavedPlugin.cpp, INT8 kCHW32 only) take another
layout and are not used. The ONNX parser reaches the creator through its fallback importer
(onnx-tensorrt release/8.5-GA and 8.6-GA builtin_op_importers.cpp, FallbackPluginImporter): op_type
is the creator name, `plugin_version`/`plugin_namespace` attributes select it, INT and FLOATS
attributes become kINT32 and kFLOAT32 PluginFields; ModelImporter.cpp ignores the node's domain.

rustnn/rustnn#153 (2026-06): TensorRT-RTX's layer API refuses a Dequantize layer with a UInt8 input ("input has type
UInt8 but must have type FP8, FP4, Int4, or Int8"). This case's uint8 variants do not show it through the ONNX parser:
their zero point (128) is refused first by the parser's symmetric-quantization assertion (every TensorRT-RTX version;
the observed 1.7.1.116 cells), and a uint8 Q/DQ with zero point 0 is read as INT8 and builds in INT8 on 1.7.1.116
(tests/engines/test_tensorrt_rtx_uint8.py): the refusal belongs to graphs built layer by layer, as rustnn's are.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Signature
from cases.common import (
    FIX_SYMMETRIC_INT8,
    ISSUE_3844,
    NONZERO_ZERO_POINT,
    nonzero_zero_point_by_version,
    rtx_plugins_unsupported,
)
from cases.pattern import Graph, Match, Pattern, matches, plugin_node, zero_point_type

ISSUE_3055 = "https://github.com/NVIDIA/TensorRT/issues/3055"
ISSUE_3314 = "https://github.com/NVIDIA/TensorRT/issues/3314"
RUSTNN_153 = "https://github.com/rustnn/rustnn/issues/153"

PLUGIN_NAMESPACE = "qdq_matrix"  # also the ONNX domain of the node
PLUGIN_VERSION = "1"
PLUGIN_OPS = {"v2": "Int8IdentityV2", "v3": "Int8Identity"}  # plugin API -> op_type and plugin name
# TensorRT's own plugins (empty plugin namespace): `plugin` value -> (creator name, version).
BUILTIN_PLUGINS = {"trt_skip_layernorm": ("CustomSkipLayerNormPluginDynamic", "1")}
BUILTIN_DOMAIN = "trt.plugins"  # only so that onnx.checker accepts the node; TensorRT ignores it
_SKIP_LAYERNORM = "https://github.com/NVIDIA/TensorRT/blob/release/8.6/plugin/skipLayerNormPlugin/"
SKIP_LAYERNORM_SOURCE = _SKIP_LAYERNORM + "skipLayerNormPlugin.cpp"
SKIP_LAYERNORM_KERNEL = _SKIP_LAYERNORM + "skipLayerNormKernel.cu"

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


def _issue_3055(version: str, plugin: str = "v2") -> tuple:
    hardware = "NVIDIA RTX 3090"
    which = "" if plugin == "v2" else (
        "the thread's plugin was the reporter's own INT8-only plugin; this is TensorRT's "
        "CustomSkipLayerNormPluginDynamic v1 with type_id kINT8, INT8-only too (kCHW32)"
    )
    workaround = "the maintainer's Q -> plugin -> DQ workaround; the reporter (8.5.3.1 & 8.6.0.12) said it worked"
    return (
        Expectation(
            "tensorrt", f"=={version}", "fail", ISSUE_3055, stage="build", signature="candidate_requirements",
            where={"variant": ("plugin_qdq_around",), "activation": ("int8",), "plugin": (plugin,)},
            hardware=hardware, note=which,
        ),
        Expectation(
            "tensorrt", f"=={version}", "pass", ISSUE_3055,
            where={"variant": ("plugin_q_direct",), "activation": ("int8",), "plugin": (plugin,)}, hardware=hardware,
            note="; ".join(x for x in (workaround, which) if x),
        ),
    )



def match_q_output(g: Graph, q: Any) -> List[Match]:
    """A QuantizeLinear whose output is a graph output (#3844), that feeds a plugin directly or through its DQ (#3055),
    or a uint8 Q -> DQ (the parser's symmetric-quantization check)."""
    activation = "uint8" if zero_point_type(g, q) == "uint8" else "int8"
    users = g.users(q.output[0])
    dqs = [u for u in users if u.op_type == "DequantizeLinear"]
    if q.output[0] in g.outputs:
        return matches(q, {"variant": "q_graph_output", "activation": activation, "plugin": "none"},
                       note=f"the network definition types a Q output FLOAT ({ISSUE_3844})")
    if any(plugin_node(u) for u in users):
        return matches(q, {"variant": "plugin_q_direct", "activation": activation}, rule="int8_plugin_io")
    if any(plugin_node(u) for d in dqs for u in g.users(d.output[0])):
        return matches(q, {"variant": "plugin_qdq_around", "activation": activation}, rule="int8_plugin_io")
    if dqs and activation == "uint8":
        return matches(q, {"variant": "q_dq_chain", "activation": "uint8", "plugin": "none"}, rule="uint8_activation",
                       fix=FIX_SYMMETRIC_INT8)
    return []


PATTERN = Pattern(
    rules={"q_graph_output": "Q as graph output", "int8_plugin_io": "INT8 plugin between Q/DQ",
           "uint8_activation": "uint8 activation (non-zero zero point)"},
    ops=("QuantizeLinear",),
    match=match_q_output,
    controls=({"variant": ("q_dq_chain",), "activation": ("int8",)},),
    also_matches=("fp16_quantize_rounding", "grouped_conv"),
)


CASE = Case(
    id="q_output_type",
    seed="000",
    title="QuantizeLinear output type and INT8 plugins between Q/DQ",
    links=(ISSUE_3844, ISSUE_3055, ISSUE_3314, SKIP_LAYERNORM_SOURCE, RUSTNN_153),
    axes={"variant": VARIANTS, "activation": ("int8", "uint8"), "plugin": ("none", "v2", "v3", *BUILTIN_PLUGINS)},
    target_nodes=("node_of_x_q", "node_of_p"),
    signatures=(
        Signature(
            "no_supported_formats",
            r"could not find any supported formats consistent with input/output data types",
            "error",
            ISSUE_3844,
            short="no supported formats",
        ),
        Signature(
            "candidate_requirements",
            r"Assertion !n->candidateRequirements\.empty\(\) failed",
            "error",
            ISSUE_3055,
            short="no candidate requirements",
        ),
        Signature(
            "format_combination_limit",
            r"ignores some format combinations because combination limit of \d+ was reached",
            "warning",
            ISSUE_3055,
            short="format combination limit",
        ),
        Signature(
            "skip_layernorm_int8_hidden_size",
            r"SkipLayerNormDQQ - FATAL: unsupported hidden layer size",
            "error",
            SKIP_LAYERNORM_KERNEL,
            short="skipLayerNorm INT8 hidden size",
        ),
        NONZERO_ZERO_POINT,
    ),
    expectations=(
        _issue_3055("8.5.3.1") + _issue_3055("8.6.0.12")
        + _issue_3055("8.5.3.1", "trt_skip_layernorm") + _issue_3055("8.6.0.12", "trt_skip_layernorm")
        + nonzero_zero_point_by_version({"activation": ("uint8",)})
        + (rtx_plugins_unsupported({"variant": PLUGIN_VARIANTS}),)
    ),
    builder="generators.q_output_type:build",
    valid=_valid,
    pattern=PATTERN,
)
