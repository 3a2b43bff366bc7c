"""OpenVINO's stages as the suite runs them: read_model (load), compile_model (build), one inference (run).

Python 3.9+, standard library, numpy and the openvino module passed in: no import from this repository, so a bug
bundle ships this file as it is and its repro.py runs the engine exactly as the adapter does. `obs` is the
adapter's Observation or any object with the attributes stage, error, outputs and timings.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np


def compile_stages(ov: Any, model: str, device: str, config: Mapping[str, str], obs: Any,
                   core: Optional[Any] = None) -> Optional[Any]:
    """Read and compile the model; returns the compiled model, or None with the stage's error. `core`: an ov.Core to
    use (the adapter keeps one for all its cells, as it keeps one plugin loaded), else a new one."""
    core = ov.Core() if core is None else core
    steps = (("load", lambda _: core.read_model(str(model))),
             ("build", lambda read: core.compile_model(read, device, dict(config))))
    value: Any = None
    for stage, step in steps:
        start = time.perf_counter()
        try:
            value = step(value)
        except Exception as exc:
            obs.error = message(exc)
            return None
        obs.timings[stage] = time.perf_counter() - start
        obs.stage = stage
    return value


def run_stage(compiled: Any, inputs: Dict[str, np.ndarray], onnx_outputs: Sequence[str], obs: Any) -> None:
    """One inference: the outputs, or the stage's error."""
    start = time.perf_counter()
    try:
        obs.outputs = infer(compiled, inputs, onnx_outputs)
    except Exception as exc:
        obs.error = message(exc)
        return
    obs.timings["run"] = time.perf_counter() - start
    obs.stage = "run"


def infer(compiled: Any, inputs: Dict[str, np.ndarray], onnx_outputs: Sequence[str]) -> Dict[str, np.ndarray]:
    """Run one inference; outputs keyed by their ONNX names."""
    request = compiled.create_infer_request()
    results = request.infer(inputs)
    outputs = {}
    for port in compiled.outputs:
        names = port.get_names()
        name = next((n for n in onnx_outputs if n in names), None) or port.get_any_name()
        outputs[name] = np.array(results[port], copy=True)
    return outputs


def message(exc: BaseException) -> str:
    """An exception as the cell's error text."""
    return str(exc).strip() or type(exc).__name__
