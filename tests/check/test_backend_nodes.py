"""check.backend_nodes: the onnx package's quantization node tests as bundles that run as cells."""

from __future__ import annotations

import json

import pytest

from check.backend_nodes import write
from generators.bundle import load_bundle

pytestmark = pytest.mark.slow  # every test reads its module fixture, which writes the onnx node tests as bundles


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("backend")
    return out, {t.name: t for t in write(out, ("DequantizeLinear", "QLinearMatMul", "ConvInteger"))}


def test_usable_tests_become_bundles_and_the_rest_say_why(written):
    out, tests = written
    assert tests["test_dequantizelinear"].bundle == "user_model/backend_test_dequantizelinear"
    assert tests["test_dequantizelinear"].opset == 13
    assert tests["test_dequantizelinear_e4m3fn"].left_out and not tests["test_dequantizelinear_e4m3fn"].bundle
    assert json.loads((out / "backend_nodes.json").read_text())


def test_an_integer_op_is_referenced_by_onnx_reference_never_by_onnxruntime(written):
    out, tests = written
    padded = tests["test_convinteger_with_padding"]  # ORT: per-channel weight zero point not supported
    assert padded.reference.startswith("onnx.reference")
    assert tests["test_qlinearmatmul_2D_int8_float32"].reference.startswith("onnx.reference")
    assert tests["test_dequantizelinear"].reference.startswith("onnxruntime")


@pytest.mark.parametrize("name", ["test_dequantizelinear", "test_dequantizelinear_axis",
                                  "test_qlinearmatmul_2D_int8_float32"])
def test_bundles_produce_cells_on_onnxruntime(written, name):
    from cases.user_model import CASE
    from engines import get_engine
    from engines.cells import run_cell

    out, tests = written
    bundle = load_bundle(out / tests[name].bundle)
    engine = get_engine("onnxruntime")
    cell = run_cell(CASE, bundle, engine, engine.probe(), {"source": "local"})
    assert cell.engine == "onnxruntime" and cell.bundle == bundle.id
    assert cell.status == "pass", cell.error
