"""Build one ONNX model under several TensorRT builder settings and say, per setting, whether it built.

    bin/python-trt-8.6.0 tools/trt-builder-settings.py MODEL.onnx [MODEL.onnx ...] >> settings.jsonl

Runs inside a TensorRT interpreter (the payload's launchers, docs/gpu-recipe.md): Python 3.9+, tensorrt only. One
JSON line per model and setting: the TensorRT version, the model's path, the setting, "built" or "failed", and the
builder's last error line. The settings: INT8 alone (the matrix's), INT8 with FP16, INT8 with DIRECT_IO where the
version has it, and INT8 at builder optimization levels 0 to 5 where the version has them (8.6 and later). This is the
record of seed 032's builder-side workarounds (docs/findings.md), not a matrix cell: it judges nothing but the build.
"""

from __future__ import annotations

import json
import sys
from typing import Callable, Dict, List, Tuple

import tensorrt as trt


class Log(trt.ILogger):
    """Keeps the builder's errors."""

    def __init__(self) -> None:
        trt.ILogger.__init__(self)
        self.errors: List[str] = []

    def log(self, severity: "trt.ILogger.Severity", msg: str) -> None:
        if severity <= trt.ILogger.Severity.ERROR:
            self.errors.append(msg)


def settings() -> List[Tuple[str, Callable[["trt.IBuilderConfig"], None]]]:
    """Each setting's name and how it changes an INT8 builder config, for what this version has."""
    out: List[Tuple[str, Callable[["trt.IBuilderConfig"], None]]] = [
        ("int8", lambda c: None),
        ("int8+fp16", lambda c: c.set_flag(trt.BuilderFlag.FP16)),
    ]
    if hasattr(trt.BuilderFlag, "DIRECT_IO"):
        out.append(("int8+direct_io", lambda c: c.set_flag(trt.BuilderFlag.DIRECT_IO)))
    if hasattr(trt.IBuilderConfig, "builder_optimization_level"):
        for level in range(6):
            out.append((f"int8+opt_level={level}", lambda c, lv=level: setattr(c, "builder_optimization_level", lv)))
    return out


def build(path: str, name: str, change: Callable[["trt.IBuilderConfig"], None]) -> Dict[str, str]:
    """Parse and build one model under one setting."""
    log = Log()
    builder = trt.Builder(log)
    network = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH))
    parser = trt.OnnxParser(network, log)
    with open(path, "rb") as f:
        parsed = parser.parse(f.read())
    result = {"tensorrt": trt.__version__, "model": path, "setting": name}
    if not parsed:
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        return {**result, "outcome": "failed", "stage": "parse", "error": (errors or log.errors or [""])[-1]}
    config = builder.create_builder_config()
    config.set_flag(trt.BuilderFlag.INT8)
    change(config)
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        first = next((e for e in log.errors if "chooseHigherPrecision" in e), (log.errors or [""])[-1])
        return {**result, "outcome": "failed", "stage": "build", "error": first}
    return {**result, "outcome": "built", "stage": "build", "error": ""}


def main(argv: List[str]) -> int:
    """Every model under every setting, a JSON line each."""
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for path in argv:
        for name, change in settings():
            print(json.dumps(build(path, name, change)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
