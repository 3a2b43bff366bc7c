"""A cell's verdict against the case's documented expectation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

from cases.base import Case, Expectation
from cases.cell import Cell
from cases.common import signatures_of


def judge(expectation: Optional[Expectation], status: str, fused: Optional[bool]) -> Tuple[str, str]:
    """(verdict, explanation) for an observed status against what the sources document."""
    if status in ("skipped", "not_run"):
        return "not run", "the engine did not run here"
    if status == "not_applicable":
        return "not applicable", "this engine version removed the API the reproducer's documented path needs"
    if status == "built":
        return _judge_built(expectation, fused)
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


def _judge_built(expectation: Optional[Expectation], fused: Optional[bool]) -> Tuple[str, str]:
    """A plan built ahead of time that this machine cannot run: judged on parse, build and per-node precision."""
    numerics = "; its numerics were not run here"
    if expectation is None or expectation.outcome == "unknown":
        return "undocumented", "built; no source documents this cell" + numerics
    where = f" ({expectation.source}" + (f", on {expectation.hardware}" if expectation.hardware else "") + ")"
    if expectation.outcome == "fail":
        if expectation.stage in ("load", "build"):
            return "fixed", f"documented to fail at {expectation.stage}{where}, but it built" + numerics
        return "not run", f"built; the documented failure{where} is at run time, which is not possible here"
    if expectation.outcome == "int8" and fused is False:
        return "regressed", "documented to run in INT8" + where + ", but the built plan computes a target in float"
    if expectation.outcome == "not_int8" and fused is True:
        return "fixed", "documented to fall back to float" + where + ", but the built plan is quantized throughout"
    return "as documented", "built as documented" + where + numerics


UNEXPECTED = ("fixed", "regressed", "new failure")


def match_signatures(case: Case, engine: str, text: str, kind: str) -> List[str]:
    """Names of the signatures of one kind that occur in text: the case's own, then its engine's (cases.common)."""
    return [s.name for s in signatures_of(case, engine) if s.kind == kind and s.search(text)]


def cell_context(hardware_detail: Mapping[str, str], variant: Mapping[str, str]) -> Dict[str, str]:
    """What an expectation's `when` filter is matched against: the CPU's INT8 level and the column options."""
    context = dict(variant)
    if hardware_detail.get("isa_level"):
        context["isa"] = hardware_detail["isa_level"]
    return context


def expectation_record(expectation: Optional[Expectation]) -> Dict[str, Any]:
    """The expectation a verdict was judged against, as stored in a cell."""
    if expectation is None:
        return {}
    return {
        "outcome": expectation.outcome, "versions": expectation.versions, "source": expectation.source,
        "stage": expectation.stage or "", "signature": expectation.signature or "",
        "hardware": expectation.hardware or "", "note": expectation.note,
        **({"when": {k: list(v) for k, v in expectation.when.items()}} if expectation.when else {}),
    }


def rejudge(cell: Cell, case: Case) -> Cell:
    """A stored cell judged again against the catalogue as it is now: observations stay, knowledge moves.

    Observed results are kept for years; the expectations and signatures they are read against grow.
    """
    if cell.status in ("skipped", "not_run", "not_applicable"):
        return cell
    text = "\n".join([cell.error, cell.reason, cell.log])
    errors = match_signatures(case, cell.engine, text, "error")
    expectation = case.expectation_for(cell.engine, cell.engine_version, cell.params,
                                       cell_context(cell.hardware_detail, cell.variant))
    verdict, why = judge(expectation, cell.status, cell.fused)
    if cell.status == "crashed":
        why = f"the engine's process died before it reported a result; {why}"
    return replace(
        cell, verdict=verdict, explanation=why, expectation=expectation_record(expectation),
        signature=errors[0] if errors else "", warnings=match_signatures(case, cell.engine, text, "warning"),
    )
