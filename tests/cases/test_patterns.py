"""The catalogue is the lint: every case declares its graph pattern, which matches the case's own reproducers (all but
the sweep's controls it declines) and, on the other cases' reproducers, exactly the known cross-matches."""

from __future__ import annotations

import functools
from typing import Dict, List, Set, Tuple

import pytest

from cases import all_cases, slug
from check.lint import index, lint_model, rule_words
from generators import write

# The controls each matcher declines (Pattern.controls): reproducers of the sweep that do not show the problem.
DECLINED = {
    "q_output_type": ["variant=q_dq_chain+activation=int8+plugin=none"],  # a plain INT8 Q/DQ chain: nothing to say
    "convtranspose_q_fusion": ["op=conv+follower=none", "op=conv+follower=q", "op=conv+follower=concat_q"],  # a Conv
    "convtranspose_grouped": ["groups=1+kernel=4+output_qdq=yes", "groups=1+kernel=4+output_qdq=no",
                              "groups=1+kernel=2+output_qdq=yes", "groups=1+kernel=2+output_qdq=no"],  # dense
    "bias_add_after_qdq": ["op=matmul+bias=float+output_qdq=yes", "op=matmul+bias=float+output_qdq=no",
                           "op=conv+bias=float+output_qdq=yes", "op=conv+bias=float+output_qdq=no"],  # float bias
    "qdq_scale_dtype_mismatch": ["op=matmul+scale=float16", "op=conv+scale=float16"],  # scale type = data type
    "silu_qdq": ["form=implicit"],  # no Q/DQ at all: the float-model rule speaks for it
    "scalar_quantized_constant": ["constant=one_element+op=mul"],  # a shaped constant into Mul: the fix itself
    # the sweep's controls: one Conv, float outputs, siblings of another kernel or stride, the merged form
    "two_conv_fanout_qdq": [
        f"consumers={c}+output_qdq={o}+size={s}+kernel={k}+weights={w}+siblings={sib}+rewrite={r}"
        for c, o, s, k, w, sib, r in (
            ("two", "yes", "detector", "1x1", "per_channel", "alike", "merged"),
            ("two", "yes", "small", "1x1", "per_channel", "alike", "merged"),
            ("two", "yes", "small", "1x1", "per_channel", "other_kernel", "none"),
            ("two", "yes", "small", "1x1", "per_channel", "other_stride", "none"),
            ("two", "yes", "small", "1x1", "per_tensor", "alike", "merged"),
            ("two", "yes", "small", "3x3", "per_channel", "alike", "merged"),
            ("two", "no", "detector", "1x1", "per_channel", "alike", "none"),
            ("two", "no", "small", "1x1", "per_channel", "alike", "none"),
            ("two", "no", "small", "1x1", "per_tensor", "alike", "none"),
            ("two", "no", "small", "3x3", "per_channel", "alike", "none"),
            ("two", "identity", "detector", "1x1", "per_channel", "alike", "merged"),
            ("two", "identity", "small", "1x1", "per_channel", "alike", "merged"),
            ("two", "identity", "small", "1x1", "per_channel", "other_kernel", "none"),
            ("two", "identity", "small", "1x1", "per_channel", "other_stride", "none"),
            ("two", "relu_qdq", "detector", "1x1", "per_channel", "alike", "merged"),
            ("two", "relu_qdq", "small", "1x1", "per_channel", "alike", "merged"),
            ("two", "concat_qdq", "detector", "1x1", "per_channel", "alike", "merged"),
            ("two", "concat_qdq", "small", "1x1", "per_channel", "alike", "merged"),
            ("one", "yes", "detector", "1x1", "per_channel", "alike", "none"),
            ("one", "yes", "small", "1x1", "per_channel", "alike", "none"),
            ("one", "no", "detector", "1x1", "per_channel", "alike", "none"),
            ("one", "no", "small", "1x1", "per_channel", "alike", "none"),
            ("one", "identity", "small", "1x1", "per_channel", "alike", "none"),
            ("one", "relu_qdq", "small", "1x1", "per_channel", "alike", "none"),
            ("three", "yes", "small", "1x1", "per_channel", "alike", "merged"),
            ("three", "no", "small", "1x1", "per_channel", "alike", "none"),
        )
    ],
}
# Which cases' patterns also match another case's reproducers (pattern's case -> the cases whose reproducers it
# matches): a graph can show more than one known problem, and these are the ones the catalogue's own models show.
CROSS_MATCHES = {
    "convtranspose_q_fusion": {"convtranspose_grouped", "convtranspose_weight_axis"},
    "convtranspose_weight_axis": {"convtranspose_grouped", "convtranspose_q_fusion"},
    "dq_blocked_axis": {"dq_blocked_rank1", "nvfp4_two_level_scales"},
    "dq_blocked_rank1": {"dq_blocked_axis", "nvfp4_two_level_scales"},
    "dynamic_quantize": {"dynamic_quantize_asymmetric"},
    "float_qdq_types": {"fp4_weight_only", "fp8_conv_stack", "fp8_qdq"},
    "fp16_quantize_rounding": {"fp16_scale_qdq", "qdq_scale_dtype_mismatch"},
    "fp16_scale_qdq": {"qdq_scale_dtype_mismatch"},
    "fp4_weight_only": {"float_qdq_types"},
    "fp8_conv_stack": {"fp8_qdq"},
    "fp8_qdq": {"fp8_conv_stack"},
    "int4_blocked_weights": {"int4_matmulnbits_fusion"},
    "int4_matmulnbits_fusion": {"int4_blocked_weights"},
    "matmul_per_channel": {"bias_add_after_qdq", "fp16_scale_qdq", "qdq_scale_dtype_mismatch",
                           "transformer_qdq_pattern"},
    "mxfp8_block_scales": {"float_qdq_types"},
    "q_output_type": {"fp16_quantize_rounding", "grouped_conv"},
    "qlinear_rounding_ties": {"bias_add_after_qdq", "convtranspose_q_fusion", "grouped_conv", "resize_qdq", "silu_qdq",
                              "two_conv_fanout_qdq", "zero_scale_qdq"},
    "resize_linear_qdq_drop": {"resize_qdq"},
    "resize_qdq": {"resize_linear_qdq_drop"},
}


