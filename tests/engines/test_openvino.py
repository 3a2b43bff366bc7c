"""The OpenVINO adapter on real OpenVINO (CPU): stages, outputs and per-node precision from rt_info."""

from __future__ import annotations

import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from packaging.specifiers import SpecifierSet

onnx = pytest.importorskip("onnx")
ov = pytest.importorskip("openvino")

from core.isa import isa  # noqa: E402
from engines import get_engine  # noqa: E402
from engines.openvino import Adapter, layer_precision, release  # noqa: E402
from generators.bundle import Bundle  # noqa: E402
from generators.onnx_util import const, make_model, node, value_info  # noqa: E402
from tests.engines.qdq_models import assert_matches, error_steps, qdq_conv, write_bundle  # noqa: E402

# OpenVINO's CPU plugin picks u8 or i8 kernels by instruction set: both are INT8.
INT8_EVIDENCE = re.compile(r"type Convolution, runtimePrecision (i8|u8)\b")
# Observed, not documented: OpenVINO 2026.4.1's CPU plugin has no convolution for u8 activations with u8
# weights and refuses the model when it compiles ("No suitable implementations"), on AVX2 (emulated),
# AVX-512 without VNNI (ONEDNN_MAX_CPU_ISA=AVX512_CORE) and AVX-512 VNNI alike.
U8_WEIGHTS_REFUSED = SpecifierSet(">=2026.4,<2026.5")

def matmul_integer(root: Path) -> Bundle:
    """x -> DynamicQuantizeLinear -> MatMulInteger(int8 weights) -> Cast -> Mul(x scale) as a bundle."""
    rng = np.random.default_rng(1)
    w = rng.integers(-100, 100, (16, 8)).astype(np.int8)
    nodes = [node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xzp"]),
             node("MatMulInteger", ["xq", "w", "xzp", "w_zp"], ["i"]),
             node("Cast", ["i"], ["f"], to=onnx.TensorProto.FLOAT),
             node("Mul", ["f", "xs"], ["y"])]
    x = rng.standard_normal((4, 16)).astype(np.float32)
    lo, hi = min(x.min(), 0.0), max(x.max(), 0.0)
    s = np.float32((hi - lo) / 255)
    x_zp = np.clip(np.rint(-lo / s), 0, 255)
    xq = np.clip(np.rint(x / s) + x_zp, 0, 255) - x_zp
    model = make_model("mmi", nodes, [value_info("x", np.float32, [4, 16])], [value_info("y", np.float32, [4, 8])],
                       [const("w", w), const("w_zp", np.int8(0))])
    ref = (xq @ w.astype(np.float64)) * s
    return write_bundle(root, model, {"x": x}, {"y": ref.astype(np.float32)}, ["node_of_i"], {"y": float(s)})


def test_release_is_pep440():
    assert release("2026.4.1-22982-e213a147257-releases/2026/4") == "2026.4.1"
    assert release("2024.6.0-17404-4c0f47d2335-releases/2024/6") == "2024.6.0"


def test_probe_reports_release_and_full_build():
    info = Adapter().probe()
    assert info.available and info.hardware.startswith("cpu: ")
    assert info.version == release(ov.__version__)
    assert info.versions["openvino"] == ov.__version__


