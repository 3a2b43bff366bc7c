"""The CPU a CPU engine runs on, as a short matrix label plus details; and stderr capture for engine logs."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import sys
import tempfile
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

from engines.base import EngineInfo

CPUINFO = Path("/proc/cpuinfo")
# ISA extensions that decide which INT8 kernels a CPU engine can pick.
INT8_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "amx_bf16", "avx512_bf16")


def _cpuinfo_field(text: str, key: str) -> str:
    match = re.search(rf"^{key}\s*:\s*(.*)$", text, flags=re.MULTILINE)
    return match.group(1).strip() if match else ""


def cpu_model(cpuinfo: str = "") -> str:
    """The CPU model name: /proc/cpuinfo's "model name", else what platform knows."""
    if not cpuinfo and CPUINFO.is_file():
        cpuinfo = CPUINFO.read_text(errors="replace")
    name = _cpuinfo_field(cpuinfo, "model name") or _cpuinfo_field(cpuinfo, "Model") or platform.processor()
    return " ".join(name.split()) or platform.machine() or "unknown"


def cpu_flags(cpuinfo: str = "") -> List[str]:
    """The INT8-relevant ISA flags this CPU reports (empty where /proc/cpuinfo is absent)."""
    if not cpuinfo and CPUINFO.is_file():
        cpuinfo = CPUINFO.read_text(errors="replace")
    flags = set(_cpuinfo_field(cpuinfo, "flags").split())
    return [f for f in INT8_FLAGS if f in flags]


def cpu_label(cpuinfo: str = "") -> Tuple[str, Dict[str, str]]:
    """("cpu: <model>", details) for the matrix column; cheap, imports no engine."""
    model = cpu_model(cpuinfo)
    detail = {
        "cpu": model,
        "machine": platform.machine(),
        "cores": str(os.cpu_count() or ""),
        "isa": " ".join(cpu_flags(cpuinfo)),
        "os": f"{platform.system()} {platform.release()}",
    }
    return f"cpu: {model}", detail


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


def not_installed(name: str, exc: Exception) -> EngineInfo:
    """The probe answer of a CPU engine whose package is missing: its cells are skipped, with why."""
    label, detail = cpu_label()
    return EngineInfo(name=name, version="not installed", hardware=label, available=False,
                      unavailable_status="skipped", reason=f"{name} is not installed: {exc}",
                      hardware_detail=detail, versions=python_versions())
