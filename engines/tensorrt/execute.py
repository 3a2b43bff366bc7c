"""The worker's stages after the build: deserialize, read the engine's layers, run once.

Runs inside the TensorRT interpreter (standard library, numpy and the TensorRT-family module). A
TensorRT-RTX plan is built ahead of time for listed GPU architectures; where this machine has none of
them (no GPU, or one it refuses, like sm_90), deserialization is not possible, and the cell is "built"
with that reason, never a failure. Per-node precision comes from the layer listing TensorRT itself gives:
the engine inspector after deserialization, or TensorRT-RTX's build log, which needs no GPU.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import gpu
from . import inspect as tinspect
from . import layers as tlayers
from .build import last_error


def stage_engine(trt: Any, caps: Dict[str, Any], serialized: Any, req: Dict[str, Any], result: Any,
                 logger: Any) -> Optional[Any]:
    """The deserialized engine, or None: for an ahead-of-time plan with the reason it cannot run here, else an error."""
    machine = req.get("gpu") or {}
    if caps["aot"] and not machine.get("present", False):
        result.data["not_run_here"] = f"{machine.get('reason') or gpu.NO_GPU} on this machine: the plan is built " \
                                      "ahead of time; its numerics need a GPU of an architecture it targets"
        return None
    engine = trt.Runtime(logger).deserialize_cuda_engine(serialized)
    if engine is None:
        why = "deserialize_cuda_engine returned None" + last_error(result)
        if caps["aot"]:  # the engine's own refusal, e.g. sm_90 for TensorRT-RTX
            result.data["not_run_here"] = f"{machine.get('label', 'this GPU')} cannot run the plan: {why}"
        else:
            result.data["error"] = why
        return None
    try:
        text = engine.create_engine_inspector().get_engine_information(trt.LayerInformationFormat.JSON)
        result.data["inspector"] = json.loads(text, strict=False)  # 8.6 puts control characters in strings
        result.data["listing"] = {"kind": "engine inspector JSON", "text": text}
    except Exception as e:  # the inspector is evidence, not a stage
        result.note(f"engine inspector failed: {type(e).__name__}: {e}")
    return engine


def layer_evidence(caps: Dict[str, Any], req: Dict[str, Any], result: Any) -> None:
    """Per-node precision from TensorRT's own layer listing: the build log (TensorRT-RTX) or the inspector."""
    targets = _targets(req)
    if caps["layer_listing"] == "build log":
        message = tlayers.layers_message(m["msg"] for m in result.data["log"])
        if not message:
            result.note("the build log has no 'Layers:' listing (ProfilingVerbosity.DETAILED at VERBOSE)")
            return
        result.data["listing"] = {"kind": "build log Layers:", "text": message}
        found = tlayers.from_build_log(message)
    elif result.data.get("inspector"):
        found = tlayers.from_inspector(result.data["inspector"])
    else:
        return
    result.data["precision"] = tlayers.attribute(found, targets)


def _targets(req: Dict[str, Any]) -> Dict[str, str]:
    ops = req.get("target_ops") or {}
    return {node: str(ops.get(node, "")) for node in req.get("target_nodes") or []}


def stage_run(trt: Any, caps: Dict[str, Any], engine: Any, req: Dict[str, Any], result: Any) -> Dict[str, Any]:
    """Execute once with the bundle's inputs; returns outputs by name."""
    import numpy as np

    with np.load(req["inputs"]) as f:
        inputs = {k: f[k] for k in f.files}
    cuda = gpu.CudaDriver()
    cuda.init()
    cuda.use_primary_context(cuda.device(0))
    context = engine.create_execution_context()
    if context is None:
        raise RuntimeError("create_execution_context returned None" + last_error(result))
    shaper = InputShapes(caps, context, result)
    if hasattr(engine, "num_bindings"):  # 8.x; the bindings API went in 10.0
        result.data["options"]["io_api"] = "bindings"
        return run_bindings(engine, context, inputs, cuda, result, shaper)
    result.data["options"]["io_api"] = "tensors"
    return run_tensors(trt, engine, context, inputs, cuda, result, shaper)


