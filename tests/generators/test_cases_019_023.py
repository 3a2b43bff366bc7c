"""Cases 019-023 (issue 29): FP4, NVFP4 and MXFP8 forms (opsets 21-24), and the cross-check engines' own bugs."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest

from cases import CASE_MODULES, bundle_id, slug
from cases.low_precision import RTX_2026_LOGS
from generators import write
from generators.reference import expected_outputs
from generators.typed_qdq import FP4_GRID, blocked
from tests.generators.helpers import cases_from, float_values
from tests.generators.helpers import initializers as _initializers

NEW_MODULES = (
    "cases.fp4_weight_only",
    "cases.nvfp4_two_level_scales",
    "cases.mxfp8_block_scales",
    "cases.int4_matmulnbits_fusion",
    "cases.qdq_scale_dtype_mismatch",
)
CASES, VARIANTS = cases_from(NEW_MODULES)
IDS = [bundle_id(c, p) for c, p in VARIANTS]
REPO = Path(__file__).resolve().parents[2]
RTX_LOGS = json.loads((REPO / RTX_2026_LOGS).read_text())
# The TensorRT custom ops (trt domain) that neither onnx.reference nor ONNX Runtime runs: a numpy reference.
TRT_OPS = {"TRT_FP4DynamicQuantize", "TRT_MXFP8DequantizeLinear", "TRT_MXFP8DynamicQuantize"}


def _node(model: onnx.ModelProto, op: str) -> onnx.NodeProto:
    (found,) = [n for n in model.graph.node if n.op_type == op]
    return found


def _attrs(n: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}


def test_cases_follow_018_in_seed_order_and_cite_their_thread_first():
    assert [m for m in CASE_MODULES if m in NEW_MODULES] == list(NEW_MODULES)
    assert CASE_MODULES.index(NEW_MODULES[0]) == CASE_MODULES.index("cases.bias_add_after_qdq") + 1
    assert [c.seed for c in CASES.values()] == ["019", "020", "021", "022", "023"]
    for module, case in zip(NEW_MODULES, CASES.values()):
        first_line = importlib.import_module(module).__doc__.splitlines()[0]
        cited = re.search(r"([\w.-]+/[\w.-]+)#(\d+)", first_line)
        if cited:  # owner/repo#number: the first link is that thread
            assert case.links[0].endswith(f"{cited.group(1)}/issues/{cited.group(2)}") or \
                case.links[0].endswith(f"{cited.group(1)}/pull/{cited.group(2)}"), case.id
        else:  # mxfp8: the ModelOpt source file named on the first line
            assert "github.com/NVIDIA/TensorRT-Model-Optimizer" in first_line and "qdq_utils.py" in case.links[0]
        assert case.builder == f"generators.{case.id}:build"


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_model_passes_the_full_checker_and_targets_its_compute_node(case, params):
    rep = write.build(case, params)
    onnx.checker.check_model(rep.model, full_check=True)
    assert rep.target_nodes == ("node_of_y",) and _node(rep.model, rep.model.graph.node[-1].op_type).name == "node_of_y"
    for n in rep.model.graph.node:
        if n.op_type == "Conv":
            assert "kernel_shape" in _attrs(n), n.name


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_two_builds_are_byte_identical(case, params):
    a, b = write.build(case, params), write.build(case, params)
    assert a.model.SerializeToString() == b.model.SerializeToString()
    assert all(a.inputs[n].tobytes() == b.inputs[n].tobytes() for n in a.inputs)


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_the_reference_is_onnx_reference_unless_a_tensorrt_custom_op_is_in_the_graph(case, params):
    rep = write.build(case, params)
    custom = {n.op_type for n in rep.model.graph.node if n.domain == "trt"}
    assert custom <= TRT_OPS
    assert (rep.reference is not None) is bool(custom)
    outputs, how = expected_outputs(rep)
    assert how == ("numpy" if custom else "onnx.reference") and np.isfinite(outputs["y"].astype(np.float64)).all()


def test_opsets_and_ir_versions_are_the_ones_the_types_need():
    """float4e2m1 needs opset 23 (IR 11), float8e8m0 opset 24 (IR 12), int4 opset 21 (IR 10)."""
    seen = {}
    for case, params in VARIANTS:
        m = write.build(case, params).model
        seen[bundle_id(case, params)] = (m.opset_import[0].version, m.ir_version)
    assert seen["fp4_weight_only/op=conv+weights=per_tensor+activations=w4a16"] == (23, 11)
    assert seen["mxfp8_block_scales/form=onnx_e8m0+activations=weight_only"] == (24, 12)
    assert seen["mxfp8_block_scales/form=trt_custom+activations=weight_only"] == (21, 10)
    assert seen["int4_matmulnbits_fusion/form=matmul_axis0+activation=float32"] == (21, 10)
    assert seen["qdq_scale_dtype_mismatch/op=matmul+scale=float32"] == (23, 11)


@pytest.mark.parametrize("params", list(CASES["fp4_weight_only"].variants()), ids=slug)
def test_fp4_weights_are_float4e2m1_and_the_reference_is_the_dequantized_op(params):
    """The weights are FP4 E2M1 on its grid; W4A16 has no Q/DQ on the activations, W4A4 an FP4 one; onnx.reference's
    MatMul equals x @ dequantized(w) computed in numpy."""
    rep = write.build(CASES["fp4_weight_only"], params)
    init = _initializers(rep.model)
    w = init["w"]
    assert w.dtype == np.dtype(ml_dtypes.float4_e2m1fn) and set(np.unique(float_values(w))) <= set(FP4_GRID)
    dq = next(n for n in rep.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w")
    assert ("block_size" in _attrs(dq)) is (params["weights"] == "blocked")
    w4a4 = params["activations"] == "w4a4"
    assert ("QuantizeLinear" in {n.op_type for n in rep.model.graph.node}) is w4a4
    if params["op"] == "matmul":
        dense = float_values(w) * (blocked(init["w_scale"], 0, 16) if params["weights"] == "blocked"
                                   else float(init["w_scale"]))
        want = rep.inputs["x"].astype(np.float64) @ dense
        got = expected_outputs(rep)[0]["y"].astype(np.float64)
        assert np.max(np.abs(got - want)) <= 2.0**-8 * max(1.0, float(np.max(np.abs(want))))


@pytest.mark.parametrize("params", list(CASES["nvfp4_two_level_scales"].variants()), ids=slug)
def test_nvfp4_weights_have_fp8_block_scales_under_a_second_level_scale(params):
    rep = write.build(CASES["nvfp4_two_level_scales"], params)
    init = _initializers(rep.model)
    assert init["w"].dtype == np.dtype(ml_dtypes.float4_e2m1fn) and init["w"].shape == (32, 64)
    assert init["w_scale_fp8"].dtype == np.dtype(ml_dtypes.float8_e4m3fn) and init["w_scale_fp8"].shape == (32, 4)
    assert init["w_scale_2"].dtype == np.dtype(params["double_scale"])
    ops = [n.op_type for n in rep.model.graph.node]
    assert ("Cast" in ops) is (params["double_scale"] == "float32")  # #513: float32 DQ outputs, then float16
    dynamic = params["activations"] == "dynamic"
    assert ("TRT_FP4DynamicQuantize" in ops) is dynamic
    if dynamic:  # each block of 16 holds +-6 times its power of two: NVFP4's dynamic quantization keeps it exactly
        blocks = rep.inputs["x"].astype(np.float64).reshape(-1, 16)
        unit = np.max(np.abs(blocks), axis=1, keepdims=True) / 6
        assert np.all(np.log2(unit) == np.round(np.log2(unit))) and set(np.unique(blocks / unit)) <= set(FP4_GRID)


@pytest.mark.parametrize("params", list(CASES["mxfp8_block_scales"].variants()), ids=slug)
def test_mxfp8_scales_are_e8m0_in_onnx_and_uint8_bits_in_modelopts_form(params):
    rep = write.build(CASES["mxfp8_block_scales"], params)
    init = _initializers(rep.model)
    assert init["w"].dtype == np.dtype(ml_dtypes.float8_e4m3fn) and init["w_scale"].shape == (32, 2)
    if params["form"] == "onnx_e8m0":
        assert init["w_scale"].dtype == np.dtype(ml_dtypes.float8_e8m0fnu)
        assert _attrs(_node(rep.model, "DequantizeLinear"))["block_size"] == 32
    else:  # 2^(bits - 127), as ModelOpt stores E8M0
        assert init["w_scale"].dtype == np.uint8 and set(np.unique(init["w_scale"])) <= {121, 122, 123}
        dense = float_values(init["w"]) * np.repeat(2.0 ** (init["w_scale"].astype(np.float64) - 127), 32, axis=1)
        want = (rep.inputs["x"].astype(np.float64) @ dense.T).astype(np.float16)
        assert np.array_equal(expected_outputs(rep)[0]["y"], want)


@pytest.mark.parametrize("params", list(CASES["int4_matmulnbits_fusion"].variants()), ids=slug)
def test_int4_layouts_compute_the_same_product(params):
    """Every form is x @ w for the same int4 w[K, N]; only the layout (axis 0, transB, Transpose) differs."""
    rep = write.build(CASES["int4_matmulnbits_fusion"], params)
    dq = _node(rep.model, "DequantizeLinear")
    assert _attrs(dq)["axis"] == (0 if params["form"].endswith("axis0") else 1) and _attrs(dq)["block_size"] == 32
    assert rep.tolerance_steps < 1
    got = expected_outputs(rep)[0]["y"].astype(np.float64)
    init = _initializers(rep.model)
    axis = _attrs(dq)["axis"]
    dense = float_values(init["w"]) * blocked(init["w_scale"], axis, 32).astype(np.float64)
    w_kn = dense if axis == 0 else dense.T
    assert np.allclose(got, rep.inputs["x"].astype(np.float64) @ w_kn, rtol=0, atol=2.0**-8)


@pytest.mark.parametrize("params", list(CASES["qdq_scale_dtype_mismatch"].variants()), ids=slug)
def test_mixed_scales_are_float32_with_an_output_dtype_and_compute_the_exact_product(params):
    """Either scale type gives the same numbers: the activations are whole multiples of their scale, so the Q/DQ is
    exact and the MatMul is x @ (w * 2^-5)."""
    rep = write.build(CASES["qdq_scale_dtype_mismatch"], params)
    init = _initializers(rep.model)
    mixed = params["scale"] == "float32"
    assert init["x_scale"].dtype == init["w_scale"].dtype == np.dtype(params["scale"])
    dqs = [n for n in rep.model.graph.node if n.op_type == "DequantizeLinear"]
    assert all(("output_dtype" in _attrs(n)) is mixed for n in dqs)
    got = expected_outputs(rep)[0]["y"]
    assert got.dtype == np.float16
    if params["op"] == "matmul":
        want = rep.inputs["x"].astype(np.float64) @ (init["w"].astype(np.float64) * 2.0**-5)
        assert np.allclose(got.astype(np.float64), want, rtol=2.0**-10, atol=2.0**-12)


def test_every_rtx_signature_matches_the_measured_error_it_cites():
    """Each signature sourced from the committed build errors matches one of them, on every version it names."""
    errors = RTX_LOGS["errors"]
    sigs = {s.name: s for c in CASES.values() for s in c.signatures if s.source == RTX_2026_LOGS}
    assert {"rtx_hw_specific_type", "rtx_fp4_activation_not_constant", "rtx_e8m0_initializer",
            "rtx_dq_output_dtype"} <= set(sigs)
    for name, sig in sigs.items():
        assert any(sig.search(text) for text in errors.values()), name
    output_dtype = [k for k, text in errors.items() if sigs["rtx_dq_output_dtype"].search(text)]
    assert output_dtype and all(k.startswith("1.4.0.76 ") for k in output_dtype)


def test_architecture_expectations_follow_the_rtx_quantized_types_page():
    """FP4 GEMMs: refused below Blackwell, built on SM120; ModelOpt's MXFP8 follows the FP8 GEMM rule (SM89 on)."""
    fp4, nvfp4, mx = CASES["fp4_weight_only"], CASES["nvfp4_two_level_scales"], CASES["mxfp8_block_scales"]
    w4a16 = {"op": "matmul", "weights": "per_tensor", "activations": "w4a16"}
    w4a4 = dict(w4a16, activations="w4a4")
    assert fp4.expectation_for("tensorrt-rtx", "1.7.1.116", w4a16, {"target": "SM89"}).outcome == "fail"
    assert fp4.expectation_for("tensorrt-rtx", "1.7.1.116", w4a16, {"target": "SM120"}).outcome == "pass"
    assert fp4.expectation_for("tensorrt-rtx", "1.7.1.116", w4a4, {"target": "SM120"}) is None
    assert fp4.expectation_for("tensorrt-rtx", "1.7.1.116", w4a16, {"target": "default"}) is None
    dyn = {"double_scale": "float16", "activations": "dynamic"}
    assert nvfp4.expectation_for("tensorrt-rtx", "1.5.0.114", dyn, {"target": "SM86"}).stage == "build"
    trt = {"form": "trt_custom", "activations": "weight_only"}
    assert mx.expectation_for("tensorrt-rtx", "1.7.1.116", trt, {"target": "SM86"}).outcome == "fail"
    assert mx.expectation_for("tensorrt-rtx", "1.7.1.116", trt, {"target": "SM89"}).outcome == "pass"
    assert mx.expectation_for("tensorrt-rtx", "1.7.1.116", dict(trt, form="onnx_e8m0"), {"target": "SM89"}) is None


