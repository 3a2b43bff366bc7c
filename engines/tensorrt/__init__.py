"""TensorRT and TensorRT for RTX: each bundle runs in worker.py under an interpreter that has the module.

Neither module is ever imported in this process. The package's host side, one job a module: `adapter` (TensorRT's
adapter: the request, the worker's answer read back into an observation), `rtx` (TensorRT for RTX's, the same stages
with other data), `server` (the serving worker processes), `probes` (the worker's probe answers, asked once per
process) and `listing` (a cell's packed layer listing and verbose build log). The worker's own files (worker.py and the
stages it loads as the package `qdq_trt`) run inside the engine's environment: Python 3.9+, numpy and the engine.
"""

from __future__ import annotations

from engines.tensorrt import gpu, lifeline
from engines.tensorrt.adapter import WORKER, Adapter, target_ops
from engines.tensorrt.listing import pack_listing, unpack_listing, verbose_record
from engines.tensorrt.probes import adopt_probe_answers, probe_answers
from engines.tensorrt.rtx import RtxAdapter

__all__ = ["WORKER", "Adapter", "RtxAdapter", "adopt_probe_answers", "gpu", "lifeline", "pack_listing",
           "probe_answers", "target_ops", "unpack_listing", "verbose_record"]
