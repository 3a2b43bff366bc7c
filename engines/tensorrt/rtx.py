"""TensorRT for RTX's adapter: the same worker and stages as TensorRT's (engines.tensorrt.adapter) with other data, the
module name, the ahead-of-time target and its build log as the layer listing. It builds with no GPU.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, Mapping, Optional

from core.engines import ENGINES
from engines.base import EngineInfo
from engines.tensorrt import gpu
from engines.tensorrt.adapter import Adapter
from generators.bundle import Bundle

# TensorRT-RTX's CPU-only builds allocate and free buffers above glibc's mmap threshold on every build, and each
# comes back as fresh page faults: measured on 1.7.1.116, 20 builds in one worker took 1.28 s of system time and
# 669k minor faults, and 0.11 s and 31k with these (peak RSS the same). A value the user sets wins; other C
# libraries ignore them (mallopt(3)). Every build also zeroes a 64 MiB serialization buffer twice (memset, 14% of a
# worker's CPU): glibc.malloc.hugetlb=1 asks for transparent huge pages on the heap that holds it (where the kernel's
# THP mode is "madvise"; glibc before 2.35 and other modes ignore it): a 635-cell 1.7.1.116 column 10.8 and 11.4 s
# of CPU before, 10.0 and 10.1 s after (alternating), every cell the same.
RTX_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20), "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
              "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


class RtxAdapter(Adapter):
    """TensorRT for RTX through the same worker and stages: parse and ahead-of-time build on any machine;
    deserialization and the run only on a GPU of an architecture the plan targets."""

    name = "tensorrt-rtx"
    module = "tensorrt_rtx"
    static_not_run = True  # cannot_run reads the bundle and the version's capabilities (engines.reuse)

    @classmethod
    def same_machine(cls, hardware: str, detail: Mapping[str, str]) -> bool:
        """Whether a cell was built on this machine: its recorded GPU (name and compute capability), or none, is the
        one here (the label's build targets follow the version, which the reuse key holds)."""
        found = gpu.detect()
        here = (found.name, found.compute_capability) if found.present else ("", "")
        return (detail.get("name", ""), detail.get("compute_capability", "")) == here

    def __init__(self, python: Optional[str] = None, version: Optional[str] = None, timeout: float = 600,
                 isolate: bool = False, target: Optional[str] = None, plugin_link: Optional[str] = None) -> None:
        super().__init__(python=python, version=version, timeout=timeout, isolate=isolate, tactics="default")
        self.target = target or "default"
        self.plugin_link = plugin_link or "none"
        ENGINES[self.name].check(self.options())
        self._link_dir: Optional[tempfile.TemporaryDirectory] = None

    def options(self) -> Dict[str, str]:
        return {"target": self.target, "plugin_link": self.plugin_link}

    def _worker_env(self) -> Optional[Dict[str, str]]:
        """glibc's allocator told to keep freed memory (RTX_MALLOC); with plugin_link, LD_LIBRARY_PATH also names a
        folder holding libtensorrt_rtx.so -> the wheel's .so.1."""
        env = {**RTX_MALLOC, **os.environ}
        library = (self._report or {}).get("library", "")
        if self.plugin_link == "none" or not library:
            return env
        if self._link_dir is None:
            self._link_dir = tempfile.TemporaryDirectory(prefix="qdq-rtx-link-")
            os.symlink(library, os.path.join(self._link_dir.name, "libtensorrt_rtx.so"))
        path = os.environ.get("LD_LIBRARY_PATH", "")
        return dict(env, LD_LIBRARY_PATH=os.pathsep.join(x for x in (self._link_dir.name, path) if x))

    def _probe(self) -> EngineInfo:
        """No GPU needed: the build runs on the CPU (NVIDIA, "CPU-Only AOT"); a GPU only decides whether it runs."""
        found = self._gpu = gpu.detect()
        return self._probe_worker(_machine(found), found.detail())

    def _hardware(self, label: str, report: Dict[str, Any]) -> str:
        """"no GPU: ahead-of-time build (default: SM80 SM86 SM89 SM120 SM121)", or ": ahead-of-time build"
        where the variant names the one target."""
        if self.target != "default":
            return f"{label}: ahead-of-time build"
        targets = [t for t in (report.get("capabilities") or {}).get("compute_capabilities", []) if t != "SM75"]
        return f"{label}: ahead-of-time build (default: {' '.join(targets)})" if targets else label

    def _request_trt(self, bundle: Bundle) -> Dict[str, Any]:
        settings = ENGINES[self.name].settings  # no timing cache: it breaks CPU-only builds
        return dict(settings, **(bundle.meta.get("trt") or {}), target=self.target)


def _machine(found: gpu.GpuInfo) -> str:
    """The machine part of a TensorRT-RTX hardware label: its GPU, or "no GPU"."""
    return found.label if found.present else "no GPU"
