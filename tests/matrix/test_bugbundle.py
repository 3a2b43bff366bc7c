"""Bug bundles: real ONNX Runtime/OpenVINO cells reproduce through their own repro.py; TensorRT bundles are complete."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Dict, List

import pytest

from cases import get_case
from core.cell import Cell
from core.engines import TRT_FILES
from engines import get_engine
from engines.cells import judge_observation, run_cell
from generators.bundle import load_bundle
from generators.write import write_all
from matrix.__main__ import main
from matrix.bugbundle import DETAIL_FIELDS, ENVIRONMENT_FIELDS, RUN_FIELDS, VERSION_FIELDS, column_folder
from matrix.merge import load_results

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
OBSERVED = DATA / "observed-sample.jsonl"  # two real TensorRT cells (8.5.3.1, 8.6.0) from an H200
FAKE_TRT = DATA / "trt" / "fake_tensorrt"  # not TensorRT: replays its API surface for plumbing tests
BUNDLE = "grouped_conv/cpg=3+weights=per_channel+activation=int8+output_qdq=yes+epilogue=none"
PARAMS = {"cpg": [3], "weights": ["per_channel"], "activation": ["int8"], "output_qdq": [True], "epilogue": ["none"]}
RUN = {"date": "2026-11-22T08:00:00Z", "source": "local"}
ISSUE_SECTIONS = ("## Description", "## Environment", "## Relevant Files", "## Steps To Reproduce",
                  "**Have you tried [the latest release]", "**Can this model run on other frameworks?**")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> Path:
    """The grouped_conv bundle the observed TensorRT cells ran, rebuilt from its seed."""
    root = tmp_path_factory.mktemp("bundles")
    write_all(["grouped_conv"], PARAMS, root=root)
    return root


@pytest.fixture(scope="module")
def cpu_cells(bundles) -> List[Cell]:
    """Real cells: the bundle on this machine's ONNX Runtime and OpenVINO."""
    bundle = load_bundle(bundles / BUNDLE)
    cells = []
    for name in ("onnxruntime", "openvino"):
        engine = get_engine(name, **({"providers": ["CPUExecutionProvider"]} if name == "onnxruntime" else {}))
        cells.append(run_cell(get_case("grouped_conv"), bundle, engine, engine.probe(), dict(RUN)))
    return cells


def write_jsonl(path: Path, cells: List[Cell]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(c.to_json() + "\n" for c in cells), encoding="utf-8")
    return path


def bugs(*args: str) -> int:
    return main(["bugs", *args])


def run_repro(folder: Path, env: Dict[str, str] = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "repro.py"], cwd=str(folder), capture_output=True, text=True,
                          timeout=300, env=env)


def only_folder(out: Path) -> Path:
    found = [p.parent for p in out.glob("*/*/ISSUE.md")]
    assert len(found) == 1, found
    return found[0]


def test_the_generator_rebuilds_the_bundle_the_observed_cells_ran(bundles):
    observed = load_results([OBSERVED]).cells
    assert {c.engine_version for c in observed} == {"8.5.3.1", "8.6.0"}
    assert {c.digest for c in observed} == {load_bundle(bundles / BUNDLE).meta["digest"]}


