"""--shape (fixed or min,opt,max), the defaults of dynamic dimensions, and the optimization profile they make."""

from __future__ import annotations

import pytest

from check import CheckError
from check.shapes import DEFAULT_BATCH, DEFAULT_DIM, InputShape, describe, parse_shape, parse_shapes, profile, resolve


def test_a_fixed_shape_and_a_min_opt_max_range_parse_like_trtexec():
    assert parse_shape("images:1x3x320x320") == ("images", InputShape.fixed((1, 3, 320, 320)))
    name, shape = parse_shape("images:1x3x320x320,4x3x640x640,8x3x640x640")
    assert name == "images" and shape.is_range
    assert (shape.min, shape.opt, shape.max) == ((1, 3, 320, 320), (4, 3, 640, 640), (8, 3, 640, 640))
    assert shape.text() == "1x3x320x320,4x3x640x640,8x3x640x640"
    assert parse_shape("a:b:1x2") == ("a:b", InputShape.fixed((1, 2))), "the last colon splits name from dims"


@pytest.mark.parametrize("text, says", [
    ("images=1x3", "write it as NAME:1x3x224x224"), ("images:1x3,2x3", "write it as"), ("images:0x3", "write it as"),
    ("images:1x3,2x3x4,4x3", "different ranks"), ("images:4x3,2x3,8x3", "min <= opt <= max"),
    ("images:1x3,2x3,1x3", "min <= opt <= max"),
])
def test_a_malformed_or_unordered_shape_is_refused_with_its_rule(text, says):
    with pytest.raises(CheckError, match=says):
        parse_shape(text)


def test_the_same_input_twice_is_refused():
    with pytest.raises(CheckError, match="given twice"):
        parse_shapes(["x:1x3", "x:2x3"])


def test_dynamic_dimensions_take_the_documented_defaults_and_each_is_recorded():
    declared = {"input_ids": ["batch", "seq"], "mask": ["batch", "seq"], "image": ["dim0", 3, "h", "w"]}
    shapes, assumed = resolve(declared, {})
    assert shapes["input_ids"].opt == shapes["mask"].opt == (DEFAULT_BATCH, DEFAULT_DIM) == (1, 64)
    assert shapes["image"].opt == (1, 3, 64, 64) and not shapes["image"].is_range
    assert [(a.input, a.axis, a.dim, a.value) for a in assumed] == [
        ("input_ids", 0, "batch", 1), ("input_ids", 1, "seq", 64), ("mask", 0, "batch", 1), ("mask", 1, "seq", 64),
        ("image", 0, "dim0", 1), ("image", 2, "h", 64), ("image", 3, "w", 64)]
    assert any("batch = 1 (input_ids[0], mask[0])" in line for line in describe(shapes, assumed, {}))


def test_a_dimension_named_by_one_input_sizes_every_input_that_shares_it():
    declared = {"input_ids": ["batch", "seq"], "mask": ["batch", "seq"], "other": ["seq"]}
    given = {"input_ids": InputShape((1, 8), (2, 32), (4, 128))}
    shapes, assumed = resolve(declared, given)
    assert shapes["mask"] == given["input_ids"] and assumed == []
    assert shapes["other"] == InputShape((8,), (32,), (128,)), "seq is the second dimension there, batch is not"


def test_shapes_that_do_not_fit_the_model_are_refused():
    declared = {"x": ["N", 3, 8, 8], "y": ["N", 4]}
    with pytest.raises(CheckError, match=r"does not fit the declared shape \[N, 3, 8, 8\]"):
        resolve(declared, {"x": InputShape.fixed((1, 3, 8, 9))})
    with pytest.raises(CheckError, match="does not fit"):
        resolve(declared, {"x": InputShape.fixed((1, 3, 8))})
    with pytest.raises(CheckError, match="give dimension N different sizes"):
        resolve(declared, {"x": InputShape.fixed((1, 3, 8, 8)), "y": InputShape.fixed((2, 4))})
    with pytest.raises(CheckError, match="input 'z' declares no shape: give it with --shape z:"):
        resolve({"z": ["?"]}, {})


def test_the_profile_holds_the_dynamic_inputs_only():
    declared = {"x": ["N", 3, 8, 8], "scale": [1]}
    shapes, _ = resolve(declared, {"x": InputShape((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))})
    assert profile(declared, shapes) == {"x": {"min": [1, 3, 8, 8], "opt": [2, 3, 8, 8], "max": [4, 3, 8, 8]}}
    assert profile({"x": [1, 3, 8, 8]}, resolve({"x": [1, 3, 8, 8]}, {})[0]) == {}


def test_one_shape_for_several_models_fixes_only_what_each_leaves_open():
    """A folder checked with --shape x:1x3x48x320: a recognizer with open batch and width takes it, a classifier
    exported at 224x224 keeps its own shape, and one that declares its height keeps that height."""
    from check.shapes import fit

    given = {"x": InputShape.fixed((1, 3, 48, 320))}
    assert fit({"x": ["batch", 3, 48, "width"]}, given) == (given, [])
    fitted, kept = fit({"x": [1, 3, 224, 224]}, given)
    assert fitted == {} and [(k.input, k.declared, k.axes) for k in kept] == [("x", (1, 3, 224, 224), (0, 1, 2, 3))]
    assert fit({"x": [1, 3, 48, 320]}, given) == ({}, []), "a static input that the shape fits: nothing to say"
    ranged = {"x": InputShape((1, 3, 48, 160), (2, 3, 48, 320), (4, 3, 48, 640))}
    fitted, kept = fit({"x": ["batch", 3, 32, "width"]}, ranged)
    assert fitted["x"] == InputShape((1, 3, 32, 160), (2, 3, 32, 320), (4, 3, 32, 640))
    assert [(k.axes, k.given) for k in kept] == [((2,), "1x3x48x160,2x3x48x320,4x3x48x640")]
    assert fit({"input_ids": ["batch", "seq"]}, given) == ({}, []), "another model's input: not this model's business"


def test_a_shape_of_the_wrong_rank_for_an_open_input_is_still_refused():
    from check.shapes import fit

    with pytest.raises(CheckError, match=r"--shape x:1x3x48 has 3 dimensions; input x is \[batch, 3, 48, width\]"):
        fit({"x": ["batch", 3, 48, "width"]}, {"x": InputShape.fixed((1, 3, 48))})
    assert fit({"x": [1, 3, 224, 224]}, {"x": InputShape.fixed((1, 3, 48))})[0] == {}, "a static input keeps its own"
