"""Seed 002 `dynamic_quantize`: DynamicQuantizeLinear has no TensorRT importer (#3963, onnx-tensorrt operators.md)."""

from __future__ import annotations

import pytest

from cases.dynamic_quantize import CASE
from generators import write


@pytest.mark.parametrize(
    "variant, integer_op", [("ort_dynamic_matmul", "MatMulInteger"), ("ort_dynamic_conv", "ConvInteger")]
)
def test_quantize_dynamic_output_is_the_real_quantizer_s(variant, integer_op):
    rep = write.build(CASE, {"variant": variant})
    ops = [n.op_type for n in rep.model.graph.node]
    assert "DynamicQuantizeLinear" in ops and integer_op in ops
    assert rep.model.producer_name == "onnx.quantize"
    targets = {n.op_type for n in rep.model.graph.node if n.name in rep.target_nodes}
    assert targets == {"DynamicQuantizeLinear", integer_op}


def test_signature_matches_the_upstream_text():
    assert CASE.signature("dql_plugin_not_found").search(
        "[TRT] [E] 3: getPluginCreator could not find plugin: DynamicQuantizeLinear version: 1")


def test_documented_expectations_pick_the_issue_first():
    found = CASE.expectation_for("tensorrt", "8.6.1.6", {"variant": "dql_alone"})
    assert found.signature == "dql_plugin_not_found" and found.stage == "load"
    assert CASE.expectation_for("tensorrt", "10.3.0", {"variant": "dql_alone"}).outcome == "fail"
    assert CASE.expectation_for("tensorrt", "10.16.0", {"variant": "dql_alone"}) is None
