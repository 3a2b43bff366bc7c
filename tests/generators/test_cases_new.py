"""Cases 005-010, grown from the tracker (issue 13): declarations, built reproducers and their numerics."""

from __future__ import annotations

import importlib

import numpy as np
import onnx
import pytest

from cases import CASE_MODULES, slug
from generators.qdq_parts import conv_transpose
from generators.reference import expected_outputs
from generators.steps import comparison_step, error_steps
from generators.write import build
from tests.generators.helpers import cases_from, initializers as _initializers, run_onnxruntime as _run_onnxruntime

NEW_MODULES = (
    "cases.convtranspose_q_fusion",
    "cases.convtranspose_weight_axis",
    "cases.convtranspose_grouped",
    "cases.resize_qdq",
    "cases.residual_add_qdq",
    "cases.concat_requant",
)
CASES, VARIANTS = cases_from(NEW_MODULES)
IDS = [f"{c.id}/{slug(p)}" for c, p in VARIANTS]
SIZES = {
    "convtranspose_q_fusion": 6,  # 2 ops x 3 followers
    "convtranspose_weight_axis": 6,  # 3 granularities x 2 channel layouts
    "convtranspose_grouped": 12,  # 3 group counts x 2 kernels x output Q/DQ
    "resize_qdq": 8,  # Q/DQ before x after x 2 modes
    "residual_add_qdq": 6,  # 3 residual inputs x output Q/DQ
    "concat_requant": 8,  # scales x output Q/DQ x consumer
}




def _only(model: onnx.ModelProto, op: str) -> onnx.NodeProto:
    (found,) = [n for n in model.graph.node if n.op_type == op]
    return found


def _attrs(n: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}


def test_new_cases_are_registered_after_the_seeds_with_their_citations():
    assert list(NEW_MODULES) == [m for m in CASE_MODULES if m in NEW_MODULES]
    seeds = [c.seed for c in CASES.values()]
    assert seeds == [f"{n:03d}" for n in range(5, 5 + len(NEW_MODULES))]
    for module, case in zip(NEW_MODULES, CASES.values()):
        first_line = importlib.import_module(module).__doc__.splitlines()[0]
        assert first_line.startswith("NVIDIA/TensorRT#") and case.links and case.links[0].endswith(first_line[16:20])
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
    assert rep.target_nodes and set(rep.target_nodes) <= {n.name for n in rep.model.graph.node}
    assert set(rep.target_nodes) <= set(case.target_nodes)
    for n in rep.model.graph.node:  # TensorRT 8.x's parser needs kernel_shape where weights come from a DQ
        if n.op_type in ("Conv", "ConvTranspose"):
            assert "kernel_shape" in _attrs(n), n.name
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
    if any(rep.output_steps.values()):  # no Q saturates: the output Q sees at most 100 of its steps
        (name, step), = [(n, s) for n, s in rep.output_steps.items() if s]
        assert 0 < np.max(np.abs(expected[name])) / step <= 127