@pytest.mark.parametrize("output_q", [True, False], ids=["output_q", "no_output_q"])
def test_qdq_conv_runs_in_int8(tmp_path, output_q):
    bundle = qdq_conv(tmp_path / "conv", output_q=output_q)
    obs = get_engine("openvino").run(bundle)
    assert (obs.stage, obs.error) == ("run", "")
    assert_matches(bundle, obs.outputs)
    evidence = obs.precision["node_of_c"]
    assert evidence["precision"] == "int8"
    assert INT8_EVIDENCE.search(evidence["evidence"]), evidence["evidence"]
    assert obs.options["config"] == {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"}


@pytest.mark.parametrize("group,cin,cout", [(4, 4, 8), (2, 6, 6)], ids=["cpg1", "cpg3"])
def test_grouped_qdq_conv_runs_in_int8(tmp_path, group, cin, cout):
    bundle = qdq_conv(tmp_path / f"g{group}", group=group, cin=cin, cout=cout)
    obs = Adapter().run(bundle)
    assert obs.stage == "run"
    assert_matches(bundle, obs.outputs)
    assert obs.precision["node_of_c"]["precision"] == "int8"


def test_uint8_activations_run_in_int8(tmp_path):
    bundle = qdq_conv(tmp_path / "u8", act=np.uint8)
    obs = Adapter().run(bundle)
    assert_matches(bundle, obs.outputs)
    assert obs.precision["node_of_c"]["precision"] == "int8"
    assert INT8_EVIDENCE.search(obs.precision["node_of_c"]["evidence"])


@pytest.mark.parametrize("spelling", ["i8", "u8", "I8", "U8"])
def test_either_int8_spelling_is_int8(spelling):
    layers = [{"name": "c", "type": "Convolution", "precision": spelling, "outputs": "f32", "original": ["c"]}]
    assert layer_precision("c", layers)["precision"] == "int8"


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64's u8s8 kernels only")
def test_saturating_weights_follow_the_isa(tmp_path):
    """8-bit weights saturate oneDNN's u8s8 pair sums without VNNI, at every such ISA level (oneDNN's
    "Nuances of int8 computations"); OpenVINO has no switch to avoid it. The level is oneDNN's, cap included."""
    bundle = qdq_conv(tmp_path / "w8", weight_bits=8)
    obs = Adapter().run(bundle)
    assert (obs.stage, obs.error) == ("run", "")
    assert INT8_EVIDENCE.search(obs.precision["node_of_c"]["evidence"]), obs.precision["node_of_c"]["evidence"]
    level = isa(onednn=True)
    off = error_steps(bundle, obs.outputs)["y"]
    assert (off <= 1.001) == level.vnni, f"{off:.3g} steps off on {level.label}: VNNI matches, the rest saturate"


def test_uint8_weights_never_raise(tmp_path):
    """u8 activations with u8 weights: whatever the plugin does, the adapter returns an observation; it never raises."""
    bundle = qdq_conv(tmp_path / "u8w", act=np.uint8, weight=np.uint8)
    obs = Adapter().run(bundle)
    if release(ov.__version__) in U8_WEIGHTS_REFUSED:
        with pytest.raises(Exception, match="No suitable implementations"):  # what the adapter caught
            ov.Core().compile_model(str(bundle.model_path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        assert obs.stage == "load" and "No suitable implementations" in obs.error, obs.error
    if obs.stage == "run":
        assert obs.error == ""
        assert_matches(bundle, obs.outputs)
        assert obs.precision["node_of_c"]["precision"] == "int8"
    else:  # read, then refused at compile: the error text says so, and nothing after it is claimed
        assert obs.stage == "load" and obs.error.strip(), obs.error
        assert set(obs.timings) == {"load"} and obs.outputs == {} and obs.precision == {}


def test_matmul_integer_is_computed_in_float(tmp_path):
    bundle = matmul_integer(tmp_path / "mmi")
    obs = Adapter().run(bundle)
    assert obs.stage == "run"
    assert_matches(bundle, obs.outputs)
    assert obs.precision["node_of_i"]["precision"] == "float"
    assert "type FullyConnected, runtimePrecision f32" in obs.precision["node_of_i"]["evidence"]


def test_layer_matching_prefers_exact_names_and_skips_plumbing():
    layers = [
        {"name": "t/transpose_b", "type": "Transpose", "precision": "i32", "outputs": "i32",
         "original": ["t/transpose_b"]},
        {"name": "other", "type": "Convolution", "precision": "i8", "outputs": "f32", "original": ["other", "t/x"]},
        {"name": "t", "type": "FullyConnected", "precision": "f32", "outputs": "f32", "original": ["t"]},
    ]
    assert layer_precision("t", layers)["precision"] == "float"
    assert layer_precision("missing", layers)["precision"] == "unknown"


def test_broken_model_fails_at_load_with_text(tmp_path):
    bundle = qdq_conv(tmp_path / "broken")
    bundle.model_path.write_bytes(b"not an onnx model")
    obs = Adapter().run(bundle)
    assert obs.stage == "" and obs.error and not obs.outputs


def test_missing_openvino_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)
    info = Adapter().probe()
    assert (info.available, info.unavailable_status) == (False, "skipped")
    assert info.reason.startswith("openvino is not installed: ")
    obs = Adapter().run(qdq_conv(tmp_path / "missing"))
    assert obs.stage == "" and "not installed" in obs.error


def test_missing_device_is_not_run():
    info = Adapter(device="NPU_THAT_IS_NOT_HERE").probe()
    assert (info.available, info.unavailable_status) == (False, "not_run")
    assert "NPU_THAT_IS_NOT_HERE" in info.reason


def test_importing_the_adapter_does_not_import_openvino():
    code = "import sys, engines.openvino; sys.exit('openvino' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    assert subprocess.run([sys.executable, "-c", code], cwd=root).returncode == 0


def test_dynamic_quantization_of_compressed_weights_is_off_unless_asked(tmp_path):
    """OpenVINO's CPU plugin quantizes a MatMul's activations to int8 on the fly where its weights are compressed
    (int4): the reference column runs without it, and the option (a column of its own) turns it back on."""
    from cases import get_case
    from engines.cells import run_cell
    from generators import write
    from generators.bundle import load_bundle

    case = get_case("int4_matmulnbits_fusion")
    bundle = load_bundle(write.write_bundle(case, {"form": "matmul_axis0", "activation": "float32"}, tmp_path).path)
    off = get_engine("openvino")
    cell = run_cell(case, bundle, off, off.probe(), {"source": "local"})
    assert cell.status == "pass" and cell.max_error_steps == 0.0, cell.error
    assert cell.variant == {}
    with pytest.raises(ValueError, match="whole number"):
        get_engine("openvino", dynamic_quantization_group_size="on")
    on = get_engine("openvino", dynamic_quantization_group_size="32")
    assert on.config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] == "32"
    # What it then computes depends on the CPU (its int8 kernels): only that it ran, and where it says it did.
    obs = on.run(bundle)
    assert obs.options["config"]["DYNAMIC_QUANTIZATION_GROUP_SIZE"] == "32" and obs.stage in ("run", "compare")


def _roi_align(root: Path, batch_index: int) -> Bundle:
    """x [1, 3, 8, 8] -> RoiAlign(one box, its batch index constant) -> y."""
    model = make_model("roi", [node("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=2, output_width=2)],
                       [value_info("x", np.float32, [1, 3, 8, 8])], [value_info("y", np.float32, [1, 3, 2, 2])],
                       [const("rois", np.array([[0, 0, 4, 4]], np.float32)), const("bi", np.array([batch_index]))],
                       opset=17)
    x = np.ones((1, 3, 8, 8), np.float32)
    return write_bundle(root, model, {"x": x}, {"y": np.ones((1, 3, 2, 2), np.float32)}, ["node_of_y"], {"y": None})


def test_a_run_failure_says_why_after_the_cpu_plugins_node_line(tmp_path):
    """OpenVINO's CPU plugin names the node ("Node y of type ROIAlign") before the check that failed and its message:
    the reason is the message, with the operation named."""
    from engines.reasons import failure_evidence

    obs = Adapter().run(_roi_align(tmp_path / "roi", batch_index=-3))
    assert "of type ROIAlign" in obs.error, obs.error
    node_name, reason = failure_evidence(obs.error)
    assert reason == "ROIAlign: Batch index cannot be less, than -1" and node_name, (node_name, reason)


def test_one_core_serves_every_cell_and_the_stages_make_their_own(tmp_path, monkeypatch):
    """A column's adapter makes one openvino.Core for all its cells (its CPU plugin loaded once); a bug bundle's
    repro.py calls the stages without one, and they make their own, as before."""
    from engines.base import Observation
    from engines.openvino import stages

    made = []

    class CountedCore(ov.Core):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(ov, "Core", CountedCore)
    adapter = Adapter()
    first, second = qdq_conv(tmp_path / "a"), qdq_conv(tmp_path / "b", output_q=False)
    for bundle in (first, second, first):
        obs = adapter.run(bundle)
        assert (obs.stage, obs.error) == ("run", ""), obs.error
        assert_matches(bundle, obs.outputs)
    assert len(made) == 1
    alone = Observation()
    assert stages.compile_stages(ov, str(first.model_path), "CPU", adapter.config, alone) is not None
    assert len(made) == 2 and alone.stage == "build"
