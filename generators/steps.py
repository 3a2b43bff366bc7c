"""Output errors, one definition for the cross-check, the cells and the reproducers (numpy only): quantization steps
for a single-op reproducer, signal-to-noise and cosine similarity for a whole network."""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Tuple

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


# ---- the network measure: whole models are judged by signal-to-noise, not by steps ----
# A single Q/DQ reproducer is judged in quantization steps at its output. A deep network is not: an integer kernel
# rounds at every layer, so two correct engines drift apart by more than a step (NVIDIA/TensorRT#4708). Whole models
# are compared as onnxruntime's QDQ debugger compares activations (onnxruntime/quantization/qdq_loss_debug.py:
# compute_signal_to_quantization_noice_ratio, 20*log10(|x| / |x - y|) in dB) and as Polygraphy reports an output
# (polygraphy/comparator/compare.py: the max absolute difference); neither sets a line, so the default is ours,
# and docs/numerics.md says why: 20 dB (the noise carries 1% of the signal's power) sits under the 23-46 dB that
# ONNX Runtime's integer kernels reach on real 60-layer models against the simulated reference (issue 25), and
# above the < 10 dB of an output that is really wrong (a mis-scaled layer, a wrong kernel).
DEFAULT_MIN_SQNR_DB = 20.0
DEFAULT_MIN_COSINE = 0.99  # the angle between the two outputs; cos 0.99 is about 17 dB of uncorrelated noise


def output_stats(expected: np.ndarray, actual: np.ndarray) -> Dict[str, Any]:
    """Cosine similarity, SQNR in dB (None where the outputs are equal), max abs error and the reference's peak."""
    e = np.asarray(expected).astype(np.float64).reshape(-1)
    a = np.asarray(actual).astype(np.float64).reshape(-1)
    if e.shape != a.shape:
        raise ValueError(f"{a.size} values, the reference has {e.size}")
    bad = int(np.count_nonzero(~np.isfinite(a) & np.isfinite(e)))
    both = np.isfinite(a) & np.isfinite(e)
    e, a = e[both], a[both]
    diff = float(np.linalg.norm(e - a)) if e.size else 0.0
    norm_e, norm_a = (float(np.linalg.norm(e)), float(np.linalg.norm(a))) if e.size else (0.0, 0.0)
    tiny = float(np.finfo(np.float32).eps)
    stats: Dict[str, Any] = {
        "sqnr_db": None if diff == 0.0 else round(20.0 * math.log10(max(norm_e, tiny) / diff), 3),
        "cosine": round(float(np.dot(e, a)) / (norm_e * norm_a), 6) if norm_e and norm_a else
        (1.0 if norm_e == norm_a else 0.0),
        "max_abs": float(np.max(np.abs(e - a))) if e.size else 0.0,
        "peak": float(np.max(np.abs(e))) if e.size else 0.0,
    }
    if bad:
        stats["non_finite"] = bad  # NaN or inf where the reference is finite: never a pass
    return stats


def below(stats: Dict[str, Any], min_sqnr_db: float, min_cosine: float) -> str:
    """Why one output's statistics fail the network measure, "" when they pass."""
    if stats.get("non_finite"):
        return f"{stats['non_finite']} values NaN or inf where the reference is finite"
    sqnr, cosine = stats.get("sqnr_db"), stats.get("cosine")
    if sqnr is not None and sqnr < min_sqnr_db:
        return f"SQNR {sqnr:.1f} dB < {min_sqnr_db:g} dB (cosine {cosine:.4f})"
    if cosine is not None and cosine < min_cosine:
        return f"cosine {cosine:.4f} < {min_cosine:g} (SQNR {sqnr:.1f} dB)" if sqnr is not None else \
            f"cosine {cosine:.4f} < {min_cosine:g}"
    return ""
