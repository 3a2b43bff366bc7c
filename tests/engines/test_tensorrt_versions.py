"""TensorRT 8.x, 10.x and 11.x through the real worker with stand-in modules per API generation.

The stand-ins (tests/data/trt/fake_api) have only what each version documents and record every
attribute the worker reads; they test plumbing and never produce a matrix cell. The 10.x and 11.x
inspector samples are written from NVIDIA's migration page, not measured (tests/data/trt/README.md): they go
through the worker's own attribution (engines/tensorrt/layers.py), which marks that layout NOT VERIFIED.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from cases import get_case
from engines.cells import run_cell
from engines.tensorrt import Adapter, gpu, layers
from generators.bundle import bundle_ids, load_bundle
from tests.engines.trt_stand_in import H200

DATA = Path(__file__).resolve().parent.parent / "data" / "trt"
FAKES = DATA / "fake_api"
INSPECTOR_KEY = "engine inspector JSON (get_engine_information, DETAILED)"
NODES = {"node_of_xq": "QuantizeLinear", "node_of_c": "Conv", "node_of_wd": "DequantizeLinear",
         "node_of_y": "DequantizeLinear"}  # the sample models' ONNX nodes and their op types


def _api():
    spec = importlib.util.spec_from_file_location("fake_trt_api_test", FAKES / "common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sample(name: str) -> dict:
    return json.loads((DATA / name).read_text())["models"]


def _attribution(models: dict, model: str) -> dict:
    """The worker's per-node entries for one sample model, from its inspector JSON (engines/tensorrt/layers.py)."""
    return layers.attribute(layers.from_inspector(models[model][INSPECTOR_KEY]), NODES)


def _structure(models: dict) -> dict:
    return {m: {n: p["precision"] for n, p in _attribution(models, m).items()} for m in models}


@pytest.mark.parametrize("name", ["inspector-10.x-doc.json", "inspector-11.x-doc.json"])
def test_documented_inspector_formats_read_like_the_measured_8x_one(name):
    measured = _structure(_sample("inspector-8.5.3.1-h200.json"))
    assert _structure(_sample(name)) == measured
    assert measured["conv_dense.onnx"]["node_of_c"] == "int8"


def test_the_11x_layout_has_no_bindings_and_splits_the_datatype():
    new = _sample("inspector-11.x-doc.json")["conv_dense.onnx"][INSPECTOR_KEY]
    assert "Bindings" not in new and "Format/Datatype" not in json.dumps(new) and "I/O Tensors" in new


def test_11x_layer_evidence_reads_the_split_datatype():
    found = _attribution(_sample("inspector-11.x-doc.json"), "conv_dense.onnx")["node_of_c"]
    measured = _attribution(_sample("inspector-8.5.3.1-h200.json"), "conv_dense.onnx")["node_of_c"]
    assert (found["layer"], found["layer_type"], found["inputs"], found["weights"]) == \
        ("wq + node_of_c", "CaskConvolution", ["int8"], ["int8"])
    assert {k: found[k] for k in ("precision", "inputs", "outputs", "weights")} == \
        {k: measured[k] for k in ("precision", "inputs", "outputs", "weights")}


@pytest.mark.parametrize("generation", ["8", "10", "11"])
def test_each_fake_has_only_what_its_version_documents(generation, monkeypatch, tmp_path):
    api = _api()
    log = tmp_path / "access.log"
    monkeypatch.setenv("FAKE_TRT_ACCESS_LOG", str(log))
    module = type(os)("tensorrt")
    api.install(module, generation)
    has_int8_flag = "INT8" in module.BuilderFlag.__members__
    assert has_int8_flag == (generation != "11")
    assert "INT8" in module.DataType.__members__  # the data type stays; the weak-typing flag goes
    if generation == "11":
        with pytest.raises(AttributeError):
            module.BuilderFlag.INT8  # noqa: B018 (the read is the test)
        with pytest.raises(AttributeError):
            module.Builder(None).platform_has_fast_int8  # noqa: B018
        with pytest.raises(AttributeError):
            module.IInt8EntropyCalibrator2  # noqa: B018
        assert "BuilderFlag.INT8" in log.read_text().split()  # a refused read is still recorded
    else:
        assert module.BuilderFlag.INT8.name == "INT8" and module.Builder(None).platform_has_fast_int8


