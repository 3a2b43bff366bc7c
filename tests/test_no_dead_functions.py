"""No function that nothing calls outside the tests: every function and method of the code is reached from a module's
own top level, from the templates, the tools' shell scripts and the workflow, or from another function so reached.

What counts as a reference is what runs, never what is said: a name or an attribute in the code, an import, a
"module:function" string that registers a function (a case's `builder=`, an engine's `adapter`), a name that
getattr/hasattr/setattr is given, an entry of `__all__`, Python code in a string that a subprocess runs
(`python -c "..."`), and the words of the templates, shell scripts, workflow and configuration. A docstring, a comment,
a message and the documentation (docs/, README.md) are not: a function mentioned only there is dead.

engines/runner.py is the cell runner pytest executes: its test function is called by pytest, and what it calls counts.
A function called from outside Python (a TensorRT plugin callback, ONNX Runtime's calibration reader) is listed below
with who calls it.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path
from typing import Dict, Iterator, Set, Tuple

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
    "get_output_dimensions": "TensorRT's IPluginV2DynamicExt", "enqueue": "TensorRT's plugin APIs",
}
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
REGISTRATION = re.compile(r"^[A-Za-z_][\w.]*:([A-Za-z_]\w*)$")  # "generators.grouped_conv:build"
REGISTERS = {"session", "fixture", "hookimpl"}  # decorators whose framework calls the function
NAMED = {"getattr", "hasattr", "setattr"}  # a name given to these, as a string, is a reference
# Files of code that are not Python: their words are references (templates call methods and properties, scripts run
# modules). The documentation, the data and the lock file are not code.
CODE_SUFFIXES = (".j2", ".sh", ".yml", ".yaml", ".toml", "")


def tracked() -> list:
    return subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()


def _docstrings(tree: ast.AST) -> Set[int]:
    """The ids of the docstring nodes of a tree (a module's, class's or function's first string)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _code_in(text: str) -> Set[str]:
    """The names used by Python code held in a string (`python -c "from x import f; f()"`); none for any other text."""
    if "import " not in text:
        return set()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    return names_used(tree)


def _children(node: ast.AST, docstrings: Set[int]) -> Iterator[Tuple[ast.AST, Set[str]]]:
    """Each child of node with the names it references by itself (not through its own children)."""
    for child in ast.iter_child_nodes(node):
        found: Set[str] = set()
        if isinstance(child, ast.Name):
            found.add(child.id)
        elif isinstance(child, ast.Attribute):
            found.add(child.attr)
        elif isinstance(child, ast.alias):
            found.add((child.asname or child.name).split(".")[-1])
            found.add(child.name.split(".")[-1])
        elif isinstance(child, ast.Constant) and isinstance(child.value, str) and id(child) not in docstrings:
            registered = REGISTRATION.match(child.value)
            found |= {registered.group(1)} if registered else _code_in(child.value)
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in NAMED \
                and len(child.args) > 1 and isinstance(child.args[1], ast.Constant) \
                and isinstance(child.args[1].value, str):
            found.add(child.args[1].value)
        elif isinstance(child, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                   for t in child.targets):
            found |= {e.value for e in ast.walk(child.value)
                      if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        yield child, found


def names_used(node: ast.AST, docstrings: Set[int] = frozenset()) -> Set[str]:
    """The names node references, not counting the bodies of functions defined inside it (their decorators count)."""
    found: Set[str] = set()
    stack = [node]
    while stack:
        for child, names in _children(stack.pop(), docstrings):
            found |= names
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found |= {n for d in child.decorator_list for n in names_used(ast.Expression(d))}
                continue
            stack.append(child)
    return found


def dead_functions() -> Set[str]:
    """file:line: name of every function no live code reaches (a fixed point over names)."""
    files = tracked()
    code = [REPO / f for f in files if f.endswith(".py") and not f.startswith("tests/")]
    live: Set[str] = set()
    for f in files:
        if not f.endswith(".py") and not f.startswith(("reports/", "tests/", "docs/")) \
                and Path(f).suffix in CODE_SUFFIXES and (REPO / f).is_file():
            live |= set(WORD.findall((REPO / f).read_text(encoding="utf-8", errors="replace")))
    functions: Dict[Tuple[str, int, str], Set[str]] = {}
    for path in code:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        live |= names_used(tree, docstrings)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[(str(path.relative_to(REPO)), node.lineno, node.name)] = names_used(node, docstrings)
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


def _scan(tmp_path, monkeypatch, files: Dict[str, str]) -> Set[str]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    monkeypatch.setattr(f"{__name__}.tracked", lambda: sorted(files))
    return dead_functions()


def test_the_scan_finds_a_function_only_a_test_calls(tmp_path, monkeypatch):
    assert _scan(tmp_path, monkeypatch, {
        "lib.py": "def used():\n    return helper()\n\n\ndef helper():\n    return 1\n\n\n"
                  "def only_tested():\n    return 2\n\n\nX = used()\n",
        "tests/test_lib.py": "from lib import only_tested\n",
    }) == {"lib.py:9: only_tested"}


def test_a_mention_in_words_is_no_use(tmp_path, monkeypatch):
    """A function named only by a docstring (its module's, its own), a comment, a message or the documentation is
    dead; one registered as "module:function", given to getattr, listed in __all__ or run by `python -c` is not."""
    lib = ('"""The oracles: oracle_named_in_a_docstring runs ONNX Runtime."""\n\n'
           "# oracle_in_a_comment\n"
           "MESSAGE = 'call oracle_in_a_message() instead'\n"
           "SPEC = 'lib:registered'\n"
           "CODE = 'from lib import run_by_python_c; run_by_python_c()'\n"
           "__all__ = ['exported']\n\n\n"
           "def oracle_named_in_a_docstring():\n    return 1\n\n\n"
           "def oracle_in_a_comment():\n    return 2\n\n\n"
           "def oracle_in_a_message():\n    return 3\n\n\n"
           "def oracle_in_the_docs():\n    return 4\n\n\n"
           "def registered():\n    return 5\n\n\n"
           "def looked_up():\n    return 6\n\n\n"
           "def run_by_python_c():\n    return 7\n\n\n"
           "def exported():\n    return 8\n\n\n"
           "def in_a_template():\n    return 9\n\n\n"
           "def itself():\n    \"\"\"itself() is never called.\"\"\"\n    return 10\n\n\n"
           "X = getattr(object(), 'looked_up', None)\n")
    found = _scan(tmp_path, monkeypatch, {"lib.py": lib, "docs/lib.md": "oracle_in_the_docs() does it",
                                          "README.md": "see oracle_in_the_docs", "view.j2": "{{ in_a_template() }}"})
    assert {f.split(": ")[1] for f in found} == {"oracle_named_in_a_docstring", "oracle_in_a_comment",
                                                "oracle_in_a_message", "oracle_in_the_docs", "itself"}
