"""Tactic sources as a recorded build option, and the worker's report of the cuBLAS/cuDNN it loaded.

The stand-in `tensorrt` (tests/data/trt/fake_tensorrt) checks the plumbing only; no cell comes from it.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import numpy as np
import pytest

from engines.base import EngineInfo
from engines.tensorrt import Adapter
from engines.tensorrt.inspect import tactic_source_names, tactic_sources_mask
from generators.bundle import Bundle
from tests.engines.trt_stand_in import libcuda_loads as _libcuda_loads

ALL = ["CUBLAS", "CUBLAS_LT", "CUDNN", "EDGE_MASK_CONVOLUTIONS", "JIT_CONVOLUTIONS"]


@pytest.fixture
def bundle(tmp_path) -> Bundle:
    (tmp_path / "model.onnx").write_bytes(b"")  # the stand-in never reads it
    np.savez(tmp_path / "inputs.npz", x=np.zeros((1, 16, 8, 8), np.float32))
    return Bundle(path=tmp_path, meta={"bundle": "grouped_conv/fake", "target_nodes": ["node_of_c"],
                                       "trt": {"int8": True}})


def test_default_tactics_unless_asked(monkeypatch):
    monkeypatch.delenv("QDQ_TRT_TACTICS", raising=False)
    assert Adapter().tactics == "default"
    assert Adapter(tactics="tensorrt-only").tactics == "tensorrt-only"
    monkeypatch.setenv("QDQ_TRT_TACTICS", "tensorrt-only")
    assert Adapter().tactics == "tensorrt-only"


def test_an_unknown_tactics_choice_is_refused():
    with pytest.raises(ValueError, match="default, tensorrt-only"):
        Adapter(tactics="cudnn-only")


def test_the_request_carries_the_choice(tmp_path, bundle):
    request = json.loads(Adapter(tactics="tensorrt-only")._write_request(bundle, tmp_path).read_text())
    assert request["trt"] == {"int8": True, "tactics": "tensorrt-only", "timing_cache": "",  # not probed: no GPU
                              "workspace_mb": 1024}  # the engine's setting (core/engines.py)


@pytest.mark.skipif(_libcuda_loads(), reason="libcuda.so.1 is here: the run stage would go further")
@pytest.mark.parametrize("tactics, sources", [("default", ALL), ("tensorrt-only", ALL[3:])])
def test_the_build_records_which_tactic_sources_were_on(fake_trt, bundle, tactics, sources):
    obs = Adapter(tactics=tactics).run(bundle)
    assert obs.stage == "build"
    assert obs.options["tactics"] == tactics and obs.options["tactic_sources"] == sources


def test_tactic_source_names_read_a_mask():
    import enum
    from types import SimpleNamespace

    trt = SimpleNamespace(TacticSource=enum.IntEnum("TacticSource", " ".join(ALL), start=0))
    assert tactic_source_names(trt, 0b11010) == ["CUBLAS_LT", "EDGE_MASK_CONVOLUTIONS", "JIT_CONVOLUTIONS"]
    assert tactic_source_names(trt, None) == []
    assert tactic_source_names(trt, tactic_sources_mask(trt)[0]) == ALL[3:]


@pytest.mark.parametrize(
    "tactics, versions, why",
    [
        ("default", {"cudnn": "stub (libcudnn.so.8 reports version 1)", "cublas": "stub (x)"}, "are not real"),
        ("default", {"cudnn": "libcudnn.so.8 8600", "cublas": "stub (libcublas.so.11 has no cublasGetProperty)"},
         "cublas is not real"),
        ("tensorrt-only", {"cudnn": "stub (libcudnn.so.8 reports version 1)", "cublas": "stub (x)"}, ""),
        ("default", {"cudnn": "libcudnn.so.8 8600", "cublas": "libcublas.so.11 11.11.3"}, ""),
    ],
)
def test_default_tactics_on_stub_libraries_are_not_run(bundle, tactics, versions, why):
    adapter = Adapter(tactics=tactics)
    adapter._info = EngineInfo("tensorrt", "8.5.3.1", "NVIDIA H200 (sm_90)", True, versions=versions,
                               capabilities={"default_tactics_use_cudnn": True})  # what the 8.5 probe reports
    reason = adapter.cannot_run(bundle)
    assert (why in reason and "--trt-tactics tensorrt-only" in reason) if why else reason == ""


class _Lib:
    """A ctypes library stand-in: cudnnGetVersion and cublasGetProperty answer as given."""

    def __init__(self, cudnn=None, cublas=None):
        if cudnn is not None:
            self.cudnnGetVersion = lambda: cudnn
        if cublas is not None:
            def get(prop, ref):
                ref._obj.value = cublas[prop]
                return 0
            self.cublasGetProperty = get


@pytest.mark.parametrize(
    "lib, cudnn, cublas",
    [
        (_Lib(cudnn=8600, cublas=(11, 11, 3)), "libcudnn.so.8 8600", "libcublas.so.11 11.11.3"),
        (_Lib(cudnn=1), "stub (libcudnn.so.8 reports version 1)", "stub (libcublas.so.11 has no cublasGetProperty)"),
        (_Lib(), "stub (libcudnn.so.8 has no cudnnGetVersion)", "stub (libcublas.so.11 has no cublasGetProperty)"),
    ],
)
def test_probe_reports_the_loaded_cudnn_and_cublas(worker, monkeypatch, lib, cudnn, cublas):
    loaded = {"libcudnn": "/payload/cuda-cu11/nvidia/cudnn/lib/libcudnn.so.8",
              "libcublas": "/payload/cuda-cu11/nvidia/cublas/lib/libcublas.so.11"}
    monkeypatch.setattr(worker, "loaded_library", loaded.get)
    monkeypatch.setattr(ctypes, "CDLL", lambda name: lib)
    assert worker.cudnn_status() == cudnn
    assert worker.cublas_status() == cublas


def test_probe_says_missing_when_nothing_loads(worker, monkeypatch):
    monkeypatch.setattr(worker, "loaded_library", lambda stem: None)

    def no_library(name):
        raise OSError(name)

    monkeypatch.setattr(ctypes, "CDLL", no_library)
    assert worker.cudnn_status() == "missing" and worker.cublas_status() == "missing"


def test_loaded_library_reads_this_process(worker):
    if not Path("/proc/self/maps").exists():
        pytest.skip("no /proc here")
    assert Path(worker.loaded_library("libc")).name.startswith("libc.so.")
    assert worker.loaded_library("libnot-a-library") is None


@pytest.mark.parametrize(
    "options, variant",
    [
        ({"tactics": "default", "tactic_sources": ALL}, {}),
        ({"tactics": "tensorrt-only", "tactic_sources": ALL[3:]}, {"tactics": "tensorrt-only"}),
        ({"tactic_sources": ALL[3:]}, {"tactics": "tensorrt-only"}),  # the H200 cells of before the option
        ({"tactic_sources": ALL}, {}),
        ({}, {}),
    ],
)
def test_the_cell_2_migration_gave_old_tensorrt_cells_their_tactics_column(options, variant):
    """tools/migrate-observed.py read the choice once, into the variant and the cell's own tactic_sources field."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "tools" / "migrate-observed.py"
    spec = importlib.util.spec_from_file_location("migrate_observed", path)
    migrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migrate)
    old = {"schema": "qdq-matrix/cell/1", "engine": "tensorrt", "status": "pass", "stage": "compare",
           "options": dict(options)}
    new = migrate.cell_2(old, {})
    assert new["variant"] == variant and new["tactic_sources"] == options.get("tactic_sources", [])
    assert "tactic_sources" not in new["options"] and new["last_stage"] == "compare"


