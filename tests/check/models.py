"""Models built in the tests from seeds: hand-made QDQ graphs, float networks (a YOLO-style CSP block, a deep
convnet) for ONNX Runtime's quantizer, a 900-node quantized stack, and integer weights widened without a DQ."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def qdq_conv(path: Path, dynamic_batch: bool = False, unnamed: bool = True) -> Path:
    """x -> Q -> DQ -> Conv(DQ weights) -> Q -> DQ -> y, opset 13; nodes unnamed unless asked."""
    rng = np.random.default_rng(0)
    # |w| <= 63: no u8*s8 pair sum saturates on x86-64 CPUs without VNNI (ORT's reduce_range)
    w = rng.integers(-63, 64, size=(4, 3, 3, 3)).astype(np.int8)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s_x"),
        numpy_helper.from_array(np.array(0, np.int8), "z"),
        numpy_helper.from_array(w, "w_q"),
        numpy_helper.from_array(np.array(0.01, np.float32), "s_w"),
        numpy_helper.from_array(np.array(0.05, np.float32), "s_y"),
    ]
    names = iter(["q_x", "dq_x", "dq_w", "conv", "q_y", "dq_y"]) if not unnamed else iter([""] * 6)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_x", "z"], ["x_q"], name=next(names)),
        helper.make_node("DequantizeLinear", ["x_q", "s_x", "z"], ["x_dq"], name=next(names)),
        helper.make_node("DequantizeLinear", ["w_q", "s_w", "z"], ["w_dq"], name=next(names)),
        helper.make_node("Conv", ["x_dq", "w_dq"], ["c"], name=next(names), kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "s_y", "z"], ["c_q"], name=next(names)),
        helper.make_node("DequantizeLinear", ["c_q", "s_y", "z"], ["y"], name=next(names)),
    ]
    batch = "N" if dynamic_batch else 1
    graph = helper.make_graph(
        nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8, 8])], initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def float_convnet(path: Path, blocks: int = 2, channels: int = 8, seed: int = 0) -> Path:
    """A float model of `blocks` Conv -> Relu pairs and a final Add, for a quantizer to quantize."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i in range(blocks):
        cin = 3 if i == 0 else channels
        inits.append(numpy_helper.from_array((rng.standard_normal((channels, cin, 3, 3)) * 0.2).astype(np.float32),
                                             f"w{i}"))
        inits.append(numpy_helper.from_array((rng.standard_normal(channels) * 0.1).astype(np.float32), f"b{i}"))
        nodes.append(helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        prev = f"r{i}"
    nodes.append(helper.make_node("Add", [prev, prev], ["y"], name="add_out"))
    graph = helper.make_graph(
        nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, 16, 16])], initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def quantize_static(float_model: Path, out: Path, per_channel: bool = False, samples: int = 4,
                    reduce_range: bool = True, quantize_bias: bool = True, symmetric: bool = False,
                    calibration_range: float = 1.0) -> Path:
    """Quantize with onnxruntime.quantization.quantize_static in QDQ format, int8 activations and weights, calibrated
    on `samples` inputs uniform in [-calibration_range, calibration_range) (check's own inputs are in [-1, 1)).

    reduce_range (7-bit weights, ORT's advice for CPUs without VNNI) keeps u8*s8 pair sums from saturating,
    so every x86-64 CPU computes what the reference does; without it, AVX2 and AVX-512 CPUs are steps off.
    """
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType
    from onnxruntime.quantization import quantize_static as ort_quantize_static

    model = onnx.load(str(float_model))
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    name = model.graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(1)
            self.data: List[dict] = [{name: rng.uniform(-calibration_range, calibration_range, shape).astype(
                np.float32)} for _ in range(samples)]

        def get_next(self) -> Optional[dict]:
            return self.data.pop() if self.data else None

    ort_quantize_static(str(float_model), str(out), Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=per_channel,
                        reduce_range=reduce_range,
                        extra_options={"QuantizeBias": quantize_bias, "ActivationSymmetric": symmetric})
    return out


