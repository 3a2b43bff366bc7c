"""Case 018 `bias_add_after_qdq`: a bias Add after a Q/DQ MatMul or Conv, as onnxruntime's quantizer writes it."""

from __future__ import annotations

import numpy as np
import pytest

from cases import slug
from cases.bias_add_after_qdq import CASE
from generators import write
from tests.cases.per_case.helpers import initializers, only, producers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_bias_add_follows_the_op_as_a_float_constant_or_onnxruntimes_int8_dq(params):
    rep = write.build(CASE, params)
    made_by = producers(rep.model)
    add = only(rep.model, "Add")
    op = made_by[add.input[0]]
    assert rep.target_nodes == ("node_of_mm", add.name)
    if params["bias"] == "float":
        assert op.name == "node_of_mm" and add.input[1] not in made_by
        assert initializers(rep.model)[add.input[1]].dtype == np.float32
    else:  # the op's output through Q/DQ, the bias an INT8 initializer -> DQ, as quantize_static writes a bias Add
        assert op.op_type == "DequantizeLinear" and made_by[op.input[0]].input[0] == "mm"
        bias_dq = made_by[add.input[1]]
        assert bias_dq.op_type == "DequantizeLinear" and initializers(rep.model)[bias_dq.input[0]].dtype == np.int8
    readers = [n.op_type for n in rep.model.graph.node if add.output[0] in n.input]
    assert readers == (["QuantizeLinear"] if params["output_qdq"] else [])


def test_no_expectation_or_signature_where_no_source_says():
    """Nothing documents the bias Add."""
    assert CASE.expectations == () and CASE.signatures == ()
