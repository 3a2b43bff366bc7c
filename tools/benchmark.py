"""Benchmark: bundle generation, cell reuse on an unchanged re-run, and the harness's per-cell overhead.

    python tools/benchmark.py            # or: nox -s benchmark
    python tools/benchmark.py --check [--batch 1] [ENGINE ...]   # python -m check on ~300- and ~900-node models
    python tools/benchmark.py --user-model [ENGINE]              # check against the bare engine, one model
    python tools/benchmark.py --scale [--nodes 2000,4000,10000,20000] [ENGINE]   # python -m check on chains of nodes

Prints Markdown tables; docs/benchmark.md keeps the figures. Timings, not tests: nothing here fails on a
slow machine. Everything runs on the same machine in one run.
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cases import get_case  # noqa: E402
from core.cli import ArgumentParser  # noqa: E402
from core.engines import CPU_ENGINES, ENGINES  # noqa: E402
from core.results import read_results  # noqa: E402
from engines import get_engine  # noqa: E402
from engines.cells import run_cell  # noqa: E402
from engines.plan import Column, pytest_command, write_plan  # noqa: E402
from generators import write  # noqa: E402
from generators.bundle import Bundle, iter_bundles, verify_bundle  # noqa: E402

OPENVINO = ENGINES["openvino"].settings

CHECK_ENGINES = CPU_ENGINES + tuple(n for n, s in ENGINES.items() if s.device == "aot")  # a CPU machine's
SHAPE = "1x3x64x64"  # check.archs.backbone's input at batch 1


def timed(fn: Callable):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def pytest_seconds(engine: str, bundles: Path, results: Path) -> Tuple[float, str]:
    """(pytest's own session time, its cells summary) for one run of the cell runner on one column, in one process:
    interpreter start left out."""
    plan = write_plan([Column(engine=engine, results=str(results))], results.with_name(results.stem + "-plan.json"))
    cmd = [*pytest_command(plan), "-q", "-p", "no:xdist", "--bundles", str(bundles)]
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
            compiled = core.compile_model(str(b.model_path), OPENVINO["device"],
                                          {"INFERENCE_PRECISION_HINT": OPENVINO["inference_precision_hint"]})
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
        for name in CPU_ENGINES:
            engine = get_engine(name)
            info = engine.probe()
            if not info.available:
                rows.append((f"{name}: {info.reason}", 0, 0.0))
                continue
            todo = runnable(bundles, engine)
            BARE[name](todo[:3])  # warm the engine's own imports and caches, for both loops alike
            # B023: each lambda is called at once, inside this iteration
            _, bare = timed(lambda: BARE[name](todo))  # noqa: B023
            cells, harness = timed(lambda: [run_cell(get_case(b.meta["case"]), b, engine, info, run)  # noqa: B023
                                            for b in todo])  # noqa: B023
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
    print("\nUnchanged re-run (the cell runner twice on one results file; pytest's session time, "
          "interpreter start left out):\n")
    print("| engine | cells | cold (s) | re-run (s) | re-run faster by |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, n, first, again, _ in reuse:
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


def arch_model(root: Path, name: str, batch: Optional[int] = None) -> Path:
    """One of check.archs's models quantized with TensorRT settings (check.arch_models); batch fixed where given."""
    from check import arch_models, archs

    arch = archs.by_name(name)
    if batch:
        arch = replace(arch, name=f"{name}_batch{batch}", options={**arch.options, "batch": batch})
    trt = [v for v in arch_models.VARIANTS if v.name == "trt"]
    (made,) = arch_models.write_models(root / arch.name, [arch], trt)
    return root / arch.name / made.path


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes of this one, their own children included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check_command(model: Path, engine: str, root: Path) -> Tuple[float, float, float, str]:
    """(wall s, CPU s, the cell's own s, the engine's status and summary) of one `python -m check MODEL --engine E`."""
    cmd = [sys.executable, "-m", "check", str(model), "--engine", engine, "--shape", f"images:{SHAPE}",
           "--out", str(root / "b"), "--results", str(root / "r"), "--reports", str(root / "rep")]
    cpu = children_cpu()
    done, seconds = timed(lambda: subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                                                 env={**os.environ, "PYTHONPATH": str(REPO)}))
    cpu = children_cpu() - cpu
    try:
        (report,) = (root / "rep").glob(f"{model.stem}-*.json")  # <slug>-<10 hex of the model's id>.json
        (column,) = json.loads(report.read_text())["columns"]
        result = f"{column['status']}: {column['summary']}"
    except (OSError, ValueError, KeyError):
        result = f"exit {done.returncode}: {(done.stderr.strip().splitlines() or ['no report'])[-1]}"
    return seconds, cpu, cell_seconds(root / "r", engine), result[:100]