def test_tensorrt_only_cells_get_a_variant_column_of_their_own():
    """The H200 cells of before the option got their variant once, from their tactic sources (cell/2 migration)."""
    from matrix.merge import load_results

    observed = Path(__file__).resolve().parent.parent / "data" / "observed-sample.jsonl"
    result = load_results([observed])
    only = [c for c in result.cells if c.variant == {"tactics": "tensorrt-only"}]
    assert only and all(c.hardware == "NVIDIA H200 (sm_90)" for c in only)
    assert any(col.variant == (("tactics", "tensorrt-only"),) and col.hardware == "NVIDIA H200 (sm_90)"
               for col in result.columns)


def test_bug_bundle_commands_follow_the_cells_tactics():
    from dataclasses import replace

    from matrix.bugbundle import tool_commands
    from matrix.merge import load_results

    observed = Path(__file__).resolve().parent.parent / "data" / "observed-sample.jsonl"
    old = next(c for c in load_results([observed]).cells if c.engine_version == "8.6.0")  # tensorrt-only
    new = replace(old, variant={}, options=dict(old.options, tactics="default"), tactic_sources=ALL)
    meta = {"trt": {"int8": True}, "inputs": {"x": {}}, "outputs": {"y": {}}}
    assert "--tacticSources=-CUBLAS,-CUBLAS_LT,-CUDNN" in tool_commands(old, meta)["trtexec"]
    lines = tool_commands(new, meta)["trtexec"] + tool_commands(new, meta)["polygraphy"]
    assert not any("actic" in line for line in lines)  # TensorRT's default needs no option
