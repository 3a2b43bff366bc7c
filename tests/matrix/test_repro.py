"""repro.py is the suite: a bug bundle's verdict agrees with the suite's own cell, by the suite's own error measure.

Real ONNX Runtime and OpenVINO cells, written by `python -m engines.run` (the cell runner, as a user runs it) on a few
generated bundles; each cell's bug bundle runs its repro.py in a subprocess with this interpreter.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

from core import numerics
from core.cell import Cell
from core.engines import ENGINES as SPECS
from core.engines import REPRO_ALWAYS
from generators.write import write_all
from matrix.bugbundle import make
from matrix.merge import load_results

REPO = Path(__file__).resolve().parents[2]
ENGINES = ("onnxruntime", "openvino")
# A few bundles with passes and failures at compare on today's CPU engines (OpenVINO requantizes a concat of two
# scales), integer ops (dynamic_quantize) and a grouped convolution.
PICK = (["concat_requant"], {"consumer": ["conv"]}), (["dynamic_quantize"], None), \
    (["grouped_conv"], {"cpg": [3], "weights": ["per_channel"], "activation": ["int8"], "output_qdq": [True],
                        "epilogue": ["none"]})
SAME_STEPS = 1e-6


@pytest.fixture(scope="module")
def suite_cells(tmp_path_factory) -> Dict[str, object]:
    """Bundles written from their seeds, the cells the suite's controller recorded for them on each CPU engine."""
    root = tmp_path_factory.mktemp("repro")
    bundles = root / "bundles"
    for cases, params in PICK:
        write_all(cases, params, root=bundles)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cells: List[Cell] = []
    for engine in ENGINES:
        results = root / "results" / f"{engine}.jsonl"
        run = subprocess.run(
            [sys.executable, "-m", "engines.run", "-n", "0", "--engine", engine, "--bundles", str(bundles),
             "--results", str(results)],
            cwd=str(REPO), capture_output=True, text=True, timeout=600, env=env)
        found = load_results([results]).cells
        assert found, run.stdout + run.stderr
        cells += found
    return {"root": root, "bundles": bundles, "cells": cells}


def run_bundle(folder: Path) -> dict:
    out = folder / "observed.json"
    done = subprocess.run([sys.executable, "repro.py", "--json", str(out)], cwd=str(folder), capture_output=True,
                          text=True, timeout=600)
    assert out.is_file(), done.stdout + done.stderr
    return dict(json.loads(out.read_text()), returncode=done.returncode, stdout=done.stdout)


@pytest.mark.slow
def test_each_bug_bundle_agrees_with_the_suites_cell(suite_cells):
    ran = [c for c in suite_cells["cells"] if c.status in ("pass", "fail", "crashed")]
    assert {c.engine for c in ran} == set(ENGINES) and len(ran) >= 20
    out = suite_cells["root"] / "bug-bundles"
    folders = [make(c, ran, suite_cells["bundles"], out) for c in ran]
    with ThreadPoolExecutor(max_workers=4) as pool:
        seen = list(pool.map(run_bundle, folders))
    for cell, found in zip(ran, seen):
        observed, what = found["observed"], f"{cell.engine} {cell.bundle}: {found['stdout']}"
        assert (observed["status"], observed["stage"]) == (cell.status, cell.last_stage), what
        if cell.max_error_steps is None:
            assert observed["max_error_steps"] is None, what
        else:
            assert abs(observed["max_error_steps"] - cell.max_error_steps) <= SAME_STEPS, what
        assert found["reproduced"] and found["returncode"] == 0, what
        assert found["line"].startswith("REPRODUCED: ") and found["stdout"].rstrip().endswith(found["line"]), what


@pytest.mark.slow
def test_a_bug_bundle_needs_nothing_from_the_repository(suite_cells, tmp_path):
    """Moved anywhere, with PYTHONPATH empty and the repository out of reach, it still reproduces."""
    cell = next(c for c in suite_cells["cells"] if c.engine == "onnxruntime" and c.status == "pass")
    folder = make(cell, [cell], suite_cells["bundles"], tmp_path / "made")
    alone = tmp_path / "elsewhere" / "bundle"
    shutil.copytree(folder, alone)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-I", "repro.py"], cwd=str(alone), capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0 and done.stdout.rstrip().splitlines()[-1].startswith("REPRODUCED: pass"), \
        done.stdout + done.stderr


def test_repro_counts_error_the_way_the_suite_does(tmp_path, monkeypatch):
    """An all-zero reference is counted in steps of 1/127 and matching NaNs are no error: core/judge.py with the
    core/numerics.py it imports, which the bundle ships (never steps of 1.0 for an all-zero output, nor an infinite
    error for a NaN)."""
    from matrix import repro

    assert REPRO_ALWAYS == {"repro.py": "matrix/repro.py", "suite/judge.py": "core/judge.py",
                            "suite/numerics.py": "core/numerics.py", "suite/words.py": "core/words.py",
                            "suite/engines.py": "core/engines.py", "suite/thresholds.py": "core/thresholds.py"}
    (tmp_path / "suite").mkdir()
    for name in ("judge", "numerics", "words", "engines", "thresholds"):
        shutil.copyfile(REPO / "core" / f"{name}.py", tmp_path / "suite" / f"{name}.py")
    zeros = np.zeros((2, 3), np.float32)
    nan = np.array([np.nan, 1.0], np.float32)
    np.savez(tmp_path / "expected.npz", z=zeros, n=nan)
    monkeypatch.setattr(repro, "HERE", str(tmp_path))
    monkeypatch.setattr(repro, "SUITE", str(tmp_path / "suite"))
    for name in [m for m in sys.modules if m == "qdq_suite" or m.startswith("qdq_suite.")]:
        monkeypatch.delitem(sys.modules, name)
    obs = repro.Observation()
    obs.stage, obs.outputs = "run", {"z": zeros + np.float32(0.5 / 127), "n": nan.copy()}
    found = repro.judge(obs, {"tolerance_steps": 1})
    assert sys.modules["qdq_suite.judge"].__file__ == str(tmp_path / "suite" / "judge.py")  # the shipped judge
    expected = numerics.error_steps(zeros, zeros + np.float32(0.5 / 127), numerics.comparison_step(zeros, None)[0])
    assert found["max_error_steps"] == pytest.approx(expected) == pytest.approx(0.5, rel=1e-5)
    assert (found["status"], found["stage"], found["error"]) == ("pass", "compare", "")


def test_the_shipped_files_are_python_39_and_import_only_stdlib_numpy_and_their_engine():
    allowed = {"tensorrt": {"numpy", "tensorrt"}, "onnxruntime": {"numpy"}, "openvino": {"numpy"}}
    for spec in SPECS.values():
        for path in [*REPRO_ALWAYS.values(), *spec.repro_files.values()]:
            tree = ast.parse((REPO / path).read_text(encoding="utf-8"), feature_version=(3, 9))
            imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                         if isinstance(n, ast.ImportFrom) and n.module and not n.level}
            assert imported - set(sys.stdlib_module_names) <= allowed[spec.family], (path, imported)


def test_the_shipped_files_lint_clean():
    """ruff (the rules and line length of pyproject.toml, from the locked test group) on every file a bundle ships."""
    files = sorted({p for spec in SPECS.values() for p in spec.repro_files.values()} | set(REPRO_ALWAYS.values()))
    done = subprocess.run([sys.executable, "-m", "ruff", "check", *files], cwd=str(REPO), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "All checks passed" in done.stdout, done.stdout + done.stderr
