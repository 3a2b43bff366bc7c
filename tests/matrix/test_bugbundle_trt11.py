"""Bug-bundle commands per TensorRT generation: 11.x has no --int8, strongly typed (not verified on real TensorRT).

What the build offered comes from the worker's capability record in the cell (options.api), never from its version."""

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


def _built(cell, version: str, typing: str):
    """The cell as the worker records a build on a TensorRT whose networks are weakly, optionally or always strongly
    typed (engines/tensorrt/capabilities.py)."""
    return replace(cell, engine_version=version, options=dict(cell.options, api=dict(cell.options.get("api") or {},
                                                                                  typing=typing)))


@pytest.mark.parametrize("version, typing, weak", [("8.6.0", "weak", True), ("10.16.1.11", "optional", True),
                                                   ("11.0.0.114", "always strong", False),
                                                   ("11.4.0.106", "always strong", False)])
def test_int8_flag_only_before_11(observed, version, typing, weak):
    commands = tool_commands(_built(observed, version, typing), META)
    lines = commands["trtexec"] + commands["polygraphy"]
    assert ("--int8" in lines) == weak
    assert any("-CUBLAS" in x for x in lines) == weak  # 11.0 removed the cuBLAS/cuDNN tactic sources
    assert ("strongly typed" in _text(commands)) == (not weak)


def test_the_record_decides_not_the_version_number(observed):
    """A version label says nothing the record does not: an '11.x' label with a weak-typing record keeps --int8."""
    assert "--int8" in tool_commands(_built(observed, "11.9.0.1", "weak"), META)["trtexec"]
    assert "--int8" not in tool_commands(_built(observed, "8.6.0", "always strong"), META)["trtexec"]


def test_implicit_int8_reproducer_is_not_applicable_on_11(observed):
    meta = dict(META, trt={"int8": True, "calibrator": None, "int8_ranges": "trtexec"})
    strong = _built(observed, "11.4.0.106", "always strong")
    assert "not applicable on TensorRT 11" in _text(tool_commands(strong, meta))
    assert "not applicable" not in _text(tool_commands(_built(observed, "10.16.1.11", "optional"), meta))


def test_a_strongly_typed_request_built_weakly_gets_the_weak_commands(observed):
    """The suite asks for a strongly typed network; TensorRT 8.x has none and builds it weakly typed with INT8 and
    FP16 (the worker records strongly_typed false): trtexec gets --int8 --fp16, never --stronglyTyped, which 8.x's
    trtexec does not know. A build that was strongly typed keeps --stronglyTyped."""
    meta = dict(META, trt={"int8": True, "fp16": True, "strongly_typed": True})
    weak = replace(observed, options=dict(observed.options, strongly_typed=False))
    commands = tool_commands(weak, meta)
    assert "--int8" in commands["trtexec"] and "--fp16" in commands["trtexec"]
    assert "--stronglyTyped" not in commands["trtexec"] and "--strongly-typed" not in commands["polygraphy"]
    assert any("built it weakly typed" in n for n in commands["tool_notes"])
    strong = _built(replace(observed, options=dict(observed.options, strongly_typed=True)), "10.16.1.11", "optional")
    commands = tool_commands(strong, meta)
    assert "--stronglyTyped" in commands["trtexec"] and "--int8" not in commands["trtexec"]
