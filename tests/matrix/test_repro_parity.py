"""One judge: the suite's cell (engines.cells) and a bug bundle's repro.py, as the bundle ships it, judge the same
outputs alike for every measure (steps, the network measure and its floors, non-finite values, cosine, fused with FP4
evidence) and for a bundle of every catalogue case; the bundle made from the suite's cell says "REPRODUCED".

Before the suite and repro.py shared core/numerics.py, repro.py had no one-step floor (a quantized Softmax head one
step off passed in the suite and failed in the bundle) and its fused left FP4 out.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import types
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

import numpy as np
import pytest

from cases import all_cases, get_case
from cases.base import Case
from core import numerics as judge
from core.cell import QUANTIZED_PRECISIONS, Cell
from engines import get_engine
from engines.base import EngineInfo, Observation
from engines.cells import judge_observation
from generators.bundle import Bundle, digest, load_bundle
from generators.write import write_bundle
from matrix.bugbundle import make, shipped_files

USER = get_case("user_model")
INFO = EngineInfo(name="onnxruntime", version="1.31.1", hardware="cpu: test", available=True)
RUN = {"date": "2026-11-22T08:00:00Z", "source": "local"}
STEP = 1 / 127
_loaded = itertools.count()


def test_the_judge_is_the_one_list_of_quantized_precisions_and_the_bundle_ships_it():
    assert QUANTIZED_PRECISIONS is judge.QUANTIZED_PRECISIONS and "fp4" in QUANTIZED_PRECISIONS
    cell = Cell(bundle="b/x", case="b", params={}, digest="d", engine="onnxruntime", engine_version="1",
                hardware="h", status="pass", verdict="undocumented")
    shipped = shipped_files(cell)
    assert shipped["suite/numerics.py"] == Path(judge.__file__).resolve()


def user_bundle(root: Path, name: str, outputs: Mapping[str, Dict[str, Any]], expected: Dict[str, np.ndarray],
                judged: Optional[Dict[str, Any]] = None, floats: Optional[Dict[str, np.ndarray]] = None,
                targets: tuple = ()) -> Bundle:
    """A user bundle written by hand: case.json with the measure (`judged`; None: steps), expected.npz and float.npz.
    The model is never run here, only its bytes are hashed."""
    folder = root / "user_model" / name
    folder.mkdir(parents=True)
    model = f"model {name}".encode()
    (folder / "model.onnx").write_bytes(model)
    inputs = {"x": np.zeros(1, np.float32)}
    np.savez(folder / "inputs.npz", **inputs)
    np.savez(folder / "expected.npz", **expected)
    meta: Dict[str, Any] = {
        "bundle": f"user_model/{name}", "case": "user_model", "params": {"model": f"{name}.onnx"},
        "digest": digest(model, inputs, expected), "tolerance_steps": 2.0, "target_nodes": list(targets),
        "outputs": {n: dict(o, dtype=expected[n].dtype.name, shape=list(expected[n].shape))
                    for n, o in outputs.items()}, "inputs": {"x": {"dtype": "float32", "shape": [1]}},
        "trt": {"int8": True}}
    if judged is not None:
        meta["judge"] = judged
    if floats is not None:
        np.savez(folder / "float.npz", **floats)
        meta["float_reference"] = {"model": "float twin", "digest": digest(b"", {}, floats)}
    (folder / "case.json").write_text(json.dumps(meta, indent=1))
    return load_bundle(folder)


def repro_module(folder: Path) -> types.ModuleType:
    """A bug bundle's own repro.py, loaded from its folder (so it reads its own suite/ and data files)."""
    spec = importlib.util.spec_from_file_location(f"bundle_repro_{next(_loaded)}", folder / "repro.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def both(case: Case, bundle: Bundle, outputs: Dict[str, np.ndarray], root: Path,
         precision: Optional[Dict[str, Dict[str, str]]] = None) -> Dict[str, Any]:
    """The suite's cell for outputs, and what the bug bundle made from that cell judges of the same outputs."""
    obs = Observation(stage="run", outputs=dict(outputs), precision=dict(precision or {}))
    cell = judge_observation(case, bundle, INFO, obs, dict(RUN))
    folder = make(cell, [cell], bundle.path.parent.parent, root / "bugs")
    repro = repro_module(folder)
    mine = repro.Observation()
    mine.stage, mine.outputs, mine.precision = "run", dict(outputs), dict(precision or {})
    said = json.loads((folder / "cell.json").read_text())
    found = repro.judge(mine, json.loads((folder / "case.json").read_text()))
    reproduced, line = repro.verdict(said["recorded"], dict(found, failed_stage=said["failed_stages"].get(
        found["stage"], "?")))
    return {"cell": cell, "found": found, "reproduced": reproduced, "line": line}


