"""--localize: the first node whose output drifts past the threshold, where an engine lets us mark intermediates.

Polygraphy's `polygraphy run --onnxrt --mark all` and onnxruntime's QDQ debugger
(`qdq_loss_debug.modify_model_output_intermediate_tensors`) both make intermediate tensors graph outputs and compare
them. Here the marked tensors are the model's quantized activations (every QuantizeLinear output that is not a
weight): an engine fuses Q into the kernel before it, so its INT8 output stays the same tensor when it is marked,
and each one is compared in integer units against the simulated reference with the network measure (SQNR). The first
in graph order that falls below the line is named with the node that computed it. Marking can still change what an
engine fuses: each result says whether the marked model's own outputs fail as the cell's did.

ONNX Runtime and OpenVINO run here. The TensorRT family is not localized by this suite: TensorRT-RTX cannot run on a
machine without one of its GPUs, and the TensorRT worker does not mark outputs; each says so, with the Polygraphy
command that does it on a GPU.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from core.cell import Cell
from core.engines import CPU_ENGINES
from core.engines import ENGINES as SPECS
from core.numerics import output_stats
from generators.bundle import Bundle

ENGINES = CPU_ENGINES
# A bug bundle's data_loader.py feeds its inputs.npz (matrix/templates/data_loader.py.j2).
POLYGRAPHY = ("polygraphy run model.onnx --trt --onnxrt --trt-outputs mark all --onnx-outputs mark all "
              "--data-loader-script data_loader.py --save-outputs outputs.json, then each marked tensor's SQNR")


@dataclass(frozen=True)
class Drift:
    """One marked tensor: the node that computed it, and how far the engine is from the reference there."""

    tensor: str  # the QuantizeLinear output that was marked
    node: str  # the node whose output that Q quantizes
    op: str
    sqnr_db: Optional[float]  # None: equal to the reference
    cosine: Optional[float]


@dataclass(frozen=True)
class Localized:
    """What --localize found for one cell: the first drifting node, or why nothing could be said."""

    engine: str
    version: str
    setting: str
    status: str  # "found", "none drift", "not localized"
    first: Optional[Drift] = None
    marked: int = 0
    reproduces: Optional[bool] = None  # the marked model's outputs fail as the cell's did (None: not compared)
    reason: str = ""
    drifts: List[Drift] = field(default_factory=list)  # every marked tensor below the line, in graph order

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def localize_cells(bundle: Bundle, cells: Sequence[Cell], min_sqnr_db: float) -> List[Dict[str, Any]]:
    """One record per cell of this bundle: localized where the engine runs here, else why not."""
    return [localize_cell(bundle, c, min_sqnr_db).to_dict() for c in cells]


def localize_cell(bundle: Bundle, cell: Cell, min_sqnr_db: float) -> Localized:
    """Mark every quantized activation, run the reference and the cell's engine, name the first tensor that drifts."""
    base = {"engine": cell.engine, "version": cell.engine_version, "setting": cell.setting}
    if cell.engine not in ENGINES:
        why = ("TensorRT-RTX cannot run on this machine (it builds ahead of time; the plan needs one of its GPUs)"
               if cell.engine == "tensorrt-rtx" else "this suite's TensorRT worker does not mark outputs")
        return Localized(**base, status="not localized", reason=f"{why}; on a GPU: {POLYGRAPHY}")
    if cell.last_stage not in ("run", "compare"):
        return Localized(**base, status="not localized", reason=f"the engine did not run the model ({cell.status})")
    with tempfile.TemporaryDirectory(prefix="qdq-localize-") as tmp:
        marked, model = mark_activations(bundle.model_path, Path(tmp) / "marked.onnx")
        if not marked:
            return Localized(**base, status="not localized", reason="the model has no quantized activations to mark")
        inputs = bundle.inputs()
        try:
            want = _reference(model, inputs)
            got = _run(cell, model, inputs, Path(tmp))
        except Exception as e:  # an engine that refuses the marked model: say so, never a guess
            return Localized(**base, status="not localized", marked=len(marked),
                             reason=f"the marked model does not run: {_first(e)}")
    drifts = [d for d in _drifts(marked, want, got) if d.sqnr_db is not None and d.sqnr_db < min_sqnr_db]
    reproduces = _reproduces(bundle, got) if cell.status == "fail" else None
    if not drifts:
        return Localized(**base, status="none drift", marked=len(marked), reproduces=reproduces,
                         reason=f"no marked activation is below {min_sqnr_db:g} dB")
    return Localized(**base, status="found", first=drifts[0], marked=len(marked), reproduces=reproduces,
                     drifts=drifts)