@pytest.fixture(scope="module")
def bundles(catalogue_bundles):
    """Every reproducer of the catalogue, written once per test run (tests/conftest.py)."""
    return catalogue_bundles


def _cells(generation: str, root: Path, log: Path, monkeypatch) -> list:
    monkeypatch.setenv("PYTHONPATH",
                       os.pathsep.join([str(FAKES / f"trt{generation}"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("FAKE_TRT_ACCESS_LOG", str(log))
    monkeypatch.setattr(gpu, "detect", lambda: H200)
    # The stand-ins have no real cuBLAS/cuDNN: TensorRT's own tactics, as on a stub-cuDNN runner.
    adapter = Adapter(tactics="tensorrt-only")
    info = adapter.probe()
    assert info.available and info.version == _api().GENERATIONS[generation]
    cells = []
    try:
        for bid in bundle_ids(root):
            bundle = load_bundle(root / bid)
            cells.append(run_cell(get_case(bundle.meta["case"]), bundle, adapter, info, {"source": "test"}))
    finally:
        adapter.close()
    return cells


def test_every_reproducer_is_an_honest_cell_on_11x_and_no_removed_api_is_touched(bundles, tmp_path, monkeypatch):
    log = tmp_path / "access.log"
    cells = _cells("11", bundles, log, monkeypatch)
    assert len(cells) == len(bundle_ids(bundles)) > 100
    assert all(c.status != "crashed" for c in cells), [c.bundle for c in cells if c.status == "crashed"]
    touched = set(log.read_text().split())
    api = _api()
    assert not [k for k in touched if api.is_removed("11", k)]
    assert "tensorrt.Builder" in touched and "OnnxParser.parse_from_file" in touched  # the log is live
    ran = [c for c in cells if c.status in ("pass", "fail")]  # not_run: cannot_run said why (no cuDNN here)
    assert len(ran) + sum(c.status in ("not_run", "not_applicable") for c in cells) == len(cells)
    assert ran and all(c.options.get("strongly_typed") is True and not c.options.get("builder_flags") for c in ran)
    # the cuDNN-plugin variants are not run first here (no cuDNN): cannot_run comes before the worker
    implicit = [c for c in cells if (c.case == "instancenorm_int8" and c.params["native_instancenorm"])
                or c.bundle == "silu_qdq/form=implicit"]  # seed 024's threads build the float SiLU implicitly
    assert len(implicit) == 3 and all(c.status == "not_applicable" and c.verdict == "not applicable" for c in implicit)
    assert all("INT8 calibration removed in TensorRT 11.0" in c.reason and "tensorrt-10x-to-11x" in c.reason
               for c in implicit)
    assert {c.bundle for c in cells if c.status == "not_applicable"} == {c.bundle for c in implicit}


@pytest.mark.parametrize("generation", ["8", "10"])
def test_8x_and_10x_keep_the_weakly_typed_int8_build(generation, bundles, tmp_path, monkeypatch):
    root = tmp_path / "few"
    for bid in [b for b in bundle_ids(bundles) if b.startswith(("instancenorm_int8/", "grouped_conv/cpg=1+"))][:6]:
        (root / bid).parent.mkdir(parents=True, exist_ok=True)
        (root / bid).symlink_to(bundles / bid)
    cells = _cells(generation, root, tmp_path / "access.log", monkeypatch)
    assert cells and all(c.status not in ("crashed", "not_applicable") for c in cells)
    built = [c for c in cells if c.last_stage]
    assert built and all(c.options.get("builder_flags") == ["INT8"] for c in built)
    touched = set((tmp_path / "access.log").read_text().split())
    assert not [k for k in touched if _api().is_removed(generation, k)]
