"""The catalogue is the lint: every case declares its graph pattern, which matches the case's own reproducers (all but
the sweep's controls it declares) and, on the other cases' reproducers, exactly the cross-matches the cases declare
(Pattern.also_matches, Pattern.matched_by): no table here names a case, so a new case brings all it needs."""

from __future__ import annotations

import functools
from typing import Dict, List, Set, Tuple

import pytest

from cases import Case, all_cases, get_case, slug
from check.lint import index, lint_model, rule_words
from generators import write


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


def controls(case: Case) -> List[str]:
    """The reproducers of a case's sweep that its pattern's controls name, in sweep order: the ones it declines."""
    return [slug(p) for p in case.variants()
            if any(all(p.get(k) in v for k, v in c.items()) for c in case.pattern.controls)]


def declared_cross_matches() -> Dict[str, Set[str]]:
    """Pattern's case -> the other cases whose reproducers it matches, as the cases declare it: in the pattern's own
    module (also_matches) or in the other case's (matched_by)."""
    cross: Dict[str, Set[str]] = {}
    for case in all_cases():
        for other in case.pattern.also_matches:
            cross.setdefault(case.id, set()).add(other)
        for other in case.pattern.matched_by:
            cross.setdefault(other, set()).add(case.id)
    return cross


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.id)
def test_every_case_declares_its_pattern_and_it_matches_its_own_reproducers_but_its_controls(case):
    assert case.pattern is not None, f"case {case.id} declares no pattern (Case(pattern=...))"
    unmatched = _matrix()[0][case.id]
    assert unmatched == controls(case), f"{case.id}'s pattern does not match {unmatched}"


def test_cross_matches_between_cases_are_the_ones_the_cases_declare():
    cross = _matrix()[1]
    print("cross-matches (pattern's case: other cases' reproducers it matches):")
    for case in sorted(cross):
        print(f"  {case}: {', '.join(sorted(cross[case]))}")
    assert cross == declared_cross_matches()


def test_a_cross_match_is_declared_once_and_names_a_case():
    ids = {c.id for c in all_cases()}
    for case in all_cases():
        said = set(case.pattern.also_matches) | set(case.pattern.matched_by)
        assert said <= ids - {case.id}, case.id
        assert not [o for o in case.pattern.matched_by if case.id in get_case(o).pattern.also_matches], case.id


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
