"""The words the reports share: the stage a failure stopped at, and lists said in prose.

A leaf of the report package: it imports nothing from matrix/, so render, grid, diff and upgrade
all read it without importing each other.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

# The stage that failed, from the last stage a cell completed (cells record the last one completed).
FAILED_STAGE = {"": "load", "load": "build", "build": "run", "run": "compare", "compare": "compare"}


def quantized_word(precision: Mapping[str, Mapping[str, Any]]) -> str:
    """The low-precision types a cell's target nodes ran in, for "built, FP8": INT8 unless its evidence says."""
    kinds = sorted({str(p.get("precision")) for p in precision.values()
                    if p.get("precision") in ("int8", "fp8", "int4", "fp4")})
    return " and ".join(k.upper() for k in kinds) or "INT8"


def say_list(items: Sequence[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def first_line(text: str) -> str:
    """The first line of a text, "" for none."""
    return text.strip().splitlines()[0] if text.strip() else ""
