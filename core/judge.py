"""One cell judged: what an engine did with a bundle (or what a stored cell recorded) to its status and its verdict.

The runner (engines.cells), the report's judging of every stored cell again (cases.verdict.rejudge) and a bug
bundle's repro.py all call `judge`; no other code decides a status, a verdict or its explanation. What the catalogue
knows (the expectation, a seed case's known signature) reaches it as data, found by the caller.

Python 3.9+ and numpy only: it ships in every bug bundle as suite/judge.py beside its siblings suite/numerics.py and
suite/words.py (with suite/engines.py, which words.py reads, and suite/thresholds.py, which numerics.py reads), and
imports them relatively.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import numpy as np

from . import numerics, words

Outputs = Mapping[str, np.ndarray]
# The bundle's reference outputs and its float model's ({} where it has none), read only where outputs are compared.
References = Callable[[], Tuple[Outputs, Outputs]]
HARNESS_ERROR = ("the suite's own code raised before this cell was judged (its traceback is in the cell's log); "
                 "nothing is said about the engine")
THE_BASELINE_ITSELF = ("this cell is that observation: the baseline later runs are compared with, not a second run "
                       "that agrees with it")


@dataclass(frozen=True)
class Stored:
    """A recorded cell's outcome, judged again against what the catalogue knows now: its status stands."""

    status: str
    stage: str = ""
    error: str = ""
    reason: str = ""
    fused: Optional[bool] = None
    verdict: str = ""
    explanation: str = ""
    results_file: str = ""  # the results file it was read from (run.file): is it the baseline it is judged against?


@dataclass(frozen=True)
class Against:
    """What a cell is judged against, as the caller found it in the catalogue."""

    expectation: Mapping[str, Any] = field(default_factory=dict)  # cases.verdict.expectation_record; {} for none
    known: str = ""  # a user model's error matches a seed case's signature (cases.verdict.known_signature), or ""
    external: bool = False  # a user's model: one its reference cannot run is nobody's failure


@dataclass(frozen=True)
class Judged:
    """A cell's status, stage, error and numbers, and its verdict with the sentence that says why."""

    status: str
    stage: str
    error: str
    reason: str
    verdict: str
    explanation: str
    fused: Optional[bool] = None
    worst_steps: Optional[float] = None
    stats: Dict[str, Any] = field(default_factory=dict)
    dtypes: Dict[str, str] = field(default_factory=dict)


def judge(seen: Any, meta: Mapping[str, Any], against: Against = Against(),
          references: Optional[References] = None) -> Judged:
    """A cell judged: `seen` is an engine's observation (stage, error, crashed, not_run_here, options, outputs,
    precision: engines.base.Observation, or repro.py's) of the bundle whose case.json is `meta`, a cell's outcome that
    judge found before (a Judged: judged again, against what the catalogue says of it), or a Stored cell (one without
    a verdict yet: an engine that is not here)."""
    stored = isinstance(seen, Stored)
    done = seen if isinstance(seen, Judged) else _stored(seen) if stored else _observed(seen, meta, references)
    if stored and seen.verdict and seen.status in words.NOT_JUDGED:
        return done  # nothing the engine did to judge again
    verdict, why = verdict_of(against.expectation, done.status, done.fused)
    if against.expectation.get("rule"):
        why += f"; {against.expectation.get('note')}"
    if verdict == words.AGREES["baseline"] and stored \
            and ran_in(seen.results_file, str(against.expectation.get("source") or "")):
        why += f"; {THE_BASELINE_ITSELF}"
    if against.known and done.status in words.FAILED:
        why = f"{against.known}; {why}"
    if done.status == "not_applicable":
        why = f"{why}: {done.reason}"
    if stored and seen.verdict == words.NO_REFERENCE and ran_inputs(done.status, done.stage):  # judged so when made
        return _with(done, words.NO_REFERENCE, seen.explanation)
    reference_error = str(meta.get("reference_error") or "")
    blameless = unreferenced(against.external, done.status, reference_error, done.stage)
    if blameless:  # the model's (or its inputs') fault: recorded, never judged against the engine
        return _with(done, words.NO_REFERENCE, blameless, reason=done.reason or numerics.not_compared(meta))
    if against.external and reference_error and done.status in words.FAILED:  # failed before any output: judged
        why += f"; {before_output(done.stage)}, which needs no reference to be judged"
    return _with(done, verdict, why)