class InputShapes:
    """Sets a dynamic input's shape on the execution context with the method the capability record names
    (set_binding_shape by index with the bindings API, set_input_shape by name); records each in options."""

    def __init__(self, caps: Dict[str, Any], context: Any, result: Any) -> None:
        self.method = caps.get("input_shapes") or ""
        self.context, self.result = context, result

    def set(self, name: str, index: int, shape: Any) -> None:
        if self.method == "set_binding_shape":
            ok = self.context.set_binding_shape(index, tuple(shape))
        elif self.method == "set_input_shape":
            ok = self.context.set_input_shape(name, tuple(shape))
        else:
            raise RuntimeError("this module's execution context has neither set_input_shape nor set_binding_shape")
        if ok is False:
            raise RuntimeError(f"{self.method}({name}, {list(shape)}) refused" + last_error(self.result))
        self.result.data["options"].setdefault("input_shapes", {})[name] = [int(d) for d in shape]


def host_input(inputs: Dict[str, Any], name: str, trt_dtype: Any) -> Any:
    import numpy as np

    if name not in inputs:
        raise KeyError(f"engine input {name!r} is not in inputs.npz (it has {sorted(inputs)})")
    return np.ascontiguousarray(inputs[name], dtype=tinspect.numpy_dtype_name(trt_dtype))


def run_bindings(engine: Any, context: Any, inputs: Dict[str, Any], cuda: Any, result: Any,
                 shaper: InputShapes) -> Dict[str, Any]:
    """TensorRT 8.x: bindings API and execute_v2."""
    import numpy as np

    n = engine.num_bindings
    ptrs: List[int] = [0] * n
    hosts: Dict[int, Any] = {}
    try:
        for i in range(n):
            if engine.binding_is_input(i):
                arr = host_input(inputs, engine.get_binding_name(i), engine.get_binding_dtype(i))
                if -1 in tuple(engine.get_binding_shape(i)):
                    shaper.set(engine.get_binding_name(i), i, arr.shape)
                ptrs[i] = cuda.alloc(arr.nbytes)
                cuda.to_device(ptrs[i], arr)
        for i in range(n):
            if not engine.binding_is_input(i):
                dtype = tinspect.numpy_dtype_name(engine.get_binding_dtype(i))
                hosts[i] = np.empty(tuple(context.get_binding_shape(i)), dtype=dtype)
                ptrs[i] = cuda.alloc(hosts[i].nbytes)
        if not context.execute_v2(ptrs):
            raise RuntimeError("execute_v2 returned False" + last_error(result))
        cuda.synchronize()
        for i, arr in hosts.items():
            cuda.from_device(arr, ptrs[i])
        return {engine.get_binding_name(i): arr for i, arr in hosts.items()}
    finally:
        for p in ptrs:
            if p:
                cuda.free(p)


def run_tensors(trt: Any, engine: Any, context: Any, inputs: Dict[str, Any], cuda: Any, result: Any,
                shaper: InputShapes) -> Dict[str, Any]:
    """TensorRT 10.x/11.x and TensorRT-RTX: named I/O tensors and execute_async_v3 on a stream of our own.
    NOT VERIFIED ON A REAL ENGINE: no GPU here runs a TensorRT-RTX plan, and 10.x/11.x are out of reach."""
    import numpy as np

    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    is_input = {n: engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT for n in names}
    ptrs: Dict[str, int] = {}
    hosts: Dict[str, Any] = {}
    stream = 0
    try:
        for index, name in enumerate(names):
            if not is_input[name]:
                continue
            arr = host_input(inputs, name, engine.get_tensor_dtype(name))
            if -1 in tuple(engine.get_tensor_shape(name)):
                shaper.set(name, index, arr.shape)
            ptrs[name] = cuda.alloc(arr.nbytes)
            cuda.to_device(ptrs[name], arr)
            context.set_tensor_address(name, ptrs[name])
        for name in [n for n in names if not is_input[n]]:
            dtype = tinspect.numpy_dtype_name(engine.get_tensor_dtype(name))
            hosts[name] = np.empty(tuple(context.get_tensor_shape(name)), dtype=dtype)
            ptrs[name] = cuda.alloc(hosts[name].nbytes)
            context.set_tensor_address(name, ptrs[name])
        stream = cuda.stream()
        if not context.execute_async_v3(stream):
            raise RuntimeError("execute_async_v3 returned False" + last_error(result))
        cuda.stream_synchronize(stream)
        for name, arr in hosts.items():
            cuda.from_device(arr, ptrs[name])
        return hosts
    finally:
        for p in ptrs.values():
            cuda.free(p)
        if stream:
            cuda.stream_destroy(stream)
