"""Run a user's bundles through the existing pytest cell plugin, one subprocess per engine version."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from check import CheckError

REPO = Path(__file__).resolve().parent.parent
ENGINES = ("onnxruntime", "openvino", "tensorrt")
CPU_ENGINES = ("onnxruntime", "openvino")


@dataclass(frozen=True)
class EngineRun:
    """One engine version to run: the engine, and for TensorRT the interpreter that has it."""

    engine: str
    python: str = ""  # --trt-python
    version: str = ""  # what the interpreter reports, where probed

    @property
    def label(self) -> str:
        return f"{self.engine}-{self.version}" if self.version else self.engine


def plan(engines: Sequence[str], trt_pythons: Sequence[str]) -> List[EngineRun]:
    """The engine versions to run: those named (checked), else the CPU engines installed plus TensorRT per --trt-python."""
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise CheckError(f"unknown engine {unknown[0]!r}; known engines: {', '.join(ENGINES)}")
    named = list(dict.fromkeys(engines))
    wanted = named or [e for e in CPU_ENGINES if installed(e)] + (["tensorrt"] if trt_pythons else [])
    runs: List[EngineRun] = []
    for engine in wanted:
        if engine == "tensorrt":
            pythons = list(trt_pythons) or ([sys.executable] if installed("tensorrt") else [])
            if not pythons:
                raise CheckError("--engine tensorrt needs --trt-python PY (an interpreter that has TensorRT)")
            runs += [EngineRun("tensorrt", p, trt_version(p)) for p in pythons]
        elif not installed(engine):
            raise CheckError(f"--engine {engine}: {engine} is not installed in {sys.executable}")
        else:
            runs.append(EngineRun(engine))
    if not runs:
        raise CheckError("no engine to run: install onnxruntime or openvino, or give --trt-python PY")
    return runs


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def trt_version(python: str) -> str:
    """The TensorRT version an interpreter imports; CheckError when it has none."""
    if not Path(python).exists():
        raise CheckError(f"--trt-python {python}: no such interpreter")
    try:
        done = subprocess.run([python, "-c", "import tensorrt; print(tensorrt.__version__)"], capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CheckError(f"--trt-python {python}: cannot start it ({e})") from e
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["import failed"])[-1]
        raise CheckError(f"--trt-python {python}: this interpreter has no TensorRT ({last})")
    return done.stdout.strip()


def run_cells(run: EngineRun, bundles: Path, bundle_ids: Sequence[str], results: Path,
              extra: Sequence[str] = ()) -> Path:
    """Run the bundles on one engine version with `pytest tests/cells`; returns the results file."""
    results.mkdir(parents=True, exist_ok=True)
    staged = results / f".{run.label}.running.jsonl"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN", "--no-header",
               "--engine", run.engine, "--bundles", str(Path(bundles).resolve()), "--results", str(staged.resolve())]
    if run.python:
        command += ["--trt-python", run.python]
    command += list(extra) + [f"tests/cells/test_cells.py::test_cell[{b}]" for b in bundle_ids]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1) or not staged.is_file():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise CheckError(f"{run.label}: the cell run failed (pytest exit {done.returncode}):\n{tail}")
    version = session_version(staged) or run.version or "unknown"
    final = results / f"{run.engine}-{version}.jsonl"
    os.replace(staged, final)
    return final


def session_version(path: Path) -> Optional[str]:
    """The engine version in a results file's session header."""
    with open(path, encoding="utf-8") as f:
        first = f.readline()
    try:
        return str(json.loads(first).get("engine_version") or "") or None
    except ValueError:
        return None
