"""generators.onnx_node_tests: the installed onnx's node tests for the quantization operators, as bundles at every
opset the converter and the checker allow, with ONNX's expected outputs; nothing of them is committed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

from cases.onnx_node_tests import OPS, OPSETS
from generators import onnx_node_tests
from generators.bundle import verify_bundle


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> onnx_node_tests.Written:
    return onnx_node_tests.write_all(tmp_path_factory.mktemp("bundles"))


def bundle(written: onnx_node_tests.Written, test: str, opset: int) -> Path:
    entry = next(e for e in written.entries if (e.test, e.opset) == (test, opset))
    return next(p for p in written.paths if p.name == entry.bundle.split("/", 1)[1])


def test_at_least_forty_node_tests_at_three_opsets_each_a_verified_bundle(written):
    tests = {e.test for e in written.entries}
    assert len(tests) >= 40 and {e.op for e in written.entries} == set(OPS)
    by_opset = {o: {e.test for e in written.entries if e.opset == o and e.bundle} for o in OPSETS}
    assert sum(len(t) >= 40 for t in by_opset.values()) >= 2 and sum(len(t) >= 35 for t in by_opset.values()) >= 3
    for path in written.paths:
        meta = verify_bundle(path).meta  # model, inputs and expected outputs hash to the digest case.json holds
        model = onnx.load(str(path / "model.onnx"))
        onnx.checker.check_model(model, full_check=True)
        assert model.ir_version == onnx.helper.find_min_ir_version_for(list(model.opset_import)), path.name
        assert meta["opset"] == meta["params"]["opset"] == model.opset_import[0].version


def test_each_test_is_written_at_its_own_opset_and_a_refused_conversion_says_why(written):
    own = {e.test: e.source_opset for e in written.entries}
    assert own["quantizelinear"] == 28 and own["qlinearmatmul_2D_uint8_float32"] == 21
    assert all(any(e.test == t and e.opset == o and e.bundle for e in written.entries) for t, o in own.items())
    refused = next(e for e in written.entries if (e.test, e.opset) == ("quantizelinear_e4m3fn", 13))
    assert not refused.bundle and refused.refused.startswith("converter: ") and "FLOAT8E4M3FN" in refused.refused
    manifest = json.loads((written.paths[0].parent / "conformance.json").read_text())
    assert {e["test"] for e in manifest["entries"]} == {e.test for e in written.entries}


def test_a_float8_input_is_a_constant_and_a_float8_output_is_kept_as_its_codes(written):
    path = bundle(written, "quantizelinear_e4m3fn", 21)
    meta = json.loads((path / "case.json").read_text())
    model = onnx.load(str(path / "model.onnx"))
    assert [i.name for i in model.graph.input] == ["x", "y_scale"]  # y_zero_point has no numpy type to feed
    assert meta["conformance"]["constants"] == {"y_zero_point": "float8_e4m3fn"}
    assert meta["outputs"]["y"]["codes"] == "float8_e4m3fn" and meta["outputs"]["y"]["dtype"] == "uint8"
    with np.load(path / "expected.npz") as f:
        codes = f["y"]
    import ml_dtypes

    assert codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32).tolist() == [0.0, 0.5, 1.0, 448.0, 96.0]


def test_a_dequantize_output_is_judged_in_its_own_step(written):
    meta = json.loads((bundle(written, "dequantizelinear_axis", 21) / "case.json").read_text())
    assert meta["outputs"]["y"]["step_kind"] == "quantization" and meta["tolerance_steps"] == 0.5
    assert meta["outputs"]["y"]["step"] == 2.0  # the smallest of the test's scales (2, 4, 5)


def test_only_the_architecture_dependent_types_are_built_per_target_at_their_first_opset(written):
    metas = [json.loads((p / "case.json").read_text()) for p in written.paths]
    per_target = {m["params"]["test"]: m["opset"] for m in metas if m["trt"].get("per_target")}
    assert per_target["dequantizelinear_e4m3fn"] == 19 and per_target["quantizelinear_int4"] == 21
    assert per_target["quantizelinear_float4e2m1"] == 23
    assert "quantizelinear" not in per_target and "quantizelinear_int2" not in per_target


def test_a_second_write_is_cached_and_a_stale_bundle_goes(written, tmp_path):
    root = written.paths[0].parent.parent
    again = onnx_node_tests.write_all(root)
    assert again.cached and again.paths == written.paths
    stale = root / "onnx_node_tests" / "gone-opset1"
    stale.mkdir()
    (stale / "case.json").write_text("{}")
    manifest = root / "onnx_node_tests" / "conformance.json"
    manifest.write_text(manifest.read_text().replace('"cache_key": "', '"cache_key": "x'))
    assert not onnx_node_tests.write_all(root).cached and not stale.exists()


def test_the_bundles_are_never_committed():
    repo = Path(__file__).resolve().parents[2]
    tracked = subprocess.run(["git", "ls-files", ".bundles", "*.onnx", "*.npz"], cwd=repo, capture_output=True,
                             text=True, check=True).stdout
    assert "onnx_node_tests" not in tracked