def assert_alike(seen: Dict[str, Any]) -> None:
    cell, found = seen["cell"], seen["found"]
    what = f"{cell.bundle}: suite {cell.status} at {cell.last_stage} ({cell.error or cell.reason}); bundle {found}"
    assert (found["status"], found["stage"]) == (cell.status, cell.last_stage), what
    assert found["fused"] == cell.fused, what
    assert found["reason"] == cell.reason, what
    if cell.max_error_steps is None:
        assert found["max_error_steps"] is None, what
    else:
        assert found["max_error_steps"] == pytest.approx(cell.max_error_steps, abs=1e-9), what
    assert seen["reproduced"] and seen["line"].startswith(f"REPRODUCED: {cell.status}"), (what, seen["line"])


NETWORK = {"measure": "network", "min_sqnr_db": 20.0, "min_cosine": 0.99}
RNG = np.random.default_rng(7)
SIGNAL = RNG.standard_normal((1, 8, 4, 4)).astype(np.float32)
HEAD = np.round(np.full((1, 32, 97), 1 / 97) / STEP + RNG.integers(0, 2, (1, 32, 97))).astype(np.float32) * STEP


def _moved(a: np.ndarray, by: float, every: int = 2) -> np.ndarray:
    out = a.copy()
    out.reshape(-1)[::every] += by
    return out


def _channel_scaled(a: np.ndarray) -> np.ndarray:
    out = a.copy()
    out[:, 0] *= 2.0
    return out


def _noisy(a: np.ndarray, sqnr_db: float) -> np.ndarray:
    noise = np.random.default_rng(3).standard_normal(a.shape)
    noise *= np.linalg.norm(a) / np.linalg.norm(noise) / 10 ** (sqnr_db / 20)
    return (a + noise).astype(np.float32)


# name, measure, output record, reference, engine output, float outputs, precision, targets, status in the suite
MEASURES = [
    ("steps-within", None, {"step": 0.05, "step_kind": "quantization"}, SIGNAL, _moved(SIGNAL, 0.05 * 1.5), None,
     None, (), "pass"),
    ("steps-beyond", None, {"step": 0.05, "step_kind": "quantization"}, SIGNAL, _moved(SIGNAL, 0.05 * 2.5), None,
     None, (), "fail"),
    ("network-close", NETWORK, {"step": None, "step_kind": "max/127"}, SIGNAL, _noisy(SIGNAL, 35), None, None, (),
     "pass"),
    ("network-mis-scaled-channel", NETWORK, {"step": None, "step_kind": "max/127"}, SIGNAL, _channel_scaled(SIGNAL),
     None, None, (), "fail"),
    ("softmax-head-one-step-off", NETWORK, {"step": STEP, "step_kind": "quantization"}, HEAD, _moved(HEAD, STEP),
     None, None, (), "pass"),
    ("softmax-head-two-steps-off", NETWORK, {"step": STEP, "step_kind": "quantization"}, HEAD,
     _moved(HEAD, 2 * STEP), None, None, (), "fail"),
    ("non-finite", NETWORK, {"step": None, "step_kind": "max/127"}, SIGNAL, _moved(SIGNAL, np.nan, every=7), None,
     None, (), "fail"),
    ("cosine-below-its-line", dict(NETWORK, min_cosine=0.9999), {"step": None, "step_kind": "max/127"}, SIGNAL,
     _noisy(SIGNAL, 25), None, None, (), "fail"),
    ("fp4-target-fused", NETWORK, {"step": None, "step_kind": "max/127"}, SIGNAL, SIGNAL.copy(), None,
     {"n": {"precision": "fp4"}, "m": {"precision": "int8"}}, ("n", "m"), "pass"),
    ("float-target-not-fused", NETWORK, {"step": None, "step_kind": "max/127"}, SIGNAL, SIGNAL.copy(), None,
     {"n": {"precision": "fp4"}, "m": {"precision": "float"}}, ("n", "m"), "pass"),
    ("fragile-between-reference-and-float", NETWORK, {"step": None, "step_kind": "max/127"}, _noisy(SIGNAL, 6),
     (_noisy(SIGNAL, 6) + SIGNAL) / 2, {"y": SIGNAL}, None, (), "pass"),
    ("fragile-model-zeros", NETWORK, {"step": None, "step_kind": "max/127"}, _noisy(SIGNAL, 6),
     np.zeros_like(SIGNAL), {"y": SIGNAL}, None, (), "fail"),
    ("signal-lost-in-quantization-zeros", NETWORK, {"step": None, "step_kind": "max/127"}, _noisy(SIGNAL, -1),
     np.zeros_like(SIGNAL), {"y": SIGNAL}, None, (), "fail"),  # loss -1 dB: zeros are 0 dB, still no signal
]


