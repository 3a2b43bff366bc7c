"""Turn one engine's observation of one bundle into a judged cell."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from cases.base import Case
from cases.common import ENVIRONMENT_SIGNATURES
from cases.verdict import (
    backed_signatures,
    cell_context,
    expectation_record,
    known_signature,
    lint_cases,
    lint_expectation,
    match_signatures,
    signature_fields,
)
from core import numerics
from core.cell import Cell
from core.judge import Against, Stored, judge
from core.portable import scrub
from core.words import FAILED
from engines.base import Engine, EngineInfo, Observation
from engines.reasons import error_line, failure_evidence
from generators.bundle import Bundle

LOG_LIMIT = 20_000  # characters of engine log kept per cell


def measure(meta: Mapping[str, Any]) -> Dict[str, Any]:
    """How a bundle's outputs are judged (core.numerics.measure, from its case.json)."""
    return numerics.measure(meta)


def judge_outputs(bundle: Bundle, outputs: Mapping[str, Any],
                  expected: Optional[Dict[str, np.ndarray]] = None) -> numerics.Comparison:
    """An engine's outputs against the bundle's reference, by core.numerics (the judge a bug bundle's repro.py
    carries): the bundle's measure, its floors, and its float outputs where it has them. `expected`: the bundle's
    reference outputs where the caller has read them already."""
    if not_compared(bundle):
        return numerics.Comparison(None)
    reference = bundle.expected() if expected is None else expected
    return numerics.compare(bundle.meta, outputs, reference, bundle.float_outputs())


def compare(bundle: Bundle, outputs: Dict[str, np.ndarray],
            expected: Optional[Dict[str, np.ndarray]] = None) -> Tuple[Optional[float], str, Dict[str, str]]:
    """(worst error in steps, mismatch message or "", output dtypes) against the bundle's reference, judged by the
    bundle's measure: steps, or signal-to-noise and cosine for a whole network."""
    found = judge_outputs(bundle, outputs, expected)
    return found.worst_steps, found.mismatch, {name: str(np.asarray(arr).dtype) for name, arr in outputs.items()}


def judged_alike(stored: Cell, meta: Mapping[str, Any]) -> bool:
    """Whether a stored cell was judged by the measure the bundle (its case.json) asks for now (a user who changes
    --min-sqnr or --tolerance gets the cell judged again, never an old verdict)."""
    how = measure(meta)
    said = dict(stored.output_stats or {})
    if not said and stored.max_error_steps is None:
        return True  # no output was measured (a failure before them, a plan built ahead of time): any measure
    if not said:  # judged before cells recorded their measure (steps)
        return how["measure"] == "steps" and stored.tolerance_steps in (None, how["tolerance_steps"])
    return all(said.get(k) == v for k, v in how.items())


def not_compared(bundle: Bundle) -> str:
    """"numerics not compared: <why>" for a bundle whose reference could not run (case.json reference_error)."""
    return numerics.not_compared(bundle.meta)


def not_run_cell(case: Case, bundle: Bundle, info: EngineInfo, run: Dict[str, Any]) -> Cell:
    """The honest cell for an engine that is not here, or cannot run here."""
    said = judge(Stored(info.unavailable_status), {})
    return Cell(
        bundle=bundle.id, case=case.id, params=dict(bundle.meta["params"]), digest=bundle.meta["digest"],
        engine=info.name, engine_version=info.version, hardware=info.hardware, status=info.unavailable_status,
        verdict=said.verdict, reason=info.reason, explanation=f"{said.explanation}: {info.reason}",
        hardware_detail=dict(info.hardware_detail), versions=dict(info.versions), variant=dict(info.variant),
        run=dict(run),
    )


def corrupt_cell(bundle_id: str, why: str, info: EngineInfo, run: Dict[str, Any]) -> Cell:
    """The not-run cell of a bundle whose files do not match their digest: never a verdict on a wrong model."""
    case_id, why = bundle_id.split("/", 1)[0], scrub(why)
    return Cell(
        bundle=bundle_id, case=case_id, params={}, digest="", engine=info.name, engine_version=info.version,
        hardware=info.hardware, status="not_run", verdict="not run", reason=why,
        explanation=f"the engine did not run: {why}; regenerate it with `python -m generators write`",
        hardware_detail=dict(info.hardware_detail), versions=dict(info.versions), variant=dict(info.variant),
        run=dict(run),
    )