def cell_seconds(results: Path, engine: str, timing: str = "cell") -> float:
    """The harness's own time for the cell (timings.cell in the results file; or another of its timings, such as the
    engine's own build), 0 where there is none."""
    for path in results.rglob(f"{engine}-*.jsonl"):
        for stored in read_results(path).cells:
            return float(stored.cell.timings.get(timing, 0.0))
    return 0.0


def check_timings(engines: Sequence[str] = CHECK_ENGINES, batch: Optional[int] = None) -> int:
    """`python -m check` on the ~300- and ~900-node models, per engine: a cold run, then the same command again.

    On a shared machine the wall clock also counts other people's work: beside it stand the cell's own time and
    the CPU seconds of the processes the command waited for (not the TensorRT-RTX worker: its work is in the cell).
    """
    import onnx

    rows, load = [], os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in ("backbone_300", "backbone_900"):
            model = arch_model(root / "models", name, batch)
            nodes = len(onnx.load(str(model)).graph.node)
            for engine in engines:
                work = root / model.stem / engine
                cold = check_command(model, engine, work)
                again = check_command(model, engine, work)
                print(f"{model.name} {engine}: {cold[0]:.1f} s, again {again[0]:.1f} s", file=sys.stderr, flush=True)
                rows.append((model.name, nodes, engine, cold, again))
    machine = platform.processor() or platform.machine()
    print(f"\n`python -m check MODEL --engine E --shape images:{SHAPE}` on {machine}, "
          f"{os.cpu_count()} cores, load average {load:.1f} before and {os.getloadavg()[0]:.1f} after: a cold run (new "
          "bundle, results and report folders), then the same command again (whole commands, interpreters "
          "included):\n")
    print("| model | nodes | engine | cold (s) | again (s) | cell, cold / again (s) | CPU, cold (s) | result |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |")
    for model_name, nodes, engine, (cold, cpu, cell, result), (again, _, cell_again, _) in rows:
        print(f"| {model_name} | {nodes} | {engine} | {cold:.1f} | {again:.1f} | {cell:.2f} / {cell_again:.2f} | "
              f"{cpu:.1f} | {result} |")
    return 0


SCALE_NODES = (2000, 4000, 10000, 20000)


def measured(cmd: Sequence[str]) -> Tuple[subprocess.CompletedProcess, float, int]:
    """(the finished command, its wall seconds, the peak RSS in MiB of its largest process), the command run under a
    small Python parent of its own so that the peak is this command's alone (RUSAGE_CHILDREN keeps the largest)."""
    probe = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
             "sys.stderr.write('\\npeak-rss-kib %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
             "sys.exit(done.returncode)")
    done, seconds = timed(lambda: subprocess.run([sys.executable, "-c", probe, *cmd], cwd=REPO, capture_output=True,
                                                 text=True, env={**os.environ, "PYTHONPATH": str(REPO)}))
    peak = re.findall(r"peak-rss-kib (\d+)", done.stderr)
    return done, seconds, int(peak[-1]) >> 10 if peak else 0  # KiB to MiB


