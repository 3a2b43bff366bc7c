"""The ONNX Runtime adapter on real ORT: stages, outputs and per-node precision evidence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from engines import get_engine  # noqa: E402
from engines.hardware import cpu_label  # noqa: E402
from engines.onnxruntime import Adapter  # noqa: E402
from generators.bundle import Bundle, load_bundle  # noqa: E402
from generators.onnx_util import const, dequantize, make_model, node, quantize, value_info  # noqa: E402

X_STEP, Y_STEP = 0.02, 0.05


def write_bundle(root: Path, model, inputs: Dict[str, np.ndarray], expected: Dict[str, np.ndarray],
                 targets, steps: Dict[str, Optional[float]]) -> Bundle:
    """A minimal bundle in the generators/bundle.py layout."""
    root.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(root / "model.onnx"))
    np.savez(root / "inputs.npz", **inputs)
    np.savez(root / "expected.npz", **expected)
    meta = {"bundle": f"test/{root.name}", "case": "test", "params": {}, "digest": "test",
            "target_nodes": list(targets), "tolerance_steps": 1.0,
            "outputs": {name: {"step": step} for name, step in steps.items()}}
    (root / "case.json").write_text(json.dumps(meta))
    return load_bundle(root)


def conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray, group: int) -> np.ndarray:
    """Float reference Conv, 3x3, pads 1."""
    win = np.lib.stride_tricks.sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
    cpg, opg = w.shape[1], w.shape[0] // group
    parts = [np.einsum("nchwij,ocij->nohw", win[:, g * cpg:(g + 1) * cpg], w[g * opg:(g + 1) * opg]) for g in range(group)]
    return np.concatenate(parts, axis=1) + b.reshape(1, -1, 1, 1)


def qdq_conv(root: Path, output_q: bool = True, group: int = 1, cin: int = 4, cout: int = 8,
             act=np.int8, weight=np.int8) -> Bundle:
    """x -> Q/DQ -> Conv(DQ per-channel weights, DQ int32 bias) [-> Q/DQ] as a bundle."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((cout, cin // group, 3, 3)).astype(np.float32)
    w_s = (np.abs(w).reshape(cout, -1).max(axis=1) / 127).astype(np.float32)
    w_zp = np.zeros(cout, weight)
    w_q = quantize(w, w_s, w_zp, axis=0)
    zp = np.array(0 if act == np.int8 else 128, act)
    b_s = (X_STEP * w_s).astype(np.float32)
    b_q = np.rint(rng.standard_normal(cout) * 0.1 / b_s).astype(np.int32)
    inits = [const("w_q", w_q), const("w_s", w_s), const("w_zp", w_zp), const("x_s", np.float32(X_STEP)),
             const("x_zp", zp), const("y_s", np.float32(Y_STEP)), const("y_zp", zp), const("b_q", b_q),
             const("b_s", b_s), const("b_zp", np.zeros(cout, np.int32))]
    nodes = [node("QuantizeLinear", ["x", "x_s", "x_zp"], ["xq"]),
             node("DequantizeLinear", ["xq", "x_s", "x_zp"], ["xd"]),
             node("DequantizeLinear", ["w_q", "w_s", "w_zp"], ["wd"], axis=0),
             node("DequantizeLinear", ["b_q", "b_s", "b_zp"], ["bd"], axis=0),
             node("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1], group=group)]
    out = "c"
    if output_q:
        nodes += [node("QuantizeLinear", ["c", "y_s", "y_zp"], ["cq"]), node("DequantizeLinear", ["cq", "y_s", "y_zp"], ["y"])]
        out = "y"
    model = make_model("qdq_conv", nodes, [value_info("x", np.float32, [1, cin, 8, 8])],
                       [value_info(out, np.float32, [1, cout, 8, 8])], inits)
    x = rng.standard_normal((1, cin, 8, 8)).astype(np.float32)
    xd = dequantize(quantize(x, np.float32(X_STEP), zp), np.float32(X_STEP), zp)
    ref = conv2d(xd, dequantize(w_q, w_s, w_zp, axis=0), dequantize(b_q, b_s, np.zeros(cout, np.int32), axis=0), group)
    if output_q:
        ref = dequantize(quantize(ref, np.float32(Y_STEP), zp), np.float32(Y_STEP), zp)
    return write_bundle(root, model, {"x": x}, {out: ref.astype(np.float32)}, ["node_of_c"],
                        {out: Y_STEP if output_q else None})


def dynamic_integer(root: Path, op: str, weight=np.int8) -> Bundle:
    """x -> DynamicQuantizeLinear -> MatMulInteger/ConvInteger -> Cast -> Mul(x scale) as a bundle."""
    rng = np.random.default_rng(1)
    conv = op == "ConvInteger"
    w_shape, x_shape = ((8, 4, 3, 3), (1, 4, 8, 8)) if conv else ((16, 8), (4, 16))
    w_zp = np.array(0 if weight == np.int8 else 128, weight)
    w = (rng.integers(-100, 100, w_shape) + int(w_zp)).astype(weight)
    attrs = {"pads": [1, 1, 1, 1]} if conv else {}
    nodes = [node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xzp"]),
             node(op, ["xq", "w", "xzp", "w_zp"], ["i"], **attrs),
             node("Cast", ["i"], ["f"], to=onnx.TensorProto.FLOAT),
             node("Mul", ["f", "xs"], ["y"])]
    x = rng.standard_normal(x_shape).astype(np.float32)
    # DynamicQuantizeLinear: uint8, scale over [min(x, 0), max(x, 0)].
    lo, hi = min(x.min(), 0.0), max(x.max(), 0.0)
    s = np.float32((hi - lo) / 255)
    x_zp = np.uint8(np.clip(np.rint(-lo / s), 0, 255))
    xq = (np.clip(np.rint(x / s) + int(x_zp), 0, 255) - int(x_zp)).astype(np.float64)
    wi = w.astype(np.float64) - int(w_zp)
    ref = conv2d(xq, wi, np.zeros(8), 1) if conv else xq @ wi
    y_shape = (1, 8, 8, 8) if conv else (4, 8)
    model = make_model("dynamic", nodes, [value_info("x", np.float32, x_shape)],
                       [value_info("y", np.float32, y_shape)], [const("w", w), const("w_zp", w_zp)])
    return write_bundle(root, model, {"x": x}, {"y": (ref * s).astype(np.float32)}, ["node_of_i"], {"y": float(s)})


def assert_matches(bundle: Bundle, outputs: Dict[str, np.ndarray]) -> None:
    for name, expected in bundle.expected().items():
        step = bundle.output_step(name) or float(np.abs(expected).max()) / 127
        assert np.abs(outputs[name] - expected).max() <= step * 1.001, name


def test_probe_reports_version_and_cpu():
    info = Adapter().probe()
    assert info.available and info.version == ort.__version__
    assert info.hardware.startswith("cpu: ") and info.versions["onnxruntime"] == ort.__version__


def test_cpu_label_reads_model_name():
    label, detail = cpu_label("model name\t: Intel(R) Xeon(R)   Gold 6338 CPU\nflags\t: avx2 avx512_vnni sse4_2\n")
    assert label == "cpu: Intel(R) Xeon(R) Gold 6338 CPU"
    assert detail["isa"] == "avx2 avx512_vnni"


def test_qdq_conv_with_output_q_fuses_into_qlinearconv(tmp_path):
    bundle = qdq_conv(tmp_path / "outq")
    obs = get_engine("onnxruntime").run(bundle)
    assert (obs.stage, obs.error) == ("run", "")
    assert_matches(bundle, obs.outputs)
    evidence = obs.precision["node_of_c"]
    assert evidence["precision"] == "int8"
    assert "fused into QLinearConv 'node_of_c" in evidence["evidence"]
    assert "profile: QLinearConv" in evidence["evidence"] and "int8" in evidence["evidence"]
    assert obs.options["graph_optimization_level"] == "ORT_ENABLE_ALL"
    assert obs.options["providers"] == ["CPUExecutionProvider"]


def test_qdq_conv_without_optimizations_stays_float(tmp_path):
    bundle = qdq_conv(tmp_path / "disabled")
    obs = Adapter(graph_optimization_level="ORT_DISABLE_ALL").run(bundle)
    assert obs.stage == "run" and obs.options["graph_optimization_level"] == "ORT_DISABLE_ALL"
    assert_matches(bundle, obs.outputs)
    assert obs.precision["node_of_c"]["precision"] == "float"
    assert "stays a float Conv 'node_of_c' with DequantizeLinear inputs" in obs.precision["node_of_c"]["evidence"]


def test_qdq_conv_without_output_q_is_not_fused(tmp_path):
    bundle = qdq_conv(tmp_path / "noq", output_q=False)
    obs = Adapter().run(bundle)
    assert obs.stage == "run"
    assert_matches(bundle, obs.outputs)
    assert obs.precision["node_of_c"]["precision"] == "float"


@pytest.mark.parametrize("group,cin,cout", [(4, 4, 8), (2, 6, 6)], ids=["cpg1", "cpg3"])
def test_grouped_qdq_conv_fuses(tmp_path, group, cin, cout):
    bundle = qdq_conv(tmp_path / f"g{group}", group=group, cin=cin, cout=cout)
    obs = Adapter().run(bundle)
    assert obs.stage == "run"
    assert_matches(bundle, obs.outputs)
    assert obs.precision["node_of_c"]["precision"] == "int8"


def test_uint8_activations_fuse(tmp_path):
    bundle = qdq_conv(tmp_path / "u8", act=np.uint8)
    obs = Adapter().run(bundle)
    assert_matches(bundle, obs.outputs)
    assert obs.precision["node_of_c"]["precision"] == "int8"


@pytest.mark.parametrize("op,weight", [("MatMulInteger", np.int8), ("ConvInteger", np.int8), ("ConvInteger", np.uint8)])
def test_dynamic_quantize_integer_kernels(tmp_path, op, weight):
    bundle = dynamic_integer(tmp_path / f"{op}{np.dtype(weight).name}", op, weight)
    obs = Adapter().run(bundle)
    assert (obs.stage, obs.error) == ("run", "")
    assert_matches(bundle, obs.outputs)
    evidence = obs.precision["node_of_i"]
    assert evidence["precision"] == "int8"
    assert f"runs as integer kernel {op} 'node_of_i'" in evidence["evidence"]
    assert np.dtype(weight).name in evidence["evidence"]


def test_broken_model_fails_at_load_with_text(tmp_path):
    bundle = qdq_conv(tmp_path / "broken")
    bundle.model_path.write_bytes(b"not an onnx model")
    obs = Adapter().run(bundle)
    assert obs.stage == "" and obs.error and not obs.outputs


def test_missing_onnxruntime_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    info = Adapter().probe()
    assert (info.available, info.unavailable_status) == (False, "skipped")
    assert info.reason.startswith("onnxruntime is not installed: ")
    obs = Adapter().run(qdq_conv(tmp_path / "missing"))
    assert obs.stage == "" and "not installed" in obs.error


def test_importing_the_adapter_does_not_import_onnxruntime():
    code = "import sys, engines.onnxruntime; sys.exit('onnxruntime' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    assert subprocess.run([sys.executable, "-c", code], cwd=root).returncode == 0