def judge_observation(case: Case, bundle: Bundle, info: EngineInfo, obs: Observation, run: Dict[str, Any]) -> Cell:
    """One observation judged (core.judge) against what the catalogue knows of it: its signatures, its expectation."""
    params = dict(bundle.meta["params"])
    targets = list(bundle.meta.get("target_nodes", []))
    done = judge(obs, bundle.meta, references=lambda: (bundle.expected(), bundle.float_outputs()))
    error, log = scrub(done.error), scrub(obs.log)  # the bundle's path on this machine is no part of the observation
    text = "\n".join([error, obs.crashed, log])
    machine = environment_limit(info, done.status, text)
    if machine:  # the machine lacks what this version needs to build: not run, never a build failure
        idle = replace(info, available=False, unavailable_status="not_run", reason=machine)
        options, sources = _options(obs)
        return replace(not_run_cell(case, bundle, idle, run), last_stage=done.stage, error=error[:4000],
                       log=log[-LOG_LIMIT:], options=options, tactic_sources=sources,
                       timings={k: round(v, 4) for k, v in obs.timings.items()})
    errors = match_signatures(case, info.name, text, "error")
    if case.external:  # a user's model: a seed case's signature only where the lint matched that case's pattern
        errors = backed_signatures(errors, lint_cases(bundle.meta))
    signature = errors[0] if errors else ""
    context = cell_context(info.hardware_detail, info.variant)
    expectation = case.expectation_for(info.name, info.version, params, context)
    node, says = failure_evidence(error[:4000], obs.parser_errors) if done.status in FAILED else ("", "")
    if expectation is None and case.external and done.status == "fail":  # what the model's lint predicted, and why
        expectation = lint_expectation(bundle.meta, info.name, info.version, info.variant, done.stage, node)
    record = expectation_record(expectation)
    said = judge(replace(done, error=error), bundle.meta,
                 Against(record, known_signature(case, info.name, signature), case.external))
    options, sources = _options(obs)
    return Cell(
        bundle=bundle.id, case=case.id, params=params, digest=bundle.meta["digest"],
        engine=info.name, engine_version=info.version, hardware=info.hardware, status=said.status,
        verdict=said.verdict, last_stage=said.stage, reason=said.reason, error=error[:4000],
        **signature_fields(case, info.name, signature),
        warnings=match_signatures(case, info.name, text, "warning"), output_dtypes=said.dtypes,
        network_dtypes=dict(obs.network_dtypes), max_error_steps=said.worst_steps, output_stats=said.stats,
        parser_errors=list(obs.parser_errors), failing_node=node, engine_reason=says,
        error_line=error_line(error[:4000]),
        tolerance_steps=float(bundle.meta.get("tolerance_steps", 1.0)),
        precision={t: _with_network_dtype(t, obs) for t in targets},
        fused=said.fused, expectation=record, explanation=said.explanation,
        hardware_detail=dict(info.hardware_detail), versions=dict(info.versions), options=options,
        tactic_sources=sources, variant=dict(info.variant), listing=dict(obs.listing),
        timings={k: round(v, 4) for k, v in obs.timings.items()}, log=log[-LOG_LIMIT:], run=dict(run),
        verbose_log=dict(obs.verbose_log),
    )


def _options(obs: Observation) -> Tuple[Dict[str, Any], List[str]]:
    """The engine's options as a cell records them, and the tactic sources, which a cell holds as a field."""
    options = dict(obs.options)
    return options, [str(s) for s in options.pop("tactic_sources", None) or []]


def environment_limit(info: EngineInfo, status: str, text: str) -> str:
    """The reason of an environment signature that a failed cell matches on a machine without a GPU, or ""."""
    if status != "fail" or info.hardware_detail.get("name"):  # a GPU is here: a failure is the engine's
        return ""
    for sig in ENVIRONMENT_SIGNATURES.get(info.name, ()):
        if sig.search(text):
            return f"{sig.reason} [{sig.name}, {sig.source}]"
    return ""


def run_cell(case: Case, bundle: Bundle, engine: Engine, info: EngineInfo, run: Dict[str, Any]) -> Cell:
    """Run one bundle on one engine and judge it; an engine that is not here gives a not-run cell."""
    if not info.available:
        return not_run_cell(case, bundle, info, run)
    why = engine.cannot_run(bundle) if hasattr(engine, "cannot_run") else ""
    if why:
        return not_run_cell(case, bundle, replace(info, available=False, unavailable_status="not_run", reason=why), run)
    start = time.perf_counter()
    cell = judge_observation(case, bundle, info, engine.run(bundle), run)
    gone = environment_broken(info) if cell.status in FAILED else ""
    if gone:  # the engine was removed or reinstalled under the run: not a verdict, and never reused
        idle = replace(info, available=False, unavailable_status="not_run", reason=gone)
        return replace(not_run_cell(case, bundle, idle, run), last_stage=cell.last_stage, error=cell.error,
                       log=cell.log)
    # "cell": the harness's whole time for it (adapter, worker round trip, judging), beside the engine's stages
    return replace(cell, timings={**cell.timings, "cell": round(time.perf_counter() - start, 4)})


def environment_broken(info: EngineInfo) -> str:
    """Why the engine this run probed is no longer the one installed, or ""."""
    from core.engines import ENGINES
    from engines.environment import broken

    return broken(ENGINES[info.name].module, info.installation, info.origin) if info.name in ENGINES else ""


def _with_network_dtype(target: str, obs: Observation) -> Dict[str, Any]:
    """The engine's precision evidence for a target node, plus its output's type in the network definition."""
    entry = dict(obs.precision.get(target, {"precision": "unknown", "evidence": "not reported"}))
    tensor = target[len("node_of_"):] if target.startswith("node_of_") else target
    if tensor in obs.network_dtypes:
        entry["network_dtype"] = obs.network_dtypes[tensor]
        entry["evidence"] += f"; network definition types its output {obs.network_dtypes[tensor]}"
    return entry
