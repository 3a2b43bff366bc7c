"""Shared by the generator tests: run a reproducer on ONNX Runtime, read a model's initializers."""

from __future__ import annotations

import importlib
from typing import Dict, List, Tuple

import numpy as np
import onnx
from onnx import numpy_helper

from cases.base import Case
from generators.reproducer import Reproducer


def run_onnxruntime(rep: Reproducer) -> Dict[str, np.ndarray]:
    """Every output of the reproducer on ONNX Runtime CPU with graph optimizations off."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(rep.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, rep.inputs)))


def initializers(model: onnx.ModelProto) -> Dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def cases_from(modules: Tuple[str, ...]) -> Tuple[Dict[str, Case], List[Tuple[Case, dict]]]:
    """The cases of some catalogue modules by id, and every (case, params) variant they sweep."""
    cases = {m.split(".")[1]: importlib.import_module(m).CASE for m in modules}
    return cases, [(c, p) for c in cases.values() for p in c.variants()]


def float_values(q: np.ndarray) -> np.ndarray:
    """A quantized array's values as float64 (int4, uint4, int8, float8e4m3fn, float4e2m1 or float8e8m0)."""
    return np.asarray(q).astype(np.float32).astype(np.float64)
