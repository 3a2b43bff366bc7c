"""A failure's node and reason, found once where the cell is made, from the parser's fields or the engine's words."""

from __future__ import annotations

import pytest

from engines.reasons import error_line, failing_node, failure_evidence, newer_model, reason_line

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


# Real errors of this repository's cells (OpenVINO 2024.6.0 and 2026.4.1, ONNX Runtime 1.16.3 and 1.31.1, CPU):
# the reason is the first line that says why, never a source location, and OpenVINO's names the operation.
OPENVINO_2024 = (
    "Exception from src/inference/src/cpp/core.cpp:90:\n"
    "Check 'false' failed at src/frontends/onnx/frontend/src/frontend.cpp:161:\n"
    "FrontEnd API failed with GeneralFailure:\nErrors during ONNX translation:\n"
    "While validating ONNX node '<Node(Conv): node_of_y>': Check 'data.get_partial_shape().rank().is_static()' failed "
    "at src/frontends/onnx/frontend/src/op/conv.cpp:38:\nFrontEnd API failed with GeneralFailure:\n"
    "The input data tensor's rank has to be known (static)\n"
    "While validating ONNX node '<Node(DequantizeLinear): node_of_x_dq>': Check 'data_type_ok' failed at "
    "src/frontends/onnx/frontend/src/utils/common.cpp:120:\nFrontEnd API failed with GeneralFailure:\n"
    "Incorrect data type of the Dequantization scale input: f16")
OPENVINO_UNCONVERTED = (  # the committed ModelOpt INT4 cell (reports/observed/no-gpu/modelopt)
    "Exception from src/inference/src/cpp/core.cpp:84:\n"
    "Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:\n"
    "FrontEnd API failed with OpConversionFailure:\nModel wasn't fully converted. Failed operations detailed log:\n"
    "-- DequantizeLinear-21 with a message:\n"
    "While validating ONNX node '<Node(DequantizeLinear): w_q_DequantizeLinear_Output>': Check "
    "'src_x.get_shape()[axis] % block_size == 0' failed at "
    "src/frontends/onnx/frontend/src/op/dequantize_linear.cpp:280:\nFrontEnd API failed with GeneralFailure:\n"
    "DequantizeLinear doesn't support case when dimension of X at axis 0 "
    "(32) cannot be divided by block_size (128)\n\nSummary:\n-- Conversion is failed for: DequantizeLinear-21")
OPENVINO_FP4 = (
    "Exception from src/inference/src/cpp/core.cpp:84:\n"
    "Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:\n"
    "FrontEnd API failed with OpConversionFailure:\nModel wasn't fully converted. Failed operations detailed log:\n"
    "-- Conv-23 with a message:\nWhile validating ONNX node '<Node(Conv): y>': Check "
    "'data.get_partial_shape().rank().is_static()' failed at src/frontends/onnx/frontend/src/op/conv.cpp:38:\n"
    "FrontEnd API failed with GeneralFailure:\nThe input data tensor's rank has to be known (static)\n\n"
    "Summary:\n-- Conversion is failed for: Conv-23, QuantizeLinear-23")
OPENVINO_NO_RULE = (
    "Exception from src/inference/src/cpp/core.cpp:132:\nException from src/inference/src/dev/plugin.cpp:59:\n"
    "Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:\n"
    "FrontEnd API failed with OpConversionFailure:\nModel wasn't fully converted.\nSummary:\n"
    "-- No conversion rule found for operations: my.domain.FancyOp\n\n\n")
OPENVINO_QOPERATOR = (  # a QOperator model (QLinearConv, com.microsoft QLinearAdd) compiled for the CPU
    "Exception from src/inference/src/cpp/core.cpp:132:\nException from src/inference/src/dev/plugin.cpp:59:\n"
    "Check '!implementations.empty()' failed at src/plugins/intel_cpu/src/nodes/executors/executor_factory.hpp:117:\n"
    "No suitable implementations.This may indicate that the provided memory descriptors are not compatible with any "
    "implementation.\n\n\n")


@pytest.mark.parametrize("error, node, says", [
    (OPENVINO_2024, "node_of_y", "Conv: The input data tensor's rank has to be known (static)"),
    (OPENVINO_UNCONVERTED, "w_q_DequantizeLinear_Output",
     "DequantizeLinear doesn't support case when dimension of X at axis 0 (32) cannot be divided by block_size (128)"),
    (OPENVINO_FP4, "y", "Conv-23: The input data tensor's rank has to be known (static)"),
    (OPENVINO_NO_RULE, "", "No conversion rule found for operations: my.domain.FancyOp"),
    (OPENVINO_QOPERATOR, "", "No suitable implementations"),
], ids=["2024.6-fp16-scales", "2026.4-unconverted-int4", "2026.4-unconverted-fp4", "no-conversion-rule", "qoperator"])
def test_openvinos_reason_is_what_it_could_not_convert_never_a_source_location(error, node, says):
    assert failure_evidence(error) == (node, says)
    assert "failed at src/" not in says and not says.startswith("Exception from")


