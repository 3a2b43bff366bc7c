"""The bare engine that `check`'s GPU benchmark compares against: TensorRT's Python API as a user calls it.

    bin/python-trt-8.6.0 tools/trt-bare.py BUNDLE_DIR        # one JSON line: seconds per stage

Parse the bundle's model.onnx, build with the bundle's precision flags (INT8 by default) and the
worker's workspace, deserialize, run inputs.npz once, copy the outputs back. Nothing of the harness:
no layer listing, no DETAILED profiling, no timing cache, no plugin registration, no results file.
TensorRT 8.x (bindings API), Python 3.9, numpy; device memory through the project's ctypes driver
wrappers (engines/tensorrt/gpu.py, standard library only). Exit 1 with the parser's or builder's
words where the model does not build.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _workspace_mb() -> int:
    """The worker's workspace pool, from the engine descriptors (core/engines.py): the same build as the suite's."""
    sys.path.insert(0, str(REPO))
    from core.engines import ENGINES

    return int(ENGINES["tensorrt"].settings["workspace_mb"])


def _gpu_module():
    path = Path(__file__).resolve().parent.parent / "engines" / "tensorrt" / "gpu.py"
    spec = importlib.util.spec_from_file_location("qdq_bare_gpu", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main(argv: list) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / "model.onnx").is_file():
        print("usage: trt-bare.py BUNDLE_DIR (a folder with model.onnx, inputs.npz and case.json)", file=sys.stderr)
        return 2
    bundle = Path(argv[0])
    start = time.perf_counter()
    import numpy as np
    import tensorrt as trt

    seconds = {"import": time.perf_counter() - start}
    opts = json.loads((bundle / "case.json").read_text()).get("trt") or {}
    logger = trt.Logger(trt.Logger.WARNING)

    mark = time.perf_counter()
    builder = trt.Builder(logger)
    network = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH))
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(bundle / "model.onnx")):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        print(f"trt-bare: parse failed: {errors}", file=sys.stderr)
        return 1
    seconds["parse"] = time.perf_counter() - mark

    mark = time.perf_counter()
    config = builder.create_builder_config()
    if opts.get("int8", True):
        config.set_flag(trt.BuilderFlag.INT8)
    if opts.get("fp16"):
        config.set_flag(trt.BuilderFlag.FP16)
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, _workspace_mb() << 20)
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        print("trt-bare: build failed (the builder returned no plan)", file=sys.stderr)
        return 1
    seconds["build"] = time.perf_counter() - mark

    mark = time.perf_counter()
    engine = trt.Runtime(logger).deserialize_cuda_engine(plan)
    context = engine.create_execution_context()
    cuda = _gpu_module().CudaDriver()
    cuda.init()
    cuda.use_primary_context(cuda.device(0))
    inputs = dict(np.load(bundle / "inputs.npz"))
    ptrs, outputs = [], {}
    for i in range(engine.num_bindings):
        dtype = trt.nptype(engine.get_binding_dtype(i))
        if engine.binding_is_input(i):
            arr = np.ascontiguousarray(inputs[engine.get_binding_name(i)], dtype=dtype)
            if -1 in tuple(engine.get_binding_shape(i)):
                context.set_binding_shape(i, arr.shape)
            ptrs.append(cuda.alloc(arr.nbytes))
            cuda.to_device(ptrs[-1], arr)
        else:
            ptrs.append(0)
    for i in range(engine.num_bindings):
        if not engine.binding_is_input(i):
            outputs[i] = np.empty(tuple(context.get_binding_shape(i)), dtype=trt.nptype(engine.get_binding_dtype(i)))
            ptrs[i] = cuda.alloc(outputs[i].nbytes)
    if not context.execute_v2(ptrs):
        print("trt-bare: execute_v2 returned False", file=sys.stderr)
        return 1
    cuda.synchronize()
    for i, arr in outputs.items():
        cuda.from_device(arr, ptrs[i])
    for p in ptrs:
        cuda.free(p)
    seconds["run"] = time.perf_counter() - mark
    seconds["total"] = time.perf_counter() - start
    print(json.dumps({"bundle": bundle.name, "tensorrt": trt.__version__,
                      **{k: round(v, 3) for k, v in seconds.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
