"""What a CPU engine's cells record beside its hardware (core.isa's label): the Python packages' versions, the
engine's log from stderr, and the probe answer of an engine that is not installed."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import sys
import tempfile
from typing import Dict, Iterator, List

from core.isa import cpu_label
from engines.base import EngineInfo


def python_versions() -> Dict[str, str]:
    """Versions every CPU cell records next to its engine's: python, numpy, onnx (where installed)."""
    versions = {"python": platform.python_version()}
    for module in ("numpy", "onnx"):
        mod = sys.modules.get(module)
        if mod is None:
            try:
                mod = __import__(module)
            except ImportError:
                continue
        versions[module] = getattr(mod, "__version__", "")
    return versions


@contextlib.contextmanager
def captured_stderr(sink: List[str]) -> Iterator[None]:
    """Collect what native code writes to file descriptor 2 (engine logs) into sink."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            sink.append(_strip_ansi(tmp.read().decode("utf-8", errors="replace")))


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def not_installed(name: str, exc: Exception, onednn: bool = False) -> EngineInfo:
    """The probe answer of a CPU engine whose package is missing: its cells are skipped, with why."""
    label, detail = cpu_label(onednn=onednn)
    return EngineInfo(name=name, version="not installed", hardware=label, available=False,
                      unavailable_status="skipped", reason=f"{name} is not installed: {exc}",
                      hardware_detail=detail, versions=python_versions())
