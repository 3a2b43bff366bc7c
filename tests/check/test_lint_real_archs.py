"""check.lint's rules for what checking real architectures found: YOLO's INT8 SiLU (seed 024), BERT's 0-d quantized
GELU constants (seed 025), each met with the committed observations it is built from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cases import get_case
from check.lint import lint_model, lint_path
from generators import write
from matrix.predict import compare

REPO = Path(__file__).resolve().parents[2]


def _findings(case_id: str, params: dict, rule: str, tmp_path: Path) -> list:
    """The rule's findings on one reproducer, with no observed cells (the catalogue's expectations alone)."""
    return [f for f in lint_model(write.build(get_case(case_id), params).model, observed=tmp_path) if f.rule == rule]


def _cells(paths: list, bundle_prefix: str) -> list:
    cells = [json.loads(line) for p in paths for line in (REPO / p).read_text().splitlines() if line.strip()]
    return [c for c in cells if str(c.get("bundle", "")).startswith(bundle_prefix)]


@pytest.fixture(scope="module")
def archs(tmp_path_factory) -> Path:
    """The YOLO- and BERT-style models quantized by quantize_static with TensorRT settings (check.arch_models)."""
    from check.arch_models import write_models

    out = tmp_path_factory.mktemp("archs")
    write_models(out, only=["yolo_csp_trt", "bert_encoder_trt"])
    return out


def test_quantize_statics_silu_is_predicted_to_fail_the_build_on_the_observed_8x_versions(tmp_path):
    found = _findings("silu_qdq", {"form": "quantize_static"}, "silu_qdq", tmp_path)
    assert {(f.engine, f.versions, f.predicted) for f in found} == {
        ("tensorrt", "==8.6.0", "build fails"), ("tensorrt", "==8.5.3.1", "build fails"),
        ("tensorrt", ">=8.5.1,<8.5.3", "build fails")}  # the reproducer's own cells on 8.5.1.7 and 8.5.2.2
    assert all(f.node == "node_of_conv" and f.source.startswith("reports/observed/") for f in found)


@pytest.mark.parametrize("form", ["no_sigmoid_qdq", "output_qdq", "conv_only"])
def test_the_other_silu_forms_are_matched_and_predicted_int8_as_observed(form, tmp_path):
    from cases.silu_qdq import silu_form
    from check.lint import index

    model = write.build(get_case("silu_qdq"), {"form": form}).model
    g = index(model)
    assert silu_form(g, next(n for n in g.nodes if n.op_type == "Conv")) == form
    found = _findings("silu_qdq", {"form": form}, "silu_qdq", tmp_path)
    assert {(f.engine, f.versions, f.predicted) for f in found} == {("tensorrt", ">=8.5,<8.7", "int8")}
    assert all(f.source.startswith("reports/observed/nvidia-h100/seeds-024-025/") for f in found)


def test_a_float_silu_and_a_grouped_convs_swish_are_not_seed_024s(tmp_path):
    assert not _findings("silu_qdq", {"form": "implicit"}, "silu_qdq", tmp_path)  # no Q/DQ: the float-model rule
    params = {"cpg": 1, "weights": "per_channel", "activation": "int8", "output_qdq": True, "epilogue": "swish"}
    assert not _findings("grouped_conv", params, "silu_qdq", tmp_path)  # a depthwise Conv's Swish is seed 003's
    assert _findings("grouped_conv", params, "grouped_conv", tmp_path)


def test_the_lint_predicts_the_observed_yolo_build_failures_with_no_miss(archs):
    """Every SiLU of the YOLO-style model is quantize_static's form; the H100 and H200 cells (a range profile and a
    fixed shape) failed at build on 8.5.3.1 and 8.6.0, as predicted for each of them. Seed 024 was made from these
    cells: this is the lint on what it learned from, not a held-out score."""
    found = [f for f in lint_path(archs / "yolo_csp_trt.onnx") if f.rule == "silu_qdq"]
    assert "/model.0/conv/Conv" in {f.node for f in found}
    paths = [f"reports/observed/{gpu}/check-archs/tensorrt-{v}.jsonl"
             for gpu in ("nvidia-h100", "nvidia-h200") for v in ("8.5.3.1", "8.6.0")]
    cells = _cells(paths, "user_model/yolo_csp_trt")
    rows = compare(found, cells)
    assert len(cells) == 6 and rows and all(r.agrees for r in rows)
    assert {r.version for r in rows} == {"8.5.3.1", "8.6.0"}


@pytest.mark.parametrize("params, rtx", [
    ({"constant": "scalar", "op": "mul"}, {("==1.7.1.116", "build fails")}),
    ({"constant": "scalar", "op": "add"}, set()),  # refused in our runs too, but no committed source says so
])
def test_a_0d_constant_is_matched_to_seed_025(params, rtx, tmp_path):
    model = write.build(get_case("scalar_quantized_constant"), params).model
    found = lint_model(model, observed=tmp_path)
    assert {(f.versions, f.predicted) for f in found if f.rule == "scalar_quantized_constant"
            and f.engine == "tensorrt-rtx"} == rtx
    assert not [f for f in found if f.rule == "dq_constant_into_add"]  # seed 004's DQ form is a shaped constant


def test_a_shaped_constant_between_qdq_is_int8_but_seed_004s_bare_form_float(tmp_path):
    """Both are an INT8 initializer -> DQ -> Add; the observed 8.x cells say INT8 where the other operand and the
    output are Q/DQ'd (seed 025, one_element) and float where neither is (seed 004's int8_const_dq_op)."""
    model = write.build(get_case("scalar_quantized_constant"), {"constant": "one_element", "op": "add"}).model
    found = [f for f in lint_model(model, observed=tmp_path) if f.engine == "tensorrt"]
    assert "scalar_quantized_constant" not in {f.rule for f in found}
    assert {(f.rule, f.predicted) for f in found} == {("dq_constant_into_add", "int8")}
    bare = write.build(get_case("quantized_constant_plugin"), {"form": "int8_const_dq_op"}).model
    cells = [dict(json.loads(line), _file="f.jsonl")
             for line in (REPO / "reports/observed/nvidia-h100/trt-8.6.0.jsonl").read_text().splitlines()
             if '"case": "quantized_constant_plugin"' in line]
    from cases.quantized_constant_plugin import CASE as PLUGIN
    from check.lint import case_findings, index
    g = index(bare)
    add = next(n for n in g.nodes if n.op_type == "Add")
    [match] = PLUGIN.pattern.find(g, add)
    assert {f.predicted for f in case_findings(PLUGIN, match.rule, match, "", cells)} == {"float"}


def test_the_lint_predicts_the_observed_rtx_refusal_of_the_producer_transformer(tmp_path):
    """The committed no-GPU TensorRT-RTX 1.7.1.116 cell refused the transformer's 0-d 1/sqrt(d) at build."""
    from check.producers import produce

    (made,) = produce(tmp_path, only=["transformer_s8_per_channel_float_bias"])
    found = [f for f in lint_path(tmp_path / made.path)
             if f.rule == "scalar_quantized_constant" and f.engine == "tensorrt-rtx"]
    assert [(f.node, f.engine, f.predicted) for f in found] == [("scale", "tensorrt-rtx", "build fails")]
    cells = _cells(["reports/observed/no-gpu/check/tensorrt-rtx-1.7.1.116.jsonl"],
                   "user_model/ort_transformer_s8_per_channel_float_bias")
    assert [(r.observed, r.agrees) for r in compare(found, cells)] == [("build fails", True)]


