"""Small Q/DQ models written as bundles, shared by the ONNX Runtime and OpenVINO adapter tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Optional

import numpy as np
import onnx

from core import numerics
from generators.bundle import Bundle, load_bundle
from generators.onnx_util import const, dequantize, make_model, node, quantize, value_info

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
    parts = [np.einsum("nchwij,ocij->nohw", win[:, g * cpg:(g + 1) * cpg], w[g * opg:(g + 1) * opg])
             for g in range(group)]
    return np.concatenate(parts, axis=1) + b.reshape(1, -1, 1, 1)


def qdq_conv(root: Path, output_q: bool = True, group: int = 1, cin: int = 4, cout: int = 8,
             act=np.int8, weight=np.int8, weight_bits: int = 7) -> Bundle:
    """x -> Q/DQ -> Conv(DQ per-channel weights, DQ int32 bias) [-> Q/DQ] as a bundle.

    weight_bits=7 (|w| <= 63, ORT's reduce_range) keeps every u8*s8 pair sum within 2 * 255 * 63 < 32767,
    so x86-64 CPUs without VNNI compute what VNNI does; weight_bits=8 (|w| <= 127) saturates there.
    """
    rng = np.random.default_rng(0)
    w = rng.standard_normal((cout, cin // group, 3, 3)).astype(np.float32)
    w_s = (np.abs(w).reshape(cout, -1).max(axis=1) / (2 ** (weight_bits - 1) - 1)).astype(np.float32)
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
        nodes += [node("QuantizeLinear", ["c", "y_s", "y_zp"], ["cq"]),
                  node("DequantizeLinear", ["cq", "y_s", "y_zp"], ["y"])]
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


def error_steps(bundle: Bundle, outputs: Dict[str, np.ndarray]) -> Dict[str, float]:
    """Output name -> worst error in its quantization steps (max|expected|/127 where it has none)."""
    errors = {}
    for name, expected in bundle.expected().items():
        step = numerics.output_step(bundle.meta, name) or float(np.abs(expected).max()) / 127
        errors[name] = float(np.abs(outputs[name] - expected).max()) / step
    return errors


def assert_matches(bundle: Bundle, outputs: Dict[str, np.ndarray]) -> None:
    for name, steps in error_steps(bundle, outputs).items():
        assert steps <= 1.001, f"{name}: {steps:.3g} steps off"
