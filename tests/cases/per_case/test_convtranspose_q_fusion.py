"""Case 005 `convtranspose_q_fusion`: a Q after a ConvTranspose is not fused into it (#2597, #1699, #2383)."""

from __future__ import annotations

import pytest

from cases import slug
from cases.convtranspose_q_fusion import CASE
from generators.write import build
from tests.cases.per_case.helpers import assert_symmetric_int8_for_tensorrt, only


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_every_variant_is_symmetric_int8_for_tensorrt(params):
    assert_symmetric_int8_for_tensorrt(build(CASE, params))


def test_q_fusion_followers_put_a_q_where_the_threads_do():
    for params in CASE.variants():
        rep = build(CASE, params)
        op = {"conv": "Conv", "conv_transpose": "ConvTranspose"}[params["op"]]
        target = next(n for n in rep.model.graph.node if n.name == rep.target_nodes[0])
        assert target.op_type == op
        readers = [n.op_type for n in rep.model.graph.node if target.output[0] in n.input]
        assert readers == {"none": [], "q": ["QuantizeLinear"], "concat_q": ["Concat"]}[params["follower"]]
        if params["follower"] == "concat_q":
            concat = only(rep.model, "Concat")
            assert [n.op_type for n in rep.model.graph.node if concat.output[0] in n.input] == ["QuantizeLinear"]


def test_expectations_cite_the_cases_own_threads():
    assert all(e.source in CASE.links for e in CASE.expectations)
