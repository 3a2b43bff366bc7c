"""cases/base.py's Case.defaults: an axis added to a case keeps its existing reproducers' ids and judgements."""

from __future__ import annotations

import pytest

from cases import bundle_id
from cases.base import Case, Expectation

SOURCE = "reports/observed/nvidia-h100/seed-032/trt-8.6.0.jsonl"


def _case(**extra) -> Case:
    """A case that first swept `a` and then gained the axis `b`, its first reproducers at b=old."""
    return Case(id="grown", seed="", title="t", links=(), axes={"a": ("x", "y"), "b": ("old", "new")},
                target_nodes=(), signatures=(), builder="m:f", expectations=(
                    Expectation("tensorrt", "==8.6.0", "fail", SOURCE, where={"a": ("x",), "b": ("old",)},
                                hardware="H100", basis="baseline"),), **extra)


def test_an_added_axis_at_its_default_is_left_out_of_the_id():
    case = _case(defaults={"b": "old"})
    assert bundle_id(case, {"a": "x", "b": "old"}) == "grown/a=x"
    assert bundle_id(case, {"a": "x", "b": "new"}) == "grown/a=x+b=new"
    assert bundle_id(_case(), {"a": "x", "b": "old"}) == "grown/a=x+b=old"


def test_a_cell_written_before_the_axis_existed_is_judged_at_its_default():
    old_cell = {"a": "x"}
    assert _case(defaults={"b": "old"}).expectation_for("tensorrt", "8.6.0", old_cell).outcome == "fail"
    assert _case().expectation_for("tensorrt", "8.6.0", old_cell) is None


def test_parameters_without_the_added_axis_take_its_default_in_axis_order():
    assert _case(defaults={"b": "old"}).with_defaults({"a": "y"}) == {"a": "y", "b": "old"}
    assert list(_case(defaults={"b": "old"}).with_defaults({"a": "y"})) == ["a", "b"]
    assert _case().with_defaults({"a": "y"}) == {"a": "y"}


def test_a_default_outside_the_sweep_is_refused():
    with pytest.raises(ValueError, match="default"):
        _case(defaults={"b": "gone"})
    with pytest.raises(ValueError, match="default"):
        _case(defaults={"c": "old"})
