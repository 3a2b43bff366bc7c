"""Shared by the generator tests: run a reproducer on ONNX Runtime, read a model's initializers."""

from __future__ import annotations

from typing import Dict

import numpy as np
import onnx
from onnx import numpy_helper

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
