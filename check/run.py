"""Run a user's bundles through the existing pytest cell plugin, one subprocess per engine version."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Deque, Dict, List, Sequence, Tuple

from cases.engines import CPU_ENGINES, ENGINES as ENGINE_SPECS, NAMES, RTX_TARGETS
from check import CheckError
from engines.pytest_cells import PROGRESS_PREFIX

REPO = Path(__file__).resolve().parent.parent
ENGINES = NAMES
# TensorRT-RTX builds on any machine: where this interpreter has it, a check includes its columns.
AOT_ENGINES = tuple(n for n, s in ENGINE_SPECS.items() if s.device == "aot")
TAIL_LINES = 15  # of the cell session's output, in the error of a session that failed


@dataclass(frozen=True)
class EngineRun:
    """One engine version to run: the engine, the interpreter that has it (TensorRT family), its options."""

    engine: str
    python: str = ""  # --trt-python
    version: str = ""  # what the interpreter reports, where probed
    target: str = ""  # TensorRT-RTX: the GPU architecture of the ahead-of-time build ("" = its default set)

    @property
    def label(self) -> str:
        base = f"{self.engine}-{self.version}" if self.version else self.engine
        return f"{base}-{self.target}" if self.target else base

    def options(self) -> List[str]:
        return ["--rtx-target", self.target] if self.target else []


def plan(engines: Sequence[str], trt_pythons: Sequence[str], rtx_pythons: Sequence[str] = (),
         targets: Sequence[str] = ()) -> List[EngineRun]:
    """The engine versions to run: those named (checked), else the CPU engines installed, TensorRT-RTX where this
    interpreter (or an --rtx-python) has it, and TensorRT per --trt-python."""
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise CheckError(f"unknown engine {unknown[0]!r}; known engines: {', '.join(ENGINES)}")
    bad = [t for t in targets if t not in RTX_TARGETS]
    if bad:
        raise CheckError(f"--target {bad[0]}: not a TensorRT-RTX target; targets: {', '.join(RTX_TARGETS)}")
    named = list(dict.fromkeys(engines))
    rtx_here = bool(rtx_pythons) or installed(ENGINE_SPECS["tensorrt-rtx"].module)
    wanted = named or ([e for e in CPU_ENGINES if installed(e)] + (["tensorrt-rtx"] if rtx_here else [])
                       + (["tensorrt"] if trt_pythons else []))
    runs: List[EngineRun] = []
    for engine in wanted:
        spec = ENGINE_SPECS[engine]
        if spec.family == "tensorrt":
            given = trt_pythons if engine == "tensorrt" else rtx_pythons
            pythons = list(given) or ([sys.executable] if installed(spec.module) else [])
            if not pythons:
                flag = "--trt-python" if engine == "tensorrt" else "--rtx-python"
                raise CheckError(f"--engine {engine} needs {flag} PY (an interpreter that has {spec.module})")
            for p in pythons:
                version = trt_version(p, spec.module, spec.title)
                for target in (list(targets) if engine in AOT_ENGINES and targets else [""]):
                    runs.append(EngineRun(engine, p, version, "" if target == "default" else target))
        elif not installed(engine):
            raise CheckError(f"--engine {engine}: {engine} is not installed in {sys.executable}")
        else:
            runs.append(EngineRun(engine, version=distribution_version(engine)))
    if not runs:
        raise CheckError("no engine to run: install onnxruntime, openvino or tensorrt-rtx, or give --trt-python PY")
    return runs


def distribution_version(name: str) -> str:
    """The installed version of a CPU engine's package, "" where its metadata cannot say (its cells still record it)."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def trt_version(python: str, module: str = "tensorrt", title: str = "TensorRT") -> str:
    """The version of a TensorRT-family module an interpreter imports; CheckError when it has none."""
    if not Path(python).exists():
        raise CheckError(f"{python}: no such interpreter")
    try:
        done = subprocess.run([python, "-c", f"import {module}; print({module}.__version__)"], capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CheckError(f"{python}: cannot start it ({e})") from e
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["import failed"])[-1]
        raise CheckError(f"{python}: this interpreter has no {title} (import {module}: {last})")
    return done.stdout.strip()


def run_cells(run: EngineRun, bundles: Path, bundle_ids: Sequence[str], results: Path,
              extra: Sequence[str] = ()) -> Path:
    """Run the bundles on one engine version with `pytest tests/cells`; returns the results file.

    The file is named for the engine version and target, and resumed: a second check of the same models reuses
    the cells it holds (the plugin's reuse key: bundle digest, engine version, hardware, options)."""
    results.mkdir(parents=True, exist_ok=True)
    staged = results / f"{run.label}.jsonl"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN", "--no-header",
               "--engine", run.engine, "--bundles", str(Path(bundles).resolve()), "--results", str(staged.resolve())]
    if run.python:
        command += [f"--trt-python={run.python}"]  # one token: pytest would take a separate value for a test path
    command += run.options() + list(extra) + [f"tests/cells/test_cells.py::test_cell[{b}]" for b in bundle_ids]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    returncode, tail = stream(command, env)
    if returncode not in (0, 1) or not staged.is_file():
        raise CheckError(f"{run.label}: the cell run failed (pytest exit {returncode}):\n" + "\n".join(tail))
    return staged


def stream(command: Sequence[str], env: Dict[str, str]) -> Tuple[int, List[str]]:
    """Run the cell session, showing its progress lines as they come (engines.pytest_cells' heartbeat);
    returns its exit status and the last TAIL_LINES lines of its output, for an error."""
    tail: Deque[str] = deque(maxlen=TAIL_LINES)
    proc = subprocess.Popen(list(command), cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, encoding="utf-8", errors="replace")
    assert proc.stdout is not None
    with proc.stdout:
        for line in proc.stdout:
            line = line.rstrip("\n")
            tail.append(line)
            if line.startswith(PROGRESS_PREFIX):
                print("  " + line[len(PROGRESS_PREFIX):], flush=True)
            elif line.startswith(("cells: ", "qdq-matrix: ")):  # the session's count of reused and new cells
                print("  " + line, flush=True)
    return proc.wait(), list(tail)

