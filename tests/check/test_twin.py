"""The float twin (check.twin): a quantized model with its quantization taken out stands in for the float model it came
from, its quantized constants folded exactly as onnx's reference DequantizeLinear computes them."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from check.bundle import reference_outputs
from check.twin import dequantize, float_twin
from core.numerics import output_stats
from tests.check.models import deep_convnet, quantize_for_tensorrt, quantize_fragile, quantize_static

RNG = np.random.default_rng(5)
INPUTS = {"x": np.random.default_rng(0).uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)}


def _tensor(name: str, dtype: int, values: np.ndarray) -> onnx.TensorProto:
    return helper.make_tensor(name, dtype, list(values.shape), values.reshape(-1).tolist())


# name, opset, quantized values (ONNX type, numpy values), scale, zero point, attributes
FOLDS = [
    ("int8-per-tensor", 19, (TensorProto.INT8, RNG.integers(-128, 128, (4, 6))), np.float32(0.02), np.int8(3), {}),
    ("uint8-per-axis-0", 19, (TensorProto.UINT8, RNG.integers(0, 256, (4, 6))),
     RNG.uniform(0.01, 0.1, 4).astype(np.float32), RNG.integers(0, 256, 4).astype(np.uint8), {"axis": 0}),
    ("int8-per-axis-1", 19, (TensorProto.INT8, RNG.integers(-128, 128, (4, 6))),
     RNG.uniform(0.01, 0.1, 6).astype(np.float32), np.zeros(6, np.int8), {"axis": 1}),
    ("int32-bias", 19, (TensorProto.INT32, RNG.integers(-(2 ** 30), 2 ** 30, 6)), np.float32(1e-4), None, {}),
    ("int4-blocked", 21, (TensorProto.INT4, RNG.integers(-8, 8, (4, 6))),
     RNG.uniform(0.01, 0.1, (4, 2)).astype(np.float32), None, {"axis": 1, "block_size": 4}),
    ("fp8-e4m3-per-tensor", 19, (TensorProto.FLOAT8E4M3FN, RNG.uniform(-4, 4, (4, 6))), np.float32(0.5), None, {}),
    ("fp4-e2m1-per-axis", 23, (TensorProto.FLOAT4E2M1, RNG.choice([0.5, 1.0, -1.5, 3.0, -6.0], (4, 6))),
     RNG.uniform(0.1, 1.0, 4).astype(np.float32), None, {"axis": 0}),
    ("int8-float16-scale", 19, (TensorProto.INT8, RNG.integers(-128, 128, (4, 6))), np.float16(0.03), np.int8(0),
     {}),
]


@pytest.mark.parametrize("name, opset, quantized, scale, zero, attrs", FOLDS, ids=[f[0] for f in FOLDS])
def test_a_folded_constant_is_what_onnxs_reference_dequantizelinear_computes(name, opset, quantized, scale, zero,
                                                                            attrs):
    from onnx.reference import ReferenceEvaluator

    inits = [_tensor("w", quantized[0], np.asarray(quantized[1])), numpy_helper.from_array(np.asarray(scale), "s")]
    inputs = ["w", "s"]
    if zero is not None:
        inits.append(numpy_helper.from_array(np.asarray(zero), "z"))
        inputs.append("z")
    node = helper.make_node("DequantizeLinear", inputs, ["y"], name="dq", **attrs)
    out_type = helper.np_dtype_to_tensor_dtype(np.asarray(scale).dtype)
    graph = helper.make_graph([node], "fold", [], [helper.make_tensor_value_info("y", out_type, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    want = ReferenceEvaluator(model).run(None, {})[0]
    got = dequantize(node, [numpy_helper.to_array(t) for t in inits])
    assert got.dtype == want.dtype and np.array_equal(got, want), name
    twin, done = float_twin(model)
    assert done == {"pairs": 0, "relu": 0, "folded": 1, "dequantized_at_run": 0, "kept": []}
    assert [n.op_type for n in twin.graph.node] == [] and [i.name for i in twin.graph.initializer] == ["y"]
    assert np.array_equal(numpy_helper.to_array(twin.graph.initializer[0]), want)


@pytest.fixture(scope="module")
def quantized(tmp_path_factory) -> Dict[str, Path]:
    folder = tmp_path_factory.mktemp("twin")
    floats = deep_convnet(folder / "float.onnx", layers=6)
    return {"float": floats, "tensorrt-settings": quantize_for_tensorrt(floats, folder / "trt.onnx"),
            "ort-defaults": quantize_static(floats, folder / "ort.onnx"),
            "fragile": quantize_fragile(floats, folder / "fragile.onnx")}


@pytest.mark.parametrize("which, relu", [("tensorrt-settings", False), ("ort-defaults", True), ("fragile", False)])
def test_the_twin_stands_in_for_the_float_model(quantized, tmp_path, which, relu):
    """Its quantization loss leaves out the weights' rounding only: at most the float model's, and within 1 dB of it
    where the activations' quantization dominates (the fragile model). onnxruntime's defaults fold each Relu into an
    int8 Q/DQ whose range starts at 0, and the twin gives it back (an Identity there would lose the Relu: 30 dB off)."""
    model = onnx.load(str(quantized[which]))
    twin, done = float_twin(model)
    ops = {n.op_type for n in twin.graph.node}
    assert not ops & {"QuantizeLinear", "DequantizeLinear"} and done["kept"] == []
    assert done["pairs"] > 6 and done["folded"] >= 6 and (done["relu"] > 0) is relu
    onnx.save(twin, str(tmp_path / "twin.onnx"))
    reference, floats, twins = (reference_outputs(p, INPUTS)[0] for p in (quantized[which], quantized["float"],
                                                                           tmp_path / "twin.onnx"))
    (name,) = reference
    loss, twin_loss = output_stats(floats[name], reference[name]), output_stats(twins[name], reference[name])
    assert twin_loss["sqnr_db"] >= loss["sqnr_db"] - 0.5, (loss, twin_loss)
    if which == "fragile":
        assert loss["sqnr_db"] < 12 and abs(loss["sqnr_db"] - twin_loss["sqnr_db"]) < 1.0, (loss, twin_loss)
    assert output_stats(floats[name], twins[name])["sqnr_db"] > 25, "the twin is the float model, weights quantized"


@pytest.mark.parametrize("which", ["tensorrt-settings", "ort-defaults"])
def test_a_weight_left_to_its_dequantizelinear_gives_the_folded_twins_outputs(quantized, tmp_path, which):
    """A weight over the folding limit keeps its DequantizeLinear (its data is not read, nor held again as floats), and
    the reference's runner computes the very values folding would: the twin's outputs are bit for bit the same."""
    model = onnx.load(str(quantized[which]), load_external_data=False)
    folded, done = float_twin(model)
    at_run, kept_dq = float_twin(model, fold_bytes=0)
    assert done["dequantized_at_run"] == 0 and kept_dq["dequantized_at_run"] == done["folded"] >= 6
    assert kept_dq["folded"] == 0 and kept_dq["pairs"] == done["pairs"]
    onnx.save(folded, str(tmp_path / "folded.onnx"))
    onnx.save(at_run, str(tmp_path / "at_run.onnx"))
    want, got = (reference_outputs(tmp_path / f"{n}.onnx", INPUTS)[0] for n in ("folded", "at_run"))
    assert want.keys() == got.keys() and all(np.array_equal(want[n], got[n]) for n in want)


def _graph(nodes: List[onnx.NodeProto], inits: List[onnx.TensorProto], x_type: int = TensorProto.FLOAT
           ) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "kept", [helper.make_tensor_value_info("x", x_type, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_what_cannot_be_undone_is_kept_with_its_reason():
    scales = [numpy_helper.from_array(np.float32(v), n) for n, v in (("s1", 0.1), ("s2", 0.2), ("s3", 0.1))]
    zero = numpy_helper.from_array(np.int8(0), "z")
    requantized = _graph([helper.make_node("QuantizeLinear", ["x", "s1", "z"], ["q"], name="q"),
                          helper.make_node("DequantizeLinear", ["q", "s2", "z"], ["y"], name="dq")], [*scales, zero])
    twin, done = float_twin(requantized)
    assert done["pairs"] == 0 and [k["node"] for k in done["kept"]] == ["dq", "q"]
    assert "differs from its QuantizeLinear's, a requantization" in done["kept"][0]["why"]
    same_value = _graph([helper.make_node("QuantizeLinear", ["x", "s1", "z"], ["q"], name="q"),
                         helper.make_node("DequantizeLinear", ["q", "s3", "z"], ["y"], name="dq")], [*scales, zero])
    assert float_twin(same_value)[1]["pairs"] == 1, "two scale tensors of one value are one scale"
    integer_input = _graph([helper.make_node("DequantizeLinear", ["x", "s1", "z"], ["y"], name="dq")],
                           [*scales, zero], TensorProto.INT8)
    twin, done = float_twin(integer_input)
    assert [n.op_type for n in twin.graph.node] == ["DequantizeLinear"]
    assert done["kept"] == [{"node": "dq", "op": "DequantizeLinear", "why": "it dequantizes a graph input or another "
                             "node's output, not a QuantizeLinear or a constant"}]


def test_a_bundles_twin_leaves_a_large_weight_in_its_file_and_the_report_says_so(tmp_path):
    """A weight over 1 MiB in external data: the bundle's float twin keeps its DequantizeLinear (the loss is still
    measured), no twin file is left in the bundle, and the per-node report counts it apart from the folded constants."""
    from check.bundle import bundle_from_model
    from core.cell import Cell
    from matrix.nodes import node_report
    from matrix.render import render_template

    side = 1088
    weight = np.random.default_rng(1).integers(-127, 128, (side, side)).astype(np.int8)
    inits = [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.float32(0.01), "s"),
             numpy_helper.from_array(np.int8(0), "z"), numpy_helper.from_array(np.float32(0.05), "sx")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "z"], ["xq"], name="q"),
             helper.make_node("DequantizeLinear", ["xq", "sx", "z"], ["xd"], name="dq"),
             helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wd"], name="w_dq"),
             helper.make_node("MatMul", ["xd", "wd"], ["y"], name="matmul")]
    graph = helper.make_graph(nodes, "large", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, side])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, side])], inits)
    path = tmp_path / "m" / "large.onnx"
    path.parent.mkdir()
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path),
              save_as_external_data=True, location="large.data", size_threshold=1024)
    bundle = bundle_from_model(path, tmp_path / "b")
    twin = bundle.meta["float_twin"]
    assert (twin["pairs"], twin["folded"], twin["dequantized_at_run"], twin["error"]) == (1, 0, 1, ""), twin
    assert "loss" in bundle.meta["float_reference"]
    assert not list((tmp_path / "b").rglob(".qdq-twin-*")), "the twin's file is removed"
    cell = Cell(bundle=bundle.id, case="user_model", params=dict(bundle.meta["params"]), digest=bundle.meta["digest"],
                engine="onnxruntime", engine_version="1.32.0", hardware="here", status="pass", verdict="undocumented",
                last_stage="compare", precision={t: {"precision": "int8"} for t in bundle.meta["target_nodes"]})
    md = render_template("nodes.md.j2", node_report([cell], bundle.meta), html=False)
    assert "0 quantized constants folded into float, 1 weight left to its DequantizeLinear" in md


def _hardswish_net(path: Path) -> Path:
    """x -> Conv -> HardSwish written as ONNX exporters write it (x * Clip(x + 3, 0, 6) / 6) -> Conv -> y."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.normal(0, 1.5, (8, 3, 3, 3)).astype(np.float32), "w0"),
             numpy_helper.from_array(rng.normal(0, 0.3, (4, 8, 1, 1)).astype(np.float32), "w1"),
             numpy_helper.from_array(np.float32(3.0), "three"), numpy_helper.from_array(np.float32(0.0), "lo"),
             numpy_helper.from_array(np.float32(6.0), "hi")]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv0", kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Add", ["c0", "three"], ["a"], name="add3"),
             helper.make_node("Clip", ["a", "lo", "hi"], ["clipped"], name="clip"),
             helper.make_node("Mul", ["c0", "clipped"], ["m"], name="mul"),
             helper.make_node("Div", ["m", "hi"], ["hs"], name="div6"),
             helper.make_node("Conv", ["hs", "w1"], ["y"], name="conv1", kernel_shape=[1, 1])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    graph = helper.make_graph(nodes, "hardswish", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                                      [1, 4, 16, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_a_clip_the_quantizer_folded_keeps_its_ceiling_in_the_twin(tmp_path):
    """onnxruntime's quantize_static folds HardSwish's Clip(0, 6) into the Q/DQ pair after it and removes it: the twin
    clips to that pair's range, floor and ceiling, so it computes what the float model does. A twin that restored only
    the floor (a Relu) computed HardSwish unbounded: 1.8 dB from the real float model of a PaddleOCR classifier (a user
    trial), NaN on its recognizer."""
    float_path = _hardswish_net(tmp_path / "float.onnx")
    quantized = quantize_static(float_path, tmp_path / "q.onnx", calibration_range=3.0)
    assert "Clip" not in [n.op_type for n in onnx.load(str(quantized)).graph.node], "the quantizer folded the Clip"
    twin, done = float_twin(onnx.load(str(quantized)))
    clips = [n for n in twin.graph.node if n.op_type == "Clip"]
    assert done["relu"] >= 1 and clips, done
    inputs = {"x": np.random.default_rng(0).uniform(-3, 3, (1, 3, 16, 16)).astype(np.float32)}
    onnx.save(twin, str(tmp_path / "twin.onnx"))
    twin_y = reference_outputs(tmp_path / "twin.onnx", inputs)[0]["y"]
    float_y = reference_outputs(float_path, inputs)[0]["y"]
    stats = output_stats(float_y, twin_y)
    assert stats["sqnr_db"] is not None and stats["sqnr_db"] > 20.0, stats


def test_a_float_output_with_nan_is_never_an_exact_loss():
    """A float twin's output of NaN where the reference is finite was reported 'SQNR exact, cosine 1.0000' (a user
    trial): the statistics count it, and the fragile floor never passes on it."""
    from core.numerics import fragile

    twin = np.full((4,), np.nan, np.float32)
    reference = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    loss = output_stats(twin, reference)
    assert loss["expected_non_finite"] == 4 and "non_finite" not in loss
    stats = dict(output_stats(reference, reference * 0.5), loss=loss, float=output_stats(twin, reference * 0.5))
    assert not fragile(stats, {"min_sqnr_db": 20.0, "min_cosine": 0.99})
