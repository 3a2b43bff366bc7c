"""The CPU a CPU engine runs on, as a short matrix label plus details; and stderr capture for engine logs."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import sys
import tempfile
from typing import Dict, Iterator, List, Mapping, Optional, Tuple

from cases.isa import ISA_LEVELS, VNNI_LEVELS, Isa, cpuid_features, cpuinfo_field, isa, read_cpuinfo  # noqa: F401
from engines.base import EngineInfo

# ISA extensions that decide which INT8 kernels a CPU engine can pick (recorded as they are in /proc/cpuinfo).
INT8_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "amx_bf16", "avx512_bf16")


def cpu_model(cpuinfo: str = "") -> str:
    """The CPU model name: /proc/cpuinfo's "model name", else what platform knows."""
    cpuinfo = cpuinfo or read_cpuinfo()
    name = cpuinfo_field(cpuinfo, "model name") or cpuinfo_field(cpuinfo, "Model") or platform.processor()
    return " ".join(name.split()) or platform.machine() or "unknown"


def cpu_flags(cpuinfo: str = "") -> List[str]:
    """The INT8-relevant ISA flags /proc/cpuinfo reports (empty where it is absent)."""
    flags = set(cpuinfo_field(cpuinfo or read_cpuinfo(), "flags").split())
    return [f for f in INT8_FLAGS if f in flags]


def cpu_label(cpuinfo: str = "", cpuid: Optional[Mapping[str, bool]] = None,
              environ: Optional[Mapping[str, str]] = None, onednn: bool = False) -> Tuple[str, Dict[str, str]]:
    """("cpu: <model> (<INT8 level>)", details) for the matrix column; cheap, imports no engine.

    The level is part of the label: cells from an AVX2 and a VNNI machine are different columns,
    and a cell of one is never reused for the other.
    """
    cpuinfo = cpuinfo or read_cpuinfo()
    model = cpu_model(cpuinfo)
    found = isa(cpuinfo, cpuid, environ, onednn)
    detail = {
        "cpu": model,
        "machine": platform.machine(),
        "cores": str(os.cpu_count() or ""),
        "isa": " ".join(cpu_flags(cpuinfo)),
        "isa_level": found.level,
        "isa_features": " ".join(found.features),
        "os": f"{platform.system()} {platform.release()}",
    }
    if found.emulated:
        detail["isa_note"] = ("cpuid and /proc/cpuinfo disagree (user-mode emulation such as QEMU): the level is "
                              "cpuid's, which is what the engine sees; the model name is the host's")
    if found.cap:
        detail["isa_cap"] = found.cap
    return f"cpu: {model} ({found.label})", detail


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