def bert_embedding(path: Path, vocab: int = 100, hidden: int = 16, out: int = 8, seed: int = 0,
                   sequence: str = "seq") -> Path:
    """BERT-style inputs into a Q/DQ MatMul: input_ids index an INT8 word table (through its DequantizeLinear),
    token_type_ids a 2-row table (through a Cast), attention_mask multiplies; batch and sequence are dynamic."""
    rng = np.random.default_rng(seed)
    words = rng.integers(-63, 64, size=(vocab, hidden)).astype(np.int8)
    w = rng.integers(-63, 64, size=(hidden, out)).astype(np.int8)
    inits = [
        numpy_helper.from_array(words, "word_q"), numpy_helper.from_array(np.array(0.01, np.float32), "s_word"),
        numpy_helper.from_array((rng.standard_normal((2, hidden)) * 0.1).astype(np.float32), "type_table"),
        numpy_helper.from_array(np.array(0, np.int8), "z"), numpy_helper.from_array(np.array([-1], np.int64), "last"),
        numpy_helper.from_array(np.array(0.02, np.float32), "s_x"), numpy_helper.from_array(w, "w_q"),
        numpy_helper.from_array(np.array(0.01, np.float32), "s_w"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["word_q", "s_word", "z"], ["word_table"], name="dq_words"),
        helper.make_node("Gather", ["word_table", "input_ids"], ["word_emb"], name="word_embedding"),
        helper.make_node("Cast", ["token_type_ids"], ["types32"], name="cast_types", to=TensorProto.INT32),
        helper.make_node("Gather", ["type_table", "types32"], ["type_emb"], name="type_embedding"),
        helper.make_node("Add", ["word_emb", "type_emb"], ["emb"], name="add_emb"),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], name="cast_mask", to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "last"], ["mask_3d"], name="unsqueeze_mask"),
        helper.make_node("Mul", ["emb", "mask_3d"], ["masked"], name="apply_mask"),
        helper.make_node("QuantizeLinear", ["masked", "s_x", "z"], ["x_q"], name="q_x"),
        helper.make_node("DequantizeLinear", ["x_q", "s_x", "z"], ["x_dq"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["w_q", "s_w", "z"], ["w_dq"], name="dq_w"),
        helper.make_node("MatMul", ["x_dq", "w_dq"], ["y"], name="dense"),
    ]
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", sequence])
           for n in ("input_ids", "attention_mask", "token_type_ids")]
    graph = helper.make_graph(nodes, "bert_embedding", ids,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", sequence, out])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def yolo_csp(path: Path, seed: int = 0, width: int = 8, size: int = 32) -> Path:
    """A float YOLO-style detector block: Conv-SiLU stem and downsample, a CSP block (Split, two bottlenecks with
    residual Adds, Concat), Resize back up, Concat with the stem, a Conv head and a Sigmoid; static 1x3xSxS."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def conv_silu(x: str, cin: int, cout: int, k: int, name: str, stride: int = 1) -> str:
        w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, f"{name}_w"),
                      numpy_helper.from_array((rng.standard_normal(cout) * 0.05).astype(np.float32), f"{name}_b")])
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"], name=name,
                                      kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride, stride]))
        nodes.append(helper.make_node("Sigmoid", [f"{name}_c"], [f"{name}_s"], name=f"{name}_sig"))
        nodes.append(helper.make_node("Mul", [f"{name}_c", f"{name}_s"], [f"{name}_y"], name=f"{name}_silu"))
        return f"{name}_y"

    c = width
    stem = conv_silu("images", 3, c, 3, "stem", stride=2)
    x = conv_silu(conv_silu(stem, c, 2 * c, 3, "down", stride=2), 2 * c, 2 * c, 1, "cv1")
    inits.append(numpy_helper.from_array(np.array([c, c], np.int64), "halves"))
    nodes.append(helper.make_node("Split", [x, "halves"], ["a", "b"], name="split", axis=1))
    y, parts = "b", ["a", "b"]
    for i in range(2):
        t = conv_silu(conv_silu(y, c, c, 3, f"m{i}a"), c, c, 3, f"m{i}b")
        nodes.append(helper.make_node("Add", [y, t], [f"m{i}_add"], name=f"m{i}_add"))
        y = f"m{i}_add"
        parts.append(y)
    nodes.append(helper.make_node("Concat", parts, ["cat"], name="concat", axis=1))
    z = conv_silu("cat", 4 * c, 2 * c, 1, "cv2")
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up2"))
    nodes.append(helper.make_node("Resize", [z, "", "up2"], ["up"], name="resize", mode="nearest"))
    nodes.append(helper.make_node("Concat", ["up", stem], ["cat2"], name="concat2", axis=1))
    head = conv_silu("cat2", 3 * c, 8, 1, "head")
    nodes.append(helper.make_node("Sigmoid", [head], ["pred"], name="pred_sig"))
    graph = helper.make_graph(
        nodes, "yolo_csp", [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("pred", TensorProto.FLOAT, [1, 8, size // 2, size // 2])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def per_channel_opset12(path: Path) -> Path:
    """qdq_conv with per-channel weights (DequantizeLinear axis=0) under opset 12, as onnxruntime's quantizer writes
    an opset-11/12 model with per_channel=True: onnx.checker refuses it (axis came in opset 13)."""
    model = onnx.load(str(qdq_conv(path)))
    scales = next(i for i in model.graph.initializer if i.name == "s_w")
    scales.CopyFrom(numpy_helper.from_array(np.array([0.01, 0.02, 0.01, 0.02], np.float32), "s_w"))
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(4, np.int8), "z_w"))
    dq = next(n for n in model.graph.node if n.input and n.input[0] == "w_q")
    dq.input[2] = "z_w"
    dq.attribute.append(helper.make_attribute("axis", 0))
    model.opset_import[0].version = 12
    onnx.save(model, str(path))
    return path


def deep_convnet(path: Path, layers: int = 24, channels: int = 8, seed: int = 0) -> Path:
    """A float plain deep network: `layers` Conv -> Relu, a residual Add every other layer, static 1x3x16x16."""
    rng = np.random.default_rng(seed)
    nodes, inits, prev, skip = [], [], "x", ""
    for i in range(layers):
        cin = 3 if i == 0 else channels
        w = (rng.standard_normal((channels, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(channels) * 0.05).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}", kernel_shape=[3, 3],
                                   pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        prev = f"r{i}"
        if i % 2 == 1 and skip:
            nodes.append(helper.make_node("Add", [prev, skip], [f"s{i}"], name=f"add{i}"))
            prev = f"s{i}"
        skip = prev if i % 2 == 1 else skip or prev
    graph = helper.make_graph(
        nodes, "deep_convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, channels, 16, 16])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def quantize_for_tensorrt(float_model: Path, out: Path, samples: int = 4) -> Path:
    """onnxruntime's quantizer with TensorRT settings: QDQ, int8 symmetric activations and weights, per-channel
    weights, bias not quantized (7-bit weights, reduce_range, so that no x86-64 CPU saturates ORT's u8s8 kernels)."""
    return quantize_static(float_model, out, per_channel=True, samples=samples, quantize_bias=False, symmetric=True)


def quantize_fragile(float_model: Path, out: Path) -> Path:
    """TensorRT settings calibrated on one input twenty times wider than check's: every activation scale is twenty
    times too coarse, a deep output spans a few steps and the simulated Q/DQ model lands about 9 dB from the float
    model (check.twin). The fragile quantization of the issue's PicoDet and PP-OCR models, whose reference was 0.6-8 dB
    from the float model: integer kernels that round one step otherwise are 15 dB from the reference."""
    return quantize_static(float_model, out, per_channel=True, samples=1, quantize_bias=False, symmetric=True,
                           calibration_range=20.0)


def qdq_conv_stack(path: Path, blocks: int = 150, channels: int = 4, seed: int = 0) -> Path:
    """A long quantized model made of small blocks, six nodes each: Q -> DQ, a DQ'd int8 weight and a DQ'd INT32
    bias (onnxruntime's QuantizeBias) into a Conv, then a Relu; 150 blocks are 900 nodes."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s_x"),
             numpy_helper.from_array(np.array(0, np.int8), "z")]
    nodes, prev = [], "x"
    for i in range(blocks):
        w = rng.integers(-63, 64, size=(channels, channels, 1, 1)).astype(np.int8)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(np.array(0.01, np.float32), f"s_w{i}"),
                  numpy_helper.from_array(rng.integers(-50, 50, size=channels).astype(np.int32), f"b{i}"),
                  numpy_helper.from_array(np.array(0.0005, np.float32), f"s_b{i}"),
                  numpy_helper.from_array(np.array(0, np.int32), f"z_b{i}")]
        nodes += [helper.make_node("QuantizeLinear", [prev, "s_x", "z"], [f"q{i}"], name=f"q{i}_QuantizeLinear"),
                  helper.make_node("DequantizeLinear", [f"q{i}", "s_x", "z"], [f"d{i}"], name=f"d{i}_DequantizeLinear"),
                  helper.make_node("DequantizeLinear", [f"w{i}", f"s_w{i}", "z"], [f"wd{i}"],
                                   name=f"w{i}_DequantizeLinear"),
                  helper.make_node("DequantizeLinear", [f"b{i}", f"s_b{i}", f"z_b{i}"], [f"bd{i}"],
                                   name=f"b{i}_DequantizeLinear"),
                  helper.make_node("Conv", [f"d{i}", f"wd{i}", f"bd{i}"], [f"c{i}"], name=f"conv{i}",
                                   kernel_shape=[1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        prev = f"r{i}"
    graph = helper.make_graph(
        nodes, "qdq_conv_stack", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 4, 4])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, channels, 4, 4])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def widened_matmul(path: Path, dtype: str = "int8") -> Path:
    """x @ W where W is an integer initializer widened by Cast -> Mul (a scale), no DequantizeLinear anywhere."""
    rng = np.random.default_rng(0)
    low = 0 if dtype == "uint8" else -63
    w = rng.integers(low, 64, size=(16, 8)).astype(dtype)
    inits = [numpy_helper.from_array(w, "w_q"), numpy_helper.from_array(np.array(0.01, np.float32), "w_s")]
    nodes = [helper.make_node("Cast", ["w_q"], ["w_f"], name="cast_w", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["w_f", "w_s"], ["w"], name="scale_w"),
             helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "widened", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def quantize_dynamic(float_model: Path, out: Path) -> Path:
    """onnxruntime.quantization.quantize_dynamic at its defaults: DynamicQuantizeLinear, ConvInteger/MatMulInteger."""
    from onnxruntime.quantization import quantize_dynamic as ort_quantize_dynamic

    ort_quantize_dynamic(str(float_model), str(out))
    return out


def quantize_qoperator(float_model: Path, out: Path, samples: int = 2) -> Path:
    """quantize_static in the QOperator format at its other defaults: QLinearConv and com.microsoft QLinear* ops."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat
    from onnxruntime.quantization import quantize_static as ort_quantize_static

    model = onnx.load(str(float_model))
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(1)
            self.data = [{"x": rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(samples)]

        def get_next(self) -> Optional[dict]:
            return self.data.pop() if self.data else None

    ort_quantize_static(str(float_model), str(out), Reader(), quant_format=QuantFormat.QOperator)
    return out
