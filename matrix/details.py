"""A cell's details in words, one wording per fact: the grid's side file, JUnit and the root causes all say a
cell's signature, tolerance and expectation through this module."""

from __future__ import annotations

from typing import Any, List, Mapping, Tuple

from core.cell import Cell
from core.words import UNEXPECTED

ERROR_CLIP = 2000  # a cell's error in its details; cells/*.jsonl keep every text whole
EVIDENCE_CLIP = 600  # a node's precision evidence in its details


def cell_details(cell: Cell, regression: str = "") -> List[Tuple[str, str]]:
    """(label, text) for one cell's details, in reading order; the verdict itself is the caller's to say first."""
    out: List[Tuple[str, str]] = [("regression", regression)] if regression else []
    if cell.explanation and cell.verdict in UNEXPECTED:  # otherwise the verdict and the expectation say it
        out.append(("why", cell.explanation))
    if cell.reason:
        out.append(("reason", cell.reason))
    if cell.error:
        out.append(("error", clipped(cell.error.strip(), ERROR_CLIP)))
    if cell.signature:
        out.append(("signature", cell.signature))
    if cell.warnings:
        out.append(("warnings", ", ".join(cell.warnings)))
    if cell.max_error_steps is not None:
        out.append(("max error", max_error_words(cell.max_error_steps, cell.tolerance_steps)))
    for node, p in sorted(cell.precision.items()):
        evidence = p.get("evidence", "")
        if p.get("precision", "unknown") == "unknown" and evidence in ("", "not reported"):
            continue
        evidence = clipped(evidence, EVIDENCE_CLIP)
        out.append((f"precision {node}", p.get("precision", "unknown") + (f": {evidence}" if evidence else "")))
    if cell.expectation:
        out.append((expectation_label(cell.expectation), expectation_words(cell.expectation)))
        if cell.expectation.get("note"):
            out.append(("note", cell.expectation["note"]))
    return out


def max_error_words(steps: float, tolerance: Any = None) -> str:
    """A cell's worst output error against its tolerance: "3.2 steps (tolerance 1)"."""
    return f"{steps:.3g} steps" + (f" (tolerance {tolerance:g})" if tolerance is not None else "")


def expectation_label(e: Mapping[str, Any]) -> str:
    """What a cell's expectation rests on, as its label: an upstream source, or this suite's earlier run."""
    return "observed before" if e.get("basis") == "baseline" else "expected"


def expectation_words(e: Mapping[str, Any]) -> str:
    """What an expectation says and its source: "fail ==8.6.* (signature no_implementation): <its source>", with the
    hardware of a baseline (its note is a fact of its own, cell_details's "note")."""
    said = " ".join(x for x in (e.get("outcome", ""), e.get("versions", "")) if x)
    sig = f" (signature {e['signature']})" if e.get("signature") else ""
    on = f", on {e['hardware']}" if e.get("basis") == "baseline" and e.get("hardware") else ""
    return f"{said}{sig}: {e.get('source', '')}{on}".strip(": ")


def clipped(text: str, limit: int) -> str:
    """text cut at limit characters, " ..." saying so."""
    return text if len(text) <= limit else text[:limit] + " ..."
