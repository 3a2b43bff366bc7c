"""TensorRT for RTX for real (PyPI `tensorrt-rtx`, module tensorrt_rtx), on this machine with or without a GPU.

The strongly typed path, the parser's error fields, the build log's layer listing and the Python plugin
registration of the 10.x/11.x API generation, exercised on a real engine: these tests build real plans.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

if os.environ.get("QDQ_REQUIRE_RTX") == "1":  # CI: the test environment has it, so these must run, not skip
    import tensorrt_rtx  # noqa: F401
else:
    pytest.importorskip("tensorrt_rtx")

from cases import get_case  # noqa: E402
from engines.cells import run_cell  # noqa: E402
from engines.tensorrt import RtxAdapter, gpu  # noqa: E402
from generators import write  # noqa: E402
from generators.bundle import load_bundle  # noqa: E402
from tests.engines.rtx_cells import rtx_cell_and_info  # noqa: E402

CONV = ("grouped_conv", {"cpg": 1, "weights": "per_channel", "activation": "int8", "output_qdq": True,
                         "epilogue": "none"})
MATMUL = ("matmul_per_channel", {"op": "matmul", "weights": "per_channel", "output_qdq": True})
UINT8 = ("grouped_conv", {"cpg": 1, "weights": "per_channel", "activation": "uint8", "output_qdq": True,
                          "epilogue": "none"})
DQL = ("dynamic_quantize", {"variant": "dql_alone"})
V2, V3 = ({"variant": "plugin_q_direct", "activation": "int8", "plugin": api} for api in ("v2", "v3"))


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("rtx-bundles")


def test_probe_needs_no_gpu_and_records_the_modules_capabilities():
    info = RtxAdapter(python=sys.executable).probe()
    assert info.available and info.name == "tensorrt-rtx"
    caps = info.capabilities
    assert caps["module"] == "tensorrt_rtx" and caps["typing"] == "always strong" and caps["aot"] is True
    assert caps["io"] == "tensors" and "IPluginV3" in caps["python_plugins"] and not caps["precision_flags"]
    assert caps["input_shapes"] == "set_input_shape"
    assert {"SM80", "SM86", "SM89", "SM120"} <= set(caps["compute_capabilities"])
    assert "ahead-of-time build" in info.hardware


@pytest.mark.skipif(gpu.detect().present, reason="a GPU is here: the not-run reason would be its own refusal")
def test_an_int8_conv_is_built_ahead_of_time_and_attributed_through_onnx_metadata(root):
    cell, _ = rtx_cell_and_info(root, *CONV)
    assert (cell.status, cell.last_stage) == ("built", "build") and cell.max_error_steps is None
    assert "no NVIDIA GPU on this machine" in cell.reason
    entry = cell.precision["node_of_conv"]
    assert (entry["precision"], entry["layer_type"], entry["via"]) == ("int8", "correlation", "metadata")
    assert entry["inputs"] == ["int8"] and entry["weights"] == ["int8"]
    assert cell.fused is True and cell.options["api"]["typing"] == "always strong"
    assert cell.options["strongly_typed"] is True and cell.options["builder_flags"] == []
    assert cell.listing["kind"] == "build log Layers:" and cell.listing["encoding"] == "zlib+base64"
    assert "profile" not in cell.options, "the catalogue's static bundles build as before: no profile"


def test_the_target_architecture_is_a_column_of_its_own(root):
    """An FP32 GEMM cannot be compiled for Turing: SM75 refuses what SM86 builds."""
    sm86, info86 = rtx_cell_and_info(root, *MATMUL, target="SM86")
    sm75, info75 = rtx_cell_and_info(root, *MATMUL, target="SM75")
    assert info86.variant == {"target": "SM86"} and info75.variant == {"target": "SM75"}
    assert sm86.status == "built" and sm86.options["target"] == "SM86"
    assert sm75.status == "fail" and "Turing" in sm75.error


def test_parser_errors_carry_node_and_function(root):
    cell, _ = rtx_cell_and_info(root, *DQL)
    assert cell.status == "fail" and cell.last_stage == ""
    assert "[node node_of_x_q (DynamicQuantizeLinear), checkDynamicQuantizeLinear]" in cell.error


def test_a_nonzero_zero_point_is_the_documented_parser_refusal(root):
    cell, _ = rtx_cell_and_info(root, *UINT8)
    assert cell.status == "fail" and "Non-zero zero point is not supported" in cell.error
    assert cell.signature == "nonzero_zero_point"


def test_a_python_v2_plugin_registers_and_the_parser_refuses_it(root):
    cell, _ = rtx_cell_and_info(root, "q_output_type", V2)
    assert cell.options["plugins_registered"]["qdq_matrix::Int8IdentityV2"] == "registered"
    assert cell.status == "fail"
    assert "IPluginV3 plugins registered with an IPluginCreatorV3One creator only" in cell.error


def test_a_python_v3_plugin_builds_with_the_library_link(root):
    cell, _ = rtx_cell_and_info(root, "q_output_type", V3, plugin_link="libtensorrt_rtx.so")
    assert cell.status == "built", cell.error
    entry = cell.precision["node_of_p"]
    assert entry["layer_type"] == "custom_layer" and entry["precision"] == "int8"


def test_the_lint_predicts_the_sm86_refusal_of_an_fp8_gemm_and_a_real_sm86_build_agrees(root):
    from dataclasses import asdict

    from check.lint import lint_model
    from matrix.predict import compare

    case, params = "fp8_qdq", {"op": "matmul", "weights": "per_tensor"}
    model = write.build(get_case(case), params).model
    rtx = [f for f in lint_model(model) if f.rule == "fp8_gemm" and f.engine == "tensorrt-rtx"]
    by_setting = {f.setting: f for f in rtx}
    assert {"target=SM75", "target=SM80", "target=SM86"} <= set(by_setting)
    sm86 = by_setting["target=SM86"]
    assert sm86.predicted == "build fails" and "tensorrt-rtx" in sm86.source and "8.9" in sm86.detail
    cell, _ = rtx_cell_and_info(root, case, params, target="SM86")
    record = dict(asdict(cell), engine_version=cell.engine_version)
    rows = compare([sm86], [record])
    assert [(r.observed, r.agrees) for r in rows] == [("build fails", True)], (cell.status, cell.last_stage, cell.error)
    default = rtx_cell_and_info(root, case, params)[0]
    assert not compare([sm86], [asdict(default)]), "a finding for SM86 says nothing of the default target set"


def _user_cell(bundle, target: str = "SM86"):
    adapter = RtxAdapter(python=sys.executable, target=target)
    try:
        return run_cell(get_case("user_model"), bundle, adapter, adapter.probe(), {"source": "local"})
    finally:
        adapter.close()


def test_a_dynamic_batch_builds_with_the_default_profile_and_records_it(tmp_path):
    """Without --shape: "Network has dynamic or shape inputs, but no optimization profile has been defined" was the
    failure; now the assumed batch of 1 is the profile, recorded in the cell as the worker set it."""
    from check.bundle import bundle_from_model
    from tests.check.models import qdq_conv

    bundle = bundle_from_model(qdq_conv(tmp_path / "dyn.onnx", dynamic_batch=True), tmp_path / "b")
    cell = _user_cell(bundle)
    assert cell.status == "built" and cell.last_stage == "build", cell.error
    assert cell.options["profile"] == {"x": {"min": [1, 3, 8, 8], "opt": [1, 3, 8, 8], "max": [1, 3, 8, 8],
                                             "from": "request"}}
    assert cell.precision["node_of_c"]["precision"] == "int8"


def test_dynamic_batch_and_sequence_build_with_a_min_opt_max_range(tmp_path):
    from check.bundle import bundle_from_model
    from check.shapes import InputShape
    from tests.check.models import bert_embedding

    ids = InputShape((1, 8), (2, 32), (4, 128))
    shapes = {n: ids for n in ("input_ids", "attention_mask", "token_type_ids")}
    bundle = bundle_from_model(bert_embedding(tmp_path / "bert.onnx"), tmp_path / "b", shapes=shapes)
    cell = _user_cell(bundle)
    assert cell.status == "built", cell.error
    assert set(cell.options["profile"]) == set(shapes)
    assert all(p == {"min": [1, 8], "opt": [2, 32], "max": [4, 128], "from": "request"}
               for p in cell.options["profile"].values())
    assert cell.precision["dense"]["precision"] == "int8"


def test_the_columns_of_one_version_share_their_serving_worker_and_a_plugin_link_gets_its_own(root):
    """engines.run puts every target of a version in one pytest: one worker process serves them all (the target is
    in each request), so its start and its library load are paid once; the link column's environment differs."""
    case = get_case(CONV[0])
    bundle = load_bundle(write.write_bundle(case, CONV[1], root=root).path)
    adapters = [RtxAdapter(python=sys.executable, target=t) for t in ("SM86", "SM89")]
    linked = RtxAdapter(python=sys.executable, plugin_link="libtensorrt_rtx.so")
    try:
        built = {a.target: run_cell(case, bundle, a, a.probe(), {"source": "local"}) for a in adapters}
        linked_cell = run_cell(case, bundle, linked, linked.probe(), {"source": "local"})
        assert adapters[0]._server is adapters[1]._server and adapters[0]._server is not None
        assert linked._server is not adapters[0]._server
        assert {c.variant["target"] for c in built.values()} == {"SM86", "SM89"}
        assert {c.status for c in (*built.values(), linked_cell)} <= {"built", "pass", "fail"}
    finally:
        for a in (*adapters, linked):
            a.close()
