"""The one judge of an engine's outputs against a bundle's reference (numpy only): the suite's cells
(engines/cells.py), a bug bundle's repro.py (which carries this file as suite/numerics.py, beside the engine in its
own environment, Python 3.9+) and the re-derivation of stored cells decide with it, so they cannot disagree.

A single-op reproducer is judged in quantization steps at its output; a whole network by signal-to-noise and cosine
against the reference, with two floors below that line: an output within one step of its own quantizer, and an
output of a numerically fragile quantized model that is no further from the reference than the quantization itself
is from the float model (docs/numerics.md says why, with the numbers). Nothing here imports the repository.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from .thresholds import DEFAULT_MIN_COSINE, DEFAULT_MIN_SQNR_DB  # relative: in a bug bundle, suite/thresholds.py

# The precisions that count as quantized in a node's evidence (a cell's `fused`); core.cell names them from here.
QUANTIZED_PRECISIONS = ("int8", "int4", "fp8", "fp4")

# ---- the network measure: whole models are judged by signal-to-noise, not by steps ----
# A single Q/DQ reproducer is judged in quantization steps at its output. A deep network is not: an integer kernel
# rounds at every layer, so two correct engines drift apart by more than a step (NVIDIA/TensorRT#4708). Whole models
# are compared as onnxruntime's QDQ debugger compares activations (onnxruntime/quantization/qdq_loss_debug.py:
# compute_signal_to_quantization_noice_ratio, 20*log10(|x| / |x - y|) in dB) and as Polygraphy reports an output
# (polygraphy/comparator/compare.py: the max absolute difference); neither sets a line, so the default is ours,
# and docs/numerics.md says why: 20 dB (the noise carries 1% of the signal's power) sits under the 23-46 dB that
# ONNX Runtime's integer kernels reach on real 60-layer models against the simulated reference, and
# above the < 10 dB of an output that is really wrong (a mis-scaled layer, a wrong kernel).
# The two numbers, DEFAULT_MIN_SQNR_DB and DEFAULT_MIN_COSINE, are core/thresholds.py's (no numpy there, so that a
# command's --help is printed without it).
# The network measure's first floor: a quantized output within one step of its own quantizer everywhere passes.
WITHIN_OUTPUT_STEPS = 1.0
# The fragile floor's allowance against the float model: two independent errors of one size add 3 dB (a factor of
# sqrt(2) in distance), so an engine whose own rounding is as large as the quantization's stays within it.
FRAGILE_MARGIN_DB = 3.0


def comparison_step(expected: np.ndarray, step: Optional[float]) -> Tuple[float, str]:
    """The unit errors are counted in for one output, and where it comes from."""
    if expected.dtype.kind in "iub":
        return 1.0, "integer"
    if step:
        return float(step), "quantization"
    peak = float(np.max(np.abs(expected))) if expected.size else 0.0
    # An all-zero output has no scale of its own: count in steps of 1/127 as if it peaked at 1.
    return (peak / 127.0 if peak > 0 else 1.0 / 127.0), "max/127"


# Outputs of a type numpy lacks (float8, int4, int2, float4; ml_dtypes' names): a bundle keeps an integer type's values
# (int8, uint8) and a float type's bit codes (uint8), and says so in case.json (`outputs.<name>.codes`). An engine hands
# them back as those, as ml_dtypes arrays, as decoded floats, or packed as ONNX stores them (two 4-bit or four 2-bit
# values to a byte, the first in the low bits: OpenVINO's int4 output); each is read back to the bundle's form.
PACKED_BITS = {"int4": 4, "uint4": 4, "float4_e2m1fn": 4, "int2": 2, "uint2": 2}


def as_codes(actual: Any, codes: str, shape: Tuple[int, ...]) -> np.ndarray:
    """An engine's output of the type `codes` (an ml_dtypes name) as the bundle keeps its reference."""
    a = np.asarray(actual)
    integer, signed = codes.startswith(("int", "uint")), codes.startswith("int")
    kept = np.int8 if signed else np.uint8
    if a.dtype.type.__module__.partition(".")[0] == "ml_dtypes":  # the type itself
        return a.astype(kept) if integer else a.view(np.uint8)
    if a.dtype.kind == "f":  # decoded values
        return a.astype(kept) if integer else _encode(a, codes)
    if a.dtype.kind not in "iu" or a.dtype.itemsize != 1:
        return a.astype(kept) if integer else a
    bits, n = PACKED_BITS.get(codes, 8), int(np.prod(shape, dtype=np.int64))
    if bits < 8 and a.size != n and a.size == -(-n * bits // 8):  # packed
        per = 8 // bits
        raw = a.reshape(-1).view(np.uint8).astype(np.int16)
        values = ((raw[:, None] >> (np.arange(per) * bits)) & ((1 << bits) - 1)).reshape(-1)[:n]
        if signed:
            values = np.where(values >= 1 << (bits - 1), values - (1 << bits), values)
        return values.astype(kept).reshape(shape)
    return a.astype(kept) if integer else a.view(np.uint8)


# The small float types by (exponent bits, mantissa bits, exponent bias, NaN and infinity rule): "fn" has no infinity
# and one NaN mantissa, "fnuz" no infinity and no negative zero (0x80 is its NaN), "ieee" infinities and NaNs.
SMALL_FLOATS = {"float8_e4m3fn": (4, 3, 7, "fn"), "float8_e4m3fnuz": (4, 3, 8, "fnuz"),
                "float8_e5m2": (5, 2, 15, "ieee"), "float8_e5m2fnuz": (5, 2, 16, "fnuz"),
                "float4_e2m1fn": (2, 1, 1, "none")}


def small_float_values(name: str) -> np.ndarray:
    """The value of every code of a small float type (NaN where the code is one), by code."""
    exp_bits, man_bits, bias, special = SMALL_FLOATS[name]
    codes = np.arange(1 << (1 + exp_bits + man_bits))
    sign = np.where(codes >> (exp_bits + man_bits) & 1, -1.0, 1.0)
    exponent, mantissa = (codes >> man_bits) & ((1 << exp_bits) - 1), codes & ((1 << man_bits) - 1)
    normal = (1 + mantissa / (1 << man_bits)) * np.exp2(exponent.astype(np.float64) - bias)
    values = sign * np.where(exponent == 0, mantissa / (1 << man_bits) * 2.0 ** (1 - bias), normal)
    top = exponent == (1 << exp_bits) - 1
    if special == "fn":
        values[top & (mantissa == (1 << man_bits) - 1)] = np.nan
    elif special == "ieee":
        values[top] = np.where(mantissa[top] == 0, sign[top] * np.inf, np.nan)
    elif special == "fnuz":
        values[1 << (exp_bits + man_bits)] = np.nan
    return values


def _encode(values: np.ndarray, name: str) -> np.ndarray:
    """Decoded small-float values as their codes (the nearest code where a value is none of them; NaN as the type's
    NaN, a zero by its sign)."""
    if name not in SMALL_FLOATS:
        return values
    table = small_float_values(name)
    finite = np.flatnonzero(~np.isnan(table))
    order = finite[np.argsort(table[finite], kind="stable")]
    v = np.asarray(values, dtype=np.float64)
    at = np.clip(np.searchsorted(table[order], v), 1, len(order) - 1)
    with np.errstate(invalid="ignore"):  # inf - inf: an infinity is matched exactly below
        nearer = np.where(np.abs(table[order][at - 1] - v) <= np.abs(table[order][at] - v), at - 1, at)
    codes = order[nearer]
    for code in np.flatnonzero(np.isinf(table)):
        codes = np.where(v == table[code], code, codes)
    zeros = np.flatnonzero(table == 0)  # +0, then -0 where the type has one
    codes = np.where(v == 0, np.where(np.signbit(v), zeros[-1], zeros[0]), codes)
    nans = np.flatnonzero(np.isnan(table))
    if nans.size:
        codes = np.where(np.isnan(v), nans[0], codes)
    return codes.astype(np.uint8).reshape(np.shape(values))


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


def output_stats(expected: np.ndarray, actual: np.ndarray) -> Dict[str, Any]:
    """Cosine similarity, SQNR in dB (None where the outputs are equal), max abs error and the reference's peak."""
    e = np.asarray(expected).astype(np.float64).reshape(-1)
    a = np.asarray(actual).astype(np.float64).reshape(-1)
    if e.shape != a.shape:
        raise ValueError(f"{a.size} values, the reference has {e.size}")
    bad = int(np.count_nonzero(~np.isfinite(a) & np.isfinite(e)))
    lost = int(np.count_nonzero(~np.isfinite(e) & np.isfinite(a)))
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
    if lost:  # the reference (or the float model a loss is measured against) NaN or inf where the other is finite:
        stats["expected_non_finite"] = lost  # the statistics above leave those values out, so never "exact"
    return stats


def below(stats: Mapping[str, Any], min_sqnr_db: float, min_cosine: float) -> str:
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


def measure(meta: Mapping[str, Any]) -> Dict[str, Any]:
    """How a bundle's outputs are judged, from its case.json: {"measure": "steps", "tolerance_steps"} (the catalogue's
    single-op reproducers), or the network measure a user bundle asks for in `judge`, with its floors and, where the
    bundle has float outputs, their digest (the fragile floor reads them, so a cell judged with others is judged
    again)."""
    judge = dict(meta.get("judge") or {})
    if judge.get("measure") != "network":
        return {"measure": "steps", "tolerance_steps": float(meta.get("tolerance_steps", 1.0))}
    how: Dict[str, Any] = {
        "measure": "network", "min_sqnr_db": float(judge.get("min_sqnr_db", DEFAULT_MIN_SQNR_DB)),
        "min_cosine": float(judge.get("min_cosine", DEFAULT_MIN_COSINE)), "within_output_steps": WITHIN_OUTPUT_STEPS,
        "fragile_margin_db": FRAGILE_MARGIN_DB}
    floats = meta.get("float_reference") or {}
    if floats.get("digest"):
        how["float_digest"] = str(floats["digest"])
    return how


def not_compared(meta: Mapping[str, Any]) -> str:
    """"numerics not compared: <why>" for a bundle whose reference could not run (case.json reference_error)."""
    why = str(meta.get("reference_error") or "")
    return f"numerics not compared: {why}" if why else ""


def output_step(meta: Mapping[str, Any], name: str) -> Optional[float]:
    """The quantization step case.json gives an output (the scale of the DequantizeLinear that writes it), or None."""
    step = ((meta.get("outputs") or {}).get(name) or {}).get("step")
    return None if step is None else float(step)


def within_one_output_step(meta: Mapping[str, Any], name: str, err: float) -> bool:
    """An output that a QuantizeLinear -> DequantizeLinear ends, every element within one step of that quantizer: as
    close as integer execution can come to the simulated reference (one rounding either way), however few steps the
    output's values span (a near-uniform Softmax quantized to 1/127 has an SQNR near 20 dB at one step)."""
    said = (meta.get("outputs") or {}).get(name, {})
    return said.get("step_kind") == "quantization" and err <= WITHIN_OUTPUT_STEPS


def fragile(stats: Mapping[str, Any], how: Mapping[str, Any]) -> bool:
    """An output below the network line that the quantized model itself explains: its reference is below the line
    against the float model ("loss"), the engine is no further from the reference than that (SQNR against the
    reference at least the loss's, and above 0 dB: it carries the reference's signal), and no further from the float
    model than the reference is, within the margin.

    Never with NaN or inf. An output that is really wrong (zeros, scaled by two, its sign flipped, noise of its own
    size) is 0 dB or less from the reference, and fails however lossy the quantization."""
    loss, against_float = stats.get("loss"), stats.get("float")
    if not isinstance(loss, Mapping) or not isinstance(against_float, Mapping):
        return False  # no float outputs: nothing says the quantization is to blame
    if any(s.get(k) for s in (stats, loss, against_float) for k in ("non_finite", "expected_non_finite")):
        return False
    if loss.get("sqnr_db") is None or not below(loss, float(how["min_sqnr_db"]), float(how["min_cosine"])):
        return False  # the quantized model keeps to the line: its engine is held to it
    lost = float(loss["sqnr_db"])
    fidelity, to_float = _db(stats.get("sqnr_db")), _db(against_float.get("sqnr_db"))
    return fidelity > 0.0 and fidelity >= lost and \
        to_float >= lost - float(how.get("fragile_margin_db", FRAGILE_MARGIN_DB))


def _db(sqnr: Optional[float]) -> float:
    """An SQNR as a number: equal outputs (None) have no noise at all."""
    return math.inf if sqnr is None else float(sqnr)


@dataclass(frozen=True)
class Comparison:
    """What the judge found: the worst error in steps (None where nothing was compared), why the outputs fail (empty:
    they pass) and the cell's `output_stats` (the measure and, per output, its statistics)."""

    worst_steps: Optional[float]
    problems: Tuple[str, ...] = ()
    stats: Dict[str, Any] = field(default_factory=dict)

    @property
    def mismatch(self) -> str:
        return "; ".join(self.problems)

    @property
    def fragile(self) -> List[str]:
        """The outputs that pass only by the fragile floor."""
        return [n for n, o in (self.stats.get("outputs") or {}).items() if o.get("fragile")]


def compare(meta: Mapping[str, Any], outputs: Mapping[str, Any], expected: Mapping[str, np.ndarray],
            floats: Optional[Mapping[str, np.ndarray]] = None) -> Comparison:
    """An engine's outputs against the bundle's reference outputs (`expected`), judged by the bundle's measure
    (case.json `meta`): in steps, or per output by SQNR and cosine with the one-step floor and, with the float
    model's outputs (`floats`), the fragile floor. Statistics are kept for every output of the reference's shape."""
    if not_compared(meta):  # no reference outputs: nothing to fail against
        return Comparison(None)
    how = measure(meta)
    floats = floats or {}
    worst: Optional[float] = None
    problems: List[str] = []
    per: Dict[str, Any] = {}
    for name, want in expected.items():
        if name not in outputs:
            problems.append(f"output {name!r} is missing (got {sorted(outputs)})")
            continue
        codes = ((meta.get("outputs") or {}).get(name) or {}).get("codes")
        got = as_codes(outputs[name], codes, want.shape) if codes else np.asarray(outputs[name])
        if got.shape != want.shape:
            problems.append(f"output {name!r}: shape {list(got.shape)} differs from the reference's "
                            f"{list(want.shape)}")
            continue
        err = error_steps(want, got, comparison_step(want, output_step(meta, name))[0])
        worst = err if worst is None else max(worst, err)
        entry = output_stats(want, got)
        twin = floats.get(name)
        if twin is not None and np.shape(twin) == want.shape:
            entry["float"] = output_stats(twin, got)  # the engine against the float model
            entry["loss"] = output_stats(twin, want)  # the quantization loss: the reference against the float model
        per[name] = entry
        if how["measure"] == "network":
            why = below(entry, how["min_sqnr_db"], how["min_cosine"])
            if why and not within_one_output_step(meta, name, err):
                if fragile(entry, how):
                    entry["fragile"] = True
                else:
                    problems.append(f"output {name!r} differs from the reference: {why}")
        elif err > how["tolerance_steps"]:
            problems.append(f"output {name!r} differs from the reference by {err:.3g} steps "
                            f"(tolerance {how['tolerance_steps']:g})")
    return Comparison(worst, tuple(problems), dict(how, outputs=per) if per else {})


def float_source(meta: Mapping[str, Any]) -> str:
    """Where a bundle's float outputs come from, in words: the float twin derived from the quantized model (check's
    own, case.json float_reference.derived), or the float model the user gave."""
    return "the float twin" if (meta.get("float_reference") or {}).get("derived") else "the float model"


def fragile_words(stats: Mapping[str, Any], floats: str = "the float model") -> str:
    """The sentence a cell that passes by the fragile floor says ("" for one that does not): which outputs, how far
    from the reference, and the quantization loss that explains it (`floats`: float_source)."""
    outputs = stats.get("outputs") or {}
    parts = [f"output {name!r} is {_words(o)} from the reference, within the quantization loss (the reference is "
             f"{_words(o['loss'])} from {floats})" for name, o in outputs.items() if o.get("fragile")]
    if not parts:
        return ""
    return "the quantized model is numerically fragile: " + "; ".join(parts)


def _words(o: Mapping[str, Any]) -> str:
    return f"SQNR {o['sqnr_db']:.1f} dB, cosine {o['cosine']:.4f}"


def fused(precision: Mapping[str, Mapping[str, Any]], targets: List[str]) -> Optional[bool]:
    """True when every target node ran quantized (QUANTIZED_PRECISIONS: INT8, INT4, FP8, FP4), False when one ran in
    float, None when unknown."""
    found = [(precision.get(t) or {}).get("precision", "unknown") for t in targets]
    if not found:
        return None
    if "float" in found:
        return False
    if all(p in QUANTIZED_PRECISIONS for p in found):
        return True
    return None
