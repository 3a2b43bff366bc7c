"""The CPU's INT8 instruction-set level is part of a CPU cell's hardware: label, results file, reuse."""

from __future__ import annotations

import pytest

from core.cell import Cell
from core.isa import cpu_label, isa
from engines.base import EngineInfo
from engines.results import default_path, info_key, reuse_key

GOLD = "model name\t: Intel(R) Xeon(R)   Gold 6338 CPU\nflags\t: sse4_1 avx2 avx512f avx512bw avx512_vnni\n"
EPYC = "model name\t: AMD EPYC 7B13\nflags\t: sse4_1 avx2\n"
# numpy's cpuid table (numpy._core._multiarray_umath.__cpu_features__), as each CPU would fill it
CPUID_AVX2 = {"SSE41": True, "AVX2": True, "AVX512F": False, "AVX512BW": False, "AVX512VNNI": False}
CPUID_AVX512 = dict(CPUID_AVX2, AVX512F=True, AVX512BW=True)
CPUID_VNNI = dict(CPUID_AVX512, AVX512VNNI=True)


@pytest.mark.parametrize("cpuinfo, cpuid, level", [
    (EPYC, CPUID_AVX2, "avx2"),
    ("flags\t: sse4_1 avx2 avx512f avx512bw\n", CPUID_AVX512, "avx512"),
    (GOLD, CPUID_VNNI, "avx512_vnni"),
    ("flags\t: sse4_1 avx2 avx_vnni\n", CPUID_AVX2, "avx_vnni"),  # Alder Lake: VEX VNNI, no AVX-512
    ("flags\t: sse4_1 avx2 avx512f avx512bw avx512_vnni amx_int8\n", CPUID_VNNI, "amx"),
    ("flags\t: sse4_1\n", {"SSE41": True}, "sse4.1"),
])
def test_the_level_is_the_best_int8_path(cpuinfo, cpuid, level):
    found = isa(cpuinfo, cpuid, environ={})
    assert found.level == level and not found.emulated
    assert found.vnni == (level in ("avx_vnni", "avx512_vnni", "amx"))


def test_the_label_names_model_and_level():
    label, detail = cpu_label(GOLD, CPUID_VNNI, environ={})
    assert label == "cpu: Intel(R) Xeon(R) Gold 6338 CPU (avx512_vnni)"
    assert detail["isa"] == "avx2 avx512f avx512_vnni" and detail["isa_level"] == "avx512_vnni"


def test_cpuid_wins_where_proc_cpuinfo_describes_another_cpu():
    """QEMU user-mode emulation passes the host's /proc/cpuinfo through; cpuid is what the engine executes on."""
    found = isa(GOLD + "flags\t: amx_int8\n", CPUID_AVX2, environ={})
    assert (found.level, found.emulated) == ("avx2", True)
    label, detail = cpu_label(GOLD, CPUID_AVX2, environ={})
    assert label.endswith("(avx2, emulated)") and "cpuid" in detail["isa_note"]


def test_onednn_cap_lowers_the_level_openvino_sees():
    env = {"ONEDNN_MAX_CPU_ISA": "avx2"}
    assert isa(GOLD, CPUID_VNNI, environ=env, onednn=True).level == "avx2"
    assert isa(GOLD, CPUID_VNNI, environ=env, onednn=False).level == "avx512_vnni"  # ONNX Runtime has no such cap
    label, detail = cpu_label(GOLD, CPUID_VNNI, environ=env, onednn=True)
    assert label.endswith("(avx2, ONEDNN_MAX_CPU_ISA=AVX2)") and detail["isa_cap"] == "ONEDNN_MAX_CPU_ISA=AVX2"
    # a cap above what the CPU has changes nothing
    assert isa(EPYC, CPUID_AVX2, environ={"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"}, onednn=True).level == "avx2"


def test_this_machine_has_a_level():
    label, detail = cpu_label()
    assert detail["isa_level"] in label and label.endswith(")")


def _info(cpuinfo: str, cpuid: dict) -> EngineInfo:
    label, detail = cpu_label(cpuinfo, cpuid, environ={})
    return EngineInfo("onnxruntime", "1.31.1", label, True, hardware_detail=detail)


def test_levels_get_their_own_results_files_and_are_never_reused_for_each_other():
    avx2, vnni = _info(GOLD, CPUID_AVX2), _info(GOLD, CPUID_VNNI)  # one CPU model, two levels (emulated, native)
    assert default_path(avx2) != default_path(vnni)
    stored = Cell(bundle="dynamic_quantize/variant=dql_matmulinteger", case="dynamic_quantize", params={},
                  digest="d", engine="onnxruntime", engine_version="1.31.1", hardware=vnni.hardware, status="pass",
                  verdict="undocumented", hardware_detail=vnni.hardware_detail, run={"cell_options": {}})
    assert reuse_key(stored) == info_key(vnni, stored.bundle, "d", {})
    assert reuse_key(stored) != info_key(avx2, stored.bundle, "d", {})


def test_a_variant_is_its_own_file_and_reuse_key():
    base = _info(EPYC, CPUID_AVX2)
    fixed = EngineInfo(**dict(base.__dict__, variant={"x64quantprecision": "1"}))
    assert default_path(base) != default_path(fixed) and default_path(fixed).name.endswith("x64quantprecision-1.jsonl")
    assert info_key(base, "b", "d", {}) != info_key(fixed, "b", "d", {})
    assert dict(info_key(fixed, "b", "d", {})[5]) == {"x64quantprecision": "1"}
