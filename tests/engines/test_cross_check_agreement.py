"""The cross-check columns say what the engines say: each cell agrees with a direct query of that engine.

For the grouped-conv sweep and DynamicQuantizeLinear, every bundle is run twice: through the suite
(adapter -> cell) and by a few lines that ask the engine directly. Status, outputs and the INT8
kernel (QLinearConv in ONNX Runtime's optimized graph; an i8/u8 Convolution in OpenVINO's runtime
model) must agree.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
import pytest

from cases import get_case
from core import numerics
from engines import get_engine
from engines.cells import run_cell
from generators.bundle import bundle_ids, load_bundle

RUN = {"date": "", "source": "test"}


@pytest.fixture(scope="module")
def bundles(catalogue_bundles):
    """The grouped-conv sweep and DynamicQuantizeLinear's bundles, from the catalogue written once per test run."""
    return [load_bundle(catalogue_bundles / b) for b in bundle_ids(catalogue_bundles)
            if b.startswith(("grouped_conv/", "dynamic_quantize/"))]


def _within_tolerance(bundle, outputs: dict) -> bool:
    tolerance = bundle.meta["tolerance_steps"]
    for name, want in bundle.expected().items():
        got = np.asarray(outputs[name], dtype=np.float64)
        step = numerics.output_step(bundle.meta, name) or 1.0
        if got.shape != want.shape or np.abs(got - want).max() / step > tolerance:
            return False
    return True


def _ask_onnxruntime(bundle, tmp_path):
    """(status, int8 conv kernel present) straight from ONNX Runtime."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    try:
        session = ort.InferenceSession(str(bundle.model_path), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        outputs = dict(zip(names, session.run(None, bundle.inputs())))
    except Exception:
        return "fail", False
    ops = {n.op_type for n in onnx.load(str(tmp_path / "optimized.onnx")).graph.node}
    return ("pass" if _within_tolerance(bundle, outputs) else "fail"), "QLinearConv" in ops


def _ask_openvino(bundle):
    """(status, int8 conv kernel present) straight from OpenVINO."""
    core = ov.Core()
    try:
        compiled = core.compile_model(core.read_model(str(bundle.model_path)), "CPU",
                                      {"INFERENCE_PRECISION_HINT": "f32"})
        result = compiled(bundle.inputs())
        outputs = {port.get_any_name(): result[port] for port in compiled.outputs}
    except Exception:
        return "fail", False
    int8 = any(
        op.get_rt_info()["layerType"].astype(str) == "Convolution"
        and op.get_rt_info()["runtimePrecision"].astype(str).lower() in ("i8", "u8")
        for op in compiled.get_runtime_model().get_ordered_ops()
    )
    return ("pass" if _within_tolerance(bundle, outputs) else "fail"), int8


@pytest.mark.slow
@pytest.mark.parametrize("engine_name", ["onnxruntime", "openvino"])
def test_cells_agree_with_a_direct_query(bundles, engine_name, tmp_path):
    engine = get_engine(engine_name)
    info = engine.probe()
    disagreements = []
    for bundle in bundles:
        cell = run_cell(get_case(bundle.meta["case"]), bundle, engine, info, RUN)
        if engine_name == "onnxruntime":
            status, int8 = _ask_onnxruntime(bundle, tmp_path)
        else:
            status, int8 = _ask_openvino(bundle)
        if cell.status != status:
            disagreements.append(f"{bundle.id}: cell {cell.status}, engine says {status}")
        if bundle.meta["case"] == "grouped_conv" and status == "pass" and (cell.fused is True) != int8:
            disagreements.append(f"{bundle.id}: cell fused={cell.fused}, engine's INT8 conv kernel={int8}")
    assert not disagreements, "\n".join(disagreements)
