"""Which engine versions a check runs, and running a user's bundles on them through engines.run (one pytest pool)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import List, Sequence

from check import CheckError
from core.engines import CPU_ENGINES, NAMES, RTX_BUILD_TARGETS
from core.engines import ENGINES as ENGINE_SPECS
from core.portable import portable_command
from engines.plan import Column

ENGINES = NAMES
# TensorRT-RTX builds on any machine: where this interpreter has it, a check includes its columns.
AOT_ENGINES = tuple(n for n, s in ENGINE_SPECS.items() if s.device == "aot")
WORKERS = max(1, min(4, os.cpu_count() or 1))  # cells at a time, every engine version in one pool


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


def plan(engines: Sequence[str], trt_pythons: Sequence[str], rtx_pythons: Sequence[str] = (),
         targets: Sequence[str] = ()) -> List[EngineRun]:
    """The engine versions to run: those named (checked), else the CPU engines installed, TensorRT-RTX where this
    interpreter (or an --rtx-python) has it, and TensorRT per --trt-python."""
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise CheckError(f"unknown engine {unknown[0]!r}; known engines: {', '.join(ENGINES)}")
    bad = [t for t in targets if t not in RTX_BUILD_TARGETS]
    if bad:
        raise CheckError(f"--target {bad[0]}: not a TensorRT-RTX target; targets: {', '.join(RTX_BUILD_TARGETS)}")
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
            from engines.run import installed_version  # "" where its metadata cannot say (its cells record it)

            runs.append(EngineRun(engine, version=installed_version(engine)))
    if not runs:
        raise CheckError("no engine to run: install onnxruntime, openvino or tensorrt-rtx, or give --trt-python PY")
    return runs


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


def run_cells(runs: Sequence[EngineRun], bundles: Path, bundle_ids: Sequence[str], results: Path,
              extra: Sequence[str] = ()) -> List[Path]:
    """Run the bundles on every engine version through engines.run, in one pytest run; returns the results files.

    Each engine version writes one results file, named for it and its target, and resumed: a second check of the
    same models starts nothing and says how many cells it reused (the reuse key: bundle digest, engine version,
    hardware, options)."""
    from engines import run as runner

    results.mkdir(parents=True, exist_ok=True)
    columns = [_column(r, results, bundle_ids, len(runs) > 1) for r in runs]
    try:
        status = runner.run(columns, Path(bundles).resolve(), workers=WORKERS, extra=list(extra),
                            out=lambda line: print(line, flush=True))
    except runner.UsageError as e:
        raise CheckError(str(e)) from e
    staged = [Path(c.results) for c in columns]
    if status not in (0, 1) or not all(p.is_file() for p in staged):
        raise CheckError(f"the cell run failed (exit {status}); its last lines are above")
    return staged


def _column(run: EngineRun, results: Path, bundle_ids: Sequence[str], labelled: bool) -> Column:
    """One engine version of a check as a column of engines.run, written to results/<label>.jsonl."""
    from engines.run import column_label, resolved_options

    column = Column(engine=run.engine, options=resolved_options(run.engine, {"target": run.target or None}),
                    version=run.version, python=run.python, results=str((results / f"{run.label}.jsonl").resolve()),
                    bundles=tuple(bundle_ids))
    words = ["python", "-m", "check", "--engine", run.engine] + (["--target", run.target] if run.target else [])
    if run.python:
        words.append(f"--{'trt' if run.engine == 'tensorrt' else 'rtx'}-python={run.python}")
    return replace(column, label=column_label(column) if labelled else "", command=portable_command(words))
