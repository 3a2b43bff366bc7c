"""The ONNX Runtime adapter on real ORT: stages, outputs and per-node precision evidence."""

from __future__ import annotations

import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from core.isa import isa  # noqa: E402
from engines import get_engine  # noqa: E402
from engines.onnxruntime import Adapter  # noqa: E402
from generators.bundle import Bundle  # noqa: E402
from generators.onnx_util import const, make_model, node, value_info  # noqa: E402
from tests.engines.qdq_models import assert_matches, conv2d, error_steps, qdq_conv, write_bundle  # noqa: E402

# QDQ activations ORT's QLinearConv computes on: int8 only on ARM; on x86-64 its QDQS8ToU8Transformer
# makes them uint8 (QDQIsInt8Allowed() in qdq_selector_action_transformer.h).
ACTIVATION = "int8" if platform.machine().lower() in ("aarch64", "arm64") else "uint8"
# core.isa levels at which MLAS has u8s8 GEMM kernels of its own (not the widening SSE2 one).
U8S8_OWN_KERNELS = ("avx2", "avx_vnni", "avx512", "avx512_vnni", "amx")


def profiled_types(evidence: str) -> list:
    """The distinct input types the profile names at the end of an evidence string, in order."""
    found = re.search(r"input types ([\w, ]+)$", evidence)
    assert found, evidence
    return found.group(1).split(", ")


def dynamic_integer(root: Path, op: str, weight=np.int8) -> Bundle:
    """x -> DynamicQuantizeLinear -> MatMulInteger/ConvInteger -> Cast -> Mul(x scale) as a bundle."""
    rng = np.random.default_rng(1)
    conv = op == "ConvInteger"
    w_shape, x_shape = ((8, 4, 3, 3), (1, 4, 8, 8)) if conv else ((16, 8), (4, 16))
    w_zp = np.array(0 if weight == np.int8 else 128, weight)
    # |w - zp| <= 63: no u8*s8 pair sum saturates without VNNI (see qdq_models.qdq_conv)
    w = (rng.integers(-63, 64, w_shape) + int(w_zp)).astype(weight)
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


def test_probe_reports_version_and_cpu():
    info = Adapter().probe()
    assert info.available and info.version == ort.__version__
    assert info.hardware.startswith("cpu: ") and info.versions["onnxruntime"] == ort.__version__


def test_qdq_conv_with_output_q_fuses_into_qlinearconv(tmp_path):
    bundle = qdq_conv(tmp_path / "outq")
    obs = get_engine("onnxruntime").run(bundle)
    assert (obs.stage, obs.error) == ("run", "")
    assert_matches(bundle, obs.outputs)
    evidence = obs.precision["node_of_c"]
    assert evidence["precision"] == "int8"
    assert "fused into QLinearConv 'node_of_c" in evidence["evidence"]
    assert f"profile: QLinearConv ran on CPUExecutionProvider, first input {ACTIVATION}," in evidence["evidence"]
    assert profiled_types(evidence["evidence"]) == [ACTIVATION, "float", "int8", "int32"]  # int8 weights, int32 bias
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
    assert "first input uint8," in evidence["evidence"]  # DynamicQuantizeLinear's output is uint8
    assert profiled_types(evidence["evidence"]) == list(dict.fromkeys(["uint8", np.dtype(weight).name]))


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64's u8s8 kernels only")
def test_saturating_weights_follow_the_isa(tmp_path):
    """8-bit weights saturate u8s8 pair sums without VNNI (ORT's quantization guide on reduce_range); with
    session.x64quantprecision (microsoft/onnxruntime#12088) ORT rewrites them to u8 and is exact again."""
    bundle = qdq_conv(tmp_path / "w8", weight_bits=8)
    default, rewritten = Adapter().run(bundle), Adapter(x64quantprecision="1").run(bundle)
    for obs in (default, rewritten):
        assert (obs.stage, obs.error) == ("run", "")
        assert obs.precision["node_of_c"]["precision"] == "int8"
    level = isa()
    # MLAS (mlas/lib/platform.cpp) has u8s8 kernels of its own from AVX2 up, and in its Windows build at
    # SSE4.1; below that u8s8 widens to 16 bits first. Own kernels without VNNI use vpmaddubsw and saturate;
    # the rewrite applies wherever the u8s8 and u8u8 kernels differ (MlasPlatformU8S8Overflow), VNNI or not.
    own_kernels = level.level in U8S8_OWN_KERNELS or (level.level == "sse4.1" and sys.platform == "win32")
    off = error_steps(bundle, default.outputs)["y"]
    assert (off <= 1.001) == (level.vnni or not own_kernels), f"{off:.3g} steps off on {level.label}"
    assert profiled_types(default.precision["node_of_c"]["evidence"]) == [ACTIVATION, "float", "int8", "int32"]
    assert_matches(bundle, rewritten.outputs)
    weights = [] if own_kernels else ["int8"]  # rewritten to uint8, which the list already names
    assert profiled_types(rewritten.precision["node_of_c"]["evidence"]) == [ACTIVATION, "float", *weights, "int32"]


