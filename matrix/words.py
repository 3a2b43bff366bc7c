"""The words the reports share: lists said in prose, first lines, counts.

A leaf of the report package: it imports nothing from matrix/, so render, grid, diff and upgrade
all read it without importing each other. A cell's outcome (the stage that failed, what its nodes
ran in) is cases.outcome's, derived once; each view says it in its own words.
"""

from __future__ import annotations

from typing import Sequence


def say_list(items: Sequence[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def first_line(text: str) -> str:
    """The first line of a text, "" for none."""
    return text.strip().splitlines()[0] if text.strip() else ""


def clip(text: str, limit: int) -> str:
    """text cut at limit characters, " …" saying so."""
    return text if len(text) <= limit else text[:limit] + " …"


def many(n: int, one: str, more: str = "") -> str:
    """ "1 problem", "2 problems": a count with its noun in the number it takes (`more`: an irregular plural)."""
    return f"{n} {one if n == 1 else more or one + 's'}"
