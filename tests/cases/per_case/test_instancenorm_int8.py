"""Seed 001 `instancenorm_int8`: InstanceNormalization and INT64 weights in an INT8 build (#3659, #3603)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from cases.instancenorm_int8 import CASE
from generators import write


@pytest.mark.parametrize("native, flags", [(False, ["-NATIVE_INSTANCENORM"]), (True, ["NATIVE_INSTANCENORM"])])
def test_instancenorm_has_out_of_int32_weight_and_no_scales(native, flags):
    rep = write.build(CASE, {"native_instancenorm": native, "int8_ranges": "none"})
    inits = rep.model.graph.initializer
    int64 = [onnx.numpy_helper.to_array(t) for t in inits if t.data_type == onnx.TensorProto.INT64]
    assert any(np.any(np.abs(a) > np.iinfo(np.int32).max) for a in int64)
    ops = [n.op_type for n in rep.model.graph.node]
    assert ops == ["Conv", "InstanceNormalization", "Slice"]
    assert rep.trt["parser_flags"] == flags and rep.trt["int8"] is True
    assert ("needs_cudnn" in rep.trt) is not native and "int8_ranges" not in rep.trt


def test_instancenorm_trtexec_variant_asks_for_dummy_ranges():
    rep = write.build(CASE, {"native_instancenorm": True, "int8_ranges": "trtexec"})
    assert rep.trt["int8_ranges"] == "trtexec"


@pytest.mark.parametrize(
    "name, text",
    [
        ("missing_scale", "Missing scale and zero-point for tensor (Unnamed Layer* 321) "
         "[Shuffle]_output, expect fall back to non-int8 implementation"),
    ],
)
def test_signatures_match_the_upstream_text(name, text):
    assert CASE.signature(name).search(text)
