"""A cell's outcome, derived once: what happened, the stage that failed, and what its target nodes ran in.

Every view (the grid, the plots, the targets, the diff, "Your models", the lint's prediction table, bug bundles and
their repro.py) maps this one record to its own words and never derives it again from a cell's fields. A cell
records the last stage it reached (`Cell.last_stage`); the stage that failed is the next one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from core.cell import QUANTIZED_PRECISIONS, Cell
from core.words import FAILED, FAILED_STAGE, IDLE, KINDS, STATUSES, WORKED


@dataclass(frozen=True)
class Outcome:
    """One cell's outcome."""

    status: str  # what happened (core.words.STATUSES)
    failed_stage: str = ""  # fail, crashed: "load" (the TensorRT family's ONNX parser), "build", "run", "compare"
    fused: Optional[bool] = None  # pass and built: every target node quantized (True), one in float (False), unknown
    quantized: str = ""  # pass and built: the low-precision types its target nodes ran in, "INT8 and FP8" ("" none)

    @property
    def failed(self) -> bool:
        return self.status in FAILED

    @property
    def worked(self) -> bool:
        return self.status in WORKED

    @property
    def idle(self) -> bool:
        """Nothing ran: skipped, not run here, or not applicable."""
        return self.status in IDLE

    @property
    def kind(self) -> str:
        """The outcome in one word: "int8", "float" or "passes" (pass), "built-int8", "built-float" or "built",
        "fails-at-<stage>", "crashed", "harness_error", or the idle status."""
        if self.status == "pass":
            return {True: "int8", False: "float"}.get(self.fused, "passes")
        if self.status == "built":
            return {True: "built-int8", False: "built-float"}.get(self.fused, "built")
        kind = f"fails-at-{self.failed_stage}" if self.status == "fail" else self.status
        if kind not in KINDS:  # a status or a failed stage core.words does not know: no view has words for it
            raise ValueError(f"no outcome kind {kind!r}: not one of {KINDS}")
        return kind


def outcome(cell: Union[Cell, Mapping[str, Any]]) -> Outcome:
    """The outcome of a cell, or of a cell's record as JSON holds it (the lint reads records)."""
    get = (lambda k, d=None: getattr(cell, k, d)) if isinstance(cell, Cell) else cell.get
    status = str(get("status") or "")
    if status not in STATUSES:
        raise ValueError(f"unknown cell status {status!r}: not one of {STATUSES}")
    failed = FAILED_STAGE[str(get("last_stage") or "")] if status in FAILED else ""
    worked = status in WORKED
    return Outcome(status, failed, get("fused") if worked else None,
                   quantized_word(get("precision") or {}) if worked else "")


def quantized_word(precision: Mapping[str, Mapping[str, Any]]) -> str:
    """The low-precision types target nodes ran in, "INT8 and FP8"; "" where none did."""
    kinds = sorted({str(p.get("precision")) for p in precision.values() if p.get("precision") in QUANTIZED_PRECISIONS})
    return " and ".join(k.upper() for k in kinds)
