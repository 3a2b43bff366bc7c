"""A user's model as a bundle: validation, inputs, reference, target nodes, digest, and clear refusals."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import numpy as np
import onnx
import pytest

from cases import all_cases, get_case
from check import CheckError
from check.bundle import bundle_from_model
from check.shapes import InputShape
from generators.bundle import BundleCorrupt, iter_bundles, verify_bundle
from tests.check.models import per_channel_opset12, qdq_conv


def test_a_qdq_conv_becomes_a_bundle_the_cells_can_read(tmp_path):
    bundle = bundle_from_model(qdq_conv(tmp_path / "conv.onnx"), tmp_path / "out")
    assert re.fullmatch(r"user_model/conv-[0-9a-f]{10}", bundle.id)
    assert [b.id for b in iter_bundles(tmp_path / "out")] == [bundle.id]
    meta = bundle.meta
    assert meta["case"] == "user_model" and meta["checker"] == "passed" and meta["checker_warning"] == ""
    assert meta["reference_error"] == "" and meta["profile"] == {} and meta["assumed_dims"] == []
    assert meta["source_model"] == {"name": "conv.onnx", "producer": ""}, "the file name, never a machine path"
    assert meta["target_nodes"] == ["node_of_c"]  # the Conv: fed by DequantizeLinear, feeding QuantizeLinear
    assert meta["reference_engine"]["engine"] == "onnxruntime"
    assert meta["reference_engine"]["graph_optimization_level"] == "ORT_DISABLE_ALL"
    assert meta["outputs"]["y"]["step_kind"] == "quantization" and meta["outputs"]["y"]["step"] == pytest.approx(0.05)
    names = [n.name for n in onnx.load(str(bundle.model_path)).graph.node]
    assert "node_of_c" in names and "" not in names
    assert bundle.inputs()["x"].shape == (1, 3, 8, 8)
    assert set(bundle.expected()) == {"y"}


def test_named_nodes_keep_their_names_and_a_float_output_states_abs_rel_tolerance(tmp_path):
    model = onnx.load(str(qdq_conv(tmp_path / "conv.onnx", unnamed=False)))
    model.graph.node.pop()  # drop the last DequantizeLinear: the output is the quantized tensor itself
    model.graph.output[0].name = "c_q"
    model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.INT8
    onnx.save(model, str(tmp_path / "named.onnx"))
    meta = bundle_from_model(tmp_path / "named.onnx", tmp_path / "out").meta
    assert meta["target_nodes"] == ["conv"]
    assert meta["outputs"]["c_q"]["step_kind"] == "integer"


def test_the_digest_covers_model_and_inputs_and_the_bundle_is_cached(tmp_path):
    model = qdq_conv(tmp_path / "conv.onnx")
    first = bundle_from_model(model, tmp_path / "out", seed=0)
    again = bundle_from_model(model, tmp_path / "out", seed=0)
    assert again.meta["digest"] == first.meta["digest"]
    other = bundle_from_model(model, tmp_path / "out", seed=1)
    assert other.meta["digest"] != first.meta["digest"]


def test_given_inputs_are_used_and_checked(tmp_path):
    model = qdq_conv(tmp_path / "conv.onnx")
    x = np.full((1, 3, 8, 8), 0.5, np.float32)
    np.savez(tmp_path / "x.npz", x=x)
    bundle = bundle_from_model(model, tmp_path / "out", inputs_npz=tmp_path / "x.npz")
    np.testing.assert_array_equal(bundle.inputs()["x"], x)
    np.savez(tmp_path / "wrong_name.npz", image=x)
    with pytest.raises(CheckError, match="missing inputs x; no model input named image"):
        bundle_from_model(model, tmp_path / "out", inputs_npz=tmp_path / "wrong_name.npz")
    np.savez(tmp_path / "wrong_shape.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    with pytest.raises(CheckError, match=r"input 'x' has shape \[1, 3, 4, 4\]"):
        bundle_from_model(model, tmp_path / "out", inputs_npz=tmp_path / "wrong_shape.npz")
    with pytest.raises(CheckError, match="no such file"):
        bundle_from_model(model, tmp_path / "out", inputs_npz=tmp_path / "absent.npz")


def test_a_dynamic_dimension_takes_the_default_and_the_bundle_says_so(tmp_path):
    model = qdq_conv(tmp_path / "dyn.onnx", dynamic_batch=True)
    bundle = bundle_from_model(model, tmp_path / "out")
    assert bundle.inputs()["x"].shape == (1, 3, 8, 8)
    assert bundle.meta["assumed_dims"] == [{"input": "x", "axis": 0, "dim": "N", "value": 1}]
    assert bundle.meta["profile"] == {"x": {"min": [1, 3, 8, 8], "opt": [1, 3, 8, 8], "max": [1, 3, 8, 8]}}
    dims = onnx.load(str(bundle.model_path)).graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "N", "the bundle keeps the user's dynamic dimension"
    given = bundle_from_model(model, tmp_path / "out", shapes={"x": [2, 3, 8, 8]})
    assert given.inputs()["x"].shape == (2, 3, 8, 8) and given.meta["assumed_dims"] == []
    ranged = bundle_from_model(model, tmp_path / "out", shapes={"x": InputShape((1, 3, 8, 8), (4, 3, 8, 8),
                                                                                (8, 3, 8, 8))})
    assert ranged.inputs()["x"].shape == (4, 3, 8, 8), "inputs are generated at the opt shape"
    assert ranged.meta["profile"]["x"] == {"min": [1, 3, 8, 8], "opt": [4, 3, 8, 8], "max": [8, 3, 8, 8]}
    assert ranged.id == given.id and ranged.meta["cache_key"] != given.meta["cache_key"]
    with pytest.raises(CheckError, match="--shape names no input 'image'"):
        bundle_from_model(model, tmp_path / "out", shapes={"image": [1, 3, 8, 8]})
    with pytest.raises(CheckError, match=r"--shape x:2x3x9x9 does not fit the declared shape \[N, 3, 8, 8\]"):
        bundle_from_model(model, tmp_path / "out", shapes={"x": [2, 3, 9, 9]})


def test_a_negative_dimension_is_a_dynamic_one(tmp_path):
    """Paddle2ONNX declares a dynamic batch as dim_value -1, which onnx's checker accepts: it takes the default as an
    unnamed dynamic dimension does (it crashed the whole check with "negative dimensions are not allowed")."""
    model = onnx.load(str(qdq_conv(tmp_path / "dyn.onnx")))
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_value = -1
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(tmp_path / "paddle.onnx"))
    bundle = bundle_from_model(tmp_path / "paddle.onnx", tmp_path / "out")
    assert bundle.inputs()["x"].shape == (1, 3, 8, 8)
    assert bundle.meta["assumed_dims"] == [{"input": "x", "axis": 0, "dim": "dim0", "value": 1}]
    assert bundle.meta["reference_error"] == ""


def test_given_inputs_of_a_dynamic_model_set_its_profile_or_sit_inside_the_range(tmp_path):
    model = qdq_conv(tmp_path / "dyn.onnx", dynamic_batch=True)
    np.savez(tmp_path / "two.npz", x=np.zeros((2, 3, 8, 8), np.float32))
    fixed = bundle_from_model(model, tmp_path / "out", inputs_npz=tmp_path / "two.npz")
    assert fixed.meta["profile"]["x"] == {"min": [2, 3, 8, 8], "opt": [2, 3, 8, 8], "max": [2, 3, 8, 8]}
    assert fixed.meta["assumed_dims"] == [] and fixed.meta["inputs_file"] == "two.npz"
    ranged = InputShape((1, 3, 8, 8), (4, 3, 8, 8), (8, 3, 8, 8))
    inside = bundle_from_model(model, tmp_path / "out", inputs_npz=tmp_path / "two.npz", shapes={"x": ranged})
    assert inside.meta["profile"]["x"]["max"] == [8, 3, 8, 8] and inside.inputs()["x"].shape == (2, 3, 8, 8)
    with pytest.raises(CheckError, match=r"input 'x' has shape \[2, 3, 8, 8\], outside --shape x:4x3x8x8,4x3x8x8"):
        bundle_from_model(model, tmp_path / "out", inputs_npz=tmp_path / "two.npz",
                          shapes={"x": InputShape((4, 3, 8, 8), (4, 3, 8, 8), (8, 3, 8, 8))})


def test_not_onnx_is_refused_and_a_model_the_checker_refuses_is_invalid(tmp_path):
    (tmp_path / "junk.onnx").write_bytes(b"this is not a protobuf \xff\xfe")
    with pytest.raises(CheckError, match="not an ONNX model"):
        bundle_from_model(tmp_path / "junk.onnx", tmp_path / "out")
    with pytest.raises(CheckError, match="no such model file"):
        bundle_from_model(tmp_path / "absent.onnx", tmp_path / "out")
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(CheckError, match=r"not an ONNX model \(an empty file: 0 bytes\)"):  # said as what it is
        bundle_from_model(tmp_path / "empty.onnx", tmp_path / "out")
    model = onnx.load(str(qdq_conv(tmp_path / "conv.onnx")))
    model.graph.node[3].input[1] = "nowhere"  # the Conv reads a tensor nothing produces
    onnx.save(model, str(tmp_path / "broken.onnx"))
    with pytest.raises(CheckError, match="^invalid model: onnx.checker \\(full_check\\) refuses it: .*nowhere") as e:
        bundle_from_model(tmp_path / "broken.onnx", tmp_path / "out")
    assert str(tmp_path) not in str(e.value), "no staging path in the reason"
    assert not list((tmp_path / "out").rglob("case.json")), "no bundle: no engine is asked about an invalid model"


def test_an_opset_12_per_channel_dequantize_gets_the_conversion_that_fixes_it(tmp_path):
    """onnxruntime's quantizer writes DequantizeLinear(axis) under opset 12: the checker refuses it (an invalid model,
    whatever an engine makes of it); the reason gives the command that converts it to opset 13."""
    with pytest.raises(CheckError) as refused:
        bundle_from_model(per_channel_opset12(tmp_path / "per_axis.onnx"), tmp_path / "out")
    warning = str(refused.value)
    assert "Unrecognized attribute: axis" in warning and "opset 12" in warning
    command = warning.split("convert it first: ", 1)[1]
    assert command.startswith("python -c ")
    subprocess.run([sys.executable, "-c", shlex.split(command)[2]], cwd=tmp_path, check=True)
    converted = onnx.load(str(tmp_path / "per_axis-opset13.onnx"))
    onnx.checker.check_model(converted)
    again = bundle_from_model(tmp_path / "per_axis-opset13.onnx", tmp_path / "out")
    assert again.meta["checker"] == "passed" and again.meta["reference_error"] == ""


def test_external_data_is_copied_and_covered_by_the_digest(tmp_path):
    model = onnx.load(str(qdq_conv(tmp_path / "conv.onnx")))
    onnx.save(model, str(tmp_path / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    bundle = bundle_from_model(tmp_path / "ext.onnx", tmp_path / "out")
    assert (bundle.path / "ext.data").is_file() and bundle.meta["external_data"] == ["ext.data"]
    data = bytearray((tmp_path / "ext.data").read_bytes())
    data[-1] ^= 1  # one bit of the weights changes, the model file does not
    (tmp_path / "ext.data").write_bytes(bytes(data))
    changed = bundle_from_model(tmp_path / "ext.onnx", tmp_path / "out")
    assert changed.meta["digest"] != bundle.meta["digest"]


def _grouped_conv_file(path, cpg=3, activation="int8"):
    from generators.grouped_conv import build

    params = {"cpg": cpg, "weights": "per_channel", "activation": activation, "output_qdq": True, "epilogue": "relu"}
    onnx.save(build(params, np.random.default_rng(0)).model, str(path))
    return path


def test_the_bundle_carries_the_lint_as_data_and_still_verifies(tmp_path, capsys):
    from check.lint import main as lint_main

    model = _grouped_conv_file(tmp_path / "gc.onnx")
    bundle = bundle_from_model(model, tmp_path / "out")
    lint = bundle.meta["lint"]
    assert lint_main([str(model), "--json"]) == 0
    assert lint == json.loads(capsys.readouterr().out), "case.json holds what `check.lint --json` prints"
    assert any(f["rule"] == "grouped_conv" and f["predicted"] == "build fails" and f["node"] == "node_of_conv"
               for f in lint["findings"])
    assert verify_bundle(bundle.path).meta["lint"] == lint, "meta_digest is computed after the lint went in"
    meta = json.loads((bundle.path / "case.json").read_text())
    meta["lint"]["findings"] = []  # someone edits the predictions on the way to the GPU box
    (bundle.path / "case.json").write_text(json.dumps(meta))
    with pytest.raises(BundleCorrupt, match="meta_digest"):
        verify_bundle(bundle.path)


def test_a_model_with_nothing_to_say_carries_an_empty_lint(tmp_path):
    bundle = bundle_from_model(qdq_conv(tmp_path / "conv.onnx"), tmp_path / "out")
    assert bundle.meta["lint"] == {"schema": "qdq-matrix/lint/1", "findings": []}
    verify_bundle(bundle.path)


def test_the_user_case_is_registered_but_not_a_seed():
    assert "user_model" not in [c.id for c in all_cases()]
    case = get_case("user_model")
    assert case.external and not case.expectations
    from cases.common import ENGINE_SIGNATURES

    names = {s.name for s in case.signatures}
    engine_wide = {s.name for signatures in ENGINE_SIGNATURES.values() for s in signatures}
    assert {s.name for c in all_cases() for s in c.signatures} | engine_wide == names


def test_a_constant_that_feeds_a_quantize_is_a_weight_not_a_quantized_node():
    """Paddle exports keep weights as Constant nodes, which onnxruntime's quantizer Q/DQs: no computation to judge."""
    from onnx import TensorProto, helper, numpy_helper

    from check.bundle import target_details, target_nodes

    w = numpy_helper.from_array(np.full((2, 3, 1, 1), 0.1, np.float32), "w_value")
    nodes = [helper.make_node("Constant", [], ["w"], name="weight", value=w),
             helper.make_node("QuantizeLinear", ["w", "s", "z"], ["w_q"], name="q_w"),
             helper.make_node("DequantizeLinear", ["w_q", "s", "z"], ["w_dq"], name="dq_w"),
             helper.make_node("Conv", ["x", "w_dq"], ["y"], name="conv")]
    inits = [numpy_helper.from_array(np.array(0.01, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert target_nodes(model) == ["conv"]
    assert target_details(model)["conv"]["kind"] == "compute"


def test_an_elementwise_op_with_a_quantized_constant_is_not_a_compute_node():
    """YOLOv8's Detect head adds anchors and multiplies strides that onnxruntime's quantizer Q/DQs: a constant
    operand, not weights, so the denominator of "N of M quantized compute nodes" is the convolutions."""
    from onnx import TensorProto, helper, numpy_helper

    from check.bundle import target_details

    inits = [numpy_helper.from_array(np.full((1, 2, 1, 1), 3, np.int8), "anchor_q"),
             numpy_helper.from_array(np.array(0.5, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z"),
             numpy_helper.from_array(np.ones((2, 2, 1, 1), np.int8), "w_q")]
    nodes = [helper.make_node("DequantizeLinear", ["anchor_q", "s", "z"], ["anchor"], name="dq_anchor"),
             helper.make_node("DequantizeLinear", ["w_q", "s", "z"], ["w"], name="dq_w"),
             helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Add", ["c", "anchor"], ["y"], name="add_anchor")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], initializer=inits)
    details = target_details(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert (details["conv"]["kind"], details["add_anchor"]["kind"]) == ("compute", "other")


def test_without_onnxruntime_the_reference_is_not_run_and_says_why(monkeypatch, tmp_path):
    """A GPU box's bare controller (no onnxruntime) still makes bundles, as check.reduce does there: no reference
    outputs and the reason, never a crash and never made-up numbers."""
    import sys

    from check.bundle import reference_outputs

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    outputs, reference, why = reference_outputs(tmp_path / "model.onnx", {})
    assert outputs == {} and reference["engine"] == "onnxruntime"
    assert why.startswith("no reference here: it needs onnxruntime") and "'generate' group" in why


def _bf16_input(path) -> str:
    """x (bfloat16 [2, 4]) -> Cast(float) -> Relu -> y."""
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
                               helper.make_node("Relu", ["xf"], ["y"])], "bf16",
                              [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def test_a_bfloat16_input_is_taken_as_floats_or_its_bits_as_the_advice_says(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    model = _bf16_input(tmp_path / "bf16.onnx")
    with pytest.raises(CheckError, match=r"give it with --inputs x.npz \(float32 values, rounded to bfloat16, or its "
                                         r"bits as uint16\)"):
        bundle_from_model(model, tmp_path / "out")
    x = np.array([[-1.0, 0.3, 1 / 3, 2.0], [0.1, 7.0, -0.5, 1e-3]], np.float32)
    bits = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    forms = {"floats": x, "bits": bits, "bfloat16": x.astype(ml_dtypes.bfloat16)}
    for form, given in forms.items():
        np.savez(tmp_path / f"{form}.npz", x=given)
        bundle = bundle_from_model(model, tmp_path / form, inputs_npz=tmp_path / f"{form}.npz")
        with np.load(bundle.path / "inputs.npz") as f:
            assert f["x"].view(np.uint16).tolist() == bits.tolist(), form
