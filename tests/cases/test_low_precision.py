"""cases/low_precision.py: the sources the 2026 low-precision cases (seeds 019-023) share, checked against them."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from cases.low_precision import RTX_2026_LOGS, RTX_TARGET_ARCH_KIND

REPO = Path(__file__).resolve().parents[2]
RTX_LOGS = json.loads((REPO / RTX_2026_LOGS).read_text())
MODULES = ("cases.fp4_weight_only", "cases.nvfp4_two_level_scales", "cases.mxfp8_block_scales",
           "cases.int4_matmulnbits_fusion", "cases.qdq_scale_dtype_mismatch")
CASES = {m.split(".")[1]: importlib.import_module(m).CASE for m in MODULES}


def test_every_rtx_signature_matches_the_measured_error_it_cites():
    """Each signature sourced from the committed build errors matches one of them, on every version it names."""
    errors = RTX_LOGS["errors"]
    sigs = {s.name: s for c in CASES.values() for s in c.signatures if s.source == RTX_2026_LOGS}
    assert {"rtx_hw_specific_type", "rtx_fp4_activation_not_constant", "rtx_e8m0_initializer",
            "rtx_dq_output_dtype"} <= set(sigs)
    for name, sig in sigs.items():
        assert any(sig.search(text) for text in errors.values()), name
    output_dtype = [k for k, text in errors.items() if sigs["rtx_dq_output_dtype"].search(text)]
    assert output_dtype and all(k.startswith("1.4.0.76 ") for k in output_dtype)


def test_tensorrt_rtx_33s_error_is_watched_for_in_every_new_case_with_target_columns():
    """NVIDIA/TensorRT-RTX#33's Myelin error, as the thread quotes it, would be named in any SM75 column of 019-022."""
    text = "MyelinCheckException: hfc.cpp:120: CHECK(false) failed. target_sm '110' does not have arch kind assigned."
    assert RTX_TARGET_ARCH_KIND.search(text) and RTX_TARGET_ARCH_KIND.source.endswith("TensorRT-RTX/issues/33")
    watching = {c.id for c in CASES.values() if RTX_TARGET_ARCH_KIND in c.signatures}
    assert watching == {"fp4_weight_only", "nvfp4_two_level_scales", "mxfp8_block_scales", "int4_matmulnbits_fusion"}
    assert not any(RTX_TARGET_ARCH_KIND.search(e) for e in RTX_LOGS["errors"].values())
