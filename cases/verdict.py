"""A cell's verdict against the case's documented expectation."""

from __future__ import annotations

import functools
from typing import Any, Collection, Dict, FrozenSet, List, Mapping, Optional, Sequence

from cases.base import Case, Expectation
from cases.common import find_signature, signatures_of
from core.cell import Cell
from core.judge import Against, Stored, judge, ran_in
from core.words import BASIS_WORDS, FAILED, NOT_JUDGED


def basis_word(expectation: Mapping[str, Any]) -> str:
    """ "documented" or "observed before" for a cell's expectation record (a record without a basis is documented:
    written before baselines had a word of their own, and judged again at every merge)."""
    return BASIS_WORDS[expectation.get("basis") or "documented"]


def signature_words(case_id: str, engine: str, name: str) -> str:
    """ "documented signature" (an upstream thread's text) or "signature observed before" (this project's own run's)
    for a signature a cell matched; "signature" where the catalogue no longer declares it."""
    from cases.common import cell_signature

    found = cell_signature(case_id, engine, name)
    return signature_basis_words(found.basis if found is not None else "")


def signature_basis_words(basis: str) -> str:
    """ "documented signature" or "signature observed before" for a matched signature's basis (a cell's
    signature_basis); "signature" for none (a signature the catalogue no longer declares)."""
    if not basis:
        return "signature"
    return "documented signature" if basis == "documented" else "signature observed before"


def known_signature(case: Case, engine: str, signature: str) -> str:
    """For a user model's failing cell (an external case) whose error matches a seed case's signature: that case, its
    seed and the engine versions its expectations know the failure on, with their basis ("seed 032
    two_conv_fanout_qdq's chooseHigherPrecision assertion, known on TensorRT 8.5.1.7, ... (observed before)");
    "" for a seed case's own cell, no signature, or one no seed case declares."""
    from cases import all_cases
    from core.engines import title

    if not case.external or not signature:
        return ""
    for seed in all_cases():
        declared = next((s for s in seed.signatures if s.name == signature), None)
        if declared is None:
            continue
        known = [e for e in seed.expectations
                 if e.engine == engine and e.outcome == "fail" and e.signature == signature]
        shown = sorted({e.versions.lstrip("=") or "every version" for e in known}, key=_version_order)
        bases = " and ".join(sorted({BASIS_WORDS[e.basis] for e in known}))
        said = f", known on {title(engine)} {', '.join(shown)} ({bases})" if known else \
            f", which it knows on no {title(engine)} version"
        return f"its error matches seed {seed.seed} {seed.id}'s signature '{declared.short}'{said}"
    return ""


def _version_order(versions: str) -> tuple:
    """A version before a range, versions in release order."""
    parts = versions.split(".")
    return (0, tuple(int(p) for p in parts)) if all(p.isdigit() for p in parts) else (1, versions)


def backed_signatures(names: Sequence[str], lint_cases: Collection[str]) -> List[str]:
    """A user model's matched signatures that name a cause the model has: an engine's own, or a seed case's where the
    lint matched that case's graph pattern on the model (`lint_cases`, case.json lint findings' cases); a seed case's
    error text alone names no cause (TensorRT-RTX's 'Failed to import initializer' is any initializer it cannot
    import, a float8e8m0 scale or weights of 0 bytes)."""
    return [n for n in names if not _seed_cases_declaring(n) or _seed_cases_declaring(n) & set(lint_cases)]


@functools.lru_cache(maxsize=None)
def _seed_cases_declaring(name: str) -> FrozenSet[str]:
    """The seed cases that declare a signature of this name, none where only an engine declares it."""
    from cases import all_cases
    from cases.common import ENGINE_SIGNATURES

    if any(s.name == name for signatures in ENGINE_SIGNATURES.values() for s in signatures):
        return frozenset()
    return frozenset(c.id for c in all_cases() if not c.external and any(s.name == name for s in c.signatures))


# A lint prediction of a failure, by the stage a cell failed at (the last stage it completed: "" for none).
PREDICTED_AT = {"parse fails": "", "build fails": "load"}
PREDICTED_STAGE = {"parse fails": "load", "build fails": "build"}  # and the stage that failed


def lint_expectation(meta: Mapping[str, Any], engine: str, version: str, variant: Mapping[str, str],
                     completed: str, node: str) -> Optional[Expectation]:
    """For a user model's failing cell that no case expectation speaks for: the failure its lint predicted for this
    engine, version and build target at the stage it failed (and at the node it names, where it names one), as the
    expectation it rests on: a documented rule's upstream source first ("as documented"), else the observed cells
    of this repository it was read from ("as observed before"); None where the lint predicted no such failure."""
    target = f"target={variant['target']}" if variant.get("target") else ""
    found = [f for f in (meta.get("lint") or {}).get("findings") or []
             if f.get("engine") == engine and PREDICTED_AT.get(str(f.get("predicted"))) == completed
             and _covers(str(f.get("versions") or ""), version) and f.get("setting", "") in ("", target)
             and (not node or f.get("node") == node)]
    found.sort(key=lambda f: (f.get("basis") != "documented", bool(f.get("case"))))  # a source-cited rule first
    for f in found:
        source, documented = str(f.get("source") or ""), f.get("basis") == "documented"
        folder = source.split("/")[2] if source.startswith("reports/observed/") and source.endswith(".jsonl") \
            and source.count("/") >= 3 else ""  # a baseline names the observed file, and its hardware's folder
        if not documented and not folder:
            continue
        said = f.get("words") or f.get("rule")
        return Expectation(engine=engine, versions=str(f.get("versions") or ""), outcome="fail",
                           stage=PREDICTED_STAGE[str(f["predicted"])], source=source,
                           basis="documented" if documented else "baseline", hardware=folder or None,
                           note=f"the lint predicted it: {said} at node {f.get('node')}", rule=str(f.get("rule")))
    return None


