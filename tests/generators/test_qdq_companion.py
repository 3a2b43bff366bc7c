"""generators.qdq_companion: the int8 conformance companion, each form at every operator version where it exists,
scales and zero points constants, expected outputs by onnx.reference; nothing of them is committed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from cases.qdq_companion import OPSETS
from core.numerics import as_codes
from generators import qdq_companion
from generators.bundle import verify_bundle

FIRST = {"int8_per_tensor": 10, "int8_per_axis": 13, "blocked": 21, "uint8_zp0": 10, "e4m3fn": 19, "int4_zp0": 21}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Tuple[List[Path], List[Any], bool]:
    return qdq_companion.write_all(tmp_path_factory.mktemp("bundles"))


def bundles(written: Tuple[List[Path], List[Any], bool]) -> List[Tuple[Path, Dict[str, Any]]]:
    return [(p, json.loads((p / "case.json").read_text())) for p in written[0]]


def test_each_form_is_named_and_written_at_every_opset_where_it_exists(written):
    paths, entries, cached = written
    assert not cached and len(paths) == len(entries) == 99
    assert {e.form for e in entries} == set(FIRST)
    for form, first in FIRST.items():
        for op in ("quantizelinear", "dequantizelinear"):
            opsets = sorted(e.opset for e in entries if e.test == f"{op}_{form}")
            assert opsets == [o for o in OPSETS if o >= first], (op, form)
        assert sorted(e.opset for e in entries if e.test == f"quantizelinear_{form}_pair") == \
            [o for o in OPSETS if o >= first]
    assert not [e for e in entries if e.form == "int8_per_axis" and e.opset < 13]  # axis came with 13
    for path, meta in bundles(written):
        assert path.name == f"{meta['params']['test']}-opset{meta['opset']}" and meta["bundle"].startswith(
            "qdq_companion/")
        verify_bundle(path)  # model, inputs and expected outputs hash to the digest case.json holds
        model = onnx.load(str(path / "model.onnx"))
        onnx.checker.check_model(model, full_check=True)
        assert model.opset_import[0].version == meta["opset"]
        assert model.ir_version == onnx.helper.find_min_ir_version_for(list(model.opset_import))


def _inputs(path: Path) -> Dict[str, np.ndarray]:
    with np.load(path / "inputs.npz") as f:
        return {k: f[k] for k in f.files}


def _expected(path: Path) -> np.ndarray:
    with np.load(path / "expected.npz") as f:
        return f["y"]


def test_expected_outputs_are_onnx_references_where_it_runs_the_opset(written):
    not_runnable = set()
    for path, meta in bundles(written):
        model = onnx.load(str(path / "model.onnx"))
        try:
            evaluator = ReferenceEvaluator(model)
        except RuntimeError:  # onnx 1.23 implements DequantizeLinear from opset 19 only
            not_runnable.add(path.name)
            assert meta["reference"].startswith("onnx ") and "onnx.reference at opset 19" in meta["reference"]
            continue
        [y] = evaluator.run(None, _inputs(path))
        codes = meta["outputs"]["y"].get("codes")
        got = as_codes(y, codes, y.shape) if codes else y
        assert np.array_equal(got, _expected(path)), path.name
        assert f"onnx.reference at opset {meta['opset']}" in meta["reference"]
    assert not_runnable == {f"{t}-opset{o}" for o in (10, 13) for t in (
        "dequantizelinear_int8_per_tensor", "dequantizelinear_uint8_zp0", "quantizelinear_int8_per_tensor_pair",
        "quantizelinear_uint8_zp0_pair")} | {f"{t}-opset13" for t in (
            "dequantizelinear_int8_per_axis", "quantizelinear_int8_per_axis_pair")}


def test_where_the_reference_cannot_run_the_opset_the_outputs_are_what_numpy_computes(written):
    for path, meta in bundles(written):
        if meta["conformance"]["reference_opset"] == meta["opset"]:
            continue
        model = onnx.load(str(path / "model.onnx"))
        init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        scale = init["scale"].reshape(1, -1) if init["scale"].ndim else init["scale"]
        x = _inputs(path)["x"]
        if meta["params"]["op"] == "DequantizeLinear":
            want = x.astype(np.float32) * scale
        else:
            info = np.iinfo(init["zero_point"].dtype)
            want = np.clip(np.rint(x / scale), info.min, info.max) * scale  # round half to even, then saturate
        assert np.array_equal(_expected(path), want.astype(np.float32)), path.name


def test_scales_and_zero_points_are_constants_and_every_zero_point_is_zero(written):
    ties = 0
    for path, meta in bundles(written):
        model = onnx.load(str(path / "model.onnx"))
        init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        assert {"scale", "zero_point"} <= set(init) and not np.any(init["zero_point"].astype(np.float32))
        assert np.all(np.log2(init["scale"]) == np.round(np.log2(init["scale"])))  # powers of two: ties stay ties
        fed = [i.name for i in model.graph.input]
        assert fed == ([] if meta["conformance"]["constants"] else ["x"]), path.name
        assert bool(meta["conformance"]["constants"]) == (meta["params"]["form"] in ("e4m3fn", "int4_zp0")
                                                          and meta["params"]["op"] == "DequantizeLinear")
        if meta["params"]["op"] == "QuantizeLinear" and meta["params"]["form"].startswith("int8"):
            scale = init["scale"] if init["scale"].ndim < 2 else np.repeat(init["scale"], 4, axis=1)
            ratio = _inputs(path)["x"] / scale
            ties += int(np.sum(ratio - np.floor(ratio) == 0.5))
    assert ties > 0  # the data hold exact ties, where round half to even and half away from zero differ


def test_the_architecture_dependent_forms_are_built_per_target_at_their_first_opset(written):
    per_target = {(m["params"]["test"], m["opset"]) for _, m in bundles(written) if m["trt"].get("per_target")}
    assert per_target == {(t, o) for o, form in ((19, "e4m3fn"), (21, "int4_zp0")) for t in (
        f"quantizelinear_{form}", f"quantizelinear_{form}_pair", f"dequantizelinear_{form}")}


def test_a_second_write_is_cached(written):
    root = written[0][0].parent.parent
    paths, entries, cached = qdq_companion.write_all(root)
    assert cached and paths == written[0] and len(entries) == 99


def test_the_bundles_are_never_committed():
    repo = Path(__file__).resolve().parents[2]
    tracked = subprocess.run(["git", "ls-files", ".bundles", "*.onnx", "*.npz"], cwd=repo, capture_output=True,
                             text=True, check=True).stdout
    assert "qdq_companion" not in tracked
