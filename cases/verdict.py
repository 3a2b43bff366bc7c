"""A cell's verdict against the case's documented expectation."""

from __future__ import annotations

from typing import Optional, Tuple

from cases.base import Expectation


def judge(expectation: Optional[Expectation], status: str, fused: Optional[bool]) -> Tuple[str, str]:
    """(verdict, explanation) for an observed status against what the sources document."""
    if status in ("skipped", "not_run"):
        return "not run", "the engine did not run here"
    failed = status in ("fail", "crashed")
    if expectation is None or expectation.outcome == "unknown":
        if failed:
            return "new failure", f"{status}, and no source documents a failure here"
        return "undocumented", "passed; no source documents this cell"
    where = f" ({expectation.source}" + (f", on {expectation.hardware}" if expectation.hardware else "") + ")"
    if expectation.outcome == "fail":
        if failed:
            return "as documented", "fails as documented" + where
        return "fixed", "documented to fail" + where + ", but it passed"
    if failed:
        return "regressed", f"documented to pass{where}, but it {status}"
    if expectation.outcome == "int8" and fused is False:
        return "regressed", "documented to run in INT8" + where + ", but a target node fell back to float"
    if expectation.outcome == "not_int8" and fused is True:
        return "fixed", "documented to fall back to float" + where + ", but every target node ran in INT8"
    return "as documented", "passes as documented" + where


UNEXPECTED = ("fixed", "regressed", "new failure")
