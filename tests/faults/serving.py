"""A TensorRT adapter for the process faults: the real adapter and worker in serve mode, over the stand-in tensorrt
(tests/data/trt/fake_tensorrt, on PYTHONPATH), told it has a GPU. A test double: its cells never reach a report."""

from __future__ import annotations

from engines.base import EngineInfo
from engines.tensorrt import Adapter


class ServingStandIn(Adapter):
    """engines.tensorrt.Adapter with a GPU it is told of: each cell goes to its serving worker.py (TensorRT's own
    tactics, so that the stand-in's stub cuDNN does not keep a cell from running)."""

    def __init__(self) -> None:
        super().__init__(tactics="tensorrt-only")

    def _probe(self) -> EngineInfo:
        return self._probe_worker("stand-in GPU", {})
