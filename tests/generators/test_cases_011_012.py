"""Cases 011 onwards (issue 13): MatMul/Gemm weight granularity and the transformer Q/DQ placement."""

from __future__ import annotations

import importlib
from typing import Dict, List, Tuple

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from cases import CASE_MODULES, slug
from cases.base import Case
from generators.reference import expected_outputs
from generators.reproducer import Reproducer
from generators.steps import comparison_step, error_steps
from generators.write import build

NEW_MODULES = ("cases.matmul_per_channel",)
CASES: Dict[str, Case] = {m.split(".")[1]: importlib.import_module(m).CASE for m in NEW_MODULES}
VARIANTS: List[Tuple[Case, dict]] = [(c, p) for c in CASES.values() for p in c.variants()]
IDS = [f"{c.id}/{slug(p)}" for c, p in VARIANTS]
SIZES = {
    "matmul_per_channel": 8,  # 2 ops x 2 weight granularities x output Q/DQ
}


def _run_onnxruntime(rep: Reproducer) -> Dict[str, np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(rep.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, rep.inputs)))


def _initializers(model: onnx.ModelProto) -> Dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _only(model: onnx.ModelProto, op: str) -> onnx.NodeProto:
    (found,) = [n for n in model.graph.node if n.op_type == op]
    return found


def _attrs(n: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}


def test_cases_are_registered_after_010_with_their_citations():
    registered = [m for m in CASE_MODULES if m in NEW_MODULES]
    assert registered == list(NEW_MODULES)
    assert CASE_MODULES.index(NEW_MODULES[0]) == CASE_MODULES.index("cases.concat_requant") + 1
    assert CASE_MODULES[-1] == "cases.user_model"
    assert [c.seed for c in CASES.values()] == [f"{n:03d}" for n in range(11, 11 + len(NEW_MODULES))]
    for module, case in zip(NEW_MODULES, CASES.values()):
        first_line = importlib.import_module(module).__doc__.splitlines()[0]
        assert first_line.startswith("NVIDIA/TensorRT#") and case.links[0].endswith(first_line[16:20])
        assert case.builder == f"generators.{case.id}:build"
        assert all(e.source in case.links for e in case.expectations)


@pytest.mark.parametrize("case_id", list(SIZES))
def test_sweeps_stay_small(case_id):
    assert len(list(CASES[case_id].variants())) == SIZES[case_id]


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_model_passes_the_full_checker_and_names_its_targets(case, params):
    rep = build(case, params)
    onnx.checker.check_model(rep.model, full_check=True)
    assert rep.model.ir_version == 8 and rep.trt == {"int8": True}
    assert [(o.domain, o.version) for o in rep.model.opset_import] == [("", 13)]
    assert rep.target_nodes and set(rep.target_nodes) <= {n.name for n in rep.model.graph.node}
    assert set(rep.target_nodes) <= set(case.target_nodes)
    assert not any(n.op_type in ("Conv", "ConvTranspose") for n in rep.model.graph.node)  # kernel_shape: n/a
    for name, zp in _initializers(rep.model).items():
        if name.endswith("zero_point"):
            assert zp.dtype == np.int8 and not zp.any(), name  # TensorRT takes symmetric INT8 only


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_two_builds_are_byte_identical(case, params):
    a, b = build(case, params), build(case, params)
    assert a.model.SerializeToString() == b.model.SerializeToString()
    assert all(a.inputs[n].tobytes() == b.inputs[n].tobytes() for n in a.inputs)


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_onnxruntime_agrees_with_the_reference_within_a_step(case, params):
    rep = build(case, params)
    expected, _ = expected_outputs(rep)
    actual = _run_onnxruntime(rep)
    for name, want in expected.items():
        step = comparison_step(want, rep.output_steps.get(name))[0]
        assert error_steps(want, actual[name], step) <= rep.tolerance_steps, name
    for name, step in rep.output_steps.items():  # no Q saturates: an output Q sees at most 127 of its steps
        if step:
            assert 0 < np.max(np.abs(expected[name])) / step <= 127


def test_matmul_weights_are_quantized_on_the_output_channel_axis():
    case = CASES["matmul_per_channel"]
    for params in case.variants():
        rep = build(case, params)
        init = _initializers(rep.model)
        gemm = params["op"] == "gemm_transb"
        target = _only(rep.model, "Gemm" if gemm else "MatMul")
        assert target.name == rep.target_nodes[0]
        if gemm:
            assert _attrs(target)["transB"] == 1 and init["w"].shape == (16, 32)
        else:
            assert init["w"].shape == (32, 16)
        dq = next(n for n in rep.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w")
        if params["weights"] == "per_tensor":
            assert init["w_scale"].shape == () and "axis" not in _attrs(dq)
        else:
            axis = _attrs(dq)["axis"]
            assert axis == (0 if gemm else 1) and init["w_scale"].shape == (16,)
            assert len(set(init["w_scale"].tolist())) > 1  # a scale applied on the wrong channel would show
        readers = [n.op_type for n in rep.model.graph.node if target.output[0] in n.input]
        assert readers == (["QuantizeLinear"] if params["output_qdq"] else [])


def test_no_version_is_guessed_for_matmul_per_channel():
    assert CASES["matmul_per_channel"].expectations == () and CASES["matmul_per_channel"].signatures == ()
