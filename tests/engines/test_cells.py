"""Judging an observation: numeric error in steps, signatures, precision and verdict."""

from __future__ import annotations

import numpy as np
import pytest

from cases import get_case
from core import numerics
from engines.base import EngineInfo, Observation
from engines.cells import judge_observation, run_cell
from generators.bundle import load_bundle
from generators.write import write_bundle

H200 = EngineInfo("tensorrt", "8.6.0", "NVIDIA H200 (sm_90)", True)
RUN = {"date": "2026-11-22T00:00:00Z", "source": "local"}


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    case = get_case("q_output_type")
    params = {"variant": "q_dq_chain", "activation": "int8", "plugin": "none"}
    return case, load_bundle(write_bundle(case, params, tmp_path_factory.mktemp("b")).path)


def test_error_is_counted_in_steps():
    """core.numerics, the one judge of outputs, takes (expected, actual)."""
    assert numerics.error_steps(np.array([1.0, 2.0]), np.array([1.0, 2.5]), 0.25) == 2.0
    ints = np.array([1], np.int8)
    assert numerics.error_steps(ints, np.array([3], np.int8), numerics.comparison_step(ints, None)[0]) == 2.0


def test_seed_000_symptom_shows_in_the_evidence(chain):
    """The Q layer's output type in the network definition lands next to the engine's evidence."""
    case, bundle = chain
    obs = Observation(stage="run", outputs=bundle.expected(), network_dtypes={"x_q": "FLOAT"},
                      precision={"node_of_x_q": {"precision": "int8", "evidence": "layer 'node_of_x_q' Reformat"}})
    cell = judge_observation(case, bundle, H200, obs, RUN)
    assert cell.status == "pass" and cell.last_stage == "compare" and cell.max_error_steps == 0.0
    assert cell.precision["node_of_x_q"]["network_dtype"] == "FLOAT"
    assert "network definition types its output FLOAT" in cell.precision["node_of_x_q"]["evidence"]


def test_wrong_outputs_fail_at_compare_with_the_error_in_steps(chain):
    case, bundle = chain
    bad = {k: v + 10 * numerics.output_step(bundle.meta, k) for k, v in bundle.expected().items()}
    cell = judge_observation(case, bundle, H200, Observation(stage="run", outputs=bad), RUN)
    assert cell.status == "fail" and cell.verdict == "new failure"
    assert "differs from the reference by 10 steps" in cell.error


def test_documented_signature_is_matched_in_the_log():
    case = get_case("dynamic_quantize")
    obs = Observation(stage="", error="ONNX parse failed",
                      log="[ERROR] 3: getPluginCreator could not find plugin: DynamicQuantizeLinear version: 1")
    bundle_meta = {"bundle": "dynamic_quantize/variant=dql_alone", "params": {"variant": "dql_alone"},
                   "digest": "d", "target_nodes": []}
    from generators.bundle import Bundle

    cell = judge_observation(case, Bundle(path=None, meta=bundle_meta), H200, obs, RUN)
    assert (cell.signature, cell.verdict) == ("dql_plugin_not_found", "as documented")


class _NoPlugins:
    name = "fake"

    def cannot_run(self, bundle):
        return "needs plugin X"

    def run(self, bundle):  # pragma: no cover - must not be reached
        raise AssertionError("ran a bundle it cannot run")


def test_an_engine_that_cannot_run_a_bundle_gives_a_not_run_cell(chain):
    case, bundle = chain
    cell = run_cell(case, bundle, _NoPlugins(), H200, RUN)
    assert (cell.status, cell.verdict, cell.reason) == ("not_run", "not run", "needs plugin X")