def test_broken_model_fails_at_load_with_text(tmp_path):
    bundle = qdq_conv(tmp_path / "broken")
    bundle.model_path.write_bytes(b"not an onnx model")
    obs = Adapter().run(bundle)
    assert obs.stage == "" and obs.error and not obs.outputs


def test_a_model_newer_than_the_version_reads_is_not_applicable_with_its_ir_version(tmp_path):
    bundle = qdq_conv(tmp_path / "newer")
    model = onnx.load(str(bundle.model_path))
    model.ir_version = 99
    onnx.save(model, str(bundle.model_path))
    obs = Adapter().run(bundle)
    assert obs.stage == "" and "Unsupported model IR version: 99" in obs.error
    assert re.fullmatch(r"the model's ONNX IR version 99 is newer than this version reads \(IR \d+ at most\)",
                        obs.options["not_applicable"])


def test_a_model_that_fails_at_load_for_another_reason_is_not_not_applicable(tmp_path):
    bundle = qdq_conv(tmp_path / "broken")
    bundle.model_path.write_bytes(b"not an onnx model")
    assert "not_applicable" not in Adapter().run(bundle).options


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


def test_a_maxpool_ort_runs_on_uint8_is_int8_whatever_its_op_name(tmp_path):
    """x -> Q -> DQ -> MaxPool -> Q -> DQ: ORT drops the pairs around MaxPool and runs it on uint8 (its profile says
    so); the node is INT8 by what ran, not float by its op name."""
    s, zp = np.float32(0.02), np.uint8(128)
    nodes = [node("QuantizeLinear", ["x", "s", "zp"], ["xq"]), node("DequantizeLinear", ["xq", "s", "zp"], ["xd"]),
             node("MaxPool", ["xd"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             node("QuantizeLinear", ["p", "s", "zp"], ["pq"]), node("DequantizeLinear", ["pq", "s", "zp"], ["y"])]
    model = make_model("maxpool", nodes, [value_info("x", np.float32, (1, 4, 8, 8))],
                       [value_info("y", np.float32, (1, 4, 4, 4))], [const("s", s), const("zp", zp)])
    x = np.random.default_rng(0).uniform(-2, 2, (1, 4, 8, 8)).astype(np.float32)
    q = (np.clip(np.rint(x / s) + 128, 0, 255) - 128) * s
    y = q.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5)).astype(np.float32)
    bundle = write_bundle(tmp_path / "maxpool", model, {"x": x}, {"y": y}, ["node_of_p"], {"y": float(s)})
    obs = Adapter().run(bundle)
    assert (obs.stage, obs.error) == ("run", "")
    evidence = obs.precision["node_of_p"]
    assert evidence["precision"] == "int8", evidence["evidence"]
    assert evidence["layer_type"] == "MaxPool" and evidence["inputs"][0] == "uint8"
    assert "runs MaxPool 'node_of_p' on uint8 inputs" in evidence["evidence"]


def test_a_weightless_initializer_is_named_in_the_reason(tmp_path):
    """An initializer whose raw_data holds 0 bytes: ONNX Runtime nests the cause inside "Exception during
    initialization: <source> <function>"; the reason is the innermost message, the initializer named."""
    from engines.reasons import failure_evidence

    weightless = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[4])
    weightless.raw_data = b""
    model = make_model("weightless", [node("Add", ["x", "w"], ["y"])], [value_info("x", np.float32, [4])],
                       [value_info("y", np.float32, [4])], [])
    model.graph.initializer.append(weightless)
    obs = Adapter().run(write_bundle(tmp_path / "w", model, {"x": np.zeros(4, np.float32)},
                                     {"y": np.zeros(4, np.float32)}, ["node_of_y"], {"y": None}))
    assert obs.error and not obs.outputs
    _, reason = failure_evidence(obs.error)
    assert reason.startswith("Initializer 'w': raw_data size (0 bytes) does not match"), reason


def test_cells_share_one_owned_folder_and_leave_nothing_behind(tmp_path, monkeypatch):
    """Each cell's optimized model and profile go in a folder of its own inside one folder the adapter owns for all
    its cells (core.tempdirs.owned): nothing of a cell is left after it, nothing of the adapter after close."""
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    adapter = Adapter()
    for name in ("a", "b"):
        obs = adapter.run(qdq_conv(tmp_path / name))
        assert obs.stage == "run" and obs.options["optimized_model_saved"] and obs.precision, obs.error
        folders = list(scratch.glob("qdq-ort-*"))
        assert len(folders) == 1 and [p.name for p in folders[0].iterdir()] == [".owner"]
    adapter.close()
    assert list(scratch.iterdir()) == []