def _with(done: Judged, verdict: str, explanation: str, reason: Optional[str] = None) -> Judged:
    """done with its verdict, explanation and (where given) reason."""
    return Judged(done.status, done.stage, done.error, done.reason if reason is None else reason, verdict,
                  explanation, done.fused, done.worst_steps, done.stats, done.dtypes)


def _stored(seen: Stored) -> Judged:
    """A stored cell's outcome as it was recorded."""
    return Judged(seen.status, seen.stage, seen.error, seen.reason, seen.verdict, seen.explanation, seen.fused)


def _observed(seen: Any, meta: Mapping[str, Any], references: Optional[References]) -> Judged:
    """The status, stage, error, numbers and reason of an observation, before its verdict."""
    stage, error, worst, dtypes, stats, note = seen.stage, seen.error, None, {}, {}, ""
    options = seen.options or {}
    if seen.crashed:
        status = "crashed"
    elif options.get("not_applicable"):  # the version removed the API the documented path needs
        status = "not_applicable"
    elif stage == "run" and not error:
        found = _compare(meta, seen.outputs, references)
        worst, error, stats = found.worst_steps, found.mismatch, found.stats
        dtypes = {name: str(np.asarray(arr).dtype) for name, arr in seen.outputs.items()}
        status = "fail" if error else "pass"
        stage = "run" if error or numerics.not_compared(meta) else "compare"
        note = numerics.not_compared(meta) or numerics.fragile_words(stats, numerics.float_source(meta))
    elif stage == "build" and not error and seen.not_run_here:  # built ahead of time; no GPU here runs it
        status = "built"
    else:
        status = "fail"
    fused = numerics.fused(seen.precision, list(meta.get("target_nodes") or [])) if status in words.WORKED else None
    reason = seen.crashed or options.get("not_applicable", "") or (seen.not_run_here if status == "built" else "") \
        or (note if status == "pass" else "")
    return Judged(status, stage, error, reason, "", "", fused, worst, stats, dtypes)


def _compare(meta: Mapping[str, Any], outputs: Outputs, references: Optional[References]) -> numerics.Comparison:
    """The outputs against the bundle's reference (read only where it is compared), by core.numerics."""
    if numerics.not_compared(meta) or references is None:
        return numerics.Comparison(None)
    expected, floats = references()
    return numerics.compare(meta, outputs, expected, floats)


def unreferenced(external: bool, status: str, reference_error: str, stage: str = "run") -> str:
    """The explanation of a user model's cell that the reference could not check (case.json reference_error): the
    engine's outcome, and why nobody is blamed; "" for a catalogue case, a model the reference ran, an engine that
    did not run it, or one that failed (or built a plan) before any output, which needs no reference (ran_inputs)."""
    if not external or not reference_error or not ran_inputs(status, stage):
        return ""
    return (f"no reference to judge it by, which is {reference_fault(reference_error)}, not the engine's; the engine "
            f"{words.DID[status]}: {reference_error}")


def ran_inputs(status: str, stage: str) -> bool:
    """Whether the engine ran the model on its inputs (a pass, a failure at run or after), the only outcome a missing
    reference leaves unjudged; a parse or build failure, or a plan built ahead of time, produced no output."""
    return status == "pass" or (status in words.FAILED and words.FAILED_STAGE.get(stage) not in words.BEFORE_RUN)


def before_output(stage: str) -> str:
    """A failure before any output in words, by the last stage reached: "it failed at load, before any output"."""
    return f"it failed at {words.FAILED_STAGE.get(stage, 'load')}, before any output"


def reference_fault(reference_error: str) -> str:
    """Whose fault a missing reference is: the reference's own where it lacks an operator the model uses (onnx.reference
    raises NotImplementedError for an operator it does not know), else the model's or its inputs'."""
    if "NotImplementedError" in reference_error:
        return "the fault of the suite's reference (it lacks one of the model's operators)"
    return "the model's (or its inputs') fault"


def ran_in(shown: str, source: str) -> bool:
    """Whether the results file a cell was read from (as its run shows it) is this repository file."""
    shown = shown.replace("\\", "/")
    return bool(shown) and bool(source) and (shown == source or shown.endswith("/" + source))


