"""NVIDIA GPU detection and the few CUDA driver calls the worker needs, through ctypes on libcuda.so.1.

Standard library only and Python 3.9+: the adapter imports it as `engines.tensorrt.gpu`, and the
worker loads it by path inside the TensorRT interpreter. Nothing here imports TensorRT.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

DEVICE_FILES = ("/dev/nvidia0", "/proc/driver/nvidia/version")  # core.engines.NVIDIA_DEVICE_FILES (no core here)
LIBCUDA = "libcuda.so.1"
# CUdevice_attribute values from cuda.h
COMPUTE_CAPABILITY_MAJOR = 75
COMPUTE_CAPABILITY_MINOR = 76
NO_GPU = "no NVIDIA GPU"


class CudaError(RuntimeError):
    """A CUDA driver call returned an error code."""


@dataclass(frozen=True)
class GpuInfo:
    """The first NVIDIA GPU on this machine, or why there is none."""

    present: bool
    reason: str = ""  # why not present
    name: str = ""
    compute_capability: str = ""  # "9.0"
    driver: str = ""  # kernel driver version, "580.159.04"
    cuda_driver: str = ""  # CUDA version the driver supports, "12.8"

    @property
    def label(self) -> str:
        """The matrix column's hardware label: "NVIDIA H200 (sm_90)"."""
        if not self.present:
            return NO_GPU
        sm = self.compute_capability.replace(".", "")
        return f"{self.name} (sm_{sm})" if sm else self.name

    def detail(self) -> Dict[str, str]:
        return {k: v for k, v in asdict(self).items() if isinstance(v, str) and k != "reason" and v}


def detect(device_files: tuple = DEVICE_FILES, libcuda: str = LIBCUDA) -> GpuInfo:
    """Look for an NVIDIA GPU without importing any engine."""
    if not any(os.path.exists(p) for p in device_files):
        return GpuInfo(present=False, reason=NO_GPU)
    driver = driver_version()
    try:
        cuda = CudaDriver(libcuda)
        cuda.init()
        dev = cuda.device(0)
        return GpuInfo(
            present=True,
            name=cuda.device_name(dev),
            compute_capability=cuda.compute_capability(dev),
            driver=driver,
            cuda_driver=cuda.driver_version(),
        )
    except (OSError, CudaError, AttributeError) as e:
        reason = f"NVIDIA device files present, but the GPU is not usable: {e}"
        return GpuInfo(present=False, reason=reason, driver=driver)


