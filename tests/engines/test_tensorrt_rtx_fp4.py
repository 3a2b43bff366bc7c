"""FP4 per-node precision on TensorRT for RTX: real listings of seeds 019-021, and real builds with no GPU.

The per-node precision says whether the GEMM or convolution computes in FP4 or in float: a W4A16 FP4 weight is
dequantized to float16 by a kernel of its own and the GEMM is float16 (#4833's silent float), an NVFP4 GEMM with
dynamically quantized activations reads FP4 on both sides.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cases import get_case
from cases.low_precision import RTX_2026_LOGS
from engines.tensorrt import layers as L
from tests.engines.rtx_cells import rtx_cell

REPO = Path(__file__).resolve().parents[2]
BUILDS = json.loads((REPO / RTX_2026_LOGS).read_text())["builds"]


@pytest.mark.parametrize("key", sorted(BUILDS))
def test_the_measured_listing_gives_the_recorded_precision(key):
    op = "Conv" if "op=conv" in key else "MatMul"
    entry = L.attribute(L.from_build_log(BUILDS[key]["layers_message"]), {"node_of_y": op})["node_of_y"]
    assert entry["precision"] == BUILDS[key]["node_of_y"], entry["evidence"]
    assert entry["via"] == "metadata"


def test_fp4_weight_only_is_a_float16_gemm_after_a_dequantizing_kernel():
    key = "1.7.1.116 fp4_weight_only/op=matmul+weights=per_tensor+activations=w4a16 target=SM120"
    layers = L.from_build_log(BUILDS[key]["layers_message"])
    dequantize = next(lay for lay in layers if "node_of_w_dq" in lay.metadata and lay.type == "kgen")
    assert dequantize.weights == ["fp4"] and dequantize.outputs[0].dtype == "fp16"  # FP4 in, float16 out
    entry = L.attribute(layers, {"node_of_y": "MatMul"})["node_of_y"]
    assert (entry["layer_type"], entry["inputs"], entry["precision"]) == ("gemm", ["fp16", "fp16"], "float")


def test_nvfp4_with_dynamic_activations_is_an_fp4_gemm():
    key = "1.7.1.116 nvfp4_two_level_scales/double_scale=float16+activations=dynamic target=SM120"
    entry = L.attribute(L.from_build_log(BUILDS[key]["layers_message"]), {"node_of_y": "MatMul"})["node_of_y"]
    assert entry["inputs"][0] == "fp4" and entry["weights"] == ["fp4"] and entry["precision"] == "fp4"


@pytest.mark.parametrize("text, dtype", [("FP4E2M1", "fp4"), ("FP4", "fp4"), ("E2M1", "fp4"), ("FP8", "fp8"),
                                         ("Int4", "int4"), ("Half", "fp16")])
def test_data_type_words(text, dtype):
    assert L.dtype(text) == dtype


@pytest.mark.parametrize("act, weights, precision", [
    ("fp4", ["fp4"], "fp4"), ("fp16", ["fp4"], "fp4"), ("fp16", ["int4"], "int4"), ("fp8", ["fp8"], "fp8"),
    ("fp16", [], "float"), ("fp4", ["fp8"], "unknown"),
])
def test_a_gemm_layer_precision_from_its_types(act, weights, precision):
    layer = L.Layer("g", "gemm", inputs=[L.Tensor("x", act)], weights=weights, outputs=[L.Tensor("y", "fp16")])
    assert L.layer_precision(layer, "MatMul") == precision


# ---- real builds with the TensorRT-RTX of the test environment (no GPU needed) ----

def _rtx():
    if os.environ.get("QDQ_REQUIRE_RTX") == "1":
        import tensorrt_rtx  # noqa: F401
    else:
        pytest.importorskip("tensorrt_rtx")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("rtx-fp4")


W4A16 = ("fp4_weight_only", {"op": "matmul", "weights": "per_tensor", "activations": "w4a16"})


def test_an_fp4_w4a16_matmul_is_refused_below_blackwell_and_built_in_float_for_sm120(root):
    _rtx()
    sm89, sm120 = (rtx_cell(root, *W4A16, target=t) for t in ("SM89", "SM120"))
    assert sm89.status == "fail" and sm89.signature == "rtx_hw_specific_type" and sm89.verdict == "as documented"
    assert sm120.status == "built" and sm120.verdict == "as documented", sm120.error
    assert sm120.precision["node_of_y"]["precision"] == "float" and sm120.fused is False


def test_the_lint_predicts_the_sm89_refusal_and_float_from_observed_cells_and_a_real_build_agrees(root, tmp_path):
    """The lint's FP4 rule: the quantized-types page per target, and the default target's float from observed cells
    (here a results file of real cells built a moment ago, as reports/observed holds them)."""
    from dataclasses import asdict

    from check.lint import lint_model
    from generators import write
    from matrix.predict import compare

    _rtx()
    default = rtx_cell(root, *W4A16)
    assert default.status == "built" and default.precision["node_of_y"]["precision"] == "float"
    observed = tmp_path / "no-gpu"
    observed.mkdir()
    record = dict(asdict(default), run=dict(default.run, source="observed"))
    cells = observed / f"rtx-{default.engine_version}.jsonl"
    cells.write_text(json.dumps(record) + "\n")
    from matrix import observed as manifest  # only a file its manifest lists at its digest is an observation

    manifest.save(manifest.add(manifest.Manifest(tmp_path), [cells], "this machine", "pytest"))
    model = write.build(get_case(W4A16[0]), W4A16[1]).model
    found = [f for f in lint_model(model, observed=tmp_path) if f.rule == "fp4_weight_only"]
    sm89 = next(f for f in found if f.setting == "target=SM89")
    assert sm89.predicted == "build fails" and "10.0 or later" in sm89.detail
    floats = [f for f in found if f.predicted == "float" and f.engine == "tensorrt-rtx"]
    assert floats and all(f.source.endswith(f"rtx-{default.engine_version}.jsonl") for f in floats)
    rows = compare(floats, [asdict(default)])
    assert [(r.observed, r.agrees) for r in rows] == [("float", True)]
    built = rtx_cell(root, *W4A16, target="SM89")
    assert [(r.observed, r.agrees) for r in compare([sm89], [asdict(built)])] == [("build fails", True)]
