"""The TensorRT adapter on a machine without a GPU or TensorRT: probing, and the worker's plumbing.

The stand-in `tensorrt` in tests/data/trt/fake_tensorrt replays real TensorRT 8.5.3.1 output; it
is a test double for the subprocess plumbing, never a source of matrix cells.
"""

from __future__ import annotations

import ast
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engines.base import EngineInfo
from engines.tensorrt import WORKER, Adapter, gpu
from generators.bundle import Bundle
from tests.engines.trt_stand_in import H200
from tests.engines.trt_stand_in import libcuda_loads as _libcuda_loads

ENGINE_DIR = WORKER.parent
IN_TRT_ENV = ("worker.py", "gpu.py", "inspect.py", "plugins.py", "lifeline.py")
NO_GPU_HERE = not any(os.path.exists(p) for p in gpu.DEVICE_FILES)


@pytest.fixture
def bundle(tmp_path) -> Bundle:
    (tmp_path / "model.onnx").write_bytes(b"")  # the stand-in never reads it
    np.savez(tmp_path / "inputs.npz", x=np.zeros((1, 16, 8, 8), np.float32))
    meta = {
        "bundle": "grouped_conv/fake",
        "target_nodes": ["node_of_c"],
        "trt": {"int8": True, "parser_flags": ["NATIVE_INSTANCENORM"], "plugins": ["qdq_matrix::Int8Identity"]},
    }
    return Bundle(path=tmp_path, meta=meta)


@pytest.mark.skipif(not NO_GPU_HERE, reason="this machine has an NVIDIA GPU")
def test_no_gpu_is_detected_here():
    found = gpu.detect()
    assert not found.present
    assert found.label == "no NVIDIA GPU"


def test_device_files_without_a_usable_driver_are_no_gpu(tmp_path):
    (tmp_path / "nvidia0").touch()
    found = gpu.detect(device_files=(str(tmp_path / "nvidia0"),), libcuda="libcuda-missing.so.1")
    assert not found.present
    assert "not usable" in found.reason


@pytest.mark.skipif(not NO_GPU_HERE, reason="this machine has an NVIDIA GPU")
def test_probe_without_gpu_is_not_run():
    info = Adapter(version="8.6.0").probe()
    assert (info.available, info.unavailable_status, info.reason) == (False, "not_run", "no NVIDIA GPU")
    assert (info.version, info.hardware) == ("8.6.0", "no NVIDIA GPU")
    assert Adapter().probe().version == "unknown"


def test_probe_without_tensorrt_is_skipped(monkeypatch):
    monkeypatch.setattr(gpu, "detect", lambda: H200)
    info = Adapter(python=sys.executable, version="8.6.0").probe()
    assert (info.available, info.unavailable_status) == (False, "skipped")
    assert info.reason.startswith(f"tensorrt not importable in {sys.executable}: ModuleNotFoundError")
    assert info.hardware == "NVIDIA H200 (sm_90)"


def test_probe_reports_the_interpreters_tensorrt(fake_trt):
    info = Adapter().probe()
    assert info.available and info.version == "8.5.3.1"
    assert info.hardware_detail["compute_capability"] == "9.0"
    assert info.versions["tensorrt"] == "8.5.3.1" and info.versions["cuda_driver"] == "13.0"


def test_probe_refuses_another_version_than_requested(fake_trt):
    info = Adapter(version="8.6").probe()
    assert (info.available, info.unavailable_status, info.version) == (False, "skipped", "8.6")
    assert "requested TensorRT 8.6, but" in info.reason and "has 8.5.3.1" in info.reason


@pytest.mark.parametrize("name", IN_TRT_ENV)
def test_worker_side_files_are_python39_syntax(name):
    ast.parse((ENGINE_DIR / name).read_text(), feature_version=(3, 9))