def test_tensorrt_expectations_say_what_the_threads_say():
    fp4, nvfp4 = CASES["fp4_weight_only"], CASES["nvfp4_two_level_scales"]
    conv = {"op": "conv", "weights": "per_tensor", "activations": "w4a16"}
    assert fp4.expectation_for("tensorrt", "10.16.1.11", conv).outcome == "not_int8"  # #4833: silently FP32
    assert fp4.expectation_for("tensorrt", "11.2.1.2", dict(conv, activations="w4a4")).signature == \
        "fp4_type_not_supported"
    assert fp4.expectation_for("tensorrt", "8.6.0", conv).stage == "load"
    dyn = {"double_scale": "float16", "activations": "dynamic"}
    assert nvfp4.expectation_for("tensorrt", "10.13.3.9", dyn).signature == "double_quant_scale_fp32"
    assert nvfp4.expectation_for("tensorrt", "10.16.1.11", dyn).signature == "myelin_pw_vtx_analyzer"
    assert nvfp4.expectation_for("tensorrt", "10.8.0.43", dyn).source.endswith("Model-Optimizer/pull/2333")
    assert nvfp4.expectation_for("tensorrt", "11.0.0.114", dyn) is None


def test_onnxruntime_expectations_cover_the_documented_versions_only():
    fusion, mixed = CASES["int4_matmulnbits_fusion"], CASES["qdq_scale_dtype_mismatch"]
    axis0 = {"form": "matmul_axis0", "activation": "float32"}
    assert fusion.expectation_for("onnxruntime", "1.31.1", axis0).outcome == "fail"
    assert fusion.expectation_for("onnxruntime", "1.31.1", axis0, {"graph_optimization_level": "ORT_DISABLE_ALL"}
                                  ).outcome == "pass"
    assert fusion.expectation_for("onnxruntime", "1.31.1", dict(axis0, form="gemm_transb_axis1")).outcome == "pass"
    assert fusion.expectation_for("onnxruntime", "1.16.3", axis0) is None  # IR 10 is beyond it: no source speaks
    fp32 = {"op": "matmul", "scale": "float32"}
    assert mixed.expectation_for("onnxruntime", "1.31.1", fp32).stage == "run"
    assert mixed.expectation_for("onnxruntime", "1.16.3", fp32) is None
    assert mixed.expectation_for("onnxruntime", "1.31.1", dict(fp32, scale="float16")) is None


def test_tensorrt_rtx_33s_error_is_watched_for_in_every_new_case_with_target_columns():
    """NVIDIA/TensorRT-RTX#33's Myelin error, as the thread quotes it, would be named in any SM75 column of 019-022."""
    from cases.low_precision import RTX_TARGET_ARCH_KIND

    text = "MyelinCheckException: hfc.cpp:120: CHECK(false) failed. target_sm '110' does not have arch kind assigned."
    assert RTX_TARGET_ARCH_KIND.search(text) and RTX_TARGET_ARCH_KIND.source.endswith("TensorRT-RTX/issues/33")
    watching = {c.id for c in CASES.values() if RTX_TARGET_ARCH_KIND in c.signatures}
    assert watching == {"fp4_weight_only", "nvfp4_two_level_scales", "mxfp8_block_scales", "int4_matmulnbits_fusion"}
    assert not any(RTX_TARGET_ARCH_KIND.search(e) for e in RTX_LOGS["errors"].values())