def test_a_bundle_whose_reference_could_not_run_is_not_failed_for_it():
    """case.json reference_error: no expected outputs; the cell keeps its parse, build and run, and says why its
    numerics were not compared."""
    from generators.bundle import Bundle

    meta = {"bundle": "user_model/m", "params": {"model": "m.onnx"}, "digest": "d", "target_nodes": [],
            "outputs": {"y": {"step": None}}, "tolerance_steps": 2.0,
            "reference_error": "the reference (ONNX Runtime 1.32.0, CPU, optimizations off) cannot run it: bad"}
    bundle = Bundle(path=None, meta=meta)
    cell = judge_observation(get_case("user_model"), bundle, H200,
                             Observation(stage="run", outputs={"y": np.ones(3, np.float32)}), RUN)
    assert (cell.status, cell.last_stage, cell.max_error_steps) == ("pass", "run", None)
    assert cell.reason == f"numerics not compared: {meta['reference_error']}"


RTX = EngineInfo("tensorrt-rtx", "1.7.1.116", "no GPU (ahead-of-time build, target SM89)", True)
IMPORT_FAILED = ("ONNX parse failed: Failed to import initializer: In node -1 with name:  and operator:  "
                 "(importInitializers): UNSUPPORTED_NODE: Assertion failed: ctx->getWeightsContext()."
                 "convertOnnxWeights(initializer, &weights): Failed to import initializer: w_scale")


@pytest.mark.parametrize("linted, named", [([], ""), (["mxfp8_block_scales"], "rtx_e8m0_initializer")])
def test_a_user_cell_names_a_seed_signature_only_where_the_lint_matched_that_case(linted, named):
    """TensorRT-RTX's 'Failed to import initializer' is any initializer it cannot import (weights of 0 bytes, uint4,
    a float8e8m0 scale): a user model's cell names seed mxfp8_block_scales' signature only where the lint matched that
    case's pattern on the model, never from the text alone."""
    from generators.bundle import Bundle

    meta = {"bundle": "user_model/m", "params": {"model": "m.onnx"}, "digest": "d", "target_nodes": [],
            "outputs": {"y": {"step": None}}, "tolerance_steps": 2.0,
            "lint": {"findings": [{"case": c, "rule": c} for c in linted]}}
    cell = judge_observation(get_case("user_model"), Bundle(path=None, meta=meta), RTX,
                             Observation(stage="", error=IMPORT_FAILED), RUN)
    assert cell.signature == named
    assert ("float8e8m0" in cell.explanation) == bool(named)


def _uint8_activation_meta(tmp_path) -> dict:
    """A user bundle's case.json for the Q/DQ conv with its activation zero point uint8 128, its lint the real one."""
    import json

    import onnx
    from onnx import numpy_helper

    from check.lint import lint_model, to_json
    from tests.check.models import qdq_conv

    model = onnx.load(str(qdq_conv(tmp_path / "conv.onnx", unnamed=False)))
    model.graph.initializer.append(numpy_helper.from_array(np.array(128, np.uint8), "zu"))
    for node in model.graph.node[:2]:
        node.input[2] = "zu"
    return {"bundle": "user_model/u8", "params": {"model": "u8.onnx"}, "digest": "d", "target_nodes": [],
            "outputs": {"y": {"step": None}}, "tolerance_steps": 2.0,
            "lint": json.loads(to_json(lint_model(model)))}


def test_a_failure_the_lint_predicted_from_a_documented_rule_is_as_documented(tmp_path):
    """TensorRT's parser refuses a uint8 zero point as onnx-tensorrt's operators.md says (check.lint's zero-point
    rule): a user model that fails so is "as documented", citing it, and stays so when judged again; a failure the
    lint did not predict (at build) is still a new failure."""
    from cases.verdict import rejudge
    from generators.bundle import Bundle

    bundle = Bundle(path=None, meta=_uint8_activation_meta(tmp_path))
    case = get_case("user_model")
    refused = Observation(stage="", error="ONNX parse failed: TensorRT only supports symmetric quantization")
    cell = judge_observation(case, bundle, H200, refused, RUN)
    assert cell.verdict == "as documented"
    assert "onnx-tensorrt/blob/main/docs/operators.md" in cell.explanation
    assert "the lint predicted it" in cell.explanation
    assert cell.expectation["rule"] == "uint8_activation"
    assert rejudge(cell, case).verdict == "as documented"
    built_then_failed = judge_observation(case, bundle, H200, Observation(stage="load", error="no kernel"), RUN)
    assert built_then_failed.verdict == "new failure"
