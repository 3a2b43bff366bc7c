"""tools/benchmark.py's `python -m check` timing: its models come from check/; nothing under tools/ imports tests/."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import onnx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _benchmark():
    spec = importlib.util.spec_from_file_location("qdq_benchmark", ROOT / "tools" / "benchmark.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_tool_imports_the_tests():
    for path in sorted((ROOT / "tools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n == "tests" or n.startswith("tests.") for n in names), f"{path} imports {names}"


def test_the_benchmark_models_are_the_large_architectures_at_a_fixed_batch(tmp_path):
    model = _benchmark().arch_model(tmp_path, "backbone_300", batch=1)
    graph = onnx.load(str(model)).graph
    assert model.name == "backbone_300_batch1_trt.onnx" and 270 <= len(graph.node) <= 330
    assert [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim] == [1, 3, 64, 64]


@pytest.mark.slow
def test_one_check_command_is_timed_and_its_result_read_from_the_report(tmp_path):
    bench = _benchmark()
    seconds, cpu, cell, result = bench.check_command(bench.arch_model(tmp_path, "backbone_300"), "onnxruntime",
                                                     tmp_path / "w")
    assert seconds > cell > 0 and cpu > 0 and result.split(":")[0] in ("pass", "fail"), result
    assert len(list((tmp_path / "w" / "rep").glob("backbone_300_trt-*.json"))) == 1


def test_help_and_a_bad_engine_start_nothing(capsys):
    import pytest

    bench = _benchmark()
    with pytest.raises(SystemExit) as done:
        bench._cli(["--help"])
    assert done.value.code == 0 and "--check" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        bench._cli(["--check", "nosuch"])
    assert done.value.code == 2 and "unknown engine nosuch" in capsys.readouterr().err