# ---- the verdict ----

def verdict_of(expectation: Mapping[str, Any], status: str, fused: Optional[bool]) -> Tuple[str, str]:
    """(verdict, explanation) for a status against what the sources document, or against this project's own earlier
    observation where the expectation is a baseline ("as observed before", never "as documented"). A crash agrees
    with a documented failure only where the source documents the crash (its `crashes`)."""
    verdict, why = _verdict(expectation, status, fused)
    if status == "crashed":
        why = f"the engine's process died before it reported a result; {why}"
    return verdict, why


def _verdict(expectation: Mapping[str, Any], status: str, fused: Optional[bool]) -> Tuple[str, str]:
    """verdict_of's verdict and explanation, before a crash's words."""
    if status in words.NOT_TRIED:
        return "not run", "the engine did not run here"
    if status == "not_applicable":
        return "not applicable", "this engine version removed the API the reproducer's documented path needs"
    if status == "harness_error":
        return "harness error", HARNESS_ERROR
    if status == "built":
        return _verdict_built(expectation, fused)
    if status != "pass" and status not in words.FAILED:
        raise ValueError(f"no verdict for status {status!r}: not one of {words.STATUSES}")
    failed = status in words.FAILED
    outcome = expectation.get("outcome") or "unknown"
    if outcome == "unknown":
        if failed:
            return "new failure", f"{status}, and no source documents a failure here"
        return "undocumented", "passed; no source documents this cell"
    said = Said(expectation)
    if outcome == "fail":
        if status == "crashed" and not expectation.get("crashes"):  # a process that died is not the documented failure
            return "new failure", said.claim("fail") + ", but its process died (crashed), which it does not document"
        if failed:
            return said.agrees, said.agreeing("fails")
        return "fixed", said.claim("fail") + ", but it passed"
    if failed:
        return "fails against expectation", said.claim("pass") + f", but it {status}"
    if outcome == "int8" and fused is False:
        return "fails against expectation", said.claim("run in INT8") + ", but a target node fell back to float"
    if outcome == "not_int8" and fused is True:
        return "fixed", said.claim("fall back to float") + ", but every target node ran in INT8"
    return said.agrees, said.agreeing("passes")


def _verdict_built(expectation: Mapping[str, Any], fused: Optional[bool]) -> Tuple[str, str]:
    """A plan built ahead of time that this machine cannot run: judged on parse, build and per-node precision."""
    not_run = "; its numerics were not run here"
    outcome = expectation.get("outcome") or "unknown"
    if outcome == "unknown":
        return "undocumented", "built; no source documents this cell" + not_run
    said = Said(expectation)
    if outcome == "fail":
        stage = expectation.get("stage") or ""
        if stage in words.BEFORE_RUN:
            return "fixed", said.claim(f"fail at {stage}") + ", but it built" + not_run
        return "not run", f"built; the failure {said.claim()} is at run time, which is not possible here"
    if outcome == "int8" and fused is False:
        return "fails against expectation", \
            said.claim("run in INT8") + ", but the built plan computes a target in float"
    if outcome == "not_int8" and fused is True:
        return "fixed", said.claim("fall back to float") + ", but the built plan is quantized throughout"
    return said.agrees, said.agreeing("built") + not_run


@dataclass(frozen=True)
class Said:
    """How a verdict's explanation names what an expectation rests on: an upstream source ("documented to fail
    (https://...)") or this project's own earlier run ("observed to fail before in reports/observed/..., on ...")."""

    expectation: Mapping[str, Any]

    @property
    def agrees(self) -> str:
        """The verdict of a cell that agrees with it (a record without a basis is documented)."""
        return words.AGREES[self.expectation.get("basis") or "documented"]

    def claim(self, what: str = "") -> str:
        """ "documented to fail (source)" or "observed to fail before in file, on hardware"."""
        e = self.expectation
        at = str(e.get("source") or "") + (f", on {e['hardware']}" if e.get("hardware") else "")
        to = f" to {what}" if what else ""
        if e.get("basis") == "baseline":
            return f"observed{to} before in {at}"
        return f"documented{to} ({at})"

    def agreeing(self, did: str) -> str:
        """ "fails as documented (source)" or "fails as observed before in file, on hardware"."""
        return f"{did} as {self.claim()}"
