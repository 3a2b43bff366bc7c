"""A run's columns, as data: what `python -m engines.run` hands `pytest tests/cells --cells-plan` (no pytest here).

A column is one engine version with its options over some bundles, written to one results file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Tuple

PLAN_SCHEMA = "qdq-matrix/plan/1"
PROGRESS_PREFIX = "[cells] "  # a running cell's heartbeat lines start with it (engines.run shows them as they come)


@dataclass(frozen=True)
class Column:
    """One column of a run: an engine version with its options over some bundles, written to one results file."""

    engine: str  # a name in cases.engines, or module:Class
    options: Dict[str, str] = field(default_factory=dict)  # every option of the engine's descriptor, resolved
    version: str = ""  # --engine-version: the version it must be
    python: str = ""  # the interpreter its TensorRT-family worker runs under, or that has its in-process engine
    isolate: bool = False  # --trt-isolate
    results: str = ""  # the results file; "" for results/<engine>-<version>-<hardware>[-<variant>].jsonl
    bundles: Tuple[str, ...] = ()  # the bundle ids to run, in order; () for every bundle the filters below keep
    only_cases: Tuple[str, ...] = ()
    plugins_only: bool = False
    label: str = ""  # its test ids' prefix ("" in a run of one column)
    command: str = ""  # how to run it again, as its cells record it ("" for pytest's own command line)
    reused: int = 0  # stored cells of it that engines.run found standing (not among `bundles`): counted, never run

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Column":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for k in ("bundles", "only_cases"):
            known[k] = tuple(known.get(k) or ())
        return cls(**known)


def write_plan(columns: List[Column], path: Path) -> Path:
    """The plan file that `pytest tests/cells --cells-plan PATH` runs."""
    path.write_text(json.dumps({"schema": PLAN_SCHEMA, "columns": [c.to_dict() for c in columns]}, indent=1),
                    encoding="utf-8")
    return path


def summary_path(plan: Path) -> Path:
    """Where the pytest controller of a plan writes what each column recorded (engines.pytest_cells), for engines.run
    to count: {"columns": [{"results", "reused", "written": {status: n}}], "stopped": why, or ""}."""
    return Path(plan).with_name(Path(plan).stem + "-summary.json")


def read_plan(path: Path) -> List[Column]:
    """The columns of a plan file; ValueError for one that is not a plan, or has none."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("schema") != PLAN_SCHEMA:
            raise ValueError(f"not a {PLAN_SCHEMA} file")
        columns = [Column.from_dict(c) for c in data["columns"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: {e}") from None
    if not columns:
        raise ValueError(f"{path}: no columns")
    return columns