def scale_timings(engine: str = "onnxruntime", sizes: Sequence[int] = SCALE_NODES) -> int:
    """`python -m check` on chains of quantized 1x1 Convs (check.chain) of each size, one engine: a cold run (new
    bundle, results and report folders), then the same command again. Wall clock; on a shared machine beside it the CPU
    seconds of the cold command's processes, the cell's own time and its engine's build (ONNX Runtime: the session),
    and the peak RSS of the largest process."""
    from check.chain import write_chain

    rows, load = [], os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        warm = write_chain(root / "warm-up.onnx", 8)  # the interpreters' first imports, for every size alike
        measured([sys.executable, "-m", "check", str(warm), "--engine", engine, "--out", str(root / "warm"),
                  "--results", str(root / "warm"), "--reports", str(root / "warm")])
        for nodes in sizes:
            model = write_chain(root / f"chain-{nodes}.onnx", nodes)
            work = root / f"work-{nodes}"
            cmd = [sys.executable, "-m", "check", str(model), "--engine", engine, "--out", str(work / "b"),
                   "--results", str(work / "r"), "--reports", str(work / "rep")]
            cpu = children_cpu()
            cold, cold_s, cold_rss = measured(cmd)
            cpu = children_cpu() - cpu
            again, again_s, again_rss = measured(cmd)
            result = next((line.strip() for line in cold.stdout.splitlines() if line.startswith("  ") and
                           str(model) in line), f"exit {cold.returncode}")
            build = cell_seconds(work / "r", engine, "build") or cell_seconds(work / "r", engine, "load")
            row = (nodes, cold_s, again_s, cpu, cell_seconds(work / "r", engine), build, max(cold_rss, again_rss),
                   result.split(": ", 1)[-1][:80])
            print(f"{nodes} nodes: {cold_s:.1f} s, again {again_s:.1f} s", file=sys.stderr, flush=True)
            rows.append(row)
    machine = platform.processor() or platform.machine()
    print(f"\n`python -m check chain.onnx --engine {engine}` (check.chain: Q -> DQ, DQ(int8 per-channel weights) -> "
          f"Conv 1x1, repeated; opset 13) on {cpu_name() or machine}, {os.cpu_count()} cores, load average {load:.1f} "
          f"before and {os.getloadavg()[0]:.1f} after: a cold run (new bundle, results and report folders), then the "
          "same command again (whole commands, interpreters included):\n")
    print("| nodes | cold (s) | again (s) | CPU, cold (s) | the cell, cold (s) | its engine build (s) "
          "| peak RSS (MiB) | result |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for nodes, cold_s, again_s, cpu, cell, build, rss, result in rows:
        print(f"| {nodes} | {cold_s:.1f} | {again_s:.1f} | {cpu:.1f} | {cell:.2f} | {build:.2f} | {rss} | {result} |")
    return 0


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo, "" where there is none."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def user_model_check(engine_name: str = "onnxruntime", name: str = "backbone_300") -> int:
    """A check.archs model at batch 1: `python -m check` on one engine against the bare engine."""
    from check.bundle import bundle_from_model

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = arch_model(root, name, batch=1)
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
    print(f"\nYour own model ({model.name}): {targets} quantized nodes, {engine_name} {info.version} (bare: load "
          "with full optimization, build, run once; best of 3):\n")
    print("| step | seconds | against bare engine |")
    print("| --- | ---: | ---: |")
    for step, seconds in (("bare engine load+build+run", bare), ("bundle (checker, inputs, ORT reference)", prepare),
                          ("cell through the harness (run_cell, precision evidence)", harness),
                          ("whole `python -m check` command (interpreters, pytest, reports)", whole)):
        print(f"| {step} | {seconds:.2f} | {seconds / bare:.2f}x |")
    print(f"\n{int8.strip(' |')}")
    return 0


def _cli(argv: Sequence[str]) -> int:
    """--user-model [ENGINE], --check [--batch N] [ENGINE ...], --scale [--nodes N,...] [ENGINE], or the bundle and
    cell tables."""
    parser = ArgumentParser(prog="python tools/benchmark.py", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="python -m check on ~300- and ~900-node models")
    mode.add_argument("--user-model", action="store_true", help="check against the bare engine, one model")
    mode.add_argument("--scale", action="store_true", help="python -m check on chains of 2,000 to 20,000 nodes")
    parser.add_argument("--batch", type=int, help="--check: fix the batch dimension (default: left dynamic)")
    parser.add_argument("--nodes", help=f"--scale: the sizes, comma-separated (default "
                        f"{','.join(map(str, SCALE_NODES))})")
    parser.add_argument("engines", nargs="*", metavar="ENGINE",
                        help=f"--check, --scale: of {', '.join(CHECK_ENGINES)}; --user-model: onnxruntime or openvino")
    args = parser.parse_args(argv)
    unknown = [e for e in args.engines if e not in CHECK_ENGINES]
    if unknown:
        parser.error(f"unknown engine {', '.join(unknown)}: one of {', '.join(CHECK_ENGINES)}")
    if args.nodes and not args.scale:
        parser.error("--nodes goes with --scale")
    if args.scale:
        if len(args.engines) > 1:
            parser.error("--scale takes one engine")
        try:
            sizes = [int(n) for n in args.nodes.split(",")] if args.nodes else list(SCALE_NODES)
        except ValueError:
            parser.error(f"--nodes {args.nodes}: whole numbers, comma-separated")
        return scale_timings(*(args.engines[:1] or ["onnxruntime"]), sizes=sizes)
    if args.user_model:
        return user_model_check(*(args.engines[:1] or ["onnxruntime"]))
    if args.check:
        return check_timings(args.engines or CHECK_ENGINES, args.batch)
    if args.engines or args.batch is not None:
        parser.error("ENGINE and --batch go with --check or --user-model")
    return main()


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
