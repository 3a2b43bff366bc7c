"""core.numerics reads an output of a type numpy lacks (float8, int4) the way its bundle keeps the reference, however
the engine hands it back: codes, ml_dtypes values, decoded floats or packed nibbles; a different value is still one."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from core import numerics

VALUES = np.array([0.0, 0.5, 1.0, 448.0, -96.0], dtype=np.float32)
CODES = VALUES.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
META = {"outputs": {"y": {"dtype": "uint8", "shape": [5], "codes": "float8_e4m3fn", "step": 1.0}},
        "tolerance_steps": 0.5}


def test_float8_codes_values_and_ml_dtypes_arrays_all_read_as_the_reference():
    for given in (CODES, VALUES, VALUES.astype(ml_dtypes.float8_e4m3fn)):
        assert numerics.compare(META, {"y": given}, {"y": CODES}).problems == ()


def test_a_float8_value_one_code_off_is_wrong_by_one_step():
    off = VALUES.copy()
    off[1] = 0.5625  # the next float8_e4m3fn value after 0.5
    found = numerics.compare(META, {"y": off}, {"y": CODES})
    assert found.worst_steps == 1.0 and found.problems


def test_packed_int4_is_unpacked_low_nibble_first_as_onnx_stores_it():
    values = np.array([[1, 2, 3], [5, -8, -6]], dtype=np.int8)
    packed = np.array([0x21, 0x53, 0xA8], dtype=np.uint8).view(np.int8)  # OpenVINO hands int4 back this way
    assert numerics.as_codes(packed, "int4", (2, 3)).tolist() == values.tolist()
    meta = {"outputs": {"y": {"codes": "int4", "step": 1.0}}, "tolerance_steps": 0.5}
    assert numerics.compare(meta, {"y": packed}, {"y": values}).problems == ()
    wrong = np.array([0x21, 0x53, 0xA9], dtype=np.uint8).view(np.int8)
    assert numerics.compare(meta, {"y": wrong}, {"y": values}).worst_steps == 1.0


def test_a_bundle_without_codes_is_judged_as_before():
    meta = {"outputs": {"y": {"step": 0.5}}, "tolerance_steps": 1.0}
    got = numerics.compare(meta, {"y": np.array([1.0, 2.0], np.float32)}, {"y": np.array([1.0, 2.25], np.float32)})
    assert got.worst_steps == 0.5 and not got.problems


def test_the_small_float_tables_are_ml_dtypes_own_for_every_code():
    """The judge ships alone in a bug bundle (numpy and its engine only): its own tables of the small float types agree
    with ml_dtypes on every code, both ways."""
    for name in numerics.SMALL_FLOATS:
        bits = 4 if name.startswith("float4") else 8
        theirs = np.arange(1 << bits, dtype=np.uint8).view(getattr(ml_dtypes, name)).astype(np.float64)
        ours = numerics.small_float_values(name)
        assert np.array_equal(ours, theirs, equal_nan=True), name
        finite = theirs[~np.isnan(theirs)]
        assert numerics.as_codes(finite, name, finite.shape).tolist() == \
            finite.astype(getattr(ml_dtypes, name)).view(np.uint8).tolist(), name
