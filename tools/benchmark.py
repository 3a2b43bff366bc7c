"""Benchmark: bundle generation, cell reuse on an unchanged re-run, and the harness's per-cell overhead.

    python tools/benchmark.py            # or: nox -s benchmark

Prints Markdown tables; the README keeps the figures. Timings, not tests: nothing here fails on a
slow machine. Everything runs on the same machine in one run.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cases import get_case  # noqa: E402
from engines import get_engine  # noqa: E402
from engines.cells import run_cell  # noqa: E402
from generators import write  # noqa: E402
from generators.bundle import Bundle, iter_bundles, verify_bundle  # noqa: E402


def timed(fn: Callable):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def pytest_seconds(engine: str, bundles: Path, results: Path, *extra: str) -> Tuple[float, str]:
    """(pytest's own session time, its cells summary) for one cell run: interpreter start left out."""
    cmd = [sys.executable, "-m", "pytest", "tests/cells", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
           "--engine", engine, "--bundles", str(bundles), "--results", str(results), *extra]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    found = re.search(r" in ([0-9.]+)s", out.stdout)
    summary = next((line for line in out.stdout.splitlines() if line.startswith("cells:")), "")
    if not found:
        raise RuntimeError(f"pytest printed no duration:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return float(found.group(1)), summary


def bare_onnxruntime(bundles: List[Bundle]) -> None:
    """The same engine work without the harness: load with full optimization, run once."""
    import onnxruntime as ort

    for b in bundles:
        try:
            sess = ort.InferenceSession(str(b.model_path), providers=["CPUExecutionProvider"])
            sess.run(None, b.inputs())
        except Exception:  # the reproducers that fail on this engine fail here too
            pass


def bare_openvino(bundles: List[Bundle]) -> None:
    import openvino as ov

    core = ov.Core()
    for b in bundles:
        try:
            compiled = core.compile_model(str(b.model_path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            compiled(b.inputs())
        except Exception:
            pass


BARE: Dict[str, Callable[[List[Bundle]], None]] = {"onnxruntime": bare_onnxruntime, "openvino": bare_openvino}


def runnable(bundles: List[Bundle], engine) -> List[Bundle]:
    """Bundles the engine really runs (not the custom-op ones it declines)."""
    return [b for b in bundles if not (hasattr(engine, "cannot_run") and engine.cannot_run(b))]


def main() -> int:
    rows, reuse, overhead = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bundles"
        paths, cold = timed(lambda: write.write_all(root=root))
        _, warm = timed(lambda: write.write_all(root=root))
        rows.append(("generate bundles, cold", len(paths), cold))
        rows.append(("generate bundles, cached", len(paths), warm))
        bundles = list(iter_bundles(root))
        _, verify = timed(lambda: [verify_bundle(b.path) for b in bundles])
        rows.append(("verify every bundle against its digest", len(bundles), verify))
        run = {"date": "", "source": "benchmark"}
        for name in ("onnxruntime", "openvino"):
            engine = get_engine(name)
            info = engine.probe()
            if not info.available:
                rows.append((f"{name}: {info.reason}", 0, 0.0))
                continue
            todo = runnable(bundles, engine)
            BARE[name](todo[:3])  # warm the engine's own imports and caches, for both loops alike
            _, bare = timed(lambda: BARE[name](todo))
            cells, harness = timed(lambda: [run_cell(get_case(b.meta["case"]), b, engine, info, run) for b in todo])
            rows.append((f"{name} {info.version} cells, one process", len(cells), harness))
            overhead.append((f"{name} {info.version}", len(todo), bare, harness))
            results = Path(tmp) / f"{name}.jsonl"
            first, _ = pytest_seconds(name, root, results)
            again, summary = pytest_seconds(name, root, results)
            reuse.append((f"{name} {info.version}", len(bundles), first, again, summary))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}\n")
    print("| step | items | seconds | per item (ms) |")
    print("| --- | ---: | ---: | ---: |")
    for step, n, seconds in rows:
        per = f"{1000 * seconds / n:.1f}" if n else "-"
        print(f"| {step} | {n} | {seconds:.2f} | {per} |")
    print("\nUnchanged re-run (pytest tests/cells twice on one results file; pytest's session time, "
          "interpreter start left out):\n")
    print("| engine | cells | cold (s) | re-run (s) | re-run faster by |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, n, first, again, summary in reuse:
        print(f"| {name} | {n} | {first:.2f} | {again:.2f} | {first / again:.1f}x |")
    for name, *_, summary in reuse:
        print(f"\n{name} re-run: {summary}")
    print("\nHarness overhead (the project's run_cell per cell against a bare loop of the same engine "
          "calls, in one process):\n")
    print("| engine | cells | bare loop (ms/cell) | harness (ms/cell) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, n, bare, harness in overhead:
        print(f"| {name} | {n} | {1000 * bare / n:.1f} | {1000 * harness / n:.1f} | {harness / bare:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