@pytest.mark.parametrize("name, judged, output, reference, got, floats, precision, targets, status", MEASURES,
                         ids=[m[0] for m in MEASURES])
def test_the_suite_and_the_bug_bundle_judge_every_measure_alike(tmp_path, name, judged, output, reference, got,
                                                                floats, precision, targets, status):
    bundle = user_bundle(tmp_path / "b", name, {"y": output}, {"y": reference}, judged, floats, targets)
    seen = both(USER, bundle, {"y": got}, tmp_path, precision)
    assert seen["cell"].status == status, seen["cell"].error
    assert_alike(seen)
    if name == "fp4-target-fused":
        assert seen["cell"].fused is True and seen["found"]["fused"] is True
    if name.startswith("fragile-between"):
        assert seen["cell"].output_stats["outputs"]["y"]["fragile"] is True
        assert seen["cell"].reason.startswith("the quantized model is numerically fragile: output 'y' is SQNR")


def test_outputs_missing_or_misshapen_fail_alike(tmp_path):
    bundle = user_bundle(tmp_path / "b", "two", {"y": {"step": None, "step_kind": "max/127"},
                                                 "z": {"step": None, "step_kind": "max/127"}},
                         {"y": SIGNAL, "z": SIGNAL}, NETWORK)
    seen = both(USER, bundle, {"y": SIGNAL.reshape(1, 8, 16)}, tmp_path)
    assert seen["cell"].status == "fail" and "'z' is missing" in seen["cell"].error
    assert "'y': shape [1, 8, 16] differs" in seen["cell"].error
    assert_alike(seen)


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory) -> Dict[str, Bundle]:
    """The first bundle of every catalogue case, written from its seed."""
    root = tmp_path_factory.mktemp("catalogue")
    return {c.id: load_bundle(write_bundle(c, next(iter(c.variants())), root=root).path) for c in all_cases()}


@pytest.mark.slow
@pytest.mark.parametrize("case", [c.id for c in all_cases()])
def test_every_catalogue_case_is_judged_alike_by_the_suite_and_its_bug_bundle(catalogue, tmp_path, case):
    """ONNX Runtime's own outputs and precision evidence, then the reference moved inside and past the tolerance."""
    bundle = catalogue[case]
    engine = get_engine("onnxruntime", providers=["CPUExecutionProvider"])
    obs = engine.run(bundle)
    expected = bundle.expected()
    if obs.stage == "run" and not obs.error:
        assert_alike(both(get_case(case), bundle, obs.outputs, tmp_path / "ort", obs.precision))
    tolerance = float(bundle.meta.get("tolerance_steps", 1.0))
    for offset, status in ((tolerance / 2, "pass"), (tolerance + 1, "fail")):
        steps = {n: judge.comparison_step(a, judge.output_step(bundle.meta, n))[0] for n, a in expected.items()}
        moved = {n: (a + np.asarray(offset * steps[n])).astype(a.dtype) for n, a in expected.items()}
        seen = both(get_case(case), bundle, moved, tmp_path / f"moved-{offset}")
        assert seen["cell"].status == status or not expected, seen["cell"].error
        assert_alike(seen)
