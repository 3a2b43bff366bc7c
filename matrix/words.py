"""The words the reports share: the stage a failure stopped at, and lists said in prose.

A leaf of the report package: it imports nothing from matrix/, so render, grid, diff and upgrade
all read it without importing each other.
"""

from __future__ import annotations

from typing import Sequence

# The stage that failed, from the last stage a cell completed (cells record the last one completed).
FAILED_STAGE = {"": "load", "load": "build", "build": "run", "run": "compare", "compare": "compare"}


def say_list(items: Sequence[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def first_line(text: str) -> str:
    """The first line of a text, "" for none."""
    return text.strip().splitlines()[0] if text.strip() else ""
