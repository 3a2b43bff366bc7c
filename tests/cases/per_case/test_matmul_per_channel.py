"""Case 011 `matmul_per_channel`: MatMul and Gemm with INT8 weights through DequantizeLinear, per channel (#3266)."""

from __future__ import annotations

import pytest

from cases import slug
from cases.matmul_per_channel import CASE
from generators.write import build
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, attrs, initializers, only


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_for_tensorrt_at_opset_13_without_convolutions(params):
    rep = build(CASE, params)
    assert_symmetric_int8_for_tensorrt(rep, opset=13, convolutions=False)


def test_matmul_weights_are_quantized_on_the_output_channel_axis():
    for params in CASE.variants():
        rep = build(CASE, params)
        init = initializers(rep.model)
        gemm = params["op"] == "gemm_transb"
        target = only(rep.model, "Gemm" if gemm else "MatMul")
        assert target.name == rep.target_nodes[0]
        if gemm:
            assert attrs(target)["transB"] == 1 and init["w"].shape == (16, 32)
        else:
            assert init["w"].shape == (32, 16)
        dq = next(n for n in rep.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w")
        if params["weights"] == "per_tensor":
            assert init["w_scale"].shape == () and "axis" not in attrs(dq)
        else:
            axis = attrs(dq)["axis"]
            assert axis == (0 if gemm else 1) and init["w_scale"].shape == (16,)
            assert len(set(init["w_scale"].tolist())) > 1  # a scale applied on the wrong channel would show
        readers = [n.op_type for n in rep.model.graph.node if target.output[0] in n.input]
        assert readers == (["QuantizeLinear"] if params["output_qdq"] else [])


def test_no_version_is_guessed():
    assert CASE.expectations == () and CASE.signatures == ()  # no source states a TensorRT version for these shapes