def test_berts_gelu_half_is_the_node_the_rtx_error_names(archs):
    found = {f.node for f in lint_path(archs / "bert_encoder_trt.onnx") if f.rule == "scalar_quantized_constant"}
    assert "/encoder/layer.0/intermediate/intermediate_act_fn/Mul_1" in found  # ...intermediate_act_fn.half_quantized


def test_the_fix_names_the_producer_option(tmp_path):
    (f,) = [f for f in _findings("scalar_quantized_constant", {"constant": "scalar", "op": "mul"},
                                 "scalar_quantized_constant", tmp_path) if f.engine == "tensorrt-rtx"]
    assert "nodes_to_exclude" in f.fix and "[1]" in f.fix and "inv_sqrt_d_quantized" in f.detail


def _archs_cells() -> list:
    return [f"reports/observed/{gpu}/check-archs/tensorrt-{v}.jsonl"
            for gpu in ("nvidia-h100", "nvidia-h200") for v in ("8.5.3.1", "8.6.0")]


def test_held_out_the_yolo_model_gets_no_silu_prediction_and_no_hidden_agreement(archs):
    """Without seed 024 (made from its cells) the lint says nothing of the SiLU; seed 032's pattern (its CSP split's
    sibling 1x1 Convs, requantized) foresees the build failure, which the SiLU causes: agreement at the network only,
    and no node precision behind the predicted build failure."""
    found = [f for f in lint_path(archs / "yolo_csp_trt.onnx", reach=False) if f.engine == "tensorrt"]
    assert any(f.case == "silu_qdq" for f in found)
    held = [f for f in found if not f.learned_from({"silu_qdq"})]
    assert not any(f.case == "silu_qdq" for f in held)
    assert {f.case for f in held if f.predicted == "build fails"} == {"two_conv_fanout_qdq"}
    rows = compare(held, _cells(_archs_cells(), "user_model/yolo_csp_trt"))
    assert rows and not any(r.news for r in rows)
    assert not [r for r in rows if r.predicted == "int8"], "the builder is predicted to refuse it: no kernel runs"
    assert [r for r in compare(held, _cells(_archs_cells(), "user_model/yolo_csp_trt")) if r.predicted == "build fails"]


