"""core/schema.py's fast path says "valid" only where jsonschema does: on every committed observation line, and on
thousands of lines broken one field at a time."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from core import schema

REPO = Path(__file__).resolve().parents[2]
OBSERVED = REPO / "reports" / "observed"
WRONG_VALUES = (None, True, False, 0, -1, 1.5, "", "x", [], [1], {}, {"k": 1})


def committed_lines() -> List[Dict[str, Any]]:
    found = []
    for path in sorted(OBSERVED.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("schema") in schema.SCHEMA_FILES:
                found.append(record)
    return found


def paths(value: Any, here: Tuple[Any, ...] = ()) -> Iterator[Tuple[Any, ...]]:
    """Every place in a decoded record: dict keys and list indexes, depth first."""
    if isinstance(value, dict):
        for key, sub in value.items():
            yield here + (key,)
            yield from paths(sub, here + (key,))
    elif isinstance(value, list):
        for i, sub in enumerate(value[:3]):
            yield here + (i,)
            yield from paths(sub, here + (i,))


def broken(record: Dict[str, Any], rng: random.Random) -> Dict[str, Any]:
    """The record with one place changed: a wrong value, removed, or an unknown key beside it."""
    copied = copy.deepcopy(record)
    place = rng.choice(list(paths(copied)))
    parent = copied
    for step in place[:-1]:
        parent = parent[step]
    what = rng.random()
    if what < 0.7:
        parent[place[-1]] = rng.choice(WRONG_VALUES)
    elif what < 0.85 and isinstance(parent, dict):
        del parent[place[-1]]
    elif isinstance(parent, dict):
        parent["no_such_field"] = rng.choice(WRONG_VALUES)
    return copied


@pytest.fixture(scope="module")
def lines() -> List[Dict[str, Any]]:
    found = committed_lines()
    assert len(found) > 1000, "the committed observations are the test's data"
    return found


def test_the_fast_path_compiles_both_schemas():
    """Both schemas use only what the fast path knows; a new keyword would silently cost the speed back."""
    assert all(schema._accepts(kind) is not None for kind in schema.SCHEMA_FILES)


def test_it_accepts_every_committed_line_as_jsonschema_does(lines):
    for record in lines:
        assert schema._accepts(record["schema"])(record) == schema._validator(record["schema"]).is_valid(record)


def test_a_broken_line_is_valid_to_it_only_where_jsonschema_says_so(lines):
    rng = random.Random(20261127)
    refused = agreed = 0
    for record in rng.sample(lines, 400):
        for _ in range(10):
            line = broken(record, rng)
            kind = line.get("schema")
            fast = isinstance(kind, str) and kind in schema.SCHEMA_FILES and schema._accepts(kind)(line)
            slow = schema._validator(record["schema"]).is_valid(line)
            assert isinstance(schema.problems(line), list)  # whatever the value: its problems, never a crash
            assert not fast or slow, f"the fast path accepts a line jsonschema refuses: {json.dumps(line)[:300]}"
            agreed += fast == slow
            refused += not slow
    assert refused > 1000  # the mutations do break lines
    assert agreed == 4000  # and it is no stricter either, so jsonschema is asked only about a broken line


def test_problems_still_names_what_is_wrong(lines):
    line = copy.deepcopy(next(r for r in lines if r["schema"] == schema.CELL_SCHEMA))
    line["status"] = "maybe"
    assert schema.problems(line) and "status" in schema.problems(line)[0]


@pytest.mark.parametrize("kind", [{}, [], 5, None, True, {"schema": "qdq-matrix/cell/3"}])
def test_a_schema_field_of_any_type_is_a_problem_not_a_crash(kind):
    assert schema.problems({"schema": kind})


def test_an_unknown_keyword_leaves_jsonschema_alone_in_charge():
    with pytest.raises(schema._Unsupported):
        schema._compile({"type": "string", "pattern": "^a"})