@pytest.mark.parametrize("error, node, says", [
    ("[ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model. Type Error: Type 'tensor(float8e4m3fn)' of "
     "input parameter (a1_q) of operator (QLinearConv) in node (node_of_c1) is invalid.", "node_of_c1",
     "Type Error: Type 'tensor(float8e4m3fn)' of input parameter (a1_q) of operator (QLinearConv) in node (node_of_c1) "
     "is invalid"),
    ("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for ConvInteger(10) node with name "
     "'node_of_y'", "node_of_y", "Could not find an implementation for ConvInteger(10) node with name 'node_of_y'"),
    ("[ONNXRuntimeError] : 1 : FAIL : Load model from .bundles/fp4_weight_only/op=conv+weights=blocked+activations="
     "w4a16/model.onnx failed:/onnxruntime_src/onnxruntime/core/graph/model.cc:149 onnxruntime::Model::Model(onnx::"
     "ModelProto&&, const PathString&, const IOnnxRuntimeOpSchemaRegistryList*, const onnxruntime::logging::Logger&, "
     "const onnxruntime::ModelOptions&) Unsupported model IR version: 11, max supported IR version: 9\n", "",
     "Unsupported model IR version: 11, max supported IR version: 9"),
    ("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running QuantizeLinear node. Name:"
     "'node_of_x_q' Status Message: /onnxruntime_src/include/onnxruntime/core/framework/tensor.h:230 const T* "
     "onnxruntime::Tensor::Data() const [with T = onnxruntime::MLFloat16] utils::IsPrimitiveDataType<T>(dtype_) was "
     "false. Tensor type mismatch. T !=N11onnxruntime17PrimitiveDataTypeIfEE\n", "node_of_x_q", "Tensor type mismatch"),
    ("[ONNXRuntimeError] : 1 : FAIL : Load model from /tmp/custom.onnx failed:Fatal error: my.domain:FancyOp(-1) is "
     "not a registered function/op", "", "my.domain:FancyOp(-1) is not a registered function/op"),
], ids=["invalid-graph", "not-implemented", "ir-version", "run-status", "fatal"])
def test_onnx_runtimes_reason_is_its_message_without_code_path_or_condition(error, node, says):
    assert failure_evidence(error) == (node, says)


def test_an_op_checkers_bare_false_names_the_op_and_its_checker():
    """TensorRT-RTX 1.7.1.116 on quantize_dynamic's output (reports/observed/nvidia-h100/rtx-1.7.1.116.jsonl)."""
    error = ("ONNX parse failed: false [node x_QuantizeLinear (DynamicQuantizeLinear), checkDynamicQuantizeLinear]; "
             "false [node node_of_y_quant (ConvInteger), checkConvInteger]")
    says = "DynamicQuantizeLinear: false [checkDynamicQuantizeLinear]"
    assert failure_evidence(error) == ("x_QuantizeLinear", says)
    fields = {"desc": "false", "func": "checkDynamicQuantizeLinear", "node_name": "x_QuantizeLinear",
              "node_operator": "DynamicQuantizeLinear"}
    assert failure_evidence("ONNX parse failed: false", [fields]) == ("x_QuantizeLinear", says)


# Real errors whose cause comes after a header (OpenVINO 2026.4.1 and ONNX Runtime 1.32.0, CPU): a category
# ("Loading input model"), the CPU plugin's node line ("Node y of type ROIAlign"), a source location and the function
# there, or an exception that carries another.
OPENVINO_LOADING = ("Exception from src/inference/src/cpp/core.cpp:84:\nCheck 'false' failed at "
                    "src/frontends/common/src/frontend.cpp:47:\nLoading input model\nUnsupported type")
OPENVINO_CPU_NODE = ("Exception from src/inference/src/cpp/infer_request.cpp:224:\n"
                     "Exception from src/plugins/intel_cpu/src/graph.cpp:1628:\nNode y of type ROIAlign\n"
                     "Check 'static_cast<size_t>(roiBatchInd) < inputDimVector[0]' failed at "
                     "src/plugins/intel_cpu/src/nodes/roi_align.cpp:1005:\n"
                     "ROIAlign node with name 'y' Demanded batch (id = 5) doesn't exist\n\n\n")