def _covers(versions: str, version: str) -> bool:
    """Whether a PEP 440 specifier set ("" is every version) speaks about one version."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(versions).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def stored_expectation(record: Mapping[str, Any], engine: str) -> Optional[Expectation]:
    """A user cell's lint expectation as its cell stores it (expectation_record), for judging it again; None for any
    other record."""
    if not record.get("rule"):
        return None
    return Expectation(engine=engine, versions=str(record.get("versions") or ""), outcome=str(record["outcome"]),
                       source=str(record["source"]), stage=record.get("stage") or None, note=str(record.get("note")),
                       basis=str(record.get("basis") or "documented"), hardware=record.get("hardware") or None,
                       rule=str(record["rule"]))


def lint_cases(meta: Mapping[str, Any]) -> List[str]:
    """The catalogue cases whose graph pattern the lint matched on a bundle's model (case.json `lint`)."""
    return sorted({str(f.get("case")) for f in (meta.get("lint") or {}).get("findings") or [] if f.get("case")})


def signature_fields(case: Case, engine: str, name: str) -> Dict[str, str]:
    """The error signature a cell matched, as its Cell fields: its name, regex, source and basis, all "" for none (a
    bug bundle reads them from the cell, never from the catalogue)."""
    found = find_signature(case, engine, name) if name else None
    return {"signature": name, "signature_pattern": found.pattern if found else "",
            "signature_source": found.source if found else "", "signature_basis": found.basis if found else ""}


def match_signatures(case: Case, engine: str, text: str, kind: str) -> List[str]:
    """Names of the signatures of one kind that occur in text: the case's own, then its engine's (cases.common)."""
    return [s.name for s in signatures_of(case, engine) if s.kind == kind and s.search(text)]


def cell_context(hardware_detail: Mapping[str, str], variant: Mapping[str, str]) -> Dict[str, str]:
    """What an expectation's `when` filter is matched against: the CPU's INT8 level, the GPU's architecture ("SM87"
    for compute capability 8.7) and the column options."""
    context = dict(variant)
    if hardware_detail.get("isa_level"):
        context["isa"] = hardware_detail["isa_level"]
    if hardware_detail.get("compute_capability"):
        context["gpu"] = "SM" + str(hardware_detail["compute_capability"]).replace(".", "")
    return context


def expectation_record(expectation: Optional[Expectation]) -> Dict[str, Any]:
    """The expectation a verdict was judged against, as stored in a cell."""
    if expectation is None:
        return {}
    return {
        "outcome": expectation.outcome, "versions": expectation.versions, "source": expectation.source,
        "stage": expectation.stage or "", "signature": expectation.signature or "",
        "hardware": expectation.hardware or "", "note": expectation.note, "basis": expectation.basis,
        **({"crashes": True} if expectation.crashes else {}),
        **({"rule": expectation.rule} if expectation.rule else {}),
        **({"when": {k: list(v) for k, v in expectation.when.items()}} if expectation.when else {}),
    }


def cites_itself(cell: Cell) -> bool:
    """Whether a judged cell is the very observation its baseline expectation cites: the baseline itself, not a later
    run that agrees with it."""
    e = cell.expectation
    return e.get("basis") == "baseline" and ran_in(str(cell.run.get("file") or ""), str(e.get("source") or ""))


def rejudge(cell: Cell, case: Case) -> Cell:
    """A stored cell judged again against the catalogue as it is now (core.judge): observations stay, knowledge moves.

    Observed results are kept for years; the expectations and signatures they are read against grow.
    """
    if cell.status in NOT_JUDGED:
        return cell  # nothing the engine did to judge again
    text = "\n".join([cell.error, cell.reason, cell.log])
    errors = match_signatures(case, cell.engine, text, "error")
    if case.external:  # no model here: a seed case's signature stands where the lint backed it when the cell was made
        errors = [e for e in errors if e == cell.signature or not _seed_cases_declaring(e)]
    expectation = case.expectation_for(cell.engine, cell.engine_version, cell.params,
                                       cell_context(cell.hardware_detail, cell.variant))
    if expectation is None and case.external and cell.status in FAILED:
        expectation = stored_expectation(cell.expectation, cell.engine)  # the lint's, read when the cell was made
    record, signature = expectation_record(expectation), errors[0] if errors else ""
    stored = Stored(cell.status, cell.last_stage, cell.error, cell.reason, cell.fused, cell.verdict, cell.explanation,
                    str(cell.run.get("file") or ""))
    judged = judge(stored, {}, Against(record, known_signature(case, cell.engine, signature), case.external))
    return cell.changed(
        verdict=judged.verdict, explanation=judged.explanation, expectation=record,
        **signature_fields(case, cell.engine, signature),
        warnings=match_signatures(case, cell.engine, text, "warning"),
    )