@pytest.mark.parametrize("weights", ("axis0", "axis1"))
def test_a_weight_scale_read_on_the_other_axis_is_off_by_many_steps(weights):
    """What the sweep detects: #1694's TensorRT applied per-channel ConvTranspose scales on the wrong axis."""
    case = CASES["convtranspose_weight_axis"]
    rep = build(case, {"weights": weights, "channels": "equal"})
    init = _initializers(rep.model)
    dq = next(n for n in rep.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w")
    axis = _attrs(dq)["axis"]
    assert axis == {"axis0": 0, "axis1": 1}[weights] and init["w_scale"].shape == (init["w"].shape[axis],)
    x = rep.inputs["x"]
    swapped = np.moveaxis(init["w"].astype(np.float32), 1 - axis, 0) * init["w_scale"].reshape(-1, 1, 1, 1)
    wrong = conv_transpose(x, np.moveaxis(swapped, 0, 1 - axis), 1, 2, 0)
    expected, _ = expected_outputs(rep)
    assert error_steps(expected["y"], wrong, rep.output_steps["y"]) > 5


def test_weight_axis_variants_hold_the_documented_shapes():
    case = CASES["convtranspose_weight_axis"]
    for params in case.variants():
        rep = build(case, params)
        init = _initializers(rep.model)
        out_channels = 8 if params["channels"] == "equal" else 4
        assert init["w"].shape == (8, out_channels, 2, 2) and init["w"].dtype == np.int8
        assert init["w_scale"].shape == {"per_tensor": (), "axis0": (8,), "axis1": (out_channels,)}[params["weights"]]


def test_grouped_convtranspose_reference_is_independent_of_onnx_reference():
    """onnx.reference mishandles grouped ConvTranspose; the numpy one agrees with ONNX Runtime instead."""
    case = CASES["convtranspose_grouped"]
    for params in case.variants():
        rep = build(case, params)
        attrs = _attrs(_only(rep.model, "ConvTranspose"))
        assert attrs["group"] == params["groups"] and attrs["kernel_shape"] == [params["kernel"]] * 2
        assert rep.reference is not None
        expected, reference = expected_outputs(rep)
        assert reference == "numpy"
        actual = _run_onnxruntime(rep)["y"]
        assert actual.shape == (1, 16, 12, 12)
        assert np.max(np.abs(actual - expected["y"])) <= 1e-5 * max(1.0, float(np.max(np.abs(actual))))


def test_q_fusion_followers_put_a_q_where_the_threads_do():
    case = CASES["convtranspose_q_fusion"]
    for params in case.variants():
        rep = build(case, params)
        op = {"conv": "Conv", "conv_transpose": "ConvTranspose"}[params["op"]]
        target = next(n for n in rep.model.graph.node if n.name == rep.target_nodes[0])
        assert target.op_type == op
        readers = [n.op_type for n in rep.model.graph.node if target.output[0] in n.input]
        assert readers == {"none": [], "q": ["QuantizeLinear"], "concat_q": ["Concat"]}[params["follower"]]
        if params["follower"] == "concat_q":
            concat = _only(rep.model, "Concat")
            assert [n.op_type for n in rep.model.graph.node if concat.output[0] in n.input] == ["QuantizeLinear"]


def test_resize_qdq_places_q_dq_around_the_resize_only_where_asked():
    case = CASES["resize_qdq"]
    for params in case.variants():
        rep = build(case, params)
        resize = _only(rep.model, "Resize")
        producers = {o: n for n in rep.model.graph.node for o in n.output}
        readers = [n.op_type for n in rep.model.graph.node if resize.output[0] in n.input]
        assert (producers[resize.input[0]].op_type == "DequantizeLinear") == params["qdq_before"]
        assert readers == (["QuantizeLinear"] if params["qdq_after"] else ["Conv"])
        assert _attrs(resize)["mode"] == params["mode"].encode()


def test_residual_and_concat_inputs_are_what_the_sweep_says():
    for params in CASES["residual_add_qdq"].variants():
        rep = build(CASES["residual_add_qdq"], params)
        add = _only(rep.model, "Add")
        assert add.input[1] == {"float": "x", "shared_qdq": "x_dq", "own_qdq": "res_dq"}[params["residual"]]
    for params in CASES["concat_requant"].variants():
        rep = build(CASES["concat_requant"], params)
        init = _initializers(rep.model)
        equal = float(init["a_scale"]) == float(init["b_scale"])
        assert equal == (params["scales"] == "equal")
        assert ("cat_scale" in init) == params["output_qdq"]
        for name in ("a", "b"):  # inputs sit on their own Q's grid: their Q is exact, only the Concat Q rounds
            steps = rep.inputs[name] / init[f"{name}_scale"]
            assert np.array_equal(steps, np.rint(steps))


def test_documented_outcomes_by_version():
    grouped = CASES["convtranspose_grouped"]
    depthwise = {"groups": 16, "kernel": 4, "output_qdq": True}
    fail = grouped.expectation_for("tensorrt", "8.4.3.1", depthwise)
    assert (fail.outcome, fail.stage, fail.signature) == ("fail", "build", "no_implementation")
    assert grouped.expectation_for("tensorrt", "8.5.3.1", depthwise).outcome == "pass"
    assert grouped.expectation_for("tensorrt", "8.6.0", depthwise) is None
    assert grouped.expectation_for("tensorrt", "8.5.3.1", dict(depthwise, groups=1)) is None
    assert grouped.signature("no_implementation").search(
        "Error Code 10: Internal Error (Could not find any implementation for node backbone.ida_up.up_1.weight + "
        "QuantizeLinear_629_quantize_scale_node + ConvTranspose_631.)"
    )
    resize = CASES["resize_qdq"]
    after = {"qdq_before": False, "qdq_after": True, "mode": "nearest"}
    assert resize.expectation_for("tensorrt", "8.4.3.1", after).outcome == "int8"
    assert resize.expectation_for("tensorrt", "8.6.0", after) is None
    assert resize.expectation_for("tensorrt", "8.4.3.1", dict(after, mode="linear")) is None
    axis = CASES["convtranspose_weight_axis"]
    assert axis.expectation_for("tensorrt", "8.0.1.6", {"weights": "axis1", "channels": "different"}).outcome == "fail"
    assert axis.expectation_for("tensorrt", "8.5.3.1", {"weights": "axis1", "channels": "different"}) is None
    for case_id in ("residual_add_qdq", "concat_requant"):  # no thread states a version: nothing is guessed
        assert CASES[case_id].expectations == ()
