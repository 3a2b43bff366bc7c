"""Small quantized models built in the tests: a hand-made QDQ conv, and float models quantized by ONNX Runtime."""

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
                    reduce_range: bool = True, quantize_bias: bool = True, symmetric: bool = False) -> Path:
    """Quantize with onnxruntime.quantization.quantize_static in QDQ format, int8 activations and weights.

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
            self.data: List[dict] = [{name: rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(samples)]

        def get_next(self) -> Optional[dict]:
            return self.data.pop() if self.data else None

    ort_quantize_static(str(float_model), str(out), Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=per_channel,
                        reduce_range=reduce_range,
                        extra_options={"QuantizeBias": quantize_bias, "ActivationSymmetric": symmetric})
    return out