ORT_NESTED = ("[ONNXRuntimeError] : 1 : FAIL : Exception during initialization: "
              "/onnxruntime_src/onnxruntime/core/optimizer/initializer.cc:51 onnxruntime::Initializer::Initializer("
              "const onnx::TensorProto&, const std::filesystem::__cxx11::path&) [ONNXRuntimeError] : 1 : FAIL : "
              "tensorprotoutils.cc:1730 ValidateEmbeddedTensorProtoDataSizeAndShape Initializer 'w': raw_data size "
              "(0 bytes) does not match expected size from shape and data type (16 bytes)\n")


def test_the_reason_is_the_cause_not_the_header_before_it():
    assert failure_evidence(OPENVINO_LOADING) == ("", "Unsupported type")
    assert failure_evidence(OPENVINO_CPU_NODE) == ("y", "ROIAlign: Demanded batch (id = 5) doesn't exist")
    assert failure_evidence(ORT_NESTED)[1] == ("Initializer 'w': raw_data size (0 bytes) does not match expected "
                                               "size from shape and data type (16 bytes)")


# ONNX Runtime 1.16.3's refusals of a model newer than it reads, as it says them (its opset text: a model of opset 25).
ORT_LOAD = ("[ONNXRuntimeError] : 1 : FAIL : Load model from m.onnx failed:/onnxruntime_src/onnxruntime/core/graph/"
            "model.cc:149 onnxruntime::Model::Model(onnx::ModelProto&&, const PathString&, const "
            "IOnnxRuntimeOpSchemaRegistryList*, const onnxruntime::logging::Logger&, "
            "const onnxruntime::ModelOptions&) ")


@pytest.mark.parametrize("said,why", [
    ("Unsupported model IR version: 10, max supported IR version: 9\n",
     "the model's ONNX IR version 10 is newer than this version reads (IR 9 at most)"),
    ("ONNX Runtime only *guarantees* support for models stamped with official released onnx opset versions. Opset 25 "
     "is under development and support for this is limited. The operator schemas and or other functionality may "
     "change before next ONNX release and in this case ONNX Runtime will not guarantee backward compatibility. "
     "Current official support for domain ai.onnx is till opset 19.",
     "the model's opset 25 is newer than this version reads (opset 19 at most)"),
])
def test_a_model_newer_than_onnx_runtime_reads_says_which_version_and_the_most_it_reads(said, why):
    assert newer_model(ORT_LOAD + said) == why


@pytest.mark.parametrize("error", [
    ORT_LOAD + "No opset import for domain 'com.example'",
    "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Failed to find kernel for DequantizeLinear(23) (node:'w_dq' "
    "ep:'CPUExecutionProvider'). Encountered following errors: ( Version mismatch. node_version: 23 kernel start "
    "version: 21 kernel_end_version: 21)",
])
def test_any_other_load_failure_is_no_newer_model(error):
    assert newer_model(error) == ""


# OpenVINO 2026.4.1's CPU plugin on two PaddleOCR models quantized by quantize_static with its defaults (a user trial).
OV_CALLBACK = ("Exception from src/inference/src/cpp/core.cpp:117:\n"
               "Exception from src/inference/src/dev/plugin.cpp:54:\n"
               "Exception from src/core/src/pass/graph_rewrite.cpp:298:\n"
               "[{t}] END: node: {op} {name} (opset1::Multiply a_DequantizeLinear[0]:f32[1,2,1,1], "
               "opset1::Multiply b_DequantizeLinear[0]:f32[1,2,1,1]) -> "
               "(f32[1,2,1,1]) CALLBACK HAS THROWN: Check 'index < m_inputs.size()' failed at "
               "src/core/src/node.cpp:304:\nindex '0' out of range")


@pytest.mark.parametrize("transformation, op, name", [("AddTransformation", "opset1::Add", "Add@1"),
                                                      ("MultiplyPartialTransformation", "opset1::Multiply",
                                                       "p2o.Mul.0")])
def test_an_openvino_transformation_that_threw_says_its_check_and_message_on_the_whole_node_name(transformation, op,
                                                                                                  name):
    """The reason was cut at the dot of the node's name ("... opset1::Multiply p2o") or ended at the check's source
    line, without the message after it ("index '0' out of range")."""
    error = OV_CALLBACK.format(t=transformation, op=op, name=name)
    assert reason_line(error) == (f"{transformation} on {op} {name}: Check 'index < m_inputs.size()' failed: "
                                  "index '0' out of range")
