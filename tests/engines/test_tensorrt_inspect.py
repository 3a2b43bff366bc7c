"""Reading TensorRT's reports without TensorRT, on real TensorRT 8.5.3.1 output from an H200.

Which layer computed a node, and in what precision, is engines/tensorrt/layers.py's (test_tensorrt_layers.py and, for
the 10.x/11.x inspector layouts, test_tensorrt_versions.py)."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from engines.tensorrt.inspect import (
    log_text,
    lookup_flag,
    network_dtypes,
    numpy_dtype_name,
    tactic_sources_mask,
    version_matches,
)

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "trt" / "inspector-8.5.3.1-h200.json"
LAYERS_KEY = "network_layers (name, type, output dtype) before build"


@pytest.fixture(scope="module")
def sample() -> dict:
    return json.loads(SAMPLE.read_text())["models"]


def test_network_dtypes_show_the_quantize_output_as_float(sample):
    dtypes = network_dtypes(sample["conv_dense.onnx"][LAYERS_KEY])
    assert dtypes["node_of_xq"] == "FLOAT"  # rows without a tensor name are keyed by layer
    assert network_dtypes([["node_of_xq", "QUANTIZE", "INT8", "xq"]]) == {"xq": "INT8"}


def test_lookup_flag_by_name_on_fake_enums():
    parser_flag_86 = enum.IntEnum("OnnxParserFlag", "NATIVE_INSTANCENORM", start=0)
    verbosity = enum.IntEnum("ProfilingVerbosity", "LAYER_NAMES_ONLY NONE VERBOSE", start=0)

    class PlainFlags:
        INT8 = 2

    assert lookup_flag(parser_flag_86, "NATIVE_INSTANCENORM") is parser_flag_86.NATIVE_INSTANCENORM
    assert lookup_flag(enum.IntEnum("OnnxParserFlag", "OTHER"), "NATIVE_INSTANCENORM") is None
    assert lookup_flag(None, "NATIVE_INSTANCENORM") is None
    assert lookup_flag(verbosity, "DETAILED", "VERBOSE") is verbosity.VERBOSE
    assert lookup_flag(PlainFlags, "INT8") == 2


def test_tactic_sources_leave_out_cublas_and_cudnn():
    sources_85 = enum.IntEnum("TacticSource", "CUBLAS CUBLAS_LT CUDNN EDGE_MASK_CONVOLUTIONS JIT_CONVOLUTIONS", start=0)
    assert tactic_sources_mask(SimpleNamespace(TacticSource=sources_85)) == (
        (1 << 3) | (1 << 4), ["EDGE_MASK_CONVOLUTIONS", "JIT_CONVOLUTIONS"],
    )
    older = enum.IntEnum("TacticSource", "CUBLAS CUBLAS_LT CUDNN", start=0)
    assert tactic_sources_mask(SimpleNamespace(TacticSource=older)) == (0, [])
    assert tactic_sources_mask(SimpleNamespace()) == (0, [])


def test_numpy_dtypes_are_mapped_without_np_bool():
    assert numpy_dtype_name("BOOL") == "bool"
    assert numpy_dtype_name("DataType.INT8") == "int8"
    assert numpy_dtype_name(SimpleNamespace(name="HALF")) == "float16"
    with pytest.raises(ValueError, match="FP8"):
        numpy_dtype_name("FP8")


@pytest.mark.parametrize(
    "requested, actual, same",
    [("8.6", "8.6.1.6", True), ("8.6.0", "8.6.0", True), ("8.5", "8.6.0", False), ("8.6", "8.60.1", False),
     ("10.0", "10.0.1.6", True), ("", "8.6.0", False)],
)
def test_version_matching(requested, actual, same):
    assert version_matches(requested, actual) is same


def test_log_text_keeps_warnings_and_worse():
    messages = [{"severity": s, "msg": s.lower()} for s in ("INFO", "WARNING", "VERBOSE", "ERROR", "INTERNAL_ERROR")]
    assert log_text(messages) == "[WARNING] warning\n[ERROR] error\n[INTERNAL_ERROR] internal_error"
