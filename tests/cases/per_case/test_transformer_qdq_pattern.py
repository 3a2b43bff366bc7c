"""Case 012 `transformer_qdq_pattern`: attention BMMs run in INT8 only with Q/DQ on their inputs (#3243)."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.transformer_qdq_pattern import CASE
from generators.write import build
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, attrs, initializers, producers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_for_tensorrt_at_opset_13_without_convolutions(params):
    rep = build(CASE, params)
    assert_symmetric_int8_for_tensorrt(rep, opset=13, convolutions=False)


def test_transformer_block_puts_q_dq_where_the_sweep_says():
    for params in CASE.variants():
        rep = build(CASE, params)
        nodes = {n.name: n for n in rep.model.graph.node}
        made_by = producers(rep.model)
        bmm1, bmm2 = nodes["node_of_scores"], nodes["node_of_ctx"]
        assert bmm1.op_type == bmm2.op_type == "MatMul" and rep.target_nodes == (bmm1.name, bmm2.name)
        want = "DequantizeLinear" if params["bmm_inputs"] == "both" else "Transpose"
        assert [made_by[i].op_type for i in bmm1.input] == [want, want]
        assert made_by[bmm2.input[1]].op_type == want
        assert made_by[bmm2.input[0]].op_type == ("DequantizeLinear" if params["softmax_qdq"] else "Softmax")
        # Every projection MatMul reads a Q/DQ activation and per-channel INT8 weights on the output axis.
        for name in ("node_of_q_lin", "node_of_k_lin", "node_of_v_lin", "node_of_attn_out"):
            act, weight = (made_by[i] for i in nodes[name].input)
            assert act.op_type == weight.op_type == "DequantizeLinear" and attrs(weight)["axis"] == 1
        # The residual Add and the LayerNorm after it stay in float: no Q reads them.
        float_part = {"h", "h_mean", "h_centred", "h_sq", "h_var", "h_var_eps", "h_std", "y"}
        assert not any(n.op_type == "QuantizeLinear" and n.input[0] in float_part for n in rep.model.graph.node)
        assert nodes["node_of_h"].input[1] == "x"  # the float block input, not its DQ


def test_attention_activation_scales_avoid_rounding_ties():
    """q, k, v and ctx scales are 3 * 2^j: a Q/DQ there never meets an exact .5 whatever the engine's rounding."""
    for params in CASE.variants():
        init = initializers(build(CASE, params).model)
        for name in ("qh_scale", "kh_scale", "vh_scale", "ctx_scale"):
            if name in init:
                mantissa, _ = np.frexp(float(init[name]) / 3.0)
                assert mantissa == 0.5, name


def test_no_version_is_guessed():
    assert CASE.expectations == () and CASE.signatures == ()  # no source states a TensorRT version for these shapes
