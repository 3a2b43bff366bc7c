"""Seed 024 on the TensorRT-RTX of the test environment, with no GPU: real parses and ahead-of-time builds.

TensorRT-RTX 1.7 builds quantize_static's SiLU that TensorRT 8.6.0 refuses.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cases import get_case

@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    if os.environ.get("QDQ_REQUIRE_RTX") == "1":
        import tensorrt_rtx  # noqa: F401
    else:
        pytest.importorskip("tensorrt_rtx")
    return tmp_path_factory.mktemp("rtx-archs")


def _cell(root: Path, case_id: str, params: dict, **options):
    from engines.cells import run_cell
    from engines.tensorrt import RtxAdapter
    from generators import write
    from generators.bundle import load_bundle

    case = get_case(case_id)
    bundle = load_bundle(write.write_bundle(case, params, root=root))
    adapter = RtxAdapter(python=sys.executable, **options)
    try:
        return run_cell(case, bundle, adapter, adapter.probe(), {"source": "local"})
    finally:
        adapter.close()


def test_quantize_statics_silu_builds_with_the_conv_int8_for_sm86_and_float_for_sm75(root):
    form = {"form": "quantize_static"}
    sm86 = _cell(root, "silu_qdq", form, target="SM86")
    if sm86.engine_version.startswith(("1.4.", "1.5.", "1.6.")):
        assert sm86.signature == "rtx_conv_dtype_check", sm86.error  # every INT8 convolution, seed 013's check
        return
    sm75 = _cell(root, "silu_qdq", form, target="SM75")
    assert sm86.status == sm75.status == "built", (sm86.error, sm75.error)
    assert sm86.precision["node_of_conv"]["precision"] == "int8" and sm75.precision["node_of_conv"]["precision"] == \
        "float"
    assert sm86.verdict == "undocumented"  # no source speaks for TensorRT-RTX here


def test_the_implicit_form_is_not_applicable_to_tensorrt_rtx(root):
    cell = _cell(root, "silu_qdq", {"form": "implicit"})
    assert cell.status == "not_applicable" and cell.verdict == "not applicable"
