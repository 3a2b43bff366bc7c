"""No function that nothing calls outside the tests: every function and method of the code is reached from a module's
own top level, from the templates, the tools' shell scripts and the workflow, or from another function so reached.

engines/runner.py is the cell runner pytest executes: its test function is called by pytest, and what it calls counts.
A function called from outside Python (a TensorRT plugin callback, ONNX Runtime's calibration reader) is listed below
with who calls it.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path
from typing import Dict, Set, Tuple

from engines.plan import RUNNER as CELL_RUNNER

REPO = Path(__file__).resolve().parents[1]
RUNNER = CELL_RUNNER.relative_to(REPO).as_posix()  # engines/runner.py
CALLED_FROM_OUTSIDE = {
    "get_next": "ONNX Runtime's CalibrationDataReader protocol (check/producers.py, check/arch_models.py)",
    "rewind": "ONNX Runtime's CalibrationDataReader protocol",
    "get_capability_interface": "TensorRT's IPluginV3 (engines/tensorrt/plugins.py)",
    "get_output_data_types": "TensorRT's IPluginV3", "get_output_shapes": "TensorRT's IPluginV3",
    "on_shape_change": "TensorRT's IPluginV3", "attach_to_context": "TensorRT's IPluginV3",
    "get_fields_to_serialize": "TensorRT's IPluginV3", "supports_format_combination": "TensorRT's plugin APIs",
    "configure_plugin": "TensorRT's plugin APIs", "create_plugin": "TensorRT's plugin creators",
    "deserialize_plugin": "TensorRT's IPluginCreator", "get_output_datatype": "TensorRT's IPluginV2DynamicExt",
    "get_output_dimensions": "TensorRT's IPluginV2DynamicExt",
}
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
REGISTERS = {"session", "fixture", "hookimpl"}  # decorators whose framework calls the function


def tracked() -> list:
    return subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()


def names_used(node: ast.AST) -> Set[str]:
    """Names, attributes and words in strings used in node, not counting the bodies of functions defined inside it."""
    found: Set[str] = set()
    stack = [node]
    while stack:
        for child in ast.iter_child_nodes(stack.pop()):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found |= {n for d in child.decorator_list for n in names_used(ast.Expression(d))}
                continue
            if isinstance(child, ast.Name):
                found.add(child.id)
            elif isinstance(child, ast.Attribute):
                found.add(child.attr)
            elif isinstance(child, ast.Constant) and isinstance(child.value, str):
                found |= set(WORD.findall(child.value))
            stack.append(child)
    return found


def dead_functions() -> Set[str]:
    """file:line: name of every function no live code reaches (a fixed point over names)."""
    files = tracked()
    code = [REPO / f for f in files
            if f.endswith(".py") and not f.startswith("tests/")]
    live: Set[str] = set()
    for f in files:
        if not f.endswith(".py") and not f.startswith(("reports/", "tests/")) and (REPO / f).suffix not in (".png",):
            live |= set(WORD.findall((REPO / f).read_text(encoding="utf-8", errors="replace")))
    functions: Dict[Tuple[str, int, str], Set[str]] = {}
    for path in code:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        live |= names_used(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[(str(path.relative_to(REPO)), node.lineno, node.name)] = names_used(node)
                if REGISTERS & {n for d in node.decorator_list for n in names_used(ast.Expression(d))}:
                    live.add(node.name)  # a nox session or a pytest fixture: the framework calls it
    reached: Set[Tuple[str, int, str]] = set()
    grew = True
    while grew:
        grew = False
        for key, used in functions.items():
            name = key[2]
            collected = key[0] == RUNNER and name.startswith("test_")  # the cell runner's test: pytest calls it
            if key not in reached and (name in live or name.startswith(("__", "pytest_")) or name == "main"
                                       or name in CALLED_FROM_OUTSIDE or collected):
                reached.add(key)
                live |= used
                grew = True
    return {f"{k[0]}:{k[1]}: {k[2]}" for k in functions if k not in reached}


def test_every_function_is_called_outside_the_tests():
    assert sorted(dead_functions()) == [], "delete it, or move it to the tests that are its only callers"


def test_the_scan_finds_a_function_only_a_test_calls(tmp_path, monkeypatch):
    (tmp_path / "lib.py").write_text("def used():\n    return helper()\n\n\ndef helper():\n    return 1\n\n\n"
                                     "def only_tested():\n    return 2\n\n\nX = used()\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_lib.py").write_text("from lib import only_tested\n")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    monkeypatch.setattr(f"{__name__}.tracked", lambda: ["lib.py", "tests/test_lib.py"])
    assert dead_functions() == {"lib.py:9: only_tested"}
