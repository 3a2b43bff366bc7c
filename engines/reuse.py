"""Which stored cell stands for a new run of it: one rule, applied by the controller (engines.run) before it starts
anything and by the cell test before it runs a bundle.

A stored cell is only ever looked at under its reuse key (engines.results: bundle digest, engine, engine version,
hardware, variant, engine options). Under that key, and with the parameters its bundle has now, it stands when what it
says cannot change by running again:
  - an observation (pass, fail, built) judged by the measure the bundle asks for now, but a failure to read a model
    newer than the version reads (ONNX Runtime's "Unsupported model IR version"), stored before such a cell was
    "not applicable" (engines.reasons.newer_model);
  - "not applicable": decided from the bundle's request and the engine version's API, before any build;
  - a crash that the catalogue documents (judged "as documented" against the catalogue as it is now), or that is
    the engine's own fault: its process raised SIGSEGV, SIGABRT, SIGBUS, SIGFPE or SIGILL on this model (a timeout,
    a SIGKILL from outside or a dead pytest worker is tried again);
  - "not run" that the engine decided from the bundle and its version alone (a plugin it lacks, a catalogue
    environment signature such as TensorRT-RTX 1.4 needing a GPU to build), where its adapter says its reasons
    depend on nothing else; never one whose environment broke under the run.
A "skipped" cell (the engine was not importable) is never reused. `--fresh` reruns everything.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from cases.base import Case
from cases.verdict import rejudge
from core.cell import Cell
from engines.base import SELF_RAISED
from engines.cells import judged_alike
from engines.environment import BROKEN
from engines.reasons import newer_model
from engines.results import REUSABLE


def reusable(stored: Cell, meta: Mapping[str, Any], case: Optional[Case], static_not_run: bool) -> bool:
    """Whether the stored cell stands for a run of the bundle whose case.json is `meta` (same digest)."""
    if stored.digest != meta.get("digest") or ("params" in meta and dict(stored.params) != dict(meta["params"])):
        return False  # another model, or one its bundle now describes otherwise (a user model's documented form)
    if stored.status == "fail" and newer_model(stored.error):
        return False  # stored before a model newer than the version reads was "not applicable": run it again
    if stored.status in REUSABLE:
        return judged_alike(stored, meta)
    if stored.status == "not_applicable":
        return True
    if stored.status == "crashed":
        return own_fault(stored) or documented(stored, case)
    if stored.status == "not_run":
        return static_not_run and not stored.reason.startswith(BROKEN)
    return False


def own_fault(cell: Cell) -> bool:
    """The engine's process died of a signal it raised itself (recorded by the adapter as options.crash_signal)."""
    return str((cell.options or {}).get("crash_signal", "")) in SELF_RAISED


def documented(cell: Cell, case: Optional[Case]) -> bool:
    """The catalogue, as it is now, documents this failure for this engine version."""
    return case is not None and rejudge(cell, case).verdict == "as documented"