@functools.lru_cache(maxsize=None)
def _matrix() -> Tuple[Dict[str, List[str]], Dict[str, Set[str]]]:
    """(case -> its reproducers its own pattern does not match, pattern's case -> other cases whose reproducers it
    matches), over every reproducer of the catalogue, each graph indexed once."""
    cases = all_cases()
    unmatched: Dict[str, List[str]] = {c.id: [] for c in cases}
    cross: Dict[str, Set[str]] = {}
    for case in cases:
        for params in case.variants():
            g = index(write.build(case, params).model)
            for other in cases:
                hit = any(other.pattern.find(g, n) for n in g.nodes)
                if other.id == case.id and not hit:
                    unmatched[case.id].append(slug(params))
                elif other.id != case.id and hit:
                    cross.setdefault(other.id, set()).add(case.id)
    return unmatched, cross


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.id)
def test_every_case_declares_its_pattern_and_it_matches_its_own_reproducers(case):
    assert case.pattern is not None, f"case {case.id} declares no pattern (Case(pattern=...))"
    unmatched = _matrix()[0][case.id]
    assert unmatched == DECLINED.get(case.id, []), f"{case.id}'s pattern does not match {unmatched}"


@pytest.mark.parametrize("case", [c for c in all_cases() if c.id in DECLINED], ids=lambda c: c.id)
def test_a_declined_reproducer_is_one_of_the_controls_the_case_declares(case):
    for params in case.variants():
        if slug(params) in DECLINED[case.id]:
            control = any(all(params.get(k) in v for k, v in c.items()) for c in case.pattern.controls)
            assert control, f"{case.id}: {slug(params)} is declined but no declared control"


def test_cross_matches_between_cases_are_the_known_ones():
    cross = _matrix()[1]
    print("cross-matches (pattern's case: other cases' reproducers it matches):")
    for case in sorted(cross):
        print(f"  {case}: {', '.join(sorted(cross[case]))}")
    assert cross == CROSS_MATCHES


def test_every_rule_a_pattern_reports_has_its_words_once():
    words = rule_words()
    for case in all_cases():
        assert set(case.pattern.rules) <= set(words) and all(case.pattern.rules[r] == words[r]
                                                              for r in case.pattern.rules)


def test_a_new_case_brings_its_rule_with_it(monkeypatch):
    """The lint has no map of its own: a case added to the catalogue is linted by its own pattern."""
    import check.lint as lint
    from cases.pattern import Match, Pattern
    from cases.two_conv_fanout_qdq import CASE

    model = write.build(CASE, {"consumers": "one", "output_qdq": "no", "size": "small"}).model
    assert not [f for f in lint_model(model) if f.rule == "every_conv"]
    fake = Pattern(rules={"every_conv": "any Conv"}, ops=("Conv",),
                   match=lambda g, n: [Match(n.name or n.output[0], {"consumers": "two", "output_qdq": "yes",
                                                                     "siblings": "alike", "rewrite": "none"})])
    monkeypatch.setattr(lint, "_patterns", lambda: ((CASE, fake),))
    found = [f for f in lint.lint_model(model) if f.rule == "every_conv"]
    assert found and {f.case for f in found} == {"two_conv_fanout_qdq"} and "catalogue case 032" in found[0].detail