def test_held_out_the_bert_layers_failures_are_misses_of_the_network_nothing_foresaw(archs):
    """Without seed 025 the lint predicts the BERT layer's bias Adds INT8 (seed 018, from the producer transformer's
    cells); TensorRT 8.6.0 failed to build it and 8.5.3.1 to parse it: two misses, one per network and version."""
    found = [f for f in lint_path(archs / "bert_encoder_trt.onnx") if f.engine == "tensorrt"]
    held = [f for f in found if not f.learned_from({"scalar_quantized_constant"})]
    assert held and {(f.rule, f.predicted) for f in held} == {("bias_add_after_qdq", "int8"),
                                                              ("matmul_per_channel", "int8")}
    rows = compare(held, _cells(_archs_cells(), "user_model/bert_encoder_trt"))
    assert sorted((r.version, r.observed) for r in rows if r.news) == [("8.5.3.1", "parse fails"),
                                                                       ("8.6.0", "build fails")]
    assert all(r.level == "model" for r in rows if r.news)
    assert {r.observed for r in rows if r.level == "node"} == {"parse fails", "build fails"}, "not 'not observable'"


def test_no_finding_names_versions_without_a_url_or_the_committed_cells_it_was_read_from(tmp_path):
    """Every finding on every catalogue reproducer: a version-specific one cites an upstream URL or a committed
    results file or folder (documented or observed), and an observed one names its case, or the cases a source rule's
    observation was read from (rule_cases)."""
    from cases import all_cases
    from check.lint import rule_cases

    for case in all_cases():
        for params in case.variants():
            for f in lint_model(write.build(case, params).model):
                if f.basis == "documented":
                    assert f.source.startswith("https://"), (case.id, f)
                else:
                    assert (REPO / f.source).exists() and (f.case or rule_cases(f.source)), (case.id, f)
