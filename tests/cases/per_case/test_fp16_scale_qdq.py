"""Case 013 `fp16_scale_qdq`: INT8 Q/DQ whose scales are float16, on Conv and MatMul (#4832, DequantizeLinear-19)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from cases import slug
from cases.fp16_scale_qdq import CASE
from generators import write
from tests.cases.per_case.helpers import attrs, initializers


@pytest.mark.parametrize("params", list(CASE.variants()), ids=slug)
def test_fp16_scales_are_float16_and_type_their_dq_outputs(params):
    rep = write.build(CASE, params)
    init = initializers(rep.model)
    scales = {n: a for n, a in init.items() if n.endswith("_scale")}
    assert scales and all(a.dtype == np.float16 for a in scales.values())
    assert rep.inputs["x"].dtype == np.float16
    assert all(a.dtype == np.int8 and not a.any() for n, a in init.items() if n.endswith("zero_point"))
    if params["graph"] == "dq_cast_after_reshape_slice":
        chain = [n.op_type for n in rep.model.graph.node]
        assert chain == ["QuantizeLinear", "Reshape", "Transpose", "Reshape", "Slice", "DequantizeLinear", "Cast"]
        assert init["x_scale"].shape == ()
        assert rep.model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    else:
        dq = next(n for n in rep.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w")
        per_channel = params["weights"] == "per_channel"
        assert (init["w_scale"].ndim == 1) is per_channel and ("axis" in attrs(dq)) is per_channel


def test_4832_is_documented_by_gpu_architecture_and_nothing_else_is():
    """#4832 fails on SM 8.7 and builds on SM 11.0 with the same version: the expectation follows the cell's GPU, and
    an H100's cell (SM90), a CPU engine or another graph has none."""
    from cases.verdict import cell_context

    chain = {"graph": "dq_cast_after_reshape_slice", "weights": "none"}
    orin, thor, h100 = ({"compute_capability": cc} for cc in ("8.7", "11.0", "9.0"))
    found = {name: CASE.expectation_for("tensorrt", "10.16.2.10", chain, cell_context(detail, {}))
             for name, detail in (("orin", orin), ("thor", thor), ("h100", h100))}
    assert (found["orin"].outcome, found["orin"].stage, found["orin"].signature) == \
        ("fail", "build", "myelin_dequantize_output_type")
    assert found["thor"].outcome == "pass" and found["h100"] is None
    assert CASE.expectation_for("tensorrt", "10.16.1.11", {"graph": "conv", "weights": "per_tensor"},
                                cell_context(orin, {})) is None
    assert CASE.expectation_for("tensorrt", "8.6.0", chain, cell_context(orin, {})) is None
    assert {e.engine for e in CASE.expectations} == {"tensorrt"}