@pytest.mark.parametrize("name", IN_TRT_ENV)
def test_worker_side_files_import_only_stdlib_numpy_tensorrt(name):
    allowed = set(sys.stdlib_module_names) | {"numpy", "tensorrt"}
    tree = ast.parse((ENGINE_DIR / name).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= allowed, imported - allowed


@pytest.mark.skipif(_libcuda_loads(), reason="libcuda.so.1 is here: the run stage would go further")
def test_run_maps_stages_precision_dtypes_and_notes(fake_trt, bundle):
    obs = Adapter().run(bundle)
    assert not obs.crashed
    assert obs.stage == "build"  # parsed and built; the run stage needs libcuda.so.1
    assert obs.error.startswith("run: OSError") and "libcuda.so.1" in obs.error
    assert obs.precision["node_of_c"]["precision"] == "int8"
    assert obs.network_dtypes["xq"] == "FLOAT"  # the Q layer's output before the build, as in #3844
    assert "[WARNING] fake: Missing scale and zero-point for tensor x" in obs.log
    assert "verbose chatter" not in obs.log
    assert obs.options["tactics"] == "default"  # TensorRT's own default: the stand-in turns every source on
    assert obs.options["tactic_sources"] == ["CUBLAS", "CUBLAS_LT", "CUDNN", "EDGE_MASK_CONVOLUTIONS",
                                             "JIT_CONVOLUTIONS"]
    assert obs.options["builder_flags"] == ["INT8"] and obs.options["profiling_verbosity"] == "DETAILED"
    assert "parser flag NATIVE_INSTANCENORM not in this TensorRT" in obs.options["notes"]
    assert "Python plugins need TensorRT >= 10" in obs.options["plugins_missing"]
    assert set(obs.timings) == {"load", "build", "run"}


def test_segfault_in_build_is_a_crash_that_keeps_the_load_evidence(fake_trt, bundle, monkeypatch):
    monkeypatch.setenv("FAKE_TRT_CRASH", "build")
    obs = Adapter().run(bundle)
    assert obs.crashed == "signal 11 (SIGSEGV)" and obs.options["crash_signal"] == "SIGSEGV"  # the engine's own fault
    assert obs.stage == "load"
    assert obs.network_dtypes["xq"] == "FLOAT"
    assert "Missing scale and zero-point" in obs.log  # logged just before the crash


def test_hang_is_a_timeout(fake_trt, bundle, monkeypatch):
    monkeypatch.setenv("FAKE_TRT_HANG", "build")
    obs = Adapter(timeout=2).run(bundle)
    assert obs.crashed == "timeout after 2 s" and "crash_signal" not in obs.options  # killed from outside: tried again
    assert obs.stage == "load"


@pytest.mark.parametrize("isolate", [False, True], ids=["serve", "isolate"])
@pytest.mark.parametrize("when", ["at_start", "after_request"])
def test_interpreter_that_segfaults_is_a_crash(bundle, tmp_path, isolate, when):
    """Its last words are kept whether it wrote them before or after the request reached it."""
    python = tmp_path / "python-segv"
    wait = "read request\n" if when == "after_request" and not isolate else ""
    python.write_text(f"#!/bin/sh\n{wait}echo about to crash >&2\nkill -SEGV $$\n")
    python.chmod(0o755)
    obs = Adapter(python=str(python), isolate=isolate).run(bundle)
    assert (obs.crashed, obs.stage) == ("signal 11 (SIGSEGV)", "")
    assert "about to crash" in obs.log


def _fault_bundle(root: Path, name: str, fault: str) -> Bundle:
    """A bundle whose model makes the stand-in tensorrt segfault, abort or hang in its build ("" = none)."""
    path = root / name
    path.mkdir()
    (path / "model.onnx").write_bytes(f"FAKE_TRT:{fault}".encode() if fault else b"")
    np.savez(path / "inputs.npz", x=np.zeros((1, 16, 8, 8), np.float32))
    return Bundle(path=path, meta={"bundle": f"grouped_conv/{name}", "target_nodes": ["node_of_c"], "trt": {}})


@pytest.mark.parametrize("isolate", [False, True], ids=["serve", "isolate"])
@pytest.mark.parametrize("fault, crashed", [("segv", "signal 11 (SIGSEGV)"), ("abort", "signal 6 (SIGABRT)"),
                                            ("hang", "timeout after {} s")])
def test_a_fault_in_one_cell_costs_that_cell_only(fake_trt, tmp_path, isolate, fault, crashed):
    start = time.monotonic()
    alone = Adapter(isolate=True).run(_fault_bundle(tmp_path, "alone", ""))  # a healthy cell with nothing beside it
    assert not alone.crashed and alone.stage == "build" and alone.precision  # the build ran; no GPU to run on
    # The hang's timeout: 2 s, or three times what a healthy cell with its own worker took here (a slow or emulated
    # CPU starts Python slowly), so that only the hanging cell can reach it.
    timeout = max(2, math.ceil(3 * (time.monotonic() - start)))
    names = ["a", "b", "c", "d"]
    bundles = [_fault_bundle(tmp_path, n, fault if n == "b" else "") for n in names]
    adapter = Adapter(timeout=timeout, isolate=isolate)
    try:
        observed = {b.path.name: adapter.run(b) for b in bundles}
    finally:
        adapter.close()
    assert observed["b"].crashed == crashed.format(timeout) and observed["b"].stage == "load"
    for name in ("a", "c", "d"):
        obs = observed[name]
        assert (obs.crashed, obs.stage, obs.error, obs.precision) == ("", alone.stage, alone.error, alone.precision)


def test_request_carries_the_bundles_trt_options(bundle, tmp_path):
    request = json.loads(Adapter()._write_request(bundle, tmp_path).read_text())
    assert request["trt"]["parser_flags"] == ["NATIVE_INSTANCENORM"]
    assert request["target_nodes"] == ["node_of_c"]
    assert Path(request["model"]) == (bundle.path / "model.onnx").resolve()


def test_outputs_come_back_by_name(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    np.savez(out / "outputs.npz", np.arange(3, dtype=np.int8), np.ones(2, np.float32))
    result = {"stage": "run", "outputs": str(out / "outputs.npz"), "output_names": ["file", "y"]}
    (out / "result.json").write_text(json.dumps(result))
    obs = Adapter()._observe(tmp_path, 0, "", "")
    assert obs.stage == "run" and not obs.error
    assert obs.outputs["file"].dtype == np.int8 and obs.outputs["y"].tolist() == [1.0, 1.0]


def test_python_plugins_carry_the_names_the_cases_use():
    from cases import q_output_type, quantized_constant_plugin
    from engines.tensorrt import plugins

    assert q_output_type.PLUGIN_NAMESPACE == quantized_constant_plugin.PLUGIN_DOMAIN == plugins.NAMESPACE
    by_api = list(q_output_type.PLUGIN_OPS.items())
    by_api += [(api, op) for op, api in quantized_constant_plugin.PLUGIN_OPS.values()]
    for api, op in by_api:
        assert op in (plugins.V3_PLUGINS if api == "v3" else plugins.V2_PLUGINS), (api, op)


def test_serve_mode_keeps_one_worker_and_replaces_it_after_a_crash(fake_trt, bundle, monkeypatch):
    """One worker serves many cells; a crash costs the cell it happened in, then a fresh worker starts."""
    adapter = Adapter()
    first = adapter.run(bundle)
    server = adapter._server
    monkeypatch.setenv("FAKE_TRT_CRASH", "build")  # only a worker started from now on sees this
    again = adapter.run(bundle)
    assert not first.crashed and not again.crashed and adapter._server is server
    os.kill(server.proc.pid, signal.SIGSEGV)  # the serving worker dies between cells
    server.proc.wait()
    assert adapter.run(bundle).crashed == "signal 11 (SIGSEGV)" and adapter._server is None
    replaced = adapter.run(bundle)  # a fresh worker, which crashes in its build
    assert replaced.crashed == "signal 11 (SIGSEGV)" and replaced.stage == "load"
    adapter.close()


def test_isolate_starts_one_worker_per_cell(fake_trt, bundle, monkeypatch):
    adapter = Adapter(isolate=True)
    assert not adapter.run(bundle).crashed and adapter._server is None
    monkeypatch.setenv("FAKE_TRT_CRASH", "build")
    assert adapter.run(bundle).crashed == "signal 11 (SIGSEGV)"


@pytest.mark.parametrize(
    "version, cudnn, trt, why",
    [
        ("8.6.0", "stub (libcudnn.so.8 reports version 1)", {"needs_cudnn": "plugin X"}, "needs cuDNN"),
        ("8.6.0", "libcudnn.so.8 8906", {"needs_cudnn": "plugin X"}, ""),
        ("8.6.0", "libcudnn.so.8 8906", {"plugins": ["qdq_matrix::Int8IdentityV2"]}, "Python plugins"),
        ("10.8.0.43", "libcudnn.so.8 8906", {"plugins": ["qdq_matrix::Int8IdentityV2"]}, ""),
    ],
)
def test_cannot_run_says_why_before_anything_runs(bundle, version, cudnn, trt, why):
    from tests.engines.test_tensorrt_builtin_plugins import caps

    adapter = Adapter()
    adapter._info = EngineInfo("tensorrt", version, "NVIDIA H200 (sm_90)", True, versions={"cudnn": cudnn},
                               capabilities=caps(version))
    reason = adapter.cannot_run(Bundle(path=bundle.path, meta={**bundle.meta, "trt": trt}))
    assert (why in reason) if why else reason == ""


@pytest.mark.parametrize("version, why", [("8.5.3.1", "no NATIVE_INSTANCENORM flag"), ("8.6.0", "")])
def test_native_instancenorm_before_8_6_still_needs_cudnn(bundle, version, why):
    adapter = Adapter(tactics="tensorrt-only")  # a stub cuDNN: only TensorRT's own tactics can build
    flags = ["NATIVE_INSTANCENORM"] if version >= "8.6" else []  # the parser flag arrived in 8.6
    adapter._info = EngineInfo("tensorrt", version, "NVIDIA H200 (sm_90)", True, versions={"cudnn": "stub (x)"},
                               capabilities={"parser_flags": flags})
    meta = {**bundle.meta, "trt": {"parser_flags": ["NATIVE_INSTANCENORM"]}}
    reason = adapter.cannot_run(Bundle(path=bundle.path, meta=meta))
    assert (why in reason and "needs cuDNN" in reason) if why else reason == ""


def test_an_xdist_worker_takes_its_controllers_probe_answer(monkeypatch):
    """The controller's probe answer is handed to each xdist worker (probe_answers -> adopt_probe_answers), which then
    starts no probe of its own; an answer from another environment is not taken."""
    from engines.tensorrt import lifeline, probes

    monkeypatch.setattr(probes, "_PROBES", {})
    adapter = Adapter(python=sys.executable)
    answer = {"version": "8.6.0", "library": "/x/libnvinfer.so.8"}
    handed = [[list(probes.probe_key(sys.executable, adapter.module)), answer]]
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")  # who runs it is no part of the answer
    monkeypatch.setenv(lifeline.PARENT_ENV, "12345")
    monkeypatch.setenv("COLUMNS", "80")  # xdist gives its workers a terminal size
    probes.adopt_probe_answers(json.loads(json.dumps(handed)))  # as xdist's workerinput carries it

    def no_probe(self):
        raise AssertionError("a probe process was started")

    monkeypatch.setattr(Adapter, "_ask_probe", no_probe)
    assert adapter._worker_probe() == answer
    monkeypatch.setenv("LD_LIBRARY_PATH", "/elsewhere")  # another environment: its own probe
    with pytest.raises(AssertionError, match="probe process"):
        adapter._worker_probe()


def test_request_folders_go_in_memory_only_where_there_is_room(monkeypatch, tmp_path):
    """$QDQ_SCRATCH wins; else /dev/shm with 1 GiB free; a container's 64 MiB /dev/shm is left alone."""
    from engines.tensorrt import adapter as family

    family.scratch.cache_clear()
    monkeypatch.setenv(family.SCRATCH_ENV, str(tmp_path))
    assert family.scratch() == str(tmp_path)
    monkeypatch.delenv(family.SCRATCH_ENV)

    class Small:
        f_bavail, f_frsize = (64 << 20) // 4096, 4096

    family.scratch.cache_clear()
    monkeypatch.setattr(family.os, "statvfs", lambda path: Small())
    try:
        assert family.scratch() is None
    finally:
        family.scratch.cache_clear()  # the next test chooses again, with the real statvfs


def test_a_failed_build_on_a_gpu_keeps_its_verbose_log(fake_trt, tmp_path):
    """A build that fails on a GPU is built once more with every logger message kept: the cell's fields stay the first
    attempt's (its log WARNING and worse), the verbose log is the second's, VERBOSE included (stand-in tensorrt)."""
    from core.cell import unpack_text

    obs = Adapter(isolate=True).run(_fault_bundle(tmp_path, "f", "fail"))
    assert (obs.stage, obs.crashed) == ("load", "") and "Could not find any implementation" in obs.error
    assert "[VERBOSE]" not in obs.log
    text = unpack_text(obs.verbose_log)
    assert "[VERBOSE] fake: tactic 0x0000000000000001 skipped" in text and "[ERROR] fake: Could not find" in text
    assert obs.verbose_log["bytes"] == obs.verbose_log["kept"] == len(text.encode())
    healthy = Adapter(isolate=True).run(_fault_bundle(tmp_path, "h", ""))
    assert healthy.verbose_log == {}  # only a failure at load or build is built again


def test_a_verbose_rebuild_that_dies_leaves_the_first_failure(fake_trt, tmp_path):
    """The second, verbose build segfaults: the cell is the first build's failure, never a crash, and says why it
    has no verbose log."""
    obs = Adapter(isolate=True).run(_fault_bundle(tmp_path, "f", "fail-then-segv"))
    assert (obs.stage, obs.crashed, obs.verbose_log) == ("load", "", {})
    assert "Could not find any implementation" in obs.error
    assert any("the verbose rebuild did not finish: signal 11" in n for n in obs.options["notes"])


def test_the_verbose_log_keeps_its_last_bytes(worker):
    text = worker.VerboseText(limit=100)
    for i in range(50):
        text.add("VERBOSE", f"line {i:02d}")
    assert text.total == 50 * len("[VERBOSE] line 00\n") and text.kept <= 100
    assert list(text.lines)[-1] == "[VERBOSE] line 49\n" and "[VERBOSE] line 00\n" not in text.lines


def test_the_worker_records_numpys_version_without_importing_numpy(worker, monkeypatch):
    """A TensorRT-RTX build on a machine without its GPU never uses numpy: its version comes from its metadata."""
    monkeypatch.delitem(sys.modules, "numpy")
    assert worker.numpy_version() == np.__version__ and "numpy" not in sys.modules
    monkeypatch.setitem(sys.modules, "numpy", np)  # where numpy is imported, it says
    assert worker.numpy_version() == np.__version__


def test_the_probe_records_the_os_and_container(fake_trt):
    """ISSUE.md's "Operating System" and "Baremetal or Container" come from the worker's probe, into hardware_detail."""
    detail = Adapter().probe().hardware_detail
    assert detail["os"].endswith(f"({os.uname().sysname} {os.uname().release})")
    assert detail["container"] == ("docker" if os.path.exists("/.dockerenv") else detail["container"]) != ""


def test_numpys_version_is_read_without_importlib_metadata(tmp_path):
    """A worker starts after every crash: numpy's version comes from its dist-info folder on sys.path, without
    importing importlib.metadata (its email parser is about 50 ms of every start), and says what importlib.metadata
    says."""
    code = ("import importlib.util, json, sys; from importlib import metadata as m; want = m.version('numpy'); "
            "[sys.modules.pop(k) for k in list(sys.modules) if k.startswith(('importlib.metadata', 'email'))]; "
            f"s = importlib.util.spec_from_file_location('w', {str(WORKER)!r}); "
            "w = importlib.util.module_from_spec(s); s.loader.exec_module(w); sys.modules.pop('numpy', None); "
            "got = w.numpy_version(); "
            "print(json.dumps([got, want, 'importlib.metadata' in sys.modules]))")
    got, want, imported = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                    check=True, cwd=tmp_path).stdout)
    assert got == want and not imported


