"""The CPU probe: the instruction-set level that decides INT8 kernels on x86-64 (cpuid through numpy, /proc/cpuinfo,
oneDNN's caps) and the CPU's matrix label with its details.

Pure Python; numpy is imported only when cpuid is asked. The catalogue's expectations name these levels
(`Expectation.when={"isa": ...}`), the generators' ONNX Runtime cross-check records the level it ran on,
and the CPU engines put the label on their columns.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

CPUINFO = Path("/proc/cpuinfo")
# The levels that decide INT8 numerics, lowest first. Without VNNI, x86-64 u8s8 dot products go
# through vpmaddubsw, whose 16-bit pair sums saturate (oneDNN "Nuances of int8 computations",
# ONNX Runtime's quantization guide on reduce_range); VNNI and AMX accumulate in 32 bits.
ISA_LEVELS = ("baseline", "sse4.1", "avx2", "avx_vnni", "avx512", "avx512_vnni", "amx")
VNNI_LEVELS = ("avx_vnni", "avx512_vnni", "amx")
# /proc/cpuinfo flag -> numpy's cpuid feature: where they disagree, the process does not see the CPU
# /proc/cpuinfo describes (user-mode emulation such as QEMU), and cpuid is what the engines see.
_CROSS_CHECK = {"avx2": "AVX2", "avx512f": "AVX512F", "avx512bw": "AVX512BW", "avx512_vnni": "AVX512VNNI"}
# oneDNN's ONEDNN_MAX_CPU_ISA (OpenVINO's CPU plugin honours it): the features each cap leaves usable.
_ONEDNN_CAPS = {
    "SSE41": ("sse4.1",), "AVX": ("sse4.1",), "AVX2": ("sse4.1", "avx2"),
    "AVX2_VNNI": ("sse4.1", "avx2", "avx_vnni"), "AVX2_VNNI_2": ("sse4.1", "avx2", "avx_vnni"),
    "AVX512_CORE": ("sse4.1", "avx2", "avx512"),
    "AVX512_CORE_VNNI": ("sse4.1", "avx2", "avx512", "avx512_vnni"),
    "AVX512_CORE_BF16": ("sse4.1", "avx2", "avx512", "avx512_vnni"),
    "AVX512_CORE_FP16": ("sse4.1", "avx2", "avx512", "avx512_vnni"),
    "AVX10_1_512": ("sse4.1", "avx2", "avx512", "avx512_vnni"),
}
ONEDNN_CAP_VARIABLES = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


def cpuinfo_field(text: str, key: str) -> str:
    match = re.search(rf"^{key}\s*:\s*(.*)$", text, flags=re.MULTILINE)
    return match.group(1).strip() if match else ""


def read_cpuinfo() -> str:
    return CPUINFO.read_text(errors="replace") if CPUINFO.is_file() else ""


def cpuid_features() -> Dict[str, bool]:
    """numpy's run-time CPU feature table: it asks cpuid, so it sees what this process really gets."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__  # numpy 2
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_features__  # numpy 1
        except ImportError:
            return {}
    return dict(__cpu_features__)


@dataclass(frozen=True)
class Isa:
    """The instruction-set level that decides a CPU engine's INT8 kernels, and how it was found."""

    level: str  # one of ISA_LEVELS
    features: Tuple[str, ...]  # the INT8-relevant features usable here
    emulated: bool = False  # cpuid and /proc/cpuinfo disagree: cpuid (what the engine sees) wins
    cap: str = ""  # "ONEDNN_MAX_CPU_ISA=AVX2" where an engine's ISA is capped

    @property
    def vnni(self) -> bool:
        return self.level in VNNI_LEVELS

    @property
    def label(self) -> str:
        """"avx512_vnni", "avx2, emulated", "avx2, ONEDNN_MAX_CPU_ISA=AVX2"."""
        return ", ".join(x for x in (self.level, "emulated" if self.emulated else "", self.cap) if x)


def isa(cpuinfo: str = "", cpuid: Optional[Mapping[str, bool]] = None,
        environ: Optional[Mapping[str, str]] = None, onednn: bool = False) -> Isa:
    """This CPU's INT8 level; with onednn=True, as an engine built on oneDNN sees it under ONEDNN_MAX_CPU_ISA."""
    flags = set(cpuinfo_field(cpuinfo or read_cpuinfo(), "flags").split())
    cpuid = cpuid_features() if cpuid is None else dict(cpuid)
    if cpuid:
        emulated = bool(flags) and any((f in flags) != bool(cpuid.get(k)) for f, k in _CROSS_CHECK.items())
        have = {"sse4.1": cpuid.get("SSE41"), "avx2": cpuid.get("AVX2"),
                "avx512": cpuid.get("AVX512F") and cpuid.get("AVX512BW"), "avx512_vnni": cpuid.get("AVX512VNNI")}
        trusted = flags if not emulated else set()  # cpuid lacks these two; /proc/cpuinfo only where it is true
        have["avx_vnni"] = "avx_vnni" in trusted and have["avx2"]
        have["amx"] = "amx_int8" in trusted and have["avx512_vnni"]
    else:  # no numpy table: /proc/cpuinfo is all there is
        emulated = False
        have = {"sse4.1": "sse4_1" in flags, "avx2": "avx2" in flags, "avx512": {"avx512f", "avx512bw"} <= flags,
                "avx512_vnni": "avx512_vnni" in flags, "avx_vnni": "avx_vnni" in flags, "amx": "amx_int8" in flags}
    features = {k for k, v in have.items() if v}
    cap = ""
    env = os.environ if environ is None else environ
    if onednn:
        for var in ONEDNN_CAP_VARIABLES:
            value = env.get(var, "").strip().upper()
            if value and value in _ONEDNN_CAPS:
                features &= set(_ONEDNN_CAPS[value])
                cap = f"{var}={value}"
                break
    level = next((lv for lv in reversed(ISA_LEVELS) if lv in features), "baseline")
    return Isa(level, tuple(lv for lv in ISA_LEVELS if lv in features), emulated, cap)


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
