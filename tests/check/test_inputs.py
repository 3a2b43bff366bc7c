"""Generated inputs a model accepts: indices inside the table they index, masks of ones, and --inputs where no
valid range can be inferred."""

from __future__ import annotations

from pathlib import Path
from typing import List

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from check.bundle import bundle_from_model
from check.inputs import index_bounds, rules
from tests.check.models import bert_embedding


def _model(path: Path, nodes: List, inputs: List, inits: List, out: str = "y", opset: int = 13) -> Path:
    graph = helper.make_graph(nodes, "m", inputs, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(onnx.shape_inference.infer_shapes(model), str(path))  # the output's shape: onnx.checker requires one
    return path


def _table(name: str, rows: int, cols: int = 4, quantized: bool = False) -> List:
    rng = np.random.default_rng(0)
    if not quantized:
        return [numpy_helper.from_array(rng.standard_normal((rows, cols)).astype(np.float32), name)]
    return [numpy_helper.from_array(rng.integers(-63, 64, (rows, cols)).astype(np.int8), name + "_q"),
            numpy_helper.from_array(np.array(0.01, np.float32), name + "_s")]


def test_an_index_reached_through_cast_unsqueeze_and_a_dequantized_table_stays_in_range(tmp_path):
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])
    nodes = [helper.make_node("DequantizeLinear", ["t_q", "t_s"], ["table"], name="dq_t"),
             helper.make_node("Cast", ["ids"], ["ids32"], to=TensorProto.INT32),
             helper.make_node("Unsqueeze", ["ids32", "axes"], ["ids3"]),
             helper.make_node("Gather", ["table", "ids3"], ["y"], name="lookup")]
    inits = _table("t", 5, quantized=True) + [numpy_helper.from_array(np.array([-1], np.int64), "axes")]
    path = _model(tmp_path / "five.onnx", nodes, [ids], inits)
    assert index_bounds(onnx.load(str(path)))["ids"] == (5, "indexes Gather lookup (dimension 0 of table [5, 4])")
    bundle = bundle_from_model(path, tmp_path / "b")
    x = bundle.inputs()["ids"]
    assert x.shape == (1, 64) and x.min() >= 0 and x.max() == 4, "[0, 10) would index past 5 rows"
    assert bundle.meta["reference_error"] == "" and bundle.meta["input_generation"]["ids"]["rule"] == "indices"


def test_gather_elements_and_gather_nd_bound_by_the_dimension_they_index(tmp_path):
    a = helper.make_tensor_value_info("a", TensorProto.INT64, [2, 3])
    b = helper.make_tensor_value_info("b", TensorProto.INT64, [2, 1])
    nodes = [helper.make_node("GatherElements", ["t", "a"], ["u"], axis=1, name="ge"),
             helper.make_node("GatherND", ["t", "b"], ["v"], name="gnd"),
             helper.make_node("Concat", ["u", "v"], ["y"], axis=1)]
    model = onnx.load(str(_model(tmp_path / "g.onnx", nodes, [a, b], _table("t", 2, 7))))
    bounds = index_bounds(model)
    assert bounds["a"][0] == 7 and bounds["b"][0] == 2


def test_bert_style_inputs_index_their_tables_and_the_mask_is_ones(tmp_path):
    bundle = bundle_from_model(bert_embedding(tmp_path / "bert.onnx", vocab=30), tmp_path / "b")
    x = bundle.inputs()
    assert x["input_ids"].max() < 30 and x["token_type_ids"].max() <= 1 and x["token_type_ids"].min() >= 0
    assert (x["attention_mask"] == 1).all() and x["input_ids"].dtype == np.int64
    how = bundle.meta["input_generation"]
    assert how["input_ids"]["why"].startswith("integers in [0, 30): indexes Gather word_embedding")
    assert how["token_type_ids"]["why"].startswith("integers in [0, 2): indexes Gather type_embedding")
    assert how["attention_mask"]["rule"] == "ones" and bundle.meta["reference_error"] == ""


def test_an_integer_input_with_no_range_to_infer_is_named_when_the_reference_then_fails(tmp_path):
    """The table is computed (Relu), so its rows are unknown: the guess indexes past them and the reference fails;
    the bundle is still written, and the reason asks for --inputs naming the input."""
    idx = helper.make_tensor_value_info("idx", TensorProto.INT64, [16])
    nodes = [helper.make_node("Relu", ["t"], ["table"]), helper.make_node("Gather", ["table", "idx"], ["y"])]
    path = _model(tmp_path / "computed.onnx", nodes, [idx], _table("t", 3))
    model = onnx.load(str(path))
    assert "idx" not in index_bounds(model)
    assert rules(model, {"idx": np.dtype(np.int64)})["idx"].known is False
    bundle = bundle_from_model(path, tmp_path / "b", seed=1)
    error = bundle.meta["reference_error"]
    assert "cannot run it" in error and "input idx had no range to infer: give valid data with --inputs" in error
    assert bundle.expected() == {}
    np.savez(tmp_path / "computed.npz", idx=np.arange(16, dtype=np.int64) % 3)
    given = bundle_from_model(path, tmp_path / "b", inputs_npz=tmp_path / "computed.npz")
    assert given.meta["reference_error"] == "" and given.meta["inputs_file"] == "computed.npz"


def test_a_float_input_is_drawn_over_its_quantizers_range_and_a_src_mask_is_not_all_padding(tmp_path):
    """x's first QuantizeLinear (through a Transpose) is uint8, scale 1, zero point 0: it was calibrated on pixels in
    [0, 255], so x is drawn there, not in [-1, 1) (2 of its 256 levels); `src_mask` (True = padding) is mostly False
    with a True tail, never all True."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])
    mask = helper.make_tensor_value_info("src_mask", TensorProto.BOOL, [1, 8, 16])
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 1, 2]),
             helper.make_node("QuantizeLinear", ["xt", "s", "zp"], ["xq"], name="q_x"),
             helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"]),
             helper.make_node("Where", ["src_mask", "zero", "xd"], ["y"])]
    inits = [numpy_helper.from_array(np.array(1.0, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.uint8), "zp"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    bundle = bundle_from_model(_model(tmp_path / "pixels.onnx", nodes, [x, mask], inits), tmp_path / "b")
    data = bundle.inputs()
    assert data["x"].min() >= 0 and data["x"].max() > 200 and len(np.unique(np.rint(data["x"]))) > 64
    how = bundle.meta["input_generation"]
    assert how["x"]["rule"] == "quantizer_range" and how["x"]["range"] == [0.0, 255.0]
    assert how["x"]["why"].startswith("floats uniform in [0, 255): the range QuantizeLinear q_x represents (uint8")
    assert not data["src_mask"].all() and data["src_mask"].any(), "all True would make every token padding"
    assert not data["src_mask"][..., :12].any() and data["src_mask"][..., 12:].all()
    assert how["src_mask"]["rule"] == "padded_tail" and bundle.meta["reference_error"] == ""


def test_a_per_channel_or_unreadable_quantizer_falls_back_to_the_unit_range(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], axis=1),
             helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["y"], axis=1)]
    inits = [numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "s"),
             numpy_helper.from_array(np.array([0, 0], np.uint8), "zp")]
    model = onnx.load(str(_model(tmp_path / "axis.onnx", nodes, [x], inits)))
    rule = rules(model, {"x": np.dtype(np.float32)})["x"]
    assert rule.kind == "uniform" and rule.span == (-1.0, 1.0)
