"""Case 017 `dynamic_quantize_asymmetric`: quantize_dynamic's uint8 Gather table with zero point 128 (#4698)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.common import NONZERO_ZERO_POINT
from cases.dynamic_quantize_asymmetric import CASE
from generators import write
from tests.cases.per_case.helpers import initializers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_quantize_dynamic_writes_a_uint8_gather_dq_with_a_nonzero_zero_point(params):
    """#4698: even with WeightSymmetric and ActivationSymmetric, the Gather's table is uint8 with zero point 128."""
    rep = write.build(CASE, params)
    dq = next(n for n in rep.model.graph.node if n.name in rep.target_nodes and n.op_type == "DequantizeLinear")
    gather = next(n for n in rep.model.graph.node if n.op_type == "Gather")
    assert dq.input[0] == gather.output[0] and rep.model.producer_name == "onnx.quantize"
    zero_point = initializers(rep.model)[dq.input[2]]
    assert zero_point.dtype == np.uint8 and zero_point != 0
    if params["options"] == "symmetric":
        assert zero_point == 128
    ops = {n.op_type for n in rep.model.graph.node}
    assert ("MatMulInteger" in ops) is (params["graph"] == "gather_add_matmul")


def test_4698_is_the_zero_point_rule_on_tensorrt_and_seed_002s_saturation_on_onnxruntime():
    trt = [e for e in CASE.expectations if e.engine == "tensorrt"]
    assert all(e.outcome == "fail" and not e.where for e in trt)
    assert {e.signature for e in trt} == {NONZERO_ZERO_POINT.name, None}
    assert {e.engine for e in CASE.expectations} == {"tensorrt", "onnxruntime"}
    saturating = {"graph": "gather_add_matmul", "options": "symmetric"}
    assert CASE.expectation_for("onnxruntime", "1.32.0", saturating, {"isa": "avx2"}).outcome == "fail"
    assert CASE.expectation_for("onnxruntime", "1.32.0", saturating, {"isa": "avx512_vnni"}).outcome == "pass"
    fixed = CASE.expectation_for("onnxruntime", "1.32.0", saturating, {"isa": "avx2", "x64quantprecision": "1"})
    assert fixed.outcome == "pass"
    assert CASE.expectation_for("onnxruntime", "1.32.0", {"graph": "gather_add_matmul", "options": "default"},
                                {"isa": "avx2"}) is None  # within a step on AVX2: no saturation to document
    text = ("Assertion failed: shiftIsAllZeros(zeroPoint): Non-zero zero point is not supported. Please set "
            "kENABLE_UINT8_AND_ASYMMETRIC_QUANTIZATION_DLAto enable asymmetric quantization if it is on DLA.")
    assert NONZERO_ZERO_POINT.search(text)  # #4698's words