@pytest.mark.parametrize("engine", ["onnxruntime", "openvino"])
def test_repro_reproduces_a_real_cell(engine, bundles, cpu_cells, tmp_path):
    cell = next(c for c in cpu_cells if c.engine == engine)
    assert cell.status == "pass", cell.error  # |w| <= 8: no CPU's INT8 kernels saturate on this bundle
    results = write_jsonl(tmp_path / "results" / "cpu.jsonl", cpu_cells)
    out = tmp_path / "bug-bundles"
    code = bugs("--results", str(results), "--bundles", str(bundles), "--out", str(out), "--cell", BUNDLE,
                "--engine", engine, "--version", cell.engine_version)
    assert code == 0
    folder = only_folder(out)
    assert folder == out / column_folder(cell) / BUNDLE.replace("/", "__")
    assert folder.parent.name.startswith(f"{engine}_{cell.engine_version}_cpu_")
    done = run_repro(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    # the suite's own cell on this machine, whatever error this CPU's kernels make, by the suite's own measure
    recorded = f"pass (max error {cell.max_error_steps:.3g} steps, tolerance {cell.tolerance_steps:g})"
    assert done.stdout.strip().splitlines()[-1] == f"REPRODUCED: {recorded} [max error as recorded]"


@pytest.mark.parametrize("engine", ["onnxruntime", "openvino"])
def test_repro_reproduces_a_real_failure(engine, tmp_path):
    """A TensorRT-plugin model: the suite marks it not run on CPU engines; run anyway, it is a real load failure."""
    root = tmp_path / "bundles"
    bundle = load_bundle(write_all(["quantized_constant_plugin"], {"form": ["int8_const_to_plugin_v2"]}, root=root)[0])
    adapter = get_engine(engine)
    cell = judge_observation(get_case(bundle.meta["case"]), bundle, adapter.probe(), adapter.run(bundle), dict(RUN))
    assert (cell.status, cell.last_stage) == ("fail", "")
    results = write_jsonl(tmp_path / "results.jsonl", [cell])
    out = tmp_path / "bug-bundles"
    assert bugs("--results", str(results), "--bundles", str(root), "--out", str(out)) == 0
    folder = only_folder(out)
    assert (folder / "ISSUE.md").read_text().startswith("# Load failure of ")
    done = run_repro(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("REPRODUCED: fail at load: ")


def test_repro_says_so_when_the_recorded_outcome_does_not_happen(bundles, cpu_cells, tmp_path):
    claimed = replace(next(c for c in cpu_cells if c.engine == "onnxruntime"), status="fail", last_stage="",
                      verdict="fails against expectation", error="claimed: the session cannot be created",
                      max_error_steps=None)
    results = write_jsonl(tmp_path / "claimed.jsonl", [claimed])
    out = tmp_path / "bug-bundles"
    assert bugs("--results", str(results), "--bundles", str(bundles), "--out", str(out)) == 0
    done = run_repro(only_folder(out))
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("DID NOT REPRODUCE: pass")
    assert "recorded: fail at load: claimed: the session cannot be created" in last


def test_default_run_bundles_failing_and_unexpected_cells_only(bundles, cpu_cells, tmp_path):
    results = write_jsonl(tmp_path / "results" / "cpu.jsonl", cpu_cells)
    out = tmp_path / "bug-bundles"
    assert bugs("--results", str(results), "--results", str(OBSERVED), "--bundles", str(bundles),
                "--out", str(out)) == 0
    made = sorted(str(p.parent.relative_to(out)) for p in out.glob("*/*/ISSUE.md"))
    assert made == [f"{column_folder(c)}/{BUNDLE.replace('/', '__')}" for c in load_results([OBSERVED]).cells]
    assert [m.split("_NVIDIA")[0] for m in made] == ["tensorrt_8.5.3.1", "tensorrt_8.6.0"]


@pytest.fixture
def trt_bundle(bundles, cpu_cells, tmp_path) -> Path:
    """The bug bundle of the observed TensorRT 8.6.0 cell, with the real CPU cells merged in."""
    results = write_jsonl(tmp_path / "results" / "cpu.jsonl", cpu_cells)
    out = tmp_path / "bug-bundles"
    assert bugs("--results", str(results), "--results", str(OBSERVED), "--bundles", str(bundles), "--out", str(out),
                "--cell", BUNDLE, "--engine", "tensorrt", "--version", "8.6.0", "--zip") == 0
    return only_folder(out)


def test_tensorrt_bundle_holds_every_file(trt_bundle):
    names = {p.name for p in trt_bundle.iterdir()}
    assert names == {"model.onnx", "inputs.npz", "expected.npz", "case.json", "cell.json", "repro.py", "commands.md",
                     "data_loader.py", "environment.json", "log.txt", "ISSUE.md", "suite"}
    assert {str(p.relative_to(trt_bundle)) for p in (trt_bundle / "suite").rglob("*.py")} == \
        {"suite/judge.py", "suite/numerics.py", "suite/words.py", "suite/engines.py", "suite/thresholds.py"} | \
        {f"suite/tensorrt/{n}" for n in TRT_FILES}
    with zipfile.ZipFile(str(trt_bundle) + ".zip") as z:
        assert {f"{trt_bundle.name}/repro.py", f"{trt_bundle.name}/suite/tensorrt/worker.py"} <= set(z.namelist())


def test_repro_and_the_suite_files_are_the_repositorys_own_unchanged(trt_bundle):
    """No template: repro.py is matrix/repro.py and suite/ holds the worker and the error measure as they are."""
    assert (trt_bundle / "repro.py").read_bytes() == (REPO / "matrix" / "repro.py").read_bytes()
    assert (trt_bundle / "suite" / "numerics.py").read_bytes() == (REPO / "core" / "numerics.py").read_bytes()
    for name in TRT_FILES:
        assert (trt_bundle / "suite" / "tensorrt" / name).read_bytes() == \
            (REPO / "engines" / "tensorrt" / name).read_bytes()


def test_tensorrt_repro_is_python_39_with_only_stdlib_numpy_and_tensorrt(trt_bundle):
    for path in [trt_bundle / "repro.py", *(trt_bundle / "suite").rglob("*.py")]:
        tree = ast.parse(path.read_text(), feature_version=(3, 9))
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                     if isinstance(n, ast.ImportFrom) and n.module and not n.level}
        assert imported - set(sys.stdlib_module_names) <= {"numpy", "tensorrt"}, path
    cell = json.loads((trt_bundle / "cell.json").read_text())  # the recorded error and signature, as data
    assert "Error Code 10: Internal Error" in cell["recorded"]["error_first_line"]
    assert cell["recorded"]["failed_stage"] == "build"
    assert cell["engine"] == {"name": "tensorrt", "family": "tensorrt", "module": "tensorrt", "title": "TensorRT",
                              "requirement": "tensorrt (8.x needs numpy<1.24)", "device": "nvidia-gpu",
                              "install": 'pip install "tensorrt==8.6.0" "numpy<1.24"'}
    assert cell["request"]["trt"]["tactics"] == "tensorrt-only"  # the observed cell left cuBLAS/cuDNN out
    assert cell["request"]["target_ops"] == {"node_of_conv": "Conv"}  # as the adapter hands them to the worker
    assert "Error Code 10" not in (trt_bundle / "repro.py").read_text()  # no cell text in the code


def test_tensorrt_issue_follows_nvidias_template(trt_bundle):
    issue = (trt_bundle / "ISSUE.md").read_text()
    title = issue.splitlines()[0]
    assert re.fullmatch(r"# Build failure of TensorRT 8\.6\.0 when running grouped_conv \(cpg=3, .*\) .* on GPU "
                        r"NVIDIA H200", title), title
    positions = [issue.index(s) for s in ISSUE_SECTIONS]
    assert positions == sorted(positions)
    assert "**TensorRT Version**: 8.6.0" in issue and "**NVIDIA Driver Version**: 580.159.04" in issue
    assert "https://github.com/NVIDIA/TensorRT/issues/4060" in issue
    assert "`no_implementation`" in issue  # the matched signature
    # versions tried; the sample's builds left cuBLAS/cuDNN out, so its column says so
    assert "8.5.3.1 on NVIDIA H200 (sm_90) · tactics=tensorrt-only: fail at build" in issue
    assert re.search(r"ONNX Runtime \S+ on cpu: .*: pass", issue) and re.search(r"OpenVINO \S+ on cpu: .*: pass", issue)
    assert re.search(r"cross-checked:\n- onnxruntime \S+: agree", issue)  # case.json's cross_check
    assert "trtexec --onnx=model.onnx" in issue and "polygraphy run model.onnx --trt --onnxrt" in issue
    # the trtexec line runs as pasted: the raw input files its --loadInputs names are written first, from inputs.npz
    write = issue.index("d[k].tofile(k + '.bin')")
    assert write < issue.index("trtexec --onnx=model.onnx") and "--loadInputs=" in issue[write:]


def test_tensorrt_commands_and_data_loader(trt_bundle, monkeypatch):
    commands = (trt_bundle / "commands.md").read_text()
    assert "--int8" in commands and "--tacticSources=-CUBLAS,-CUBLAS_LT,-CUDNN" in commands
    assert "--loadInputs=x:x.bin" in commands and "--exportLayerInfo=layers.json" in commands
    assert "--tactic-sources EDGE_MASK_CONVOLUTIONS JIT_CONVOLUTIONS" in commands
    assert "--data-loader-script data_loader.py" in commands and "--atol y:0.015625 --rtol 0" in commands
    monkeypatch.chdir(trt_bundle.parent)  # the loader finds inputs.npz next to itself, not in the working folder
    namespace: dict = {"__file__": str(trt_bundle / "data_loader.py")}
    exec(compile((trt_bundle / "data_loader.py").read_text(), str(trt_bundle / "data_loader.py"), "exec"), namespace)
    feeds = list(namespace["load_data"]())
    expected = load_bundle(trt_bundle).inputs()
    assert len(feeds) == 1 and set(feeds[0]) == set(expected)
    assert all((feeds[0][k] == expected[k]).all() for k in expected)


def test_environment_json_holds_only_whitelisted_fields(trt_bundle, monkeypatch):
    env = json.loads((trt_bundle / "environment.json").read_text())
    assert set(env) <= set(ENVIRONMENT_FIELDS) | {"hardware_detail", "versions", "run"}
    assert set(env["hardware_detail"]) <= set(DETAIL_FIELDS)
    assert set(env["versions"]) <= set(VERSION_FIELDS)
    assert set(env["run"]) <= set(RUN_FIELDS)  # no host, no command line
    assert env["hardware_detail"]["name"] == "NVIDIA H200" and env["versions"]["tensorrt"] == "8.6.0"


def test_nothing_from_the_process_environment_is_written(bundles, tmp_path, monkeypatch):
    monkeypatch.setenv("QDQ_TEST_SECRET", "s3cr3t-token-value")
    out = tmp_path / "bug-bundles"
    assert bugs("--results", str(OBSERVED), "--bundles", str(bundles), "--out", str(out)) == 0
    texts = [p.read_text(errors="replace") for p in out.rglob("*") if p.suffix in (".md", ".py", ".json", ".txt")]
    assert texts and not any("s3cr3t-token-value" in t for t in texts)


def test_tensorrt_repro_plumbing_with_a_fake_tensorrt(trt_bundle):
    """Not TensorRT: the stand-in parses and builds, then running needs libcuda, so the build failure is not seen."""
    env = dict(os.environ, PYTHONPATH=str(FAKE_TRT))
    done = run_repro(trt_bundle, env)
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("DID NOT REPRODUCE: fail at run: run: ") and "recorded: fail at build" in last
    assert "[signature no_implementation NOT matched]" in last


def without(module: str, tmp_path: Path) -> Dict[str, str]:
    """An environment whose interpreter cannot import `module`: a package of that name that raises on import shadows
    any installed one (this machine's TensorRT for RTX, say), as an absent wheel would."""
    shadow = tmp_path / "absent"
    (shadow / module).mkdir(parents=True)
    (shadow / module / "__init__.py").write_text(f"raise ImportError({'No module named ' + repr(module)!r})\n")
    return dict(os.environ, PYTHONPATH=str(shadow))


def test_a_tensorrt_bundle_without_tensorrt_could_not_run_here(trt_bundle):
    """No tensorrt in this interpreter (and no GPU here): "COULD NOT RUN HERE", exit 3, naming what is missing and
    the command that installs it, never "DID NOT REPRODUCE" (the words and status of a fixed bug)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = run_repro(trt_bundle, env)
    last = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 3, done.stdout + done.stderr
    assert last.startswith("COULD NOT RUN HERE: tensorrt (TensorRT) is not installed"), last
    assert 'pip install "tensorrt==8.6.0" "numpy<1.24"' in last and "DID NOT REPRODUCE" not in done.stdout


@pytest.mark.parametrize("engine", ["onnxruntime", "openvino", "tensorrt", "tensorrt-rtx"])
def test_every_engine_familys_bundle_says_when_it_could_not_run(engine, bundles, tmp_path):
    """Each engine's module made unimportable, the worker's import failure included (TensorRT's stand-in and
    TensorRT-RTX run through the worker, the CPU engines in a child process): exit 3 and the missing module named."""
    from matrix.bugbundle import make

    observed = next(c for c in load_results([OBSERVED]).cells if c.engine_version == "8.6.0")
    extra: dict = {"tensorrt-rtx": dict(hardware="no GPU: ahead-of-time build", hardware_detail={}, status="built",
                                        last_stage="build", variant={"target": "SM86"}, fused=True)}
    cell = replace(observed, engine=engine, engine_version={"onnxruntime": "1.31.1", "openvino": "2026.4.1",
                                                            "tensorrt-rtx": "1.7.1.116"}.get(engine, "8.6.0"),
                   **extra.get(engine, {}))
    folder = make(cell, [cell], bundles, tmp_path / "out")
    module = {"tensorrt-rtx": "tensorrt_rtx"}.get(engine, engine)
    env = without(module, tmp_path)
    if engine == "tensorrt":  # installed but broken: the worker's own import fails, past repro.py's look for it
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(FAKE_TRT)])
    done = run_repro(folder, env)
    last = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 3 and last.startswith("COULD NOT RUN HERE: "), done.stdout + done.stderr
    assert f"{module} could not be imported" in last and "pip install" in last, last


def test_a_tensorrt_bundle_without_a_gpu_could_not_run_here(trt_bundle, tmp_path):
    """tensorrt importable (a module that is no stand-in), but no NVIDIA GPU here: the worker says so, exit 3."""
    fake = tmp_path / "not-a-stand-in" / "tensorrt"
    fake.mkdir(parents=True)
    source = (FAKE_TRT / "tensorrt" / "__init__.py").read_text()
    (fake / "__init__.py").write_text(source.replace("__qdq_stand_in__ = ", "_was_stand_in = "))
    done = run_repro(trt_bundle, dict(os.environ, PYTHONPATH=str(fake.parent)))
    last = done.stdout.strip().splitlines()[-1]
    if Path("/dev/nvidia0").exists():
        pytest.skip("this machine has an NVIDIA GPU")
    assert done.returncode == 3 and last.startswith("COULD NOT RUN HERE: no NVIDIA GPU on this machine"), \
        done.stdout + done.stderr


def test_a_recorded_crash_is_reproduced_by_a_crash(bundles, tmp_path):
    observed = next(c for c in load_results([OBSERVED]).cells if c.engine_version == "8.6.0")
    crashed = replace(observed, status="crashed", reason="signal 11 (SIGSEGV)", signature="", error="", log="")
    results = write_jsonl(tmp_path / "crashed.jsonl", [crashed])
    out = tmp_path / "bug-bundles"
    assert bugs("--results", str(results), "--bundles", str(bundles), "--out", str(out)) == 0
    folder = only_folder(out)
    assert (folder / "ISSUE.md").read_text().startswith("# Crash failure of TensorRT 8.6.0")
    done = run_repro(folder, dict(os.environ, PYTHONPATH=str(FAKE_TRT), FAKE_TRT_CRASH="build"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "REPRODUCED: crashed: signal 11 (SIGSEGV)"


def test_a_digest_mismatch_is_refused(bundles, tmp_path, capsys):
    observed = next(c for c in load_results([OBSERVED]).cells if c.engine_version == "8.6.0")
    results = write_jsonl(tmp_path / "other.jsonl", [replace(observed, digest="0" * 64)])
    out = tmp_path / "bug-bundles"
    assert bugs("--results", str(results), "--bundles", str(bundles), "--out", str(out)) == 1
    err = capsys.readouterr().err
    assert "refused" in err and "digest mismatch" in err and "not the model that ran" in err
    assert not out.exists() or not list(out.rglob("ISSUE.md"))


def test_edited_bundle_files_are_refused(bundles, tmp_path, capsys):
    import shutil

    copy = tmp_path / "bundles"
    shutil.copytree(bundles, copy)
    (copy / BUNDLE / "model.onnx").write_bytes((copy / BUNDLE / "model.onnx").read_bytes() + b"\0")
    assert bugs("--results", str(OBSERVED), "--bundles", str(copy), "--out", str(tmp_path / "out")) == 1
    assert "edited files?" in capsys.readouterr().err


def test_a_missing_bundle_is_refused(tmp_path, capsys):
    assert bugs("--results", str(OBSERVED), "--bundles", str(tmp_path / "none"), "--out", str(tmp_path / "out")) == 1
    err = capsys.readouterr().err
    assert "is not in" in err and "python -m generators write --case grouped_conv" in err


def test_cell_selection_errors_are_usage_errors(bundles, tmp_path, capsys):
    assert bugs("--results", str(OBSERVED), "--cell", BUNDLE) == 2
    assert "--cell needs --engine and --version" in capsys.readouterr().err
    assert bugs("--results", str(OBSERVED), "--bundles", str(bundles), "--cell", BUNDLE, "--engine", "tensorrt",
                "--version", "10.0") == 2
    assert "no cell" in capsys.readouterr().err


def test_a_tensorrt_rtx_cell_gets_the_worker_with_its_module_and_target(bundles, tmp_path):
    """TensorRT-RTX is the same family: the same worker files, its module and its ahead-of-time target as data."""
    from matrix.bugbundle import make

    observed = next(c for c in load_results([OBSERVED]).cells if c.engine_version == "8.6.0")
    rtx = replace(observed, engine="tensorrt-rtx", engine_version="1.5.0.114", status="built", last_stage="build",
                  verdict="undocumented", hardware="no GPU: ahead-of-time build", hardware_detail={},
                  variant={"target": "SM86"}, options={"target": "SM86"}, signature="", error="", fused=True)
    folder = make(rtx, [rtx], bundles, tmp_path / "out")
    cell = json.loads((folder / "cell.json").read_text())
    assert cell["engine"]["module"] == "tensorrt_rtx" and cell["engine"]["plugin_link"] == "none"
    assert cell["request"]["trt"]["target"] == "SM86" and "tactics" not in cell["request"]["trt"]
    assert cell["recorded"]["status"] == "built" and cell["recorded"]["fused"] is True
    assert {p.name for p in (folder / "suite" / "tensorrt").iterdir()} == set(TRT_FILES)
    issue = (folder / "ISSUE.md").read_text()
    assert 'pip install "tensorrt-rtx==1.5.0.114" numpy' in issue
    assert "**Settings**: target=SM86, plugin_link=none; an ahead-of-time build" in issue


def test_the_bundle_ships_every_file_the_worker_loads():
    """The worker loads its siblings as the package qdq_trt: the shipped list must hold their closure."""
    folder = REPO / "engines" / "tensorrt"
    pattern = re.compile(r"from \. import (\w+)|from \.(\w+) import|qdq_trt\.(\w+)")  # `from . import x as y` too
    seen, todo = set(), ["worker"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        text = (folder / f"{name}.py").read_text()
        for m in pattern.finditer(text):
            todo += [g for g in m.groups() if g]
    assert {f"{n}.py" for n in seen} <= set(TRT_FILES), sorted({f"{n}.py" for n in seen} - set(TRT_FILES))


@pytest.fixture
def dynamic_user_bundle(tmp_path) -> Path:
    """A user's dynamic-batch model, prepared with a min,opt,max range."""
    from check.bundle import bundle_from_model
    from check.shapes import InputShape
    from tests.check.models import qdq_conv

    model = qdq_conv(tmp_path / "dyn.onnx", dynamic_batch=True)
    return bundle_from_model(model, tmp_path / "bundles", shapes={"x": InputShape((1, 3, 8, 8), (2, 3, 8, 8),
                                                                                   (4, 3, 8, 8))}).path


def test_the_trtexec_and_polygraphy_commands_carry_the_profile(dynamic_user_bundle, tmp_path):
    from matrix.bugbundle import make

    bundle = load_bundle(dynamic_user_bundle)
    observed = next(c for c in load_results([OBSERVED]).cells if c.engine_version == "8.6.0")
    profile = {"x": {"min": [1, 3, 8, 8], "opt": [2, 3, 8, 8], "max": [4, 3, 8, 8], "from": "request"}}
    cell = replace(observed, bundle=bundle.id, case="user_model", params=dict(bundle.meta["params"]),
                   digest=bundle.meta["digest"], signature="", options=dict(observed.options, profile=profile))
    folder = make(cell, [cell], dynamic_user_bundle.parent.parent, tmp_path / "out")
    commands = (folder / "commands.md").read_text()
    assert "--minShapes=x:1x3x8x8 --optShapes=x:2x3x8x8 --maxShapes=x:4x3x8x8" in commands
    assert "--trt-min-shapes 'x:[1,3,8,8]' --trt-opt-shapes 'x:[2,3,8,8]' --trt-max-shapes 'x:[4,3,8,8]'" in commands
    assert "optimization profile (the inputs are at the opt shapes): x: min 1x3x8x8, opt 2x3x8x8, max 4x3x8x8" \
        in commands
    request = json.loads((folder / "cell.json").read_text())["request"]
    assert request["profile"] == {"x": {"min": [1, 3, 8, 8], "opt": [2, 3, 8, 8], "max": [4, 3, 8, 8]}}


def test_repro_builds_a_tensorrt_rtx_cell_with_the_profile_it_recorded(dynamic_user_bundle, tmp_path):
    """A real ahead-of-time build, in the bug bundle's own worker, from cell.json alone."""
    pytest.importorskip("tensorrt_rtx")
    from engines.tensorrt import RtxAdapter
    from matrix.bugbundle import make

    bundle = load_bundle(dynamic_user_bundle)
    adapter = RtxAdapter(python=sys.executable, target="SM86")
    try:
        cell = run_cell(get_case("user_model"), bundle, adapter, adapter.probe(), dict(RUN))
    finally:
        adapter.close()
    assert cell.status == "built", cell.error
    folder = make(cell, [cell], dynamic_user_bundle.parent.parent, tmp_path / "out")
    done = run_repro(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "note: optimization profile x: min [1, 3, 8, 8], opt [2, 3, 8, 8], max [4, 3, 8, 8]" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("REPRODUCED: built ahead of time")


def test_many_bug_bundles_are_announced_before_the_work_starts(bundles, tmp_path, capsys, monkeypatch):
    """More than MANY_BUGS to write (the whole catalogue's took minutes and 0.7 GB): the first line says how many."""
    import matrix.__main__ as cli

    monkeypatch.setattr(cli, "MANY_BUGS", 0)
    bugs("--results", str(OBSERVED), "--bundles", str(bundles), "--out", str(tmp_path / "out"))
    first = capsys.readouterr().out.splitlines()[0]
    assert re.match(r"writing \d+ bug bundles? to .*--model M, writes one$", first), first


def test_a_bug_bundle_of_a_failure_whose_stage_varies_reproduces_at_either_stage(make_cell, monkeypatch):
    """The suite's runs of 8.6.0 refused the reproducer at parse (an H200) and failed it at build (an H100): the bug
    bundle's repro.py takes either as the recorded failure, and says the stage varies; one stage seen is as before."""
    from matrix import repro
    from matrix.bugbundle import recorded, stages_seen
    from matrix.repro import verdict

    monkeypatch.setattr(repro, "SUITE", str(REPO / "core"))  # what a bundle's suite/ holds: core/words.py and more

    sm90 = {"compute_capability": "9.0"}
    b = "fp16_quantize_rounding/values=thread+output=int8"
    parse = make_cell(b, engine_version="8.6.0", hardware="NVIDIA H200 (sm_90)", hardware_detail=sm90, status="fail",
                      last_stage="", error="ONNX parse failed: scaleAllPositive", fused=None)
    build = make_cell(b, engine_version="8.6.0", hardware="NVIDIA H100 80GB HBM3 (sm_90)", hardware_detail=sm90,
                      status="fail", last_stage="load", error="build_serialized_network returned None", fused=None)
    said = recorded(parse, {}, stages_seen(parse, [parse, build]))
    assert said["last_stages_seen"] == ["", "load"] and said["failed_stages_seen"] == ["load", "build"]
    ok, line = verdict(said, {"status": "fail", "stage": "load", "error": "build_serialized_network returned None",
                              "failed_stage": "build"})
    assert ok and "its stage varies from run to run" in line and "at load and at build" in line, line
    alone = recorded(parse, {}, stages_seen(parse, [parse]))
    assert alone["last_stages_seen"] == []
    assert not verdict(alone, {"status": "fail", "stage": "load", "error": "x", "failed_stage": "build"})[0]


def sample(version: str) -> Cell:
    return next(c for c in load_results([OBSERVED]).cells if c.engine_version == version)


def issue_of(cell: Cell, everything: List[Cell], bundles: Path, out: Path) -> str:
    from matrix.bugbundle import make

    return (make(cell, everything, bundles, out) / "ISSUE.md").read_text()


def test_a_regression_says_so_in_its_title_and_first_line(bundles, tmp_path):
    """8.5.3.1 passed the reproducer on the same GPU architecture and 8.6.0 fails it: "Regression from 8.5.3.1 to
    8.6.0" opens the title and the description, and Expected names the runs it rests on; where 8.5.3.1 failed too,
    nothing says regression."""
    passed = replace(sample("8.5.3.1"), status="pass", last_stage="compare", error="", fused=True, log="")
    issue = issue_of(sample("8.6.0"), [passed, sample("8.6.0")], bundles, tmp_path / "a")
    lines = issue.splitlines()
    assert lines[0].startswith("# Regression from 8.5.3.1 to 8.6.0: Build failure of TensorRT 8.6.0"), lines[0]
    description = issue.split("## Description\n\n", 1)[1].splitlines()[0]
    assert description.startswith("**Regression from 8.5.3.1 to 8.6.0**: TensorRT 8.5.3.1 passed this reproducer")
    expected = issue.split("## Expected behavior\n\n", 1)[1].split("\n## ", 1)[0]
    assert "observed by this suite on NVIDIA H200 (sm_90) · tactics=tensorrt-only (tests/data/observed-sample.jsonl)" \
        in expected
    assert issue.split("## Actual behavior\n\n", 1)[1].startswith("It fails at the build stage: ")
    # the claim is checkable from the bundle: the earlier version's cell ships whole (a triager found none in it)
    assert "those cells, whole, are in previous-version-cells.jsonl" in expected
    shipped = (tmp_path / "a").rglob("previous-version-cells.jsonl")
    [previous] = [Cell.from_dict(json.loads(line)) for path in shipped for line in path.read_text().splitlines()]
    assert (previous.engine_version, previous.status, previous.fused) == ("8.5.3.1", "pass", True)
    assert "- `previous-version-cells.jsonl`: the TensorRT 8.5.3.1 cells this regression is measured against" in issue
    assert "egression" not in issue_of(sample("8.6.0"), [sample("8.5.3.1"), sample("8.6.0")], bundles, tmp_path / "b")
    assert not list((tmp_path / "b").rglob("previous-version-cells.jsonl")), "no regression: no earlier cells shipped"


def test_a_known_failure_is_never_what_expected_behaviour_asks_for(bundles, tmp_path):
    """A cell whose expectation is a failure (a baseline or a documented one) files what a correct engine does, and
    says the failure is known, with its source: a triager reads "should fail" as no bug at all."""
    failing = replace(sample("8.6.0"), verdict="as observed before", expectation={
        "outcome": "fail", "versions": "==8.6.0", "source": "reports/observed/x/trt-8.6.0.jsonl", "stage": "build",
        "basis": "baseline"})
    expected = issue_of(failing, [failing], bundles, tmp_path / "a").split("## Expected behavior\n\n", 1)[1]
    expected = expected.split("\n## ", 1)[0]
    assert "should fail" not in expected
    assert "should parse, build and run it within" in expected
    assert "The failure at build is known, not expected of a correct engine: observed before by this suite " \
           "(reports/observed/x/trt-8.6.0.jsonl)." in expected


def test_the_environment_is_every_recorded_version(bundles, tmp_path):
    """CUDA runtime, cuDNN and cuBLAS from the cell's payload pins and libraries; the OS and container the worker
    probed, or, for a cell observed before they were recorded, that they were not; environment.json keeps them."""
    from matrix.bugbundle import make

    old = replace(sample("8.6.0"), versions=dict(sample("8.6.0").versions, cublas="libcublas.so.12 12.0.2",
                                                  cudnn="libcudnn.so.8 8900", payload=(
                                                      "cuda==cu12, nvidia-cublas-cu12==12.0.2.224, nvidia-cuda-runtime-"
                                                      "cu12==12.0.146, nvidia-cudnn-cu12==8.9.0.131, tensorrt==8.6.0")))
    issue = issue_of(old, [old], bundles, tmp_path / "old")
    assert "**CUDA Version**: CUDA runtime 12.0.146 (wheel nvidia-cuda-runtime-cu12==12.0.146), the driver supports " \
           "CUDA 13.0" in issue
    assert "**CUDNN Version**: libcudnn.so.8 8900 (wheel nvidia-cudnn-cu12==8.9.0.131); cuBLAS libcublas.so.12 " \
           "12.0.2 (wheel nvidia-cublas-cu12==12.0.2.224)" in issue
    assert "Operating System: not recorded (the cell predates the suite recording it)" in issue
    assert "Baremetal or Container (if so, version): not recorded (the cell predates the suite recording it)" in issue
    new = replace(old, hardware_detail=dict(old.hardware_detail, os="Ubuntu 22.04.4 LTS (Linux 5.15.0)",
                                            container="docker"))
    folder = make(new, [new], bundles, tmp_path / "new")
    issue = (folder / "ISSUE.md").read_text()
    assert "Operating System: Ubuntu 22.04.4 LTS (Linux 5.15.0)" in issue
    # a kind alone: what a triager asks for next (the image and tag) is said not to be known (a triager's trial)
    assert "Baremetal or Container (if so, version): docker (its image and tag are not visible from inside it and " \
           "were not recorded; the operating system above is the container's)" in issue
    assert "(the interpreter TensorRT ran in, which need not be the operating system's own)" in issue
    env = json.loads((folder / "environment.json").read_text())
    assert env["versions"]["payload"].startswith("cuda==cu12") and env["versions"]["cublas"]
    assert env["hardware_detail"]["os"].startswith("Ubuntu") and env["hardware_detail"]["container"] == "docker"


def test_the_verbose_build_log_is_attached_or_its_command_given(bundles, tmp_path):
    from core.cell import pack_text
    from matrix.bugbundle import make

    issue = issue_of(sample("8.6.0"), [sample("8.6.0")], bundles, tmp_path / "none")
    assert "not attached: this cell predates the suite's verbose build logs. `python repro.py --verbose`" in issue
    text = "[VERBOSE] tactic 1\n[ERROR] Could not find any implementation\n"
    logged = replace(sample("8.6.0"), verbose_log=dict(pack_text(text), bytes=9_000_000, kept=len(text)))
    folder = make(logged, [logged], bundles, tmp_path / "logged")
    issue = (folder / "ISSUE.md").read_text()
    attached = (folder / "build-verbose.log").read_text()
    head, cut = attached.splitlines()[:2]
    # which engine build wrote it, and which model it parsed (a triager found neither in the log itself)
    assert head.startswith("[qdq-matrix] TensorRT 8.6.0 (build 8.6.0.12: ") and " on NVIDIA H200" in head, head
    assert "the model it parsed is this folder's model.onnx" in head
    assert cut.startswith(f"[qdq-matrix] the last {len(text)} of 9000000 bytes") and attached.endswith(text)
    assert "Verbose build log: attached as `build-verbose.log`" in issue and "`build-verbose.log`: the verbose" in issue
    assert "python repro.py --verbose`, on" not in issue


def test_the_latest_release_question_says_what_this_suite_could_not_run(bundles, tmp_path):
    issue = issue_of(sample("8.6.0"), [sample("8.5.3.1"), sample("8.6.0")], bundles, tmp_path / "a")
    assert "TensorRT 10.x and 11.x (10.8.0.43 to 11.5.0 in this suite's pin table) could not be run by this suite: " \
           "their builder wheels download only from NVIDIA's package index (https://pypi.nvidia.com)" in issue
    # 8.6.0 is the 8.6 Early Access build: the triager's first question is whether 8.6 GA was tried
    assert "TensorRT 8.6.0 (build 8.6.0.12) is an Early Access release; the GA release of its line, 8.6.1.6 " \
           "(https://github.com/NVIDIA/TensorRT/releases/tag/v8.6.1), is not in this suite's pin table" in issue
    older = issue_of(sample("8.5.3.1"), [sample("8.5.3.1")], bundles, tmp_path / "b")
    assert "Early Access" not in older


def test_the_title_names_the_reproducers_precision_and_the_rtx_target(tmp_path):
    """FP8 from the model's Q/DQ types, not a constant; a TensorRT-RTX ahead-of-time build names its target."""
    import onnx

    from matrix.bugbundle import graph_precision, title

    def qdq_precision(model: Path) -> str:
        return graph_precision(onnx.load(str(model), load_external_data=False).graph)

    write_all(["fp8_qdq"], {"op": ["conv"], "weights": ["per_tensor"]}, root=tmp_path)
    [model] = list(tmp_path.rglob("model.onnx"))
    assert qdq_precision(model) == "FP8"
    assert qdq_precision(next(iter(Path(REPO / ".bundles").glob("grouped_conv/*/model.onnx")), model)) in (
        "INT8", "FP8")
    rtx = replace(sample("8.6.0"), engine="tensorrt-rtx", engine_version="1.7.1.116", hardware_detail={},
                  hardware="no GPU: ahead-of-time build", variant={"target": "SM75"}, signature="")
    said = title(rtx, precision="FP8")
    assert "FP8 ONNX model on SM75 (built ahead of time with no GPU)" in said and "INT8" not in said, said


def test_a_documented_cell_gets_a_bundle_only_when_asked(bundles, tmp_path):
    """As documented: nothing new to file. No bundle by default; asked for, its first line says not to file it."""
    from matrix.bugbundle import wanted

    documented = replace(sample("8.6.0"), verdict="as documented", expectation={
        "outcome": "fail", "source": "https://github.com/NVIDIA/TensorRT/issues/4060", "basis": "documented"})
    assert not wanted(documented) and wanted(documented, documented=True) and wanted(sample("8.6.0"))
    issue = issue_of(documented, [documented], bundles, tmp_path / "asked")  # merged cells are judged again: direct
    assert issue.startswith("# Matches the documentation, do not file as a new bug: ")
    assert "**This matches the documentation and should not be filed as a new bug**" in issue


def test_a_new_failure_whose_error_is_a_documented_signature_gets_a_bundle_only_when_asked() -> None:
    """A case that documents no failure there ("new failure"), but an error that is a documented signature (TensorRT's
    parser refusing a non-zero zero point): an NVIDIA triager closes it as intended, so no bundle by default; a
    signature this project only observed before (a baseline) still gets its bundle."""
    from matrix.bugbundle import documented_failure, wanted

    refused = replace(sample("8.6.0"), status="fail", verdict="new failure", signature="nonzero_zero_point",
                      signature_basis="documented",
                      signature_source="https://github.com/onnx/onnx-tensorrt/blob/10.1-GA/onnxOpImporters.cpp")
    assert documented_failure(refused) and not wanted(refused) and wanted(refused, documented=True)
    seen = replace(refused, signature="rtx_conv_dtype_check", signature_basis="baseline")
    assert not documented_failure(seen) and wanted(seen)
    known_bug = replace(refused, signature="no_implementation",
                        signature_source="https://github.com/NVIDIA/TensorRT/issues/4060")
    assert not documented_failure(known_bug) and wanted(known_bug), "a known bug's cell keeps its bundle"
    assert wanted(replace(refused, signature="", signature_basis="", signature_source=""))


def test_writing_a_bug_bundle_reads_its_reproducer_once_and_asks_no_catalogue(bundles, tmp_path, monkeypatch):
    """One bug bundle opens each file of the reproducer that ran once (its digest, case.json, model and copies come
    from those bytes), and the signature's regex, source and basis come from the cell: no catalogue lookup at all."""
    import builtins
    import io

    import cases
    import cases.common
    from matrix.bugbundle import make

    cell = sample("8.6.0")  # a committed cell without the signature's fields: the merge filled them in
    assert cell.signature == "no_implementation" and cell.signature_basis == "documented"
    assert cell.signature_pattern.startswith("Could not find any implementation") and cell.signature_source
    source = (bundles / BUNDLE).resolve()
    opened: List[str] = []
    real_open = builtins.open

    def counting(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and source in Path(file).resolve().parents:
            opened.append(Path(file).name)
        return real_open(file, *args, **kwargs)

    def catalogue(*args, **kwargs):
        raise AssertionError(f"a bug bundle consulted the catalogue: {args}")

    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(io, "open", counting)
    for module, names in ((cases, ("get_case", "all_cases")),
                          (cases.common, ("cell_signature", "find_signature", "signatures_of"))):
        for name in names:
            monkeypatch.setattr(module, name, catalogue)
    folder = make(cell, [cell], bundles, tmp_path / "out")
    assert sorted(opened) == ["case.json", "expected.npz", "inputs.npz", "model.onnx"], opened
    for name in ("case.json", "expected.npz", "inputs.npz", "model.onnx"):
        assert (folder / name).read_bytes() == (source / name).read_bytes()
    issue = (folder / "ISSUE.md").read_text(encoding="utf-8")
    assert "/issues/" in cell.signature_source and f"Its error matches `{cell.signature}`" in issue
    # a thread reports a failure, it does not document this configuration's: never "documented signature" beside
    # "no source documents a failure here" (a triager read both in one bundle)
    assert f"the signature of a failure reported upstream in {cell.signature_source}" in issue, issue
    assert "Matched documented signature" not in issue
    assert "(cpg=3, weights=per_channel, activation=int8, output_qdq=yes, epilogue=none)" in issue.splitlines()[0]
    said = json.loads((folder / "cell.json").read_text(encoding="utf-8"))
    assert said["recorded"]["signature_regex"] == cell.signature_pattern
    assert said["request"]["target_ops"] == {"node_of_conv": "Conv"}
    assert said["request"]["trt"]["tactics"] == said["options"]["tactics"] == cell.variant["tactics"]


def test_how_repro_py_runs_each_engine_is_its_descriptors():
    """The options and settings a bug bundle's repro.py runs an engine with come from core.engines, not from a branch
    per engine in matrix/: the providers asked for over those reported, OpenVINO's device and f32 hint where a cell
    recorded none, TensorRT's tactics from its column, and ISSUE.md's settings line from the same values."""
    from core.engines import ENGINES

    ort = ENGINES["onnxruntime"].run_options({"providers": ["CUDAExecutionProvider", "CPUExecutionProvider"],
                                              "providers_requested": ["CPUExecutionProvider"]}, {})
    assert ort["providers"] == ["CPUExecutionProvider"] and ort["x64quantprecision"] == "0"
    assert ENGINES["onnxruntime"].run_settings_words(ort) == "providers CPUExecutionProvider"
    ov = ENGINES["openvino"].run_options({}, {})
    assert ov["device"] == "CPU" and ov["config"] == {"INFERENCE_PRECISION_HINT": "f32"}
    assert ENGINES["openvino"].run_settings_words(ov) == 'device CPU, config {"INFERENCE_PRECISION_HINT": "f32"}'
    trt = ENGINES["tensorrt"].run_options({"tactics": "default"}, {"tactics": "tensorrt-only"})
    assert trt["tactics"] == "tensorrt-only" and ENGINES["tensorrt"].run_settings_words(trt) == ""
    assert ENGINES["tensorrt-rtx"].run_settings_words(ENGINES["tensorrt-rtx"].run_options({}, {})) == \
        "an ahead-of-time build"
    source = (REPO / "matrix" / "bugbundle.py").read_text(encoding="utf-8")
    assert not re.search(r'engine == "(onnxruntime|openvino)"', source)


def test_one_cell_from_two_results_files_is_told_apart_by_neither_option(make_cell):
    """The same hardware and variant from two files: no option names one, and the error says what to do instead."""
    from matrix.bugbundle import select

    local = make_cell("grouped_conv/g=2", engine_version="8.6.0")
    observed = replace(local, run=dict(local.run, source="reports/observed/nvidia-h200/trt-8.6.0.jsonl"))
    with pytest.raises(ValueError) as said:
        select([local, observed], "grouped_conv/g=2", local.engine, "8.6.0", local.hardware, "default")
    assert "one cell from two results files" in str(said.value) and "reports/observed/" in str(said.value)



def test_a_source_link_says_whether_it_is_a_thread_or_where_the_model_came_from(bundles, tmp_path):
    """Seed 032's sources hold the PyPI page of the wheel its detector came from, listed under "Upstream threads"
    (a triager's trial): each link says what it is."""
    from matrix.bugbundle import link_words

    thread = "https://github.com/NVIDIA/TensorRT/issues/4060"
    assert link_words(thread) == f"{thread} (thread)"
    assert link_words("https://pypi.org/project/ddddocr/1.6.1/").endswith(
        "(the package that ships the model it was reduced from, not a thread)")
    assert link_words("https://github.com/onnx/onnx-tensorrt/blob/main/docs/operators.md").endswith("operators.md")
    issue = issue_of(sample("8.6.0"), [sample("8.6.0")], bundles, tmp_path / "a")
    assert "Sources about this pattern:\n- https://github.com/NVIDIA/TensorRT/issues/4060 (thread)\n" in issue, issue
