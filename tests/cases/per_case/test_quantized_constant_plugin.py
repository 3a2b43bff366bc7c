"""Seed 004 `quantized_constant_plugin`: an INT8 constant fed straight into a plugin (#3919)."""

from __future__ import annotations

import numpy as np
import pytest

from cases.quantized_constant_plugin import CASE
from generators import write
from tests.cases.per_case.helpers import attrs, initializers, run_onnxruntime

FORMS = CASE.axes["form"]


@pytest.mark.parametrize("form", FORMS)
def test_plugin_forms_name_a_registrable_plugin(form):
    rep = write.build(CASE, {"form": form})
    init = initializers(rep.model)
    assert init["w"].dtype == np.int8
    consumers = [n for n in rep.model.graph.node if "w" in n.input]
    assert len(consumers) == 1
    (first,) = consumers
    if form == "int8_const_dq_op":
        assert first.op_type == "DequantizeLinear" and rep.trt == {"int8": True}
        assert rep.target_nodes == ("node_of_y",)
        return
    op = {"int8_const_to_plugin_v3": "Int8IdentityV3", "int8_const_to_plugin_v2": "Int8IdentityV2"}[form]
    assert (first.op_type, first.domain, first.name) == (op, "qdq_matrix", "node_of_w_id")
    assert attrs(first) == {"plugin_namespace": b"qdq_matrix", "plugin_version": b"1"}
    assert {(o.domain, o.version) for o in rep.model.opset_import} == {("", 13), ("qdq_matrix", 1)}
    assert rep.trt["plugins"] == [f"qdq_matrix::{op}"] and rep.trt["plugin_api"] == form[-2:]
    assert rep.trt["int8"] is True
    assert rep.target_nodes == ("node_of_w_id",)


@pytest.mark.parametrize("form", FORMS)
def test_plugin_reference_is_x_plus_dequantized_constant(form):
    rep = write.build(CASE, {"form": form})
    init = initializers(rep.model)
    expected = rep.inputs["x"] + init["w"].astype(np.float32) * init["w_scale"]
    assert np.array_equal(rep.reference(rep.inputs)["y"], expected)
    if form == "int8_const_dq_op":  # the only form ONNX Runtime can run (no custom op)
        assert np.array_equal(run_onnxruntime(rep)["y"], expected)


def test_plugin_forms_are_refused_by_onnxruntime():
    rep = write.build(CASE, {"form": "int8_const_to_plugin_v3"})
    with pytest.raises(Exception, match="Int8IdentityV3"):
        run_onnxruntime(rep)


def test_signatures_match_the_upstream_text():
    sig = CASE.signature("quantized_constant")
    assert sig.search(
        "Error[2]: [qdqGraphOptimizer.cpp::matchQuantizedConstantPluginOrDQ::4004] Error Code 2: Internal Error "
        "(L__self___conv1.weight: Quantized constant is only allowed before DQ or PLUGIN_V2 node)"
    )
    assert sig.search("Quantized constant is only allowed before DQ or PLUGIN_V2 or kPLUGIN_V3 node")


def test_documented_outcomes_by_version():
    v3, v2 = {"form": "int8_const_to_plugin_v3"}, {"form": "int8_const_to_plugin_v2"}
    assert CASE.expectation_for("tensorrt", "10.0.1.6", v3).outcome == "fail"
    assert CASE.expectation_for("tensorrt", "10.1.0.27", v3).outcome == "pass"
    assert CASE.expectation_for("tensorrt", "10.0.1.6", v2).outcome == "pass"
    assert CASE.expectation_for("tensorrt", "10.3.0", v2) is None
    assert CASE.expectation_for("tensorrt", "10.0.1.6", {"form": "int8_const_dq_op"}) is None


def test_the_lint_calls_a_custom_domain_node_a_plugin_but_not_onnx_runtimes_contrib_ops():
    """An INT8 constant into a node of a custom domain may be #3919 (if that node is an IPluginV3); an ONNX Runtime
    contrib operator (com.microsoft: the QOperator format's QLinearAdd, ...) is no plugin anyone registered, and
    TensorRT refuses it for that, so the rule says nothing of it."""
    from onnx import helper

    from cases.pattern import Graph
    from cases.quantized_constant_plugin import match_int8_constant

    const = {"w": np.zeros((4,), np.int8), "s": np.float32(0.1), "z": np.int8(0)}
    plugin = helper.make_node("Int8IdentityV3", ["w"], ["p"], name="plug", domain="qdq_matrix")
    contrib = helper.make_node("QLinearAdd", ["x", "s", "z", "w", "s", "z", "s", "z"], ["y"], name="add_quant",
                               domain="com.microsoft")
    g = Graph([plugin, contrib], const, ["p", "y"])
    assert [m.params["form"] for m in match_int8_constant(g, plugin)] == ["int8_const_to_plugin_v3",
                                                                           "int8_const_to_plugin_v2"]
    assert match_int8_constant(g, contrib) == []