def driver_version() -> str:
    """The kernel driver's version from /proc, else from nvidia-smi; "" when neither says."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", f.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


_u64 = ctypes.c_uint64
_vp = ctypes.c_void_p
_sz = ctypes.c_size_t
_int = ctypes.c_int
# name -> argument types; every function returns a CUresult (int)
_SIGNATURES: Dict[str, tuple] = {
    "cuInit": (ctypes.c_uint,),
    "cuDriverGetVersion": (ctypes.POINTER(_int),),
    "cuDeviceGet": (ctypes.POINTER(_int), _int),
    "cuDeviceGetName": (ctypes.c_char_p, _int, _int),
    "cuDeviceGetAttribute": (ctypes.POINTER(_int), _int, _int),
    "cuDevicePrimaryCtxRetain": (ctypes.POINTER(_vp), _int),
    "cuCtxSetCurrent": (_vp,),
    "cuCtxSynchronize": (),
    "cuMemAlloc_v2": (ctypes.POINTER(_u64), _sz),
    "cuMemFree_v2": (_u64,),
    "cuMemcpyHtoD_v2": (_u64, _vp, _sz),
    "cuMemcpyDtoH_v2": (_vp, _u64, _sz),
    "cuMemcpyDtoDAsync_v2": (_u64, _u64, _sz, _vp),
    "cuStreamCreate": (ctypes.POINTER(_vp), ctypes.c_uint),
    "cuStreamSynchronize": (_vp,),
    "cuStreamDestroy_v2": (_vp,),
    "cuGetErrorName": (_int, ctypes.POINTER(ctypes.c_char_p)),
}


class CudaDriver:
    """Thin checked wrappers over the CUDA driver API; every return code is checked.

    libcuda is opened on first use, not on construction: a plugin that holds a driver for its enqueue must
    still register (and build) on a machine with no GPU, as TensorRT-RTX's ahead-of-time builds do.
    """

    def __init__(self, libcuda: str = LIBCUDA) -> None:
        self._path = libcuda
        self._lib: Optional[ctypes.CDLL] = None

    @property
    def lib(self) -> ctypes.CDLL:
        if self._lib is None:
            lib = ctypes.CDLL(self._path)
            for name, argtypes in _SIGNATURES.items():
                fn = getattr(lib, name, None)
                if fn is not None:
                    fn.argtypes = list(argtypes)
                    fn.restype = _int
            self._lib = lib
        return self._lib

    def call(self, name: str, *args: Any) -> None:
        rc = getattr(self.lib, name)(*args)
        if rc != 0:
            raise CudaError(f"{name} failed: {self._error_name(rc)} ({rc})")

    def _error_name(self, rc: int) -> str:
        text = ctypes.c_char_p()
        fn = getattr(self.lib, "cuGetErrorName", None)
        if fn is not None and fn(rc, ctypes.byref(text)) == 0 and text.value:
            return text.value.decode()
        return "CUDA error"

    def init(self) -> None:
        self.call("cuInit", 0)

    def driver_version(self) -> str:
        v = _int()
        self.call("cuDriverGetVersion", ctypes.byref(v))
        return f"{v.value // 1000}.{v.value % 1000 // 10}"

    def device(self, ordinal: int = 0) -> int:
        dev = _int()
        self.call("cuDeviceGet", ctypes.byref(dev), ordinal)
        return dev.value

    def device_name(self, dev: int) -> str:
        buf = ctypes.create_string_buffer(256)
        self.call("cuDeviceGetName", buf, len(buf), dev)
        return buf.value.decode(errors="replace")

    def compute_capability(self, dev: int) -> str:
        major, minor = _int(), _int()
        self.call("cuDeviceGetAttribute", ctypes.byref(major), COMPUTE_CAPABILITY_MAJOR, dev)
        self.call("cuDeviceGetAttribute", ctypes.byref(minor), COMPUTE_CAPABILITY_MINOR, dev)
        return f"{major.value}.{minor.value}"

    def use_primary_context(self, dev: int) -> None:
        """Make the device's primary context (the one the CUDA runtime and TensorRT use) current."""
        ctx = _vp()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self.call("cuCtxSetCurrent", ctx)

    def alloc(self, nbytes: int) -> int:
        ptr = _u64()
        self.call("cuMemAlloc_v2", ctypes.byref(ptr), max(int(nbytes), 1))
        return ptr.value

    def free(self, ptr: int) -> None:
        self.call("cuMemFree_v2", ptr)

    def to_device(self, ptr: int, array: Any) -> None:
        """Copy a C-contiguous numpy array to device memory."""
        self.call("cuMemcpyHtoD_v2", ptr, array.ctypes.data, array.nbytes)

    def from_device(self, array: Any, ptr: int) -> None:
        """Fill a C-contiguous numpy array from device memory."""
        self.call("cuMemcpyDtoH_v2", array.ctypes.data, ptr, array.nbytes)

    def copy_async(self, dst: int, src: int, nbytes: int, stream: Optional[int]) -> None:
        self.call("cuMemcpyDtoDAsync_v2", dst, src, nbytes, stream)

    def synchronize(self) -> None:
        self.call("cuCtxSynchronize")

    def stream(self) -> int:
        s = _vp()
        self.call("cuStreamCreate", ctypes.byref(s), 0)
        return s.value or 0

    def stream_synchronize(self, stream: int) -> None:
        self.call("cuStreamSynchronize", stream)

    def stream_destroy(self, stream: int) -> None:
        self.call("cuStreamDestroy_v2", stream)
