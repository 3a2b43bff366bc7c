"""The TensorRT family's probe answers: what worker.py --probe says of an interpreter and module (versions,
capabilities), asked once per process and handed from pytest's controller to its xdist workers.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Tuple

from engines.tensorrt import lifeline

_PROBES: Dict[Tuple[str, str, str], Dict[str, Any]] = {}
# Who runs a probe, which its answer does not depend on: pytest's test, the xdist worker and the terminal size it
# was given, the lifeline parent.
_RUNNER_ONLY = ("PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID",
                "LINES", "COLUMNS", lifeline.PARENT_ENV)


def probe_key(python: str, module: str) -> Tuple[str, str, str]:
    """A probe's answer is asked once per interpreter, module and environment (but who runs it)."""
    return python, module, json.dumps(sorted((k, v) for k, v in os.environ.items() if k not in _RUNNER_ONLY))


def probe_answers() -> List[List[Any]]:
    """The probe answers this process holds, as JSON: an xdist worker takes its controller's (adopt_probe_answers)
    rather than start the same probe again, once per worker and engine version."""
    return [[list(key), answer] for key, answer in _PROBES.items()]


def adopt_probe_answers(answers: List[List[Any]]) -> None:
    """Answers another process got (probe_answers); one is used only where this process's interpreter, module and
    environment (but who runs it) are the same."""
    for key, answer in answers:
        _PROBES.setdefault(tuple(key), answer)


def asked_once(python: str, module: str, ask: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
    """The probe's answer for an interpreter and module in this environment (but who runs it): `ask()` the first
    time, the answer kept after."""
    key = probe_key(python, module)
    if key not in _PROBES:
        _PROBES[key] = ask()
    return _PROBES[key]