def test_a_dist_info_that_is_not_the_only_one_is_left_to_importlib_metadata(worker, tmp_path, monkeypatch):
    for name in ("numpy-1.0.dist-info", "numpy-2.0.dist-info"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "METADATA").write_text(f"Metadata-Version: 2.1\nName: numpy\nVersion: {name[6:9]}\n\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    assert worker.dist_info_version("numpy") == ""
    (tmp_path / "numpy-1.0.dist-info" / "METADATA").unlink()
    (tmp_path / "numpy-1.0.dist-info").rmdir()
    assert worker.dist_info_version("numpy") == "2.0"


def test_result_json_leaves_the_log_to_log_jsonl(fake_trt, bundle, tmp_path, monkeypatch):
    """result.json is written after every stage; the log, which a build's layer listing makes long, is appended to
    log.jsonl once, as each message comes, and the cell's log is read from there."""
    request = Adapter()._write_request(bundle, tmp_path)
    out = subprocess.run([sys.executable, str(WORKER), str(request)], capture_output=True, text=True, check=True)
    result = json.loads(Path(out.stdout.strip()).read_text())
    lines = (tmp_path / "out" / "log.jsonl").read_text().splitlines()
    assert "log" not in result and result["stage"] == "build"
    assert any("Missing scale and zero-point" in json.loads(line)["msg"] for line in lines)


def test_a_requests_paths_are_real_paths(tmp_path):
    """The request names the model and inputs by their real paths: a link to the bundle's folder, or a file that is a
    link itself, resolved as Path.resolve resolves them."""
    from engines.tensorrt.adapter import real_path

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "model.onnx").write_bytes(b"")
    (tmp_path / "elsewhere.npz").write_bytes(b"")
    (tmp_path / "real" / "inputs.npz").symlink_to(tmp_path / "elsewhere.npz")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for folder in (tmp_path / "real", tmp_path / "link"):
        for name in ("model.onnx", "inputs.npz", "missing.npz"):
            assert real_path(folder, name) == str((folder / name).resolve())
    assert real_path(tmp_path / "link", "inputs.npz") == str(tmp_path / "elsewhere.npz")


def test_the_log_is_read_whole_or_line_by_line(tmp_path):
    """log.jsonl in one parse where every line is whole; a line a crash cut short is left out, the others kept."""
    from engines.tensorrt.adapter import _read_log

    lines = [json.dumps({"severity": "INFO", "msg": f"m{i}, {i}"}) for i in range(3)]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert [m["msg"] for m in _read_log(path)] == ["m0, 0", "m1, 1", "m2, 2"]
    path.write_text("\n".join(lines) + '\n{"severity": "INFO", "ms')
    assert [m["msg"] for m in _read_log(path)] == ["m0, 0", "m1, 1", "m2, 2"]
    path.write_text('1, 2\n{"severity": "INFO", "msg": "m"}\n')  # a line of two values is no message
    assert _read_log(path) == [{"severity": "INFO", "msg": "m"}]
    assert _read_log(tmp_path / "none.jsonl") == []
