"""Cases 011 onwards (issue 13): MatMul/Gemm weight granularity and the transformer Q/DQ placement."""

from __future__ import annotations

import importlib
from typing import Dict, List, Tuple

import numpy as np
import onnx
import pytest

from cases import CASE_MODULES, slug
from cases.base import Case
from generators.reference import expected_outputs
from generators.steps import comparison_step, error_steps
from generators.write import build
from tests.generators.helpers import initializers as _initializers, run_onnxruntime as _run_onnxruntime

NEW_MODULES = ("cases.matmul_per_channel", "cases.transformer_qdq_pattern")
CASES: Dict[str, Case] = {m.split(".")[1]: importlib.import_module(m).CASE for m in NEW_MODULES}
VARIANTS: List[Tuple[Case, dict]] = [(c, p) for c in CASES.values() for p in c.variants()]
IDS = [f"{c.id}/{slug(p)}" for c, p in VARIANTS]
SIZES = {
    "matmul_per_channel": 8,  # 2 ops x 2 weight granularities x output Q/DQ
    "transformer_qdq_pattern": 4,  # BMM input Q/DQ x softmax output Q/DQ
}




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


def _producers(model: onnx.ModelProto) -> Dict[str, onnx.NodeProto]:
    return {o: n for n in model.graph.node for o in n.output}


def test_transformer_block_puts_q_dq_where_the_sweep_says():
    case = CASES["transformer_qdq_pattern"]
    for params in case.variants():
        rep = build(case, params)
        nodes = {n.name: n for n in rep.model.graph.node}
        producers = _producers(rep.model)
        bmm1, bmm2 = nodes["node_of_scores"], nodes["node_of_ctx"]
        assert bmm1.op_type == bmm2.op_type == "MatMul" and rep.target_nodes == (bmm1.name, bmm2.name)
        want = "DequantizeLinear" if params["bmm_inputs"] == "both" else "Transpose"
        assert [producers[i].op_type for i in bmm1.input] == [want, want]
        assert producers[bmm2.input[1]].op_type == want
        assert producers[bmm2.input[0]].op_type == ("DequantizeLinear" if params["softmax_qdq"] else "Softmax")
        # Every projection MatMul reads a Q/DQ activation and per-channel INT8 weights on the output axis.
        for name in ("node_of_q_lin", "node_of_k_lin", "node_of_v_lin", "node_of_attn_out"):
            act, weight = (producers[i] for i in nodes[name].input)
            assert act.op_type == weight.op_type == "DequantizeLinear" and _attrs(weight)["axis"] == 1
        # The residual Add and the LayerNorm after it stay in float: no Q reads them.
        float_part = {"h", "h_mean", "h_centred", "h_sq", "h_var", "h_var_eps", "h_std", "y"}
        assert not any(n.op_type == "QuantizeLinear" and n.input[0] in float_part for n in rep.model.graph.node)
        assert nodes["node_of_h"].input[1] == "x"  # the float block input, not its DQ


def test_attention_activation_scales_avoid_rounding_ties():
    """q, k, v and ctx scales are 3 * 2^j: a Q/DQ there never meets an exact .5 whatever the engine's rounding."""
    for params in CASES["transformer_qdq_pattern"].variants():
        init = _initializers(build(CASES["transformer_qdq_pattern"], params).model)
        for name in ("qh_scale", "kh_scale", "vh_scale", "ctx_scale"):
            if name in init:
                mantissa, _ = np.frexp(float(init[name]) / 3.0)
                assert mantissa == 0.5, name


def test_no_version_is_guessed():
    for case in CASES.values():  # no source states a TensorRT version for these shapes
        assert case.expectations == () and case.signatures == ()
