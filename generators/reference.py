"""Expected outputs of a reproducer, and their cross-check against ONNX Runtime.

Expected outputs come from `onnx.reference.ReferenceEvaluator`, or from the reproducer's own numpy
function where the evaluator cannot run the model (custom ops). They never come from an engine under
test: ONNX Runtime (CPU, every graph optimization off) only cross-checks them.

opset-13 DequantizeLinear: onnx >= 1.16 ships DequantizeLinear kernels for opsets 19 and later only,
so the evaluator refuses opset-13 models. We register our own DequantizeLinear kernel (`new_ops`)
with the opset-13 semantics (per-tensor or per-axis, integer input, float32 output) from
`onnx_util.dequantize`, only for models whose default opset is below 19. This was chosen over bumping
the model's opset (Split, Reduce*, Pad... change schema between 13 and 19, so a bumped copy is a
different model) and over writing numpy references by hand for every case (they would not be
independent of the builder that wrote the model).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from cases.common import ORT_12088
from core.engines import ENGINES
from core.numerics import error_steps
from generators.onnx_util import dequantize
from generators.reproducer import Reproducer

# The first opset whose DequantizeLinear onnx.reference implements itself.
_FIRST_REFERENCE_DQ_OPSET = 19


def expected_outputs(rep: Reproducer) -> Tuple[Dict[str, np.ndarray], str]:
    """The reference outputs by graph output name, and what computed them."""
    names = [o.name for o in rep.model.graph.output]
    if rep.reference is not None:
        produced = rep.reference(dict(rep.inputs))
        missing = [n for n in names if n not in produced]
        if missing:
            raise ValueError(f"the numpy reference does not compute graph outputs {missing}")
        return {n: np.asarray(produced[n]) for n in names}, "numpy"
    return _evaluate(rep.model, rep.inputs), "onnx.reference"


def _evaluate(model: Any, inputs: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    new_ops = [_opset13_dequantize_linear()] if _default_opset(model) < _FIRST_REFERENCE_DQ_OPSET else []
    results = ReferenceEvaluator(model, new_ops=new_ops).run(None, dict(inputs))
    return {o.name: np.asarray(r) for o, r in zip(model.graph.output, results)}


def _default_opset(model: Any) -> int:
    return next((op.version for op in model.opset_import if op.domain in ("", "ai.onnx")), 0)


def _opset13_dequantize_linear() -> type:
    """A DequantizeLinear kernel for onnx.reference with opset-13 semantics."""
    from onnx.reference.op_run import OpRun

    class DequantizeLinear(OpRun):
        op_domain = ""

        def _run(self, x, x_scale, x_zero_point=None, axis=None, **_newer_attributes):  # noqa: ANN001
            zero_point = np.zeros((), dtype=x.dtype) if x_zero_point is None else x_zero_point
            return (dequantize(x, x_scale, zero_point, 1 if axis is None else axis),)

    return DequantizeLinear


def cross_check(
    rep: Reproducer, expected: Mapping[str, np.ndarray], steps: Mapping[str, float]
) -> Dict[str, Dict[str, Any]]:
    """Run ONNX Runtime on CPU with optimizations off and compare with the expected outputs."""
    return {"onnxruntime": _onnxruntime_check(rep, expected, steps)}


# microsoft/onnxruntime#12088: without VNNI, ORT's u8s8 kernels can saturate; the session option
# rewrites such GEMMs to u8u8 (a graph transformation, so it needs optimizations on).
X64_QUANT_PRECISION = ORT_12088
ORT_DEFAULT_LEVEL = ENGINES["onnxruntime"].option("graph_optimization_level").default


def _onnxruntime_check(
    rep: Reproducer, expected: Mapping[str, np.ndarray], steps: Mapping[str, float]
) -> Dict[str, Any]:
    """ORT with optimizations off against the reference, on this CPU's INT8 level (recorded: it decides the
    integer kernels). A disagreement stays one; without VNNI, ORT's documented fix is tried and recorded too."""
    from core.isa import isa

    try:
        import onnxruntime as ort
    except ImportError:
        return _check("", "cannot run", None, "onnxruntime is not installed")
    level = isa()
    try:
        actual = _ort_outputs(ort, rep, "ORT_DISABLE_ALL", x64quantprecision=False)
    except Exception as e:  # ORT reports unsupported or custom ops as generic errors
        return dict(_check(ort.__version__, "cannot run", None, _first_line(e)), isa=level.label)
    status, worst, detail = _agreement(rep, expected, actual, steps)
    found = dict(_check(ort.__version__, status, worst, detail), isa=level.label, optimization="ORT_DISABLE_ALL")
    if status == "disagree" and not level.vnni:
        fixed = _agreement(rep, expected, _ort_outputs(ort, rep, ORT_DEFAULT_LEVEL, x64quantprecision=True), steps)
        found["x64quantprecision"] = dict(_check(ort.__version__, *fixed), optimization=ORT_DEFAULT_LEVEL,
                                          source=X64_QUANT_PRECISION)
        found["detail"] += (f"; on {level.level} (no VNNI) with session.x64quantprecision=1 and {ORT_DEFAULT_LEVEL}: "
                            f"{fixed[0]}, {fixed[2]}")
    return found


def _ort_outputs(ort: Any, rep: Reproducer, level: str, x64quantprecision: bool) -> Dict[str, np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.log_severity_level = 3
    # our reference check, not an engine's cell: one thread, none left spinning after the run (each session's pool
    # of intra-op threads cost more CPU than these small models' runs)
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    if x64quantprecision:
        options.add_session_config_entry("session.x64quantprecision", "1")
    session = ort.InferenceSession(rep.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(rep.inputs))))


def _agreement(rep: Reproducer, expected: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray],
               steps: Mapping[str, float]) -> Tuple[str, Optional[float], str]:
    errors = {n: error_steps(expected[n], actual[n], steps[n]) for n in expected}
    worst_name = max(errors, key=lambda n: errors[n])
    worst = errors[worst_name]
    status = "agree" if worst <= rep.tolerance_steps else "disagree"
    detail = f"worst output {worst_name}: {worst:.3g} steps (tolerance {rep.tolerance_steps})"
    return status, (worst if np.isfinite(worst) else None), detail


def _check(version: str, status: str, max_error_steps: Optional[float], detail: str) -> Dict[str, Any]:
    return {"version": version, "status": status, "max_error_steps": max_error_steps, "detail": detail}


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
