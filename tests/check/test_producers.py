"""check.producers: float blocks quantized by onnxruntime quantize_static, readable by old ORT and TensorRT 8.x."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from check.lint import lint_path
from check.producers import BLOCKS, main, plan, produce


@pytest.fixture(scope="module")
def produced(tmp_path_factory):
    out = tmp_path_factory.mktemp("producers")
    return out, produce(out)


def test_every_block_and_recipe_is_written_with_a_manifest(produced):
    out, made = produced
    assert [m.name for m in made] == [name for name, _, _ in plan()]
    assert {m.block for m in made} >= {b.name for b in BLOCKS}
    manifest = json.loads((out / "manifest.json").read_text())
    assert [m["path"] for m in manifest] == [m.path for m in made]


def test_models_are_pinned_quantized_and_run_on_onnxruntime(produced):
    out, made = produced
    for m in made:
        model = onnx.load(str(out / m.path))
        onnx.checker.check_model(model)
        assert model.ir_version == 8
        assert {o.version for o in model.opset_import if o.domain in ("", "ai.onnx")} <= {13, 17}
        ops = {n.op_type for n in model.graph.node}
        assert {"QuantizeLinear", "DequantizeLinear"} <= ops and m.quantized_nodes >= 3
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        (y,) = ort.InferenceSession(str(out / m.path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
        assert y.shape == tuple(shape) and np.isfinite(y).all()


def test_the_transformer_block_has_its_ops(produced):
    out, _ = produced
    ops = {n.op_type for n in onnx.load(str(out / "ort_transformer_s8_per_channel.onnx")).graph.node}
    assert {"MatMul", "Add", "Softmax", "LayerNormalization"} <= ops


def _zero_point_dtypes(path):
    model = onnx.load(str(path))
    inits = {t.name: t for t in model.graph.initializer}
    return {onnx.helper.tensor_dtype_to_np_dtype(inits[n.input[2]].data_type).name
            for n in model.graph.node if n.op_type == "QuantizeLinear" and len(n.input) > 2}


def test_recipes_change_what_the_lint_sees(produced):
    out, _ = produced
    assert _zero_point_dtypes(out / "ort_resnet_u8_per_tensor.onnx") == {"uint8"}
    assert _zero_point_dtypes(out / "ort_resnet_s8_per_channel.onnx") == {"int8"}
    rules = lambda name: {f.rule for f in lint_path(out / f"{name}.onnx")}  # noqa: E731
    assert {"uint8_activation", "dq_non_activation"} <= rules("ort_resnet_u8_per_tensor")
    assert "uint8_activation" not in rules("ort_resnet_s8_per_channel")
    assert "dq_non_activation" not in rules("ort_resnet_s8_per_channel_float_bias")
    assert "conv_without_kernel_shape" in rules("ort_mobilenet_no_kernel_shape_s8_per_channel")
    matched = {f.rule for f in lint_path(out / "ort_mobilenet_s8_per_channel.onnx", reach=False)}
    assert "grouped_conv" in matched, "the depthwise Conv matches seed 003"
    assert "grouped_conv" not in rules("ort_mobilenet_s8_per_channel"), "behind the INT32 bias DQ's parse failure"


def test_cli_writes_the_models(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--only", "resnet_s8_per_tensor"]) == 0
    assert [p.name for p in tmp_path.glob("*.onnx")] == ["ort_resnet_s8_per_tensor.onnx"]
    assert "quantized" in capsys.readouterr().out
