"""Errors counted in quantization steps: one definition for the cross-check and for the cells (numpy only)."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np


def comparison_step(expected: np.ndarray, step: Optional[float]) -> Tuple[float, str]:
    """The unit errors are counted in for one output, and where it comes from."""
    if expected.dtype.kind in "iub":
        return 1.0, "integer"
    if step:
        return float(step), "quantization"
    peak = float(np.max(np.abs(expected))) if expected.size else 0.0
    # An all-zero output has no scale of its own: count in steps of 1/127 as if it peaked at 1.
    return (peak / 127.0 if peak > 0 else 1.0 / 127.0), "max/127"


def error_steps(expected: np.ndarray, actual: np.ndarray, step: float) -> float:
    """The largest difference between two outputs, in steps; inf for a shape or NaN mismatch."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        return float("inf")
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    both_nan = np.isnan(e) & np.isnan(a)
    diff = np.where(both_nan, 0.0, np.abs(e - a))
    if diff.size == 0:
        return 0.0
    worst = float(np.max(diff))
    return float("inf") if np.isnan(worst) else worst / step
