"""A failure's node and reason, found once where the cell is made, from the parser's fields or the engine's words."""

from __future__ import annotations

from engines.reasons import error_line, failing_node, failure_evidence, reason_line

INVALID_NODE = ("ONNX parse failed: Invalid Node - b_dw_DequantizeLinear\n"
                "b_dw_DequantizeLinear: only activation types allowed as input to this layer.")
SUFFIX = ("ONNX parse failed: Non-zero zero point is not supported [node node_of_x_q (DynamicQuantizeLinear), "
          "checkDynamicQuantizeLinear]")
RTX = {"desc": "Invalid Node - b0_DequantizeLinear\nITensor::getDimensions: Error Code 4: API Usage Error "
               "(b0_DequantizeLinear: input has type Int32 but must have type FP8, FP4, Int4, Int8, or UInt8. In "
               "checkType at /_src/optimizer/common/nodeBase.cpp:456)\n[checkMacros.cpp::catchCudaError::250] "
               "Error Code 1: Cuda Runtime (CUDA driver version is insufficient for CUDA runtime version)",
       "node_name": "b0_DequantizeLinear", "node_operator": "DequantizeLinear", "code": "ErrorCode.INVALID_NODE"}
WHY = "input has type Int32 but must have type FP8, FP4, Int4, Int8, or UInt8"


def test_the_failing_node_is_the_one_the_parser_error_names():
    assert failing_node(INVALID_NODE) == "b_dw_DequantizeLinear"
    assert failing_node(SUFFIX) == "node_of_x_q"
    assert failing_node('ONNX parse failed: Assertion failed: creator && "Plugin not found"') == ""
    assert failing_node("Error Code 10: Internal Error (Could not find any implementation for node {ForeignNode[a]})") \
        == ""


def test_the_parsers_node_field_names_the_node_where_the_text_does_not():
    assert failure_evidence("ONNX parse failed: Invalid Node - b0_DequantizeLinear", [RTX]) == \
        ("b0_DequantizeLinear", WHY)
    assert failure_evidence("ONNX parse failed: no parser error given") == ("", "no parser error given")


def test_the_reason_line_comes_from_the_parsers_fields_and_skips_where_and_the_machines_noise():
    assert reason_line("ONNX parse failed: Invalid Node - b0_DequantizeLinear", "", [RTX]) == WHY
    assert reason_line("ONNX parse failed: " + RTX["desc"], "b0_DequantizeLinear") == WHY, "the text, where no fields"
    assert reason_line(INVALID_NODE, "b_dw_DequantizeLinear") == "only activation types allowed as input to this layer"
    assert reason_line(SUFFIX, "node_of_x_q") == "Non-zero zero point is not supported"
    openvino = ("Exception from src/inference/src/cpp/core.cpp:117:\n"
                "Exception from src/core/src/pass/graph_rewrite.cpp:298:"
                "\n[MultiplyPartialTransformation] END: node: opset1::Multiply p2o.Mul.0 CALLBACK HAS THROWN: Check "
                "'index < m_inputs.size()' failed at src/core/src/node.cpp:304:\nindex '0' out of range")
    assert reason_line(openvino).startswith("[MultiplyPartialTransformation] END"), "OpenVINO's source trail says where"


def test_a_tensorrt_error_code_line_gives_its_parenthesised_reason_first_sentence_only():
    built = ("build_serialized_network returned None: IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error "
             "(Quantized constant (w_q) is only allowed before DQ or PLUGIN_V2 or kPLUGIN_V3 node. If this constant is "
             "not intended as a quantized floating-point value, consider using other data types. In "
             "matchQuantizedConstantPluginOrDQ at /_src/optimizer/common/rewrite/qdqGraphOptimizer.cpp:4327)")
    assert reason_line(built) == "Quantized constant (w_q) is only allowed before DQ or PLUGIN_V2 or kPLUGIN_V3 node"
    assert reason_line("build_serialized_network returned None: Error Code 10: Internal Error (Could not find any "
                       "implementation for node {ForeignNode[a]}.)") == \
        "Could not find any implementation for node {ForeignNode[a]}"


def test_the_error_line_masks_the_engines_source_lines_and_addresses_only():
    a = error_line("Error Code 1: Myelin ([pass.cpp:1357: run] CHECK failed at 0x7f3a12) in conv 3x3\nsecond line")
    b = error_line("Error Code 1: Myelin ([pass.cpp:1348: run] CHECK failed at 0x55aa01) in conv 3x3")
    assert a == b == "Error Code 1: Myelin ([pass.cpp: run] CHECK failed at 0x) in conv 3x3"
    assert error_line("shape 3 vs 4") != error_line("shape 3 vs 5") and error_line("") == ""
