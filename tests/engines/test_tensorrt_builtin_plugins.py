"""TensorRT's own plugins run on 8.x; only the suite's Python plugins need TensorRT >= 10 (no GPU, no TensorRT)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest

from engines.base import EngineInfo, no_custom_ops
from engines.tensorrt import Adapter
from engines.tensorrt.capabilities import detect
from generators.bundle import Bundle

SKIPLN = "CustomSkipLayerNormPluginDynamic"
OURS = "qdq_matrix::Int8IdentityV2"


def _bundle(tmp_path, plugins: list) -> Bundle:
    np.savez(tmp_path / "inputs.npz", x=np.zeros((2, 1, 768, 1, 1), np.float32))
    meta = {"bundle": "q_output_type/fake", "target_nodes": ["node_of_p"], "trt": {"int8": True, "plugins": plugins}}
    return Bundle(path=tmp_path, meta=meta)


def caps(version: str) -> dict:
    """The capability record the worker's probe gives for a module of that generation (8.x: no IPluginV3)."""
    plugins = () if version.startswith("8.") else ("IPluginV3", "IPluginCreatorV3One")
    module = SimpleNamespace(__version__=version, BuilderFlag=SimpleNamespace(__members__={"INT8": 0}),
                             **{name: object for name in plugins})
    return detect(module, "tensorrt")


def _adapter(version: str) -> Adapter:
    adapter = Adapter(tactics="tensorrt-only")  # a stub cuDNN: default tactic sources would be not run
    adapter._info = EngineInfo("tensorrt", version, "NVIDIA H200 (sm_90)", True, versions={"cudnn": "stub (x)"},
                               capabilities=caps(version))
    return adapter


@pytest.mark.parametrize("version", ["8.5.1.7", "8.5.3.1", "8.6.0", "10.8.0.43"])
def test_a_builtin_plugin_is_run_on_every_version(tmp_path, version):
    assert _adapter(version).cannot_run(_bundle(tmp_path, [SKIPLN])) == ""


@pytest.mark.parametrize("version, not_run", [("8.6.0", True), ("8.5.3.1", True), ("10.8.0.43", False)])
def test_a_python_plugin_is_not_run_before_10_and_named_alone(tmp_path, version, not_run):
    reason = _adapter(version).cannot_run(_bundle(tmp_path, [SKIPLN, OURS]))
    assert bool(reason) is not_run
    if not_run:
        assert f"needs plugin {OURS};" in reason and SKIPLN not in reason and "TensorRT >= 10" in reason


def test_cpu_engines_still_cannot_run_a_tensorrt_plugin(tmp_path):
    reason = no_custom_ops("onnxruntime", _bundle(tmp_path, [SKIPLN]))
    assert reason.startswith("needs custom op CustomSkipLayerNormPluginDynamic")


def _fake_trt(version: str, calls: list):
    """Only what prepare_plugins touches: TensorRT 8.x's registry with the SkipLayerNorm creators 1 to 4."""
    creators = [SimpleNamespace(name=SKIPLN, plugin_version=v, plugin_namespace="") for v in "4213"]
    creators.append(SimpleNamespace(name="LayerNorm", plugin_version="1", plugin_namespace=""))
    registry = SimpleNamespace(plugin_creator_list=creators)
    return SimpleNamespace(
        __version__=version, get_plugin_registry=lambda: registry,
        init_libnvinfer_plugins=lambda logger, namespace: calls.append(namespace),
    )


def test_worker_loads_tensorrts_plugin_library_and_records_the_creators(worker, tmp_path):
    calls: list = []
    session = SimpleNamespace(trt=_fake_trt("8.6.0", calls), logger=None, plugins=None)
    result = worker.Result(str(tmp_path))
    importlib.import_module("qdq_trt.plugins").prepare(
        session, caps("8.6.0"), {"plugins": [SKIPLN], "plugin_api": "builtin"}, result, cuda=None)
    options = result.data["options"]
    assert calls == [""]  # init_libnvinfer_plugins, once, in the empty namespace
    assert options["plugin_creators"] == {SKIPLN: ["1", "2", "3", "4"]}
    assert "plugins_missing" not in options


def test_worker_says_a_python_plugin_needs_10_on_8x(worker, tmp_path):
    session = SimpleNamespace(trt=_fake_trt("8.5.3.1", []), logger=None, plugins=None)
    result = worker.Result(str(tmp_path))
    importlib.import_module("qdq_trt.plugins").prepare(session, caps("8.5.3.1"), {"plugins": [OURS, SKIPLN]},
                                                       result, cuda=None)
    missing = result.data["options"]["plugins_missing"]
    assert missing.startswith(f"not provided by this TensorRT: {OURS};") and "need TensorRT >= 10" in missing
    assert SKIPLN not in missing
