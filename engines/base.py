"""The small interface every engine adapter implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Protocol

import numpy as np

from generators.bundle import Bundle

# Signals a process raises on itself (a fault in the engine's own code, the same for one model and version): an
# adapter whose engine died of one records it as the observation's options["crash_signal"]. SIGKILL and SIGTERM
# come from outside (the out-of-memory killer, a timeout, a user).
SELF_RAISED = ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGFPE", "SIGILL")


@dataclass(frozen=True)
class EngineInfo:
    """What an engine is on this machine, or why it cannot run here."""

    name: str
    version: str  # the engine's own version string; the requested one where it is not installed
    hardware: str  # short label for the matrix column
    available: bool
    unavailable_status: str = ""  # "skipped" (not installed) or "not_run" (cannot run here, e.g. no GPU)
    reason: str = ""
    hardware_detail: Dict[str, str] = field(default_factory=dict)
    versions: Dict[str, str] = field(default_factory=dict)
    variant: Dict[str, str] = field(default_factory=dict)  # column options off their defaults (core.engines)
    capabilities: Dict[str, Any] = field(default_factory=dict)  # what the engine's module offers (TensorRT family)
    installation: str = ""  # engines.environment.installation() of its module when probed; never written to a file
    origin: str = ""  # the module's file where another interpreter imports it (TensorRT family); never written either


@dataclass
class Observation:
    """What one engine did with one bundle, before it is judged."""

    stage: str = ""  # last stage that completed: "", "load", "build", "run"
    error: str = ""  # why the next stage failed; empty when every stage ran
    log: str = ""  # the engine's own messages (warnings and errors)
    outputs: Dict[str, np.ndarray] = field(default_factory=dict)
    precision: Dict[str, Dict[str, str]] = field(default_factory=dict)  # node -> {precision, evidence}
    network_dtypes: Dict[str, str] = field(default_factory=dict)
    options: Dict[str, Any] = field(default_factory=dict)  # flags and levels actually used
    timings: Dict[str, float] = field(default_factory=dict)
    crashed: str = ""  # non-empty when the engine's process died: signal or timeout
    not_run_here: str = ""  # built ahead of time, but this machine cannot run it: why (TensorRT-RTX)
    listing: Dict[str, str] = field(default_factory=dict)  # the engine's layer listing, packed (kind, encoding, data)
    parser_errors: List[Dict[str, Any]] = field(default_factory=list)  # TensorRT family: the ONNX parser's errors
    # TensorRT family: the verbose build log of a failure at load or build on a GPU (core.cell.Cell.verbose_log)
    verbose_log: Dict[str, Any] = field(default_factory=dict)


class Engine(Protocol):
    """An engine adapter: imports its engine lazily, never at module import."""

    name: str

    def probe(self) -> EngineInfo:
        """Is the engine here, which version, on which hardware."""
        ...

    def run(self, bundle: Bundle) -> Observation:
        """Load/parse, build/compile and run one bundle; never raise for an engine failure."""
        ...

    def cannot_run(self, bundle: Bundle) -> str:
        """Why this bundle cannot run on this engine at all (for example a plugin it lacks), or ""."""
        ...


def plugins_needed(bundle: Bundle) -> List[str]:
    """The custom ops (TensorRT plugins) a bundle's model needs."""
    return list(bundle.meta.get("trt", {}).get("plugins", []))


def no_custom_ops(engine: str, bundle: Bundle) -> str:
    """The reason a cross-check engine, which has no TensorRT plugins, cannot run a plugin model."""
    ops = plugins_needed(bundle)
    if not ops:
        return ""
    return f"needs custom op {', '.join(ops)} (a TensorRT plugin); {engine} has no implementation of it"


def target_outputs(bundle: Bundle) -> Dict[str, str]:
    """Each target node's first output tensor: engines that rename a node often keep its output's name."""
    targets = list(bundle.meta.get("target_nodes") or [])
    wanted = set(targets)
    try:
        import onnx

        graph = onnx.load(str(bundle.model_path), load_external_data=False).graph
        found = {n.name: n.output[0] for n in graph.node if n.name in wanted and n.output}
    except Exception:  # no onnx here, or an unreadable model: fall back on the suite's naming
        found = {}
    return {t: found.get(t, t[len("node_of_"):] if t.startswith("node_of_") else t) for t in targets}
