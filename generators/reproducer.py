"""What a case's builder returns: one minimal model, its inputs, and how engines should treat it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class Reproducer:
    """One built reproducer, before it is written as a bundle."""

    model: Any  # onnx.ModelProto
    inputs: Dict[str, np.ndarray]
    target_nodes: Tuple[str, ...]  # ONNX node names whose precision matters in this variant
    # Quantization step (the scale of the QuantizeLinear that feeds it) per graph output, so that
    # errors are counted in steps; None for a float output with no step of its own.
    output_steps: Dict[str, Optional[float]] = field(default_factory=dict)
    tolerance_steps: float = 1.0
    # How TensorRT should build it: int8, fp16, strongly_typed, parser_flags (names of
    # trt.OnnxParserFlag members), plugins (plugin names the model needs).
    trt: Mapping[str, Any] = field(default_factory=dict)
    # Non-empty: the model is invalid on purpose, and this says why (the checker may refuse it).
    intentionally_invalid: str = ""
    # Where onnx.reference cannot compute the expected outputs (custom ops, opset-13
    # DequantizeLinear on onnx >= 1.16), a numpy function of the inputs that does.
    reference: Optional[Callable[[Dict[str, np.ndarray]], Dict[str, np.ndarray]]] = None
    # Why `reference` is given where the graph holds no custom op, so that onnx.reference could read it (what it
    # mishandles); tests/cases/test_catalogue.py holds every reproducer to it.
    reference_why: str = ""
    notes: str = ""
