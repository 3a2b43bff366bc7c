"""Benchmark: bundle generation (cold and cached) and cell throughput on the CPU engines.

    python tools/benchmark.py            # or: nox -s benchmark

Prints one Markdown table; the README keeps the figures. Timings, not tests: nothing here fails
on a slow machine.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cases import get_case  # noqa: E402
from engines import get_engine  # noqa: E402
from engines.cells import run_cell  # noqa: E402
from generators import write  # noqa: E402
from generators.bundle import iter_bundles  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths, cold = timed(lambda: write.write_all(root=root))
        _, warm = timed(lambda: write.write_all(root=root))
        rows.append(("generate bundles, cold", len(paths), cold))
        rows.append(("generate bundles, cached", len(paths), warm))
        bundles = list(iter_bundles(root))
        run = {"date": "", "source": "benchmark"}
        for name in ("onnxruntime", "openvino"):
            engine = get_engine(name)
            info = engine.probe()
            if not info.available:
                rows.append((f"{name}: {info.reason}", 0, 0.0))
                continue
            cells, seconds = timed(lambda: [run_cell(get_case(b.meta["case"]), b, engine, info, run) for b in bundles])
            rows.append((f"{name} {info.version} cells, one process", len(cells), seconds))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("| step | items | seconds | per item (ms) |")
    print("| --- | ---: | ---: | ---: |")
    for step, n, seconds in rows:
        per = f"{1000 * seconds / n:.1f}" if n else "-"
        print(f"| {step} | {n} | {seconds:.2f} | {per} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
