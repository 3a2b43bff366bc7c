"""The cell record as a merge makes it: read from a record, changed field by field, checked as __init__ checks."""

from __future__ import annotations

import dataclasses
import json

import pytest

from core.cell import SCHEMA, Cell

RECORD = {"bundle": "q_output_type/out=int8", "case": "q_output_type", "params": {"out": "int8"}, "digest": "d",
          "engine": "tensorrt", "engine_version": "10.3.0", "hardware": "NVIDIA H200 (sm_90)", "status": "pass",
          "verdict": "undocumented", "schema": SCHEMA}


def test_a_record_read_is_the_cell_the_constructor_makes_each_with_its_own_defaults():
    one, two = Cell.from_dict(dict(RECORD)), Cell.from_dict(dict(RECORD))
    assert one == Cell(**RECORD) and one.to_json() == Cell(**RECORD).to_json()
    one.warnings.append("w")
    assert two.warnings == [] and Cell.from_dict(dict(RECORD)).run == {}  # no default shared between cells


def test_a_changed_cell_is_what_dataclasses_replace_makes_and_is_checked_alike():
    cell = Cell.from_dict(json.loads(json.dumps(RECORD)))
    changes = {"verdict": "fixed", "explanation": "it passed", "run": {"source": "local"}}
    assert cell.changed(**changes) == dataclasses.replace(cell, **changes)
    assert cell.verdict == "undocumented"  # the cell it came from is as it was
    with pytest.raises(ValueError, match="status"):
        cell.changed(status="exploded")
    with pytest.raises(TypeError, match="no fields"):
        cell.changed(colour="red")
