"""check.archs and check.arch_models: real-architecture graphs, valid, dynamic, quantized both ways as users do."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from check import arch_models, archs
from check.producers import main

SIZES = ({"batch": 1, "height": 64, "width": 64, "sequence": 8},
         {"batch": 3, "height": 96, "width": 128, "sequence": 37})


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("archs")
    return out, {m.name: m for m in arch_models.write_models(out)}


def _load(folder, name):
    out, made = folder
    return onnx.load(str(out / made[name].path))


def _session(folder, name):
    out, made = folder
    return ort.InferenceSession(str(out / made[name].path), providers=["CPUExecutionProvider"])


def test_every_architecture_is_written_float_at_the_defaults_and_with_tensorrt_settings(folder):
    out, made = folder
    assert list(made) == [f"{a.name}_{v}" for a in archs.ARCHS for v in ("float", "ort_default", "trt")]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [m["path"] for m in manifest] == [m.path for m in made.values()]
    for m in manifest:
        assert m["sha256"] == hashlib.sha256((out / m["path"]).read_bytes()).hexdigest()
        assert bool(m["quantizer"]) == (m["variant"] != "float")
    assert made["yolo_csp_trt"].quantizer["options"]["extra_options"]["QuantizeBias"] is False
    assert made["yolo_csp_ort_default"].quantizer["options"] == {}, "the defaults: nothing but the reader"


def test_models_pass_the_checker_and_keep_their_dynamic_dimensions(folder):
    wanted = {"yolo_csp": {"images": ["batch", 3, "height", "width"]}, "ocr_rec": {"x": ["batch", 3, 48, "width"]},
              "bert_encoder": {n: ["batch", "sequence"] for n in ("input_ids", "attention_mask", "token_type_ids")}}
    _, made = folder
    for name, m in made.items():
        model = _load(folder, name)
        onnx.checker.check_model(model, full_check=True)
        assert model.ir_version == archs.IR_VERSION
        assert m.inputs == wanted[m.arch], name


@pytest.mark.parametrize("arch", [a.name for a in archs.ARCHS])
def test_float_and_quantized_models_run_on_onnxruntime_at_several_sizes(folder, arch):
    for variant in ("float", "ort_default", "trt"):
        session = _session(folder, f"{arch}_{variant}")
        model = _load(folder, f"{arch}_{variant}")
        for sizes in SIZES:
            outputs = session.run(None, archs.feeds(model, np.random.default_rng(0), sizes))
            assert all(np.isfinite(o).all() for o in outputs)
            assert all(o.shape[0] == sizes["batch"] for o in outputs), "the batch follows the input"
            if arch == "yolo_csp":  # anchors: one per cell of the stride-4 and stride-8 maps
                h, w = sizes["height"], sizes["width"]
                assert outputs[0].shape == (sizes["batch"], 4 + archs.CLASSES, h * w // 16 + h * w // 64)
            if arch == "bert_encoder":
                assert outputs[0].shape == (sizes["batch"], sizes["sequence"], 64)
            if arch == "ocr_rec":  # one softmax over the characters per column at half the width
                assert outputs[0].shape == (sizes["batch"], sizes["width"] // 2, archs.OCR_CLASSES)
                if variant == "float":  # the quantized outputs are rounded to steps of 1/255 or so
                    np.testing.assert_allclose(outputs[0].sum(-1), 1.0, rtol=1e-3)


def test_the_graphs_have_the_operators_of_the_networks_they_stand_for(folder):
    ops = {a.name: {n.op_type for n in _load(folder, f"{a.name}_float").graph.node} for a in archs.ARCHS}
    assert {"Conv", "Sigmoid", "Mul", "Split", "Add", "Concat", "MaxPool", "Resize", "Reshape", "Softmax"} <= \
        ops["yolo_csp"]
    assert {"Conv", "HardSwish", "HardSigmoid", "GlobalAveragePool", "Relu", "Mul", "MatMul", "Softmax"} <= \
        ops["ocr_rec"]
    assert {"Gather", "LayerNormalization", "MatMul", "Reshape", "Transpose", "Softmax", "Erf", "Gemm", "Cast"} <= \
        ops["bert_encoder"]
    depthwise = [n for n in _load(folder, "ocr_rec_float").graph.node if n.op_type == "Conv"
                 and next(a.i for a in n.attribute if a.name == "group") > 1]
    assert len(depthwise) == 4


def _initializers(model):
    return {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}


def test_quantized_models_dequantize_both_inputs_of_every_compute_node(folder):
    for name, m in folder[1].items():
        if m.variant == "float":
            assert m.qdq_nodes == 0 and m.compute_nodes_with_dq == 0
            continue
        model = _load(folder, name)
        compute = arch_models.compute_nodes(model)
        missing = [n.name for n in compute if not arch_models.dequantized_inputs(model, n)]
        assert compute and not missing, f"{name}: compute nodes without Q/DQ inputs: {missing}"
        assert m.compute_nodes_with_dq == m.compute_nodes == len(compute)


def test_tensorrt_settings_give_symmetric_int8_per_channel_weights_and_float_bias(folder):
    for arch in archs.ARCHS:
        trt, default = _load(folder, f"{arch.name}_trt"), _load(folder, f"{arch.name}_ort_default")
        inits = _initializers(trt)
        dq = [n for n in trt.graph.node if n.op_type == "DequantizeLinear"]
        zero_points = [inits[n.input[2]] for n in dq if len(n.input) > 2 and n.input[2] in inits]
        assert zero_points and all(z.dtype == np.int8 and not z.any() for z in zero_points), arch.name
        assert not any(inits[n.input[0]].dtype == np.int32 for n in dq if n.input[0] in inits), "no INT32 bias"
        per_channel = [n for n in dq if n.input[1] in inits and inits[n.input[1]].size > 1]
        assert per_channel, f"{arch.name}: per-channel weight scales"
        # the defaults: INT32 bias through DequantizeLinear and non-zero activation zero points (both refused by
        # TensorRT's parsers, see check.lint)
        d_inits = _initializers(default)
        d_dq = [n for n in default.graph.node if n.op_type == "DequantizeLinear"]
        assert any(d_inits[n.input[0]].dtype == np.int32 for n in d_dq if n.input[0] in d_inits), arch.name
        assert any(d_inits[n.input[2]].any() for n in d_dq if len(n.input) > 2 and n.input[2] in d_inits)


def test_the_attention_mask_hides_padded_tokens(folder):
    """The additive mask is real: changing a padded token changes nothing the unpadded tokens see."""
    model, session = _load(folder, "bert_encoder_float"), _session(folder, "bert_encoder_float")
    feed = archs.feeds(model, np.random.default_rng(0), {"batch": 2, "sequence": 16})
    padded = feed["attention_mask"][1] == 0
    assert padded.any() and feed["attention_mask"][0].all()
    changed = dict(feed, input_ids=feed["input_ids"].copy())
    changed["input_ids"][1, padded] = (changed["input_ids"][1, padded] + 1) % archs.VOCAB
    before, after = session.run(None, feed)[0], session.run(None, changed)[0]
    np.testing.assert_allclose(after[1, ~padded], before[1, ~padded], atol=1e-5)
    assert not np.allclose(after[1, padded], before[1, padded])


def test_token_types_index_a_two_row_table(folder):
    """What a generated input must respect: token_type_ids of 2 or more fall outside the table."""
    model, session = _load(folder, "bert_encoder_trt"), _session(folder, "bert_encoder_trt")
    feed = archs.feeds(model, np.random.default_rng(0), {"batch": 1, "sequence": 8})
    assert set(np.unique(feed["token_type_ids"])) == {0, 1} and feed["input_ids"].max() < archs.VOCAB
    with pytest.raises(Exception, match="out of data bounds|out of bounds|invalid"):
        session.run(None, dict(feed, token_type_ids=np.full_like(feed["token_type_ids"], archs.TYPE_VOCAB)))


def test_builds_are_seeded():
    for arch in archs.ARCHS:
        assert archs.build(arch, 3).SerializeToString() == archs.build(arch, 3).SerializeToString()
        assert archs.build(arch, 3).SerializeToString() != archs.build(arch, 4).SerializeToString()


def test_the_large_backbones_have_about_300_and_900_nodes_once_quantized(tmp_path):
    made = arch_models.write_models(tmp_path, archs.LARGE, [v for v in arch_models.VARIANTS if v.name == "trt"])
    assert [m.name for m in made] == ["backbone_300_trt", "backbone_900_trt"]
    for m, target in zip(made, (300, 900)):
        assert abs(m.nodes - target) <= 0.1 * target, (m.name, m.nodes)
        assert m.compute_nodes_with_dq == m.compute_nodes and m.inputs == {"images": ["batch", 3, 64, 64]}


def test_the_cli_writes_the_models_it_is_asked_for(tmp_path, capsys):
    assert main(["--archs", "--out", str(tmp_path), "--only", "ocr_rec_trt"]) == 0
    assert [p.name for p in tmp_path.glob("*.onnx")] == ["ocr_rec_trt.onnx"]
    printed = capsys.readouterr().out
    assert "ocr_rec_trt.onnx: 163 nodes, 20 of 20 compute nodes with dequantized inputs, opset 14, dynamic batch, " \
           "width" in printed
    assert json.loads((tmp_path / "manifest.json").read_text())[0]["name"] == "ocr_rec_trt"


@pytest.mark.slow
def test_tensorrt_rtx_builds_every_convolution_of_the_yolo_model_in_int8(tmp_path):
    """`python -m check` on the dynamic YOLO graph quantized with TensorRT settings: a real ahead-of-time plan
    built with an optimization profile, all Conv INT8."""
    pytest.importorskip("tensorrt_rtx")
    from check.__main__ import main as check
    from engines.tensorrt import gpu

    if gpu.detect().present:
        pytest.skip("a GPU is here: the cell may run, and its status would not be 'built'")
    dynamic = archs.yolo_csp(np.random.default_rng(0))
    model = arch_models.quantize(dynamic, {"batch": 1, "height": 64, "width": 64}, arch_models.TRT_OPTIONS,
                                 tmp_path / "yolo_trt.onnx")
    out = ["--out", str(tmp_path / "b"), "--results", str(tmp_path / "r"), "--reports", str(tmp_path / "rep")]
    shape = ["--shape", "images:1x3x64x64,2x3x64x64,4x3x128x128"]
    assert check([str(model), "--engine", "tensorrt-rtx", *shape, *out]) == 0
    (found,) = (tmp_path / "rep").glob("yolo_trt*.json")
    report = json.loads(found.read_text())
    (column,) = report["columns"]
    assert column["engine"] == "tensorrt-rtx" and column["status"] == "built"
    (cells,) = (tmp_path / "r").rglob("tensorrt-rtx-*.jsonl")
    cell = [json.loads(line) for line in cells.read_text().splitlines()][-1]
    assert cell["options"]["profile"]["images"]["max"] == [4, 3, 128, 128], "the range reached the plan's profile"
    convs = [n for n in report["nodes"] if n["op"] == "Conv"]
    assert len(convs) == len(arch_models.compute_nodes(dynamic)) == 32
    assert {n["results"][0]["precision"] for n in convs} == {"int8"}, "every Conv in an INT8 layer of the plan"
