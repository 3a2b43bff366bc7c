"""Shared by the per-case tests: read a model's nodes and initializers, run a reproducer on ONNX Runtime."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Optional

import numpy as np
import onnx
from onnx import numpy_helper

from generators.reproducer import Reproducer

REPO = Path(__file__).resolve().parents[3]


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


def blocked(scale: np.ndarray, axis: int, block_size: int) -> np.ndarray:
    """A blocked scale or zero point repeated `block_size` times along `axis`: one value per element."""
    return np.repeat(np.asarray(scale), block_size, axis=axis)


def float_values(q: np.ndarray) -> np.ndarray:
    """A quantized array's values as float64 (int4, uint4, int8, float8e4m3fn, float4e2m1 or float8e8m0)."""
    return np.asarray(q).astype(np.float32).astype(np.float64)


def attrs(n: onnx.NodeProto) -> dict:
    """A node's attributes by name."""
    return {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}


def only(model: onnx.ModelProto, op: str) -> onnx.NodeProto:
    """The one node of an op type (fails where there are none or several)."""
    (found,) = [n for n in model.graph.node if n.op_type == op]
    return found


def producers(model: onnx.ModelProto) -> Dict[str, onnx.NodeProto]:
    """Tensor name -> the node that writes it."""
    return {o: n for n in model.graph.node for o in n.output}


def assert_symmetric_int8_for_tensorrt(rep: Reproducer, opset: Optional[int] = None, convolutions: bool = True) -> None:
    """An INT8 build whose zero points are all int8 zeros: TensorRT takes symmetric INT8 only. With opset, the model
    imports that default-domain opset alone; convolutions=False: it has no Conv (so kernel_shape does not apply)."""
    assert rep.trt == {"int8": True}
    for name, zp in initializers(rep.model).items():
        if name.endswith("zero_point"):
            assert zp.dtype == np.int8 and not zp.any(), name
    if opset is not None:
        assert [(o.domain, o.version) for o in rep.model.opset_import] == [("", opset)]
    if not convolutions:
        assert not any(n.op_type in ("Conv", "ConvTranspose") for n in rep.model.graph.node)


def observed_cells(path: str, bundle_prefix: str) -> list:
    """The cells of one committed observation whose bundle starts with a prefix."""
    cells = [json.loads(line) for line in (REPO / path).read_text().splitlines() if line.strip()]
    return [c for c in cells if str(c.get("bundle", "")).startswith(bundle_prefix)]


def assert_the_target_ends_the_graph(rep: Reproducer) -> None:
    """The one target is node_of_y, the only node of the graph's last op type: the compute node the case is about."""
    assert rep.target_nodes == ("node_of_y",) and only(rep.model, rep.model.graph.node[-1].op_type).name == "node_of_y"


def assert_int8_weights_within_63(rep: Reproducer) -> None:
    """INT8 initializers stay within |w| <= 63: ONNX Runtime's u8s8 kernels cannot saturate on any x86 CPU."""
    for name, value in initializers(rep.model).items():
        if value.dtype == np.int8:
            assert np.max(np.abs(value.astype(np.int32))) <= 63, name


def rejudged_8x_cells(gpu: str, case) -> dict:
    """The GPU rounds' cells of one seed-024/025 case (reports/observed/<gpu>/seeds-024-025/), read by core.results
    and judged again against today's expectations by cases.verdict.rejudge: (version, bundle) -> verdict."""
    from cases.verdict import rejudge
    from core.results import read_results

    return {(s.cell.engine_version, s.cell.bundle): rejudge(s.cell, case).verdict
            for path in sorted((REPO / "reports" / "observed" / gpu / "seeds-024-025").glob("trt-*.jsonl"))
            for s in read_results(path).cells if s.cell.case == case.id}
