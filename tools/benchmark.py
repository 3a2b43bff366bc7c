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


def user_model_check(engine_name: str = "onnxruntime", blocks: int = 50) -> int:
    """A quantize_static model with >= 50 quantized nodes: `python -m check` on one engine against the bare engine."""
    from check.bundle import bundle_from_model
    from tests.check.models import float_convnet, quantize_static

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = quantize_static(float_convnet(root / "float.onnx", blocks=blocks, channels=32), root / "deep.onnx")
        bundle, prepare = timed(lambda: bundle_from_model(model, root / "b"))
        engine = get_engine(engine_name)
        info = engine.probe()
        bare = min(timed(lambda: (bare_onnxruntime if engine_name == "onnxruntime" else bare_openvino)([bundle]))[1]
                   for _ in range(3))
        harness = min(timed(lambda: run_cell(get_case("user_model"), bundle, engine, info, {}))[1] for _ in range(3))
        cmd = [sys.executable, "-m", "check", str(model), "--engine", engine_name, "--out", str(root / "b2"),
               "--results", str(root / "r"), "--reports", str(root / "rep")]
        done, whole = timed(lambda: subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                                                   env={**os.environ, "PYTHONPATH": str(REPO)}))
        int8 = next((line for line in done.stdout.splitlines() if "quantized nodes ran in INT8" in line), "")
    targets = len(bundle.meta["target_nodes"])
    print(f"\nYour own model: {targets} quantized nodes, {engine_name} {info.version} (bare: load with full "
          "optimization, build, run once; best of 3):\n")
    print("| step | seconds | against bare engine |")
    print("| --- | ---: | ---: |")
    for step, seconds in (("bare engine load+build+run", bare), ("bundle (checker, inputs, ORT reference)", prepare),
                          ("cell through the harness (run_cell, precision evidence)", harness),
                          ("whole `python -m check` command (interpreters, pytest, reports)", whole)):
        print(f"| {step} | {seconds:.2f} | {seconds / bare:.2f}x |")
    print(f"\n{int8.strip(' |')}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--user-model"]:
        sys.exit(user_model_check(*(sys.argv[2:3] or ["onnxruntime"])))
    sys.exit(main())
