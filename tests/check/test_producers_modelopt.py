"""check.producers --producer modelopt: the plan, the command lines, and a clear error where ModelOpt is not installed.

ModelOpt itself runs only in its own environment (`nox -s "producers(modelopt)"`), never in the test group: these
tests cover the plumbing around it. The ModelOpt models and their cells are observations, not test output.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from check.producers import BLOCKS, MODELOPT_ARGS, calibration, main, plan_modelopt


def test_the_plan_is_int8_and_fp8_of_every_block_and_int4_awq_of_the_matmul_block():
    names = [name for name, _, _ in plan_modelopt()]
    assert names == ["mo_mobilenet_int8", "mo_resnet_int8", "mo_transformer_int8", "mo_mobilenet_fp8", "mo_resnet_fp8",
                     "mo_transformer_fp8", "mo_transformer_int4"]
    int4 = next(recipe for name, _, recipe in plan_modelopt() if name.endswith("int4"))
    assert int4.args == ("--calibration_method", "awq_clip") and "128" in int4.note
    assert MODELOPT_ARGS == ("--calibration_eps", "cpu")  # never ModelOpt's default CUDA/TensorRT calibration


def test_calibration_samples_are_seeded_and_stacked_on_the_batch_axis():
    block = next(b for b in BLOCKS if b.name == "resnet")
    a, b = calibration(block), calibration(block)
    assert a.shape == (8, *block.input_shape[1:]) and a.dtype == np.float32 and np.array_equal(a, b)


@pytest.mark.skipif(importlib.util.find_spec("modelopt") is not None, reason="ModelOpt is installed here")
def test_without_modelopt_the_producer_says_what_it_needs_and_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "modelopt", None)  # import modelopt raises ImportError
    assert main(["--producer", "modelopt", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "nvidia-modelopt[onnx]" in err and "torch" in err
    assert not list(tmp_path.glob("*.onnx"))
