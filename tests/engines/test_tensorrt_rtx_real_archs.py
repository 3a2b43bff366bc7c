"""Seeds 024-025 on the TensorRT-RTX of the test environment, with no GPU: real parses and ahead-of-time builds.

Seed 025's refusal comes with its cause in the cell: the parser reshapes a 0-d Q/DQ input to [1] (an INT8
ONNXTRT_reshapeTensor_output in the network definition), so the builder finds the INT8 constant before a Shuffle, not
a DequantizeLinear. Seed 024: TensorRT-RTX 1.7 builds quantize_static's SiLU that TensorRT 8.6.0 refuses.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.engines.rtx_cells import rtx_cell

RESHAPE = "ONNXTRT_reshapeTensor_output"  # the parser's Shuffle output (onnx-tensorrt's reshapeTensor)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    if os.environ.get("QDQ_REQUIRE_RTX") == "1":
        import tensorrt_rtx  # noqa: F401
    else:
        pytest.importorskip("tensorrt_rtx")
    return tmp_path_factory.mktemp("rtx-archs")


def test_a_0d_int8_constant_is_refused_and_the_same_value_shaped_1_is_not(root):
    scalar = rtx_cell(root, "scalar_quantized_constant", {"constant": "scalar", "op": "mul"})
    shaped = rtx_cell(root, "scalar_quantized_constant", {"constant": "one_element", "op": "mul"})
    assert scalar.status == "fail"
    if scalar.engine_version.startswith(("1.4.", "1.5.", "1.6.")):  # the parser refuses the 0-d DequantizeLinear
        assert scalar.signature == "rtx_scalar_dq_axis" and scalar.last_stage == "", scalar.error
    else:  # 1.7 on: the parser reshapes it, the builder refuses the constant before the Shuffle
        assert scalar.signature == "rtx_quantized_constant" and scalar.last_stage == "load", scalar.error
        assert scalar.network_dtypes.get(RESHAPE) == "INT8", scalar.network_dtypes
        if scalar.engine_version == "1.7.1.116":
            assert scalar.verdict == "as observed before"  # the observed producer transformer's refusal: a baseline
    if not scalar.engine_version.startswith("1.4."):  # 1.4 needs a GPU to build: not run here
        assert shaped.status == "built", shaped.error
    assert RESHAPE not in shaped.network_dtypes


def test_quantize_statics_silu_builds_with_the_conv_int8_for_sm86_and_float_for_sm75(root):
    form = {"form": "quantize_static"}
    sm86 = rtx_cell(root, "silu_qdq", form, target="SM86")
    if sm86.engine_version.startswith(("1.4.", "1.5.", "1.6.")):
        assert sm86.signature == "rtx_conv_dtype_check", sm86.error  # every INT8 convolution, seed 013's check
        return
    sm75 = rtx_cell(root, "silu_qdq", form, target="SM75")
    assert sm86.status == sm75.status == "built", (sm86.error, sm75.error)
    assert sm86.precision["node_of_conv"]["precision"] == "int8" and sm75.precision["node_of_conv"]["precision"] == \
        "float"
    assert sm86.verdict == "undocumented"  # no source speaks for TensorRT-RTX here


def test_the_implicit_form_is_not_applicable_to_tensorrt_rtx(root):
    cell = rtx_cell(root, "silu_qdq", {"form": "implicit"})
    assert cell.status == "not_applicable" and cell.verdict == "not applicable"
