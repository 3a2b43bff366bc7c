"""rustnn/rustnn#153 against TensorRT-RTX's ONNX parser: a uint8 DequantizeLinear is read as INT8, not refused.

#153: TensorRT-RTX's network API refuses a Dequantize layer whose input is UInt8 ("input has type UInt8 but must have
type FP8, FP4, Int4, or Int8"). The catalogue's uint8 reproducers (zero point 128) never reach that check through the
ONNX parser: its zero-point assertion refuses them first. A uint8 Q/DQ with zero point 0 goes further: the parser
reads it as INT8 and the Conv builds in INT8, so the refusal is the layer API's (rustnn builds layers), not the
parser's.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cases import get_case


def _uint8_zero_point_model(zero_point: int) -> onnx.ModelProto:
    """x -> Q/DQ (uint8, zero point `zero_point`) -> 3x3 Conv with INT8 weights -> y."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(np.float32(1 / 16), "xs"), numpy_helper.from_array(np.uint8(zero_point), "xz"),
             numpy_helper.from_array(rng.integers(-8, 9, (8, 8, 3, 3)).astype(np.int8), "w"),
             numpy_helper.from_array(np.float32(1 / 32), "ws"), numpy_helper.from_array(np.int8(0), "wz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="xq"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="xdq"),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="wdq"),
             helper.make_node("Conv", ["xd", "wd"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "uint8_conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _rtx_cell(tmp_path, zero_point: int):
    if os.environ.get("QDQ_REQUIRE_RTX") == "1":
        import tensorrt_rtx  # noqa: F401
    else:
        pytest.importorskip("tensorrt_rtx")
    from check.bundle import bundle_from_model
    from engines.cells import run_cell
    from engines.tensorrt import RtxAdapter

    path = tmp_path / f"uint8_zp{zero_point}.onnx"
    onnx.save(_uint8_zero_point_model(zero_point), str(path))
    bundle = bundle_from_model(path, tmp_path / "bundles")
    adapter = RtxAdapter(python=sys.executable)
    try:
        info = adapter.probe()
        if info.version.startswith(("1.4.", "1.5.", "1.6.")):
            pytest.skip("TensorRT-RTX 1.4-1.6 refuse every INT8 convolution (rtx_conv_dtype_check)")
        return run_cell(get_case("user_model"), bundle, adapter, info, {"source": "local"})
    finally:
        adapter.close()


def test_a_uint8_dequantize_with_zero_point_0_is_read_as_int8_and_builds(tmp_path):
    cell = _rtx_cell(tmp_path, 0)
    assert cell.status == "built", cell.error
    assert "must have type FP8, FP4, Int4, or Int8" not in cell.error + cell.log
    assert cell.precision["conv"]["precision"] == "int8" and cell.precision["conv"]["inputs"] == ["int8"]


def test_a_uint8_zero_point_of_128_stops_at_the_parsers_zero_point_assertion_first(tmp_path):
    cell = _rtx_cell(tmp_path, 128)
    assert cell.status == "fail" and "Non-zero zero point is not supported" in cell.error
    assert "must have type FP8, FP4, Int4, or Int8" not in cell.error
