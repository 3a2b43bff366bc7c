"""check.lint's rules for the 2026 low-precision forms: INT4, FP4, NVFP4 and MXFP8 weights (seeds 014, 019-021)."""

from __future__ import annotations

import pytest

from cases import get_case
from cases.pattern import weight_dequantize
from check.lint import index, lint_model
from generators import write


def _findings(case_id: str, params: dict, rule: str, tmp_path) -> list:
    model = write.build(get_case(case_id), params).model
    return [f for f in lint_model(model, observed=tmp_path) if f.rule == rule]


def _by(found: list) -> dict:
    return {(f.engine, f.setting, f.versions): f.predicted for f in found}


def test_the_weight_is_found_through_the_transpose_and_cast_exporters_put_between():
    model = write.build(get_case("nvfp4_two_level_scales"), {"double_scale": "float32",
                                                             "activations": "weight_only"}).model
    g = index(model)
    matmul = next(n for n in g.nodes if n.op_type == "MatMul")
    dq = weight_dequantize(g, matmul.input[1])
    assert dq is not None and dq.input[0] == "w"  # MatMul <- Transpose <- Cast <- DequantizeLinear(w)


@pytest.mark.parametrize("params, expect", [
    ({"op": "matmul", "weights": "blocked", "activations": "w4a16"},
     {("tensorrt-rtx", "target=SM89", ""): "build fails", ("tensorrt-rtx", "target=SM75", ""): "build fails",
      ("tensorrt", "", ">=8.0,<9.0"): "parse fails"}),
    ({"op": "conv", "weights": "per_tensor", "activations": "w4a16"},  # #4833: W4A16 silently float on 10.16 on
     {("tensorrt", "", ">=10.16"): "float", ("tensorrt", "", ">=8.0,<9.0"): "parse fails"}),
    ({"op": "conv", "weights": "blocked", "activations": "w4a4"},  # the blocking axis: refused in the parser
     {("tensorrt-rtx", "", ""): "parse fails", ("tensorrt", "", ">=8.0,<9.0"): "parse fails"}),
])
def test_fp4_weights_are_matched_to_their_variant_of_seed_019(params, expect, tmp_path):
    found = _by(_findings("fp4_weight_only", params, "fp4_weight_only", tmp_path))
    assert {k: v for k, v in found.items() if k in expect} == expect
    if params["op"] == "conv":  # the documents speak of FP4 GEMMs only: no per-target prediction for a Conv
        assert not any(setting for _, setting, _ in found)


def test_nvfp4_is_told_from_single_level_fp4_and_its_dynamic_activations_are_seen(tmp_path):
    dyn = _by(_findings("nvfp4_two_level_scales", {"double_scale": "float16", "activations": "dynamic"},
                        "nvfp4_gemm", tmp_path))
    assert dyn[("tensorrt", "", ">=10.16,<10.17")] == "build fails"  # #4196 on 10.16
    assert dyn[("tensorrt-rtx", "target=SM89", "")] == "build fails"
    weight_only = _by(_findings("nvfp4_two_level_scales", {"double_scale": "float16", "activations": "weight_only"},
                                "nvfp4_gemm", tmp_path))
    assert ("tensorrt", "", ">=10.16,<10.17") not in weight_only  # the builder errors need the dynamic quantizer
    assert not _findings("nvfp4_two_level_scales", {"double_scale": "float16", "activations": "dynamic"},
                         "fp4_weight_only", tmp_path)


def test_mxfp8_forms_modelopts_follows_the_fp8_gemm_rule_onnxs_has_no_rtx_source(tmp_path):
    trt = _by(_findings("mxfp8_block_scales", {"form": "trt_custom", "activations": "dynamic"}, "mxfp8_gemm",
                        tmp_path))
    assert trt[("tensorrt-rtx", "target=SM86", "")] == "build fails" and ("tensorrt-rtx", "target=SM89", "") not in trt
    assert trt[("tensorrt", "", ">=10.0,<10.12")] == "parse fails"
    onnx_form = _by(_findings("mxfp8_block_scales", {"form": "onnx_e8m0", "activations": "weight_only"}, "mxfp8_gemm",
                              tmp_path))
    assert not any(engine == "tensorrt-rtx" for engine, _, _ in onnx_form)  # only observed cells would say


@pytest.mark.parametrize("form", ["matmul_axis0", "gemm_axis0", "gemm_transb_axis1", "matmul_axis1_transpose"])
def test_int4_weight_only_gemms_in_every_layout_get_seed_014s_turing_refusal(form, tmp_path):
    found = _by(_findings("int4_matmulnbits_fusion", {"form": form, "activation": "float16"}, "int4_gemm", tmp_path))
    assert found == {("tensorrt-rtx", "target=SM75", ""): "build fails", ("tensorrt", "", ">=8.0,<9.0"): "parse fails"}


def test_int8_and_fp8_models_get_none_of_the_4_bit_rules(tmp_path):
    for case_id, params in (("fp8_qdq", {"op": "matmul", "weights": "per_tensor"}),
                            ("qdq_scale_dtype_mismatch", {"op": "matmul", "scale": "float32"})):
        rules = {f.rule for f in lint_model(write.build(get_case(case_id), params).model, observed=tmp_path)}
        assert not rules & {"int4_gemm", "fp4_weight_only", "nvfp4_gemm", "mxfp8_gemm"}, case_id
