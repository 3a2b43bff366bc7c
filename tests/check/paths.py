"""Where `python -m check` puts a model's files: <slug>-<10 hex digits of the model's id><suffix> (an unusable model's
report: <slug>-<10 hex digits>-unusable<suffix>)."""

from __future__ import annotations

import re
from pathlib import Path


def report_file(folder: Path, slug: str, suffix: str = ".json") -> Path:
    """The one report of a model in a report folder."""
    stem = re.compile(rf"{re.escape(slug)}-[0-9a-f]{{10}}(-unusable)?")
    found = [p for p in folder.glob(f"{slug}-*{suffix}") if stem.fullmatch(p.stem)]
    assert len(found) == 1, found
    return found[0]
