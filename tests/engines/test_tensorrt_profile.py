"""Optimization profiles for dynamic inputs in the TensorRT worker, on the stand-in API generations 8.x, 10.x, 11.x.

Plumbing only (the stand-ins are not TensorRT): which calls the worker makes, what it records, and that a static
network gets no profile. tests/engines/test_tensorrt_rtx.py builds real TensorRT-RTX plans with profiles.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cases import get_case
from check.bundle import bundle_from_model
from check.shapes import InputShape
from engines.cells import run_cell
from engines.tensorrt import Adapter, gpu
from tests.check.models import qdq_conv
from tests.engines.test_tensorrt_versions import FAKES, _api
from tests.engines.trt_stand_in import H200, load_worker

RANGE = InputShape((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))


def _cell(generation: str, bundle, log: Path, monkeypatch):
    path = os.pathsep.join([str(FAKES / f"trt{generation}"), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv("FAKE_TRT_ACCESS_LOG", str(log))
    monkeypatch.setattr(gpu, "detect", lambda: H200)
    adapter = Adapter(tactics="tensorrt-only", isolate=True)
    try:
        return run_cell(get_case("user_model"), bundle, adapter, adapter.probe(), {"source": "test"})
    finally:
        adapter.close()


@pytest.mark.parametrize("generation", ["8", "10", "11"])
def test_a_dynamic_input_gets_the_bundles_profile_and_a_static_one_none(generation, tmp_path, monkeypatch):
    dynamic = bundle_from_model(qdq_conv(tmp_path / "dyn.onnx", dynamic_batch=True), tmp_path / "b",
                                shapes={"x": RANGE})
    cell = _cell(generation, dynamic, tmp_path / "dyn.log", monkeypatch)
    assert cell.last_stage == "build", cell.error  # built; the stand-in cannot run it
    assert cell.options["profile"] == {"x": {"min": [1, 3, 8, 8], "opt": [2, 3, 8, 8], "max": [4, 3, 8, 8],
                                             "from": "request"}}
    touched = set((tmp_path / "dyn.log").read_text().split())
    assert {"Builder.create_optimization_profile", "_Profile.set_shape", "_Config.add_optimization_profile"} <= touched
    assert not [k for k in touched if _api().is_removed(generation, k)]
    static = bundle_from_model(qdq_conv(tmp_path / "static.onnx"), tmp_path / "b")
    cell = _cell(generation, static, tmp_path / "static.log", monkeypatch)
    assert "profile" not in cell.options, "a static network builds exactly as before"
    assert "Builder.create_optimization_profile" not in (tmp_path / "static.log").read_text().split()


@pytest.mark.parametrize("generation, method", [("8", "set_binding_shape"), ("10", "set_input_shape"),
                                                ("11", "set_input_shape")])
def test_the_capability_record_names_how_a_context_takes_an_input_shape(generation, method, monkeypatch):
    module = type(os)("tensorrt")
    _api().install(module, generation)
    caps = importlib.import_module("engines.tensorrt.capabilities").detect(module, "tensorrt")
    assert caps["input_shapes"] == method


class _Context:
    def __init__(self, accept: bool = True) -> None:
        self.calls, self.accept = [], accept

    def set_binding_shape(self, index, shape):
        self.calls.append(("set_binding_shape", index, shape))
        return self.accept

    def set_input_shape(self, name, shape):
        self.calls.append(("set_input_shape", name, shape))
        return self.accept


def _result() -> SimpleNamespace:
    return SimpleNamespace(data={"options": {}, "log": [{"severity": "ERROR", "msg": "shape outside the profile"}]})


def test_input_shapes_are_set_with_the_named_method_and_recorded():
    from engines.tensorrt.execute import InputShapes

    for method, expected in (("set_binding_shape", ("set_binding_shape", 0, (2, 3, 8, 8))),
                             ("set_input_shape", ("set_input_shape", "x", (2, 3, 8, 8)))):
        context, result = _Context(), _result()
        InputShapes({"input_shapes": method}, context, result).set("x", 0, (2, 3, 8, 8))
        assert context.calls == [expected] and result.data["options"]["input_shapes"] == {"x": [2, 3, 8, 8]}
    with pytest.raises(RuntimeError, match=r"set_input_shape\(x, \[9, 3, 8, 8\]\) refused: shape outside the profile"):
        InputShapes({"input_shapes": "set_input_shape"}, _Context(accept=False), _result()).set("x", 0, (9, 3, 8, 8))
    with pytest.raises(RuntimeError, match="neither set_input_shape nor set_binding_shape"):
        InputShapes({"input_shapes": ""}, _Context(), _result()).set("x", 0, (1, 3, 8, 8))


def test_without_a_profile_in_the_request_the_inputs_shapes_are_the_profile(tmp_path):
    load_worker()  # registers the qdq_trt package the build stage imports from
    build = importlib.import_module("qdq_trt.build")
    np.savez(tmp_path / "inputs.npz", x=np.zeros((2, 3, 8, 8), np.float32), y=np.zeros((1, 4), np.float32))
    profiles = []
    network = SimpleNamespace(num_inputs=2, get_input=lambda i: [
        SimpleNamespace(name="x", shape=(-1, 3, 8, 8)), SimpleNamespace(name="y", shape=(1, 4))][i])
    profile = SimpleNamespace(shapes={}, set_shape=lambda n, lo, opt, hi: profile.shapes.update({n: (lo, opt, hi)}))
    builder = SimpleNamespace(create_optimization_profile=lambda: profile)
    config = SimpleNamespace(add_optimization_profile=profiles.append)
    result = SimpleNamespace(data={"options": {}, "error": ""})
    assert build.add_profile(builder, network, config, {"inputs": str(tmp_path / "inputs.npz")}, result)
    assert profiles == [profile] and profile.shapes == {"x": ([2, 3, 8, 8],) * 3}, "only the dynamic input"
    assert result.data["options"]["profile"]["x"]["from"] == "inputs.npz"
    np.savez(tmp_path / "other.npz", z=np.zeros(1, np.float32))
    assert not build.add_profile(builder, network, config, {"inputs": str(tmp_path / "other.npz")}, result)
    assert "input x has dynamic shape [-1, 3, 8, 8]" in result.data["error"]
    json.dumps(result.data)  # what the worker records stays JSON
