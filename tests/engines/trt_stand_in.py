"""What the TensorRT adapter tests share: the stand-in tensorrt, an H200 to detect, the worker module."""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from engines.tensorrt import WORKER, gpu

FAKE_TRT = Path(__file__).resolve().parent.parent / "data" / "trt" / "fake_tensorrt"
H200 = gpu.GpuInfo(present=True, name="NVIDIA H200", compute_capability="9.0", driver="580.159.04", cuda_driver="13.0")


def libcuda_loads() -> bool:
    """Whether this machine has a CUDA driver library (the worker's run stage would then go further)."""
    try:
        ctypes.CDLL(gpu.LIBCUDA)
    except OSError:
        return False
    return True


def load_worker(name: str = "qdq_trt_worker_under_test") -> ModuleType:
    """worker.py imported in this process: it needs nothing but the standard library until TensorRT is asked for."""
    spec = importlib.util.spec_from_file_location(name, WORKER)
    module = importlib.util.module_from_spec(spec)
    path = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path  # the worker drops its own folder from sys.path; leave this process's alone
    return module
