"""Bug-bundle commands per TensorRT generation: 11.x has no --int8 and is strongly typed (not verified on real TensorRT)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from matrix.bugbundle import tool_commands
from matrix.merge import load_results

OBSERVED = Path(__file__).resolve().parent.parent / "data" / "observed-sample.jsonl"
META = {"trt": {"int8": True}, "inputs": {"x": {}}, "outputs": {"y": {}}, "tolerance_steps": 1.0}


@pytest.fixture(scope="module")
def observed():
    return next(c for c in load_results([OBSERVED]).cells if c.engine_version == "8.6.0")


def _text(commands: dict) -> str:
    return repr(commands)


@pytest.mark.parametrize("version, weak", [("8.6.0", True), ("10.16.1.11", True), ("11.0.0.114", False),
                                            ("11.4.0.106", False)])
def test_int8_flag_only_before_11(observed, version, weak):
    commands = tool_commands(replace(observed, engine_version=version), META)
    lines = commands["trtexec"] + commands["polygraphy"]
    assert ("--int8" in lines) == weak
    assert any("-CUBLAS" in x for x in lines) == weak  # 11.0 removed the cuBLAS/cuDNN tactic sources
    assert ("strongly typed" in _text(commands)) == (not weak)


def test_implicit_int8_reproducer_is_not_applicable_on_11(observed):
    meta = dict(META, trt={"int8": True, "calibrator": None, "int8_ranges": "trtexec"})
    assert "not applicable on TensorRT 11" in _text(tool_commands(replace(observed, engine_version="11.4.0.106"), meta))
    assert "not applicable" not in _text(tool_commands(replace(observed, engine_version="10.16.1.11"), meta))
