"""Reading TensorRT's reports without TensorRT, on real TensorRT 8.5.3.1 output from an H200."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from engines.tensorrt.inspect import (
    layer_precision,
    log_text,
    lookup_flag,
    network_dtypes,
    numpy_dtype_name,
    tactic_sources_mask,
    version_matches,
)

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "trt" / "inspector-8.5.3.1-h200.json"
LAYERS_KEY = "network_layers (name, type, output dtype) before build"
INSPECTOR_KEY = "engine inspector JSON (get_engine_information, DETAILED)"


@pytest.fixture(scope="module")
def sample() -> dict:
    return json.loads(SAMPLE.read_text())["models"]


def _layer(name: str, kind: str, fmt_in: str, fmt_out: str, **extra) -> dict:
    return {
        "Name": name, "LayerType": kind,
        "Inputs": [{"Name": "a", "Format/Datatype": fmt_in}],
        "Outputs": [{"Name": "b", "Format/Datatype": fmt_out}],
        **extra,
    }


def test_dense_conv_ran_in_int8(sample):
    found = layer_precision(sample["conv_dense.onnx"][INSPECTOR_KEY], ["node_of_c"])["node_of_c"]
    assert found["precision"] == "int8"
    assert found["evidence"].startswith("layer 'wq + node_of_c' CaskConvolution: weights Int8, input Int8")
    assert "Thirty-two wide channel vectorized row major Int8 format" in found["evidence"]
    assert "_i8i8_" in found["evidence"]  # the tactic name


def test_depthwise_conv_ran_in_int8_without_a_tactic_name(sample):
    found = layer_precision(sample["conv_group_cpg1.onnx"][INSPECTOR_KEY], ["node_of_c"])["node_of_c"]
    assert found["precision"] == "int8"
    assert "CudaDepthwiseConvolution: weights Int8, input Int8" in found["evidence"]
    assert "tactic 0xfffffffffffffffc" in found["evidence"]


def test_quantize_reformat_reads_as_int8_and_fused_dequantize_as_unknown(sample):
    found = layer_precision(sample["conv_dense.onnx"][INSPECTOR_KEY], ["node_of_xq", "node_of_wd"])
    assert found["node_of_xq"]["precision"] == "int8"
    assert "input FP32 (Row major linear FP32), output Int8" in found["node_of_xq"]["evidence"]
    assert found["node_of_wd"] == {
        "precision": "unknown", "evidence": "no engine layer names node_of_wd (fused away or removed)",
    }


def test_float_layer_reads_as_float_from_a_json_string():
    inspector = json.dumps({"Layers": [_layer("node_of_c", "CaskConvolution", "Row major linear FP32",
                                              "Row major linear FP32", Weights={"Type": "Float", "Count": 9})]})
    found = layer_precision(inspector, ["node_of_c"])["node_of_c"]
    assert found["precision"] == "float"
    assert "weights Float, input FP32" in found["evidence"]


def test_node_name_matches_whole_names_only():
    layers = {"Layers": [_layer("node_of_cq", "Reformat", "Row major linear FP32", "Row major linear Int8")]}
    assert layer_precision(layers, ["node_of_c"])["node_of_c"]["precision"] == "unknown"


def test_inserted_reformat_copy_does_not_speak_for_the_node():
    layers = {"Layers": [
        _layer("Reformatting CopyNode for Input Tensor 0 to node_of_c", "Reformat", "Row major linear FP32",
               "Thirty-two wide channel vectorized row major Int8 format"),
        _layer("node_of_c", "CaskConvolution", "Row major linear FP32", "Row major linear FP32"),
    ]}
    assert layer_precision(layers, ["node_of_c"])["node_of_c"]["precision"] == "float"


def test_metadata_names_the_onnx_node():
    layer = _layer("myl0_1", "Myelin", "Row major linear Int8", "Row major linear Int8",
                   Metadata="[ONNX Layer: node_of_c]")
    assert layer_precision({"Layers": [layer]}, ["node_of_c"])["node_of_c"]["precision"] == "int8"


def test_names_only_inspector_says_it_cannot_tell():
    found = layer_precision({"Layers": ["wq + node_of_c", "node_of_y"]}, ["node_of_c"])["node_of_c"]
    assert found["precision"] == "unknown"
    assert "not DETAILED" in found["evidence"]


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
