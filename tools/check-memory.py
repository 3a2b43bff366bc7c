"""Peak memory of `python -m check` on a Q/DQ model with ~300 MB of external weights (docs/benchmark.md).

    .nox/tests/bin/python tools/check-memory.py [--mb 300] [--layers 8] [--weights int8|float] [--cap-gib 2]
        [--with-next] [-- more check flags]

Builds the model in a temporary folder (a chain of MatMuls, activations through QuantizeLinear -> DequantizeLinear, the
weights int8 behind a per-channel DequantizeLinear, or float32 behind a QuantizeLinear -> DequantizeLinear pair as
TensorRT's exporters write them), runs `python -m check MODEL --prepare-only` (or with the flags after `--`, e.g.
`--engine onnxruntime`) under /usr/bin/time -v, and prints the peak resident set size of the largest process against
the weights' bytes. `--cap-gib N`: the run under an address-space limit of N GiB (RLIMIT_AS), to see what the model's
summary line says then. Exit status: check's own; 2 where /usr/bin/time or onnx is missing.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from core.cli import ArgumentParser  # noqa: E402

TIME = Path("/usr/bin/time")


def build(folder: Path, megabytes: float, layers: int, weights: str, name: str = "model") -> int:
    """Write <name>.onnx with its weights in <name>.data under folder; returns the weights' bytes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    width = 4 if weights == "float" else 1
    side = int((megabytes * 1e6 / layers / width) ** 0.5) // 64 * 64
    rng = np.random.default_rng(0)
    nodes, inits, current = [], [], "x"
    scale = numpy_helper.from_array(np.array(0.05, np.float32), "act_scale")
    zero = numpy_helper.from_array(np.array(0, np.int8), "act_zero")
    inits += [scale, zero]
    for k in range(layers):
        nodes += [helper.make_node("QuantizeLinear", [current, "act_scale", "act_zero"], [f"q{k}"], name=f"q{k}"),
                  helper.make_node("DequantizeLinear", [f"q{k}", "act_scale", "act_zero"], [f"dq{k}"], name=f"dq{k}")]
        w_scale = numpy_helper.from_array(np.full(side, 0.01, np.float32), f"w{k}_scale")
        w_zero = numpy_helper.from_array(np.zeros(side, np.int8), f"w{k}_zero")
        inits += [w_scale, w_zero]
        q = rng.integers(-127, 128, size=(side, side), dtype=np.int8)
        if weights == "float":
            inits.append(numpy_helper.from_array(q.astype(np.float32) * np.float32(0.01), f"w{k}"))
            nodes.append(helper.make_node("QuantizeLinear", [f"w{k}", f"w{k}_scale", f"w{k}_zero"], [f"w{k}_q"],
                                          name=f"w{k}_quant", axis=1))
            quantized = f"w{k}_q"
        else:
            inits.append(numpy_helper.from_array(q, f"w{k}"))
            quantized = f"w{k}"
        nodes += [helper.make_node("DequantizeLinear", [quantized, f"w{k}_scale", f"w{k}_zero"], [f"w{k}_dq"],
                                   name=f"w{k}_dequant", axis=1),
                  helper.make_node("MatMul", [f"dq{k}", f"w{k}_dq"], [f"m{k}"], name=f"matmul{k}")]
        current = f"m{k}"
    nodes.append(helper.make_node("Identity", [current], ["y"], name="out"))
    graph = helper.make_graph(nodes, "memory", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, side])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, side])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="check-memory")
    onnx.save_model(model, str(folder / f"{name}.onnx"), save_as_external_data=True, location=f"{name}.data",
                    size_threshold=4096)
    return layers * side * side * width


def measure(model: Path, out: Path, flags: Sequence[str], cap_gib: Optional[float]) -> subprocess.CompletedProcess:
    """python -m check under /usr/bin/time -v (and the address-space cap, where given)."""
    command = [str(TIME), "-v", sys.executable, "-m", "check", str(model), "--out", str(out / "bundles"),
               "--results", str(out / "results"), "--reports", str(out / "reports"), *flags]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def cap() -> None:
        if cap_gib:
            limit = int(cap_gib * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, preexec_fn=cap)


def peak_bytes(stderr: str) -> int:
    """The peak RSS /usr/bin/time -v reports (kilobytes), in bytes; 0 where it says none."""
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(found.group(1)) << 10 if found else 0


def main(argv: Optional[List[str]] = None) -> int:
    """Build, run, print the peak against the weights."""
    parser = ArgumentParser(prog="tools/check-memory.py", description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=300.0, help="weights in MB (10^6 bytes; default 300)")
    parser.add_argument("--layers", type=int, default=8, help="MatMul layers (default 8)")
    parser.add_argument("--weights", choices=("int8", "float"), default="int8",
                        help="int8 behind a DequantizeLinear (default), or float32 behind a Q/DQ pair")
    parser.add_argument("--cap-gib", type=float, default=None, help="an address-space limit for the run, in GiB")
    parser.add_argument("--with-next", action="store_true",
                        help="a 1 MB model beside it (next.onnx), and check the folder: the next model is checked too")
    parser.add_argument("flags", nargs="*", help="check's flags (after --; default --prepare-only)")
    args = parser.parse_args(argv)
    if not TIME.is_file():
        print(f"check-memory: cannot run: {TIME} is missing (apt-get install time)", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="qdq-check-memory-"))
    try:
        models = folder / "models"
        models.mkdir()
        weights = build(models, args.mb, args.layers, args.weights)
        if args.with_next:
            build(models, 1, 2, args.weights, "next")
        target = models if args.with_next else models / "model.onnx"
        done = measure(target, folder, args.flags or ["--prepare-only"], args.cap_gib)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    summary = done.stdout[done.stdout.find("summary:"):].strip() if "summary:" in done.stdout else done.stdout[-2000:]
    print(summary or done.stderr[-2000:])
    peak = peak_bytes(done.stderr)
    print(f"weights: {weights / 1e6:.0f} MB ({args.weights}); peak RSS of the largest process: {peak / 1e6:.0f} MB "
          f"= {peak / weights:.2f}x the weights" + (f"; address space capped at {args.cap_gib:g} GiB" if args.cap_gib
                                                   else "") + f"; check's exit status {done.returncode}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
