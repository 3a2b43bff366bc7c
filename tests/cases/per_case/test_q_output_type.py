"""Seed 000 `q_output_type`: the type of a QuantizeLinear output, and INT8 plugins between Q/DQ (#3844, #3055, #3314).

On TensorRT 8.x, #3055's placements around TensorRT's own INT8 CustomSkipLayerNormPluginDynamic too.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from cases.q_output_type import CASE
from generators import write
from generators.q_output_type import HIDDEN, OUT_SCALE, SKIP_SHAPE, skip_layernorm
from tests.cases.per_case.helpers import attrs

PLACEMENTS = {
    # variant -> (what feeds the plugin, what reads its output, its output's ONNX type)
    "plugin_qdq_around": ("DequantizeLinear", "QuantizeLinear", onnx.TensorProto.FLOAT),
    "plugin_q_direct": ("QuantizeLinear", "DequantizeLinear", onnx.TensorProto.INT8),
}


def _params(variant: str) -> dict:
    return {"variant": variant, "activation": "int8", "plugin": "trt_skip_layernorm"}


@pytest.mark.parametrize("api, op", [("v2", "Int8IdentityV2"), ("v3", "Int8Identity")])
def test_plugin_node_names_a_registrable_plugin(api, op):
    rep = write.build(CASE, {"variant": "plugin_q_direct", "activation": "int8", "plugin": api})
    plugin = next(n for n in rep.model.graph.node if n.name == "node_of_p")
    assert (plugin.domain, plugin.op_type) == ("qdq_matrix", op)
    assert attrs(plugin) == {"plugin_version": b"1", "plugin_namespace": b"qdq_matrix"}
    assert rep.trt == {"int8": True, "plugins": [f"qdq_matrix::{op}"], "plugin_api": api}


def test_q_graph_output_is_int8():
    rep = write.build(CASE, {"variant": "q_graph_output", "activation": "int8", "plugin": "none"})
    assert rep.model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.INT8


@pytest.mark.parametrize(
    "name, text",
    [
        ("no_supported_formats", "[pluginV2Builder.cpp::reportPluginError::23] Error Code 9: Internal "
         "Error (LayerNorm_4: could not find any supported formats consistent with input/output data types)"),
        ("candidate_requirements", "ERROR: 2: Assertion !n->candidateRequirements.empty() failed. "
         "All of the candidates were removed"),
    ],
)
def test_signatures_match_the_upstream_text(name, text):
    assert CASE.signature(name).search(text)


def test_documented_expectations_pick_the_issue_first():
    qdq = {"variant": "plugin_qdq_around", "activation": "int8", "plugin": "v2"}
    assert CASE.expectation_for("tensorrt", "8.6.0.12", qdq).signature == "candidate_requirements"
    assert CASE.expectation_for("tensorrt", "10.0.1", qdq) is None
    assert CASE.expectation_for("tensorrt", "8.6.0.12", {**qdq, "plugin": "v3"}) is None


# ---- TensorRT's built-in INT8 CustomSkipLayerNormPluginDynamic (#3055) ----

def test_the_sweep_has_both_placements_for_the_builtin_plugin_and_int8_only():
    found = [p for p in CASE.variants() if p["plugin"] == "trt_skip_layernorm"]
    assert found == [_params("plugin_qdq_around"), _params("plugin_q_direct")]


@pytest.mark.parametrize("variant", PLACEMENTS)
def test_plugin_node_is_one_the_8x_parser_resolves_through_the_registry(variant):
    rep = write.build(CASE, _params(variant))
    onnx.checker.check_model(rep.model, full_check=True)
    plugin = next(n for n in rep.model.graph.node if n.name == "node_of_p")
    found = attrs(plugin)
    # FallbackPluginImporter: op_type = creator name; plugin_version / plugin_namespace select the creator.
    assert plugin.op_type == "CustomSkipLayerNormPluginDynamic"
    assert (found["plugin_version"], found["plugin_namespace"]) == (b"1", b"")
    # The creator's required fields; type_id 2 is kINT8; ld 768 is a hidden size the INT8 kernel has.
    assert (found["ld"], found["type_id"]) == (HIDDEN, 2) == (768, 2)
    assert all(len(found[k]) == HIDDEN for k in ("gamma", "beta", "bias"))
    assert rep.trt == {"int8": True, "plugins": ["CustomSkipLayerNormPluginDynamic"], "plugin_api": "builtin"}
    assert rep.target_nodes == ("node_of_p",)
@pytest.mark.parametrize("variant, placement", PLACEMENTS.items())
def test_placement_is_the_threads(variant, placement):
    feeds, reader, p_type = placement
    model = write.build(CASE, _params(variant)).model
    made_by = {o: n for n in model.graph.node for o in n.output}
    plugin = made_by["p"]
    assert [made_by[i].op_type for i in plugin.input] == [feeds, feeds]
    assert [n.op_type for n in model.graph.node if "p" in n.input] == [reader]
    assert {v.name: v.type.tensor_type.elem_type for v in model.graph.value_info}["p"] == p_type
    # [S, B, hidden, 1, 1]: configurePlugin asks for 5 dimensions with the last two 1.
    for value in model.graph.input:
        assert [d.dim_value for d in value.type.tensor_type.shape.dim] == list(SKIP_SHAPE)
    assert SKIP_SHAPE[2:] == (HIDDEN, 1, 1)


def test_skip_layernorm_normalizes_input_plus_skip_plus_bias_over_the_hidden_axis():
    rng = np.random.default_rng(7)
    h = rng.standard_normal(SKIP_SHAPE).astype(np.float32)
    gamma, beta, bias = (rng.uniform(0.5, 1.0, HIDDEN) for _ in range(3))
    got = skip_layernorm(h, gamma, beta, bias)
    rows = (h[:, 0, :, 0, 0].astype(np.float64) + bias)
    want = gamma * (rows - rows.mean(1, keepdims=True)) / rows.std(1, keepdims=True) + beta
    np.testing.assert_allclose(got[:, 0, :, 0, 0], want, rtol=1e-5, atol=1e-5)
    plain = skip_layernorm(h, np.ones(HIDDEN), np.zeros(HIDDEN), np.zeros(HIDDEN))
    np.testing.assert_allclose(plain.mean(axis=2), 0.0, atol=1e-5)
    np.testing.assert_allclose(plain.std(axis=2), 1.0, rtol=1e-4)


@pytest.mark.parametrize("variant", PLACEMENTS)
def test_reference_is_the_plugins_math_on_the_quantized_inputs_in_output_steps(variant):
    rep = write.build(CASE, _params(variant))
    y = rep.reference(rep.inputs)["y"]
    steps = y / OUT_SCALE
    np.testing.assert_array_equal(steps, np.rint(steps))  # on the output quantizer's grid
    assert np.abs(steps).max() < 127  # no saturation: the step leaves room for the normalized values
    plugin = attrs(next(n for n in rep.model.graph.node if n.name == "node_of_p"))
    q = {k: np.clip(np.rint(v * 32), -128, 127) / 32 for k, v in rep.inputs.items()}
    p = skip_layernorm(q["x"] + q["skip"], *(np.array(plugin[k], np.float32) for k in ("gamma", "beta", "bias")))
    np.testing.assert_array_equal(y, np.rint(p / OUT_SCALE) * OUT_SCALE)
    assert not np.allclose(y, np.rint((q["x"] + q["skip"]) / OUT_SCALE) * OUT_SCALE)  # not an identity
    assert rep.output_steps == {"y": float(OUT_SCALE)} and rep.tolerance_steps == 2.0


@pytest.mark.parametrize(
    "version, variant, outcome",
    [
        ("8.5.3.1", "plugin_qdq_around", "fail"),
        ("8.5.3.1", "plugin_q_direct", "pass"),
        ("8.6.0.12", "plugin_qdq_around", "fail"),
        ("8.5.1.7", "plugin_qdq_around", None),  # #3055 names 8.5.3.1 and 8.6.0.12 only
    ],
)
def test_3055_expectations_cover_the_builtin_plugin_at_the_threads_versions(version, variant, outcome):
    found = CASE.expectation_for("tensorrt", version, _params(variant))
    assert (found and found.outcome) == outcome
    if outcome == "fail":
        assert (found.stage, found.signature) == ("build", "candidate_requirements")
        assert "CustomSkipLayerNormPluginDynamic" in found.note


@pytest.mark.parametrize(
    "name, text",
    [
        # NVIDIA/TensorRT#3055, the reporter's log on 8.5.3.1 / 8.6.0.12
        ("format_combination_limit", "WARNING: IPluginV2IOExt/IPluginV2DynamicExt ignores some format combinations "
         "because combination limit of 100 was reached"),
        # skipLayerNormKernel.cu, computeSkipLayerNormDQQ (8.5.x logs it, 8.6.0 throws it)
        ("skip_layernorm_int8_hidden_size", "SkipLayerNormDQQ - FATAL: unsupported hidden layer size: 4"),
    ],
)
def test_new_signatures_match_the_upstream_text(name, text):
    assert CASE.signature(name).search(text)
    assert not CASE.signature(name).search("could not find any supported formats consistent with input/output")


def test_a_q_into_onnx_runtimes_contrib_op_is_no_int8_plugin_io_but_into_a_plugin_is():
    """A QuantizeLinear feeding a custom-domain node (a plugin the user registers) may be #3055; one feeding ONNX
    Runtime's com.microsoft QGemm (quantize_static's QOperator form) is no plugin: TensorRT has neither an importer
    nor a plugin of it (cases.pattern.plugin_node), so the rule says nothing of it."""
    from onnx import helper

    from cases.pattern import Graph
    from cases.q_output_type import match_q_output

    const = {"s": np.float32(0.1), "z": np.int8(0)}

    def consumer(domain: str) -> list:
        q = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q")
        user = helper.make_node("QGemm" if domain == "com.microsoft" else "Int8Plugin", ["xq"], ["y"], name="user",
                                domain=domain)
        return match_q_output(Graph([q, user], const, ["y"]), q)

    assert [m.params["variant"] for m in consumer("user_plugins")] == ["plugin_q_direct"]
    assert consumer("com.microsoft") == []