def mark_activations(model_path: Path, out: Path) -> Tuple[List[Tuple[str, str, str]], Path]:
    """Write the model with every activation QuantizeLinear output as a graph output; [(tensor, node, op)]."""
    import onnx

    model = onnx.load(str(model_path))
    graph = model.graph
    stored = {i.name for i in graph.initializer} | {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    producer = {o: n for n in graph.node for o in n.output}
    outputs = {o.name for o in graph.output}
    types = _stored_types(graph)
    marked = []
    for n in graph.node:
        if n.op_type != "QuantizeLinear" or not n.input or n.input[0] in stored or n.output[0] in outputs:
            continue
        source = producer.get(n.input[0])
        marked.append((n.output[0], source.name if source is not None else n.input[0],
                       source.op_type if source is not None else "graph input"))
        zero = n.input[2] if len(n.input) > 2 else ""
        elem = types.get(zero, onnx.TensorProto.UINT8)  # ONNX: no zero point means uint8
        graph.output.append(onnx.helper.make_tensor_value_info(n.output[0], elem, None))
    onnx.save(model, str(out))
    return marked, out


def _stored_types(graph: Any) -> Dict[str, int]:
    """The element type of every initializer and Constant output, by name (a QuantizeLinear output's type is its zero
    point's); the first of a name wins, an initializer before a Constant."""
    from onnx import TensorProto

    types: Dict[str, int] = {}
    for t in graph.initializer:
        types.setdefault(t.name, t.data_type)
    for n in graph.node:
        if n.op_type == "Constant":
            for o in n.output:
                types.setdefault(o, next((a.t.data_type for a in n.attribute if a.name == "value"), TensorProto.UINT8))
    return types


def _reference(model: Path, inputs: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The simulated reference's values of every output of the marked model: check.bundle's own reference run."""
    from check.bundle import reference_outputs

    outputs, _, failed = reference_outputs(model, inputs)
    if failed:
        raise RuntimeError(failed)
    return outputs


class _Seen:
    """The stages' observation object: stage, error, outputs, timings, options."""

    def __init__(self) -> None:
        self.stage, self.error, self.outputs, self.timings, self.options = "", "", {}, {}, {}


def _run(cell: Cell, model: Path, inputs: Mapping[str, np.ndarray], tmp: Path) -> Dict[str, np.ndarray]:
    """The cell's engine, with the cell's settings, through the adapters' own stages."""
    seen = _Seen()
    if cell.engine == "onnxruntime":
        import onnxruntime as ort

        from engines.onnxruntime import stages

        spec = SPECS["onnxruntime"]
        stages.run_stages(ort, str(model), dict(inputs), str(tmp), list(spec.settings["providers"]),
                          str(cell.options.get("graph_optimization_level") or
                              spec.value(cell.variant, "graph_optimization_level")),
                          str(cell.variant.get("x64quantprecision", cell.options.get("x64quantprecision") or
                                               spec.value({}, "x64quantprecision"))), seen)
    else:
        import onnx
        import openvino as ov

        from engines.openvino import stages

        names = [o.name for o in onnx.load(str(model), load_external_data=False).graph.output]
        settings = SPECS["openvino"].settings
        config = dict(cell.options.get("config") or {"INFERENCE_PRECISION_HINT": settings["inference_precision_hint"]})
        compiled = stages.compile_stages(ov, str(model), settings["device"], config, seen)
        if compiled is not None:
            stages.run_stage(compiled, dict(inputs), names, seen)
    if seen.error or seen.stage != "run":
        raise RuntimeError(seen.error or "no outputs")
    return dict(seen.outputs)


def _drifts(marked: Sequence[Tuple[str, str, str]], want: Mapping[str, np.ndarray],
            got: Mapping[str, np.ndarray]) -> List[Drift]:
    """Each marked tensor's SQNR and cosine, in integer units (a per-tensor scale divides out of both)."""
    found = []
    for tensor, node, op in marked:
        if tensor not in want or tensor not in got or np.shape(got[tensor]) != np.shape(want[tensor]):
            continue
        stats = output_stats(want[tensor].astype(np.float64), np.asarray(got[tensor]).astype(np.float64))
        found.append(Drift(tensor, node, op, stats["sqnr_db"], stats["cosine"]))
    return found


def _reproduces(bundle: Bundle, got: Mapping[str, np.ndarray]) -> bool:
    """Whether the marked run's model outputs fail as the cell's did, by the cell's own rule (engines.cells.compare:
    the bundle's measure, its one-step floor; the marked tensors beside them are not judged)."""
    from engines.cells import compare

    return bool(compare(bundle, {n: a for n, a in got.items() if n in bundle.meta["outputs"]})[1])


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__
