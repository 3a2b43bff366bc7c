"""ONNX Runtime's stages as the suite runs them: session options, the session (load and build in one), one run.

Python 3.9+, standard library and the onnxruntime module passed in: no import from this repository, so a bug
bundle ships this file as it is and its repro.py runs the engine exactly as the adapter does. `obs` is the
adapter's Observation or any object with the attributes stage, error, outputs, timings and options.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional, Sequence

CPU = "CPUExecutionProvider"
# microsoft/onnxruntime#12088: on x86-64 without VNNI, u8s8 GEMMs whose constant weights leave [-64, 63]
# are rewritten to u8u8 so that vpmaddubsw cannot saturate. A graph transformation: it needs optimizations on.
X64_QUANT_PRECISION = "session.x64quantprecision"
# Providers that compile subgraphs; ORT cannot serialize their optimized graph, so none is saved.
COMPILING = frozenset({"TensorrtExecutionProvider", "OpenVINOExecutionProvider", "DmlExecutionProvider"})


def session_options(ort: Any, tmp: str, providers: Sequence[str], graph_optimization_level: str,
                    x64quantprecision: str) -> Any:
    """Optimization level, the optimized graph and the profile saved under tmp (evidence), warnings and errors."""
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, graph_optimization_level)
    if not COMPILING & set(providers):
        so.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tmp, "profile")
    so.log_severity_level = 2  # warnings and errors
    if str(x64quantprecision) == "1":
        so.add_session_config_entry(X64_QUANT_PRECISION, "1")
    return so


def run_stages(ort: Any, model: str, inputs: Dict[str, Any], tmp: str, providers: Sequence[str],
               graph_optimization_level: str, x64quantprecision: str, obs: Any) -> Optional[Any]:
    """Create the session (ORT has no separate build: "build" is reached with it), then run once.

    Returns the session (its profile is still open), or None when it could not be created; each stage's
    exception is the observation's error."""
    obs.options.update(providers_requested=list(providers), profiling=True,
                       build="none: the session is built at load")
    start = time.perf_counter()
    try:
        session = ort.InferenceSession(str(model), session_options(ort, tmp, providers, graph_optimization_level,
                                                                   x64quantprecision), providers=list(providers))
    except Exception as exc:
        obs.error = message(exc)
        return None
    obs.timings["load"] = time.perf_counter() - start
    obs.stage = "build"
    obs.options["providers"] = session.get_providers()
    start = time.perf_counter()
    try:
        results = session.run(None, inputs)
        obs.outputs = {o.name: r for o, r in zip(session.get_outputs(), results)}
        obs.stage = "run"
        obs.timings["run"] = time.perf_counter() - start
    except Exception as exc:
        obs.error = message(exc)
    return session


def message(exc: BaseException) -> str:
    """An exception as the cell's error text."""
    return str(exc) or type(exc).__name__
