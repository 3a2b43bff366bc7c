"""No function and no module constant that nothing uses outside the tests: every function, method and UPPER_CASE
constant of the code is reached from a module's own top level, from the templates, the tools' shell scripts and the
workflow, or from another definition so reached.

A reference is to a definition, not to a name: `numerics.error_steps(...)` and `from core.numerics import error_steps`
reach core/numerics.py's error_steps, never a homonym in engines/cells.py. A name is resolved through the module's
own definitions and its imports (`import a.b as m`, `from a.b import f`, relative imports, re-exports of a package);
an attribute of a module (`m.f`, `a.b.f`) is that module's definition. What cannot be resolved statically is matched
by name, and only where it can mean nothing else:
- an attribute of any other object (`obj.method`), and a word of a template (it reads what its view holds), reach
  methods, and the functions and constants of the modules loaded dynamically: by path (the files a bug bundle or the
  TensorRT worker loads, core.engines' repro files) or by a name the code holds as a string (cases.CASE_MODULES,
  the modules that declare CASE);
- a name that getattr/hasattr/setattr is given, an entry of `__all__`, Python code in a string that a subprocess runs
  (`python -c "..."`) and the words of the shell scripts, workflow and configuration reach any definition so named;
- a "module:function" string that registers a function (a case's `builder=`, an engine's `adapter`) reaches that
  module's function.
A docstring, a comment, a message and the documentation (docs/, README.md) are not references; neither is a
definition's own body (a recursive call) nor a test.

engines/runner.py is the cell runner pytest executes: its test function is called by pytest, and what it calls counts.
A function called from outside Python (a TensorRT plugin callback, ONNX Runtime's calibration reader) is listed below
with who calls it.
"""

from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from cases import CASE_MODULES
from core.engines import ENGINES, REPRO_ALWAYS
from engines.plan import RUNNER as CELL_RUNNER

REPO = Path(__file__).resolve().parents[1]
RUNNER = CELL_RUNNER.relative_to(REPO).as_posix()  # engines/runner.py
# Loaded by path (a bug bundle's suite/, the TensorRT worker's siblings): their functions are reached as attributes of
# a module object the code cannot name statically (`trt_module("gpu").detect()`).
LOADED_BY_PATH = frozenset([*REPRO_ALWAYS.values(), *(p for s in ENGINES.values() for p in s.repro_files.values())])
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
CONSTANT = re.compile(r"^_?[A-Z][A-Z0-9_]*$")  # a module constant's name
REGISTRATION = re.compile(r"^([A-Za-z_][\w.]*):([A-Za-z_]\w*)$")  # "generators.grouped_conv:build"
REGISTERS = {"session", "fixture", "hookimpl"}  # decorators whose framework calls the function
NAMED = {"getattr", "hasattr", "setattr"}  # a name given to these, as a string, is a reference
# Files of code that are not Python: their words are references (templates call methods and properties, scripts run
# modules). The documentation, the data and the lock file are not code.
CODE_SUFFIXES = (".j2", ".sh", ".yml", ".yaml", ".toml", "")
TEMPLATES = (".j2",)  # their words are the attributes and methods of the view they render, never a module's function
Key = Tuple[str, str]  # (module, name): a module function or constant; a method is (module, "Class.method")


def tracked() -> list:
    return subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()


def module_name(relative: str) -> str:
    """cases/base.py -> cases.base; engines/tensorrt/__init__.py -> engines.tensorrt."""
    parts = relative[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass
class Module:
    """One file's definitions, what its names are bound to by its imports, and its top-level code."""

    name: str
    path: str
    package: str
    tree: ast.Module
    defs: Dict[str, ast.AST] = field(default_factory=dict)  # function or constant name -> its definition
    methods: Dict[str, ast.AST] = field(default_factory=dict)  # "Class.method" -> its definition
    imports: Dict[str, Tuple[str, str]] = field(default_factory=dict)  # local name -> (module, name or "")


@dataclass
class Refs:
    """What one piece of code references: definitions by key, and names that may mean any definition so named."""

    keys: Set[Key] = field(default_factory=set)
    methods: Set[str] = field(default_factory=set)  # attributes of an object: methods and path-loaded functions
    any_named: Set[str] = field(default_factory=set)  # getattr strings, `python -c` code, __all__


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


def _constant_targets(node: ast.AST) -> List[str]:
    """The module constants a top-level assignment defines."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
        else []
    names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return [n for n in names if CONSTANT.match(n) and n != "__all__"]


def load(relative: str, text: str, known: Set[str]) -> Module:
    """A module's definitions and import bindings (`known`: every module name, to tell a submodule from a name)."""
    name = module_name(relative)
    package = name if relative.endswith("__init__.py") else name.rpartition(".")[0]
    mod = Module(name, relative, package, ast.parse(text))
    for node in mod.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mod.defs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    mod.methods[f"{node.name}.{item.name}"] = item
        for target in _constant_targets(node):
            mod.defs[target] = node
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                mod.imports[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], "")
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            for a in node.names:
                whole = f"{base}.{a.name}" if base else a.name
                mod.imports[a.asname or a.name] = (whole, "") if whole in known else (base, a.name)
    return mod


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module a `from ... import` names, relative imports resolved against the importing package."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
    return ".".join([*base, *([node.module] if node.module else [])])


class Index:
    """Every module, and a name or an attribute resolved to the definition it means."""

    def __init__(self, modules: Dict[str, Module]):
        self.modules = modules

    def definition(self, module: str, name: str, seen: Optional[Set[Key]] = None) -> Optional[Key]:
        """The definition `name` means in `module`: its own, or the one its imports bind (followed through
        re-exports); None for a name that is neither."""
        mod = self.modules.get(module)
        seen = seen or set()
        if mod is None or (module, name) in seen:
            return None
        if name in mod.defs:
            return (module, name)
        bound = mod.imports.get(name)
        if bound and bound[1]:
            return self.definition(bound[0], bound[1], seen | {(module, name)})
        return None

    def module_of(self, mod: Module, node: ast.AST) -> str:
        """The module an expression names (`m`, `a.b`), "" for any other expression."""
        if isinstance(node, ast.Name):
            bound = mod.imports.get(node.id)
            if bound and not bound[1]:
                return bound[0]
            if bound:
                whole = f"{bound[0]}.{bound[1]}"
                return whole if whole in self.modules else ""
            return ""
        if isinstance(node, ast.Attribute):
            base = self.module_of(mod, node.value)
            whole = f"{base}.{node.attr}" if base else ""
            return whole if whole in self.modules else ""
        return ""

    def refs(self, mod: Module, node: ast.AST, docstrings: Set[int], skip: Tuple[ast.AST, ...] = ()) -> Refs:
        """What node's code references, not counting the bodies in `skip` (definitions of their own)."""
        out = Refs()
        stack = [node]
        while stack:
            here = stack.pop()
            for child in ast.iter_child_nodes(here):
                if child in skip:
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        stack.extend(child.decorator_list)
                    continue
                self._one(mod, child, docstrings, out)
                stack.append(child)
        return out

    def _one(self, mod: Module, child: ast.AST, docstrings: Set[int], out: Refs) -> None:
        """The reference one node makes by itself (not through its children)."""
        if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Store):
            key = self.definition(mod.name, child.id)
            if key:
                out.keys.add(key)
        elif isinstance(child, ast.Attribute):
            base = self.module_of(mod, child.value)
            key = self.definition(base, child.attr) if base else None
            if key:
                out.keys.add(key)
            elif not base:
                out.methods.add(child.attr)
        elif isinstance(child, ast.Constant) and isinstance(child.value, str) and id(child) not in docstrings:
            registered = REGISTRATION.match(child.value)
            key = self.definition(registered.group(1), registered.group(2)) if registered else None
            if key:
                out.keys.add(key)
            elif "import " in child.value:
                out.any_named |= _code_in(child.value)
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in NAMED \
                and len(child.args) > 1 and isinstance(child.args[1], ast.Constant) \
                and isinstance(child.args[1].value, str):
            out.any_named.add(child.args[1].value)
        elif isinstance(child, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                   for t in child.targets):
            out.any_named |= {e.value for e in ast.walk(child.value)
                              if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _code_in(text: str) -> Set[str]:
    """The names Python code held in a string uses (`python -c "from x import f; f()"`); none for any other text."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}


def _strings(index: Index) -> Set[str]:
    """Every string the code holds: a module named in one ("cases.grouped_conv") is imported by name."""
    return {n.value for m in index.modules.values() for n in ast.walk(m.tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _is_root(mod: Module, name: str, node: ast.AST) -> bool:
    """A definition called from outside the code: a dunder, main, a pytest hook, a framework-registered function, a
    callback of an engine, or the cell runner's test."""
    short = name.rpartition(".")[2]
    if short.startswith(("__", "pytest_")) or short == "main" or short in CALLED_FROM_OUTSIDE:
        return True
    if mod.path == RUNNER and short.startswith("test_"):
        return True
    decorators = getattr(node, "decorator_list", [])
    return any(REGISTERS & ({n.id for n in ast.walk(d) if isinstance(n, ast.Name)}
                            | {n.attr for n in ast.walk(d) if isinstance(n, ast.Attribute)}) for d in decorators)


def dead_definitions() -> Set[str]:
    """file:line: name of every function, method and module constant no live code reaches (a fixed point)."""
    files = tracked()
    live = Refs()
    code = [f for f in files if f.endswith(".py") and not f.startswith("tests/") and (REPO / f).is_file()]
    known = {module_name(f) for f in code}
    index = Index({module_name(f): load(f, (REPO / f).read_text(encoding="utf-8"), known) for f in code})
    words: Set[str] = set()
    for f in files:
        if not f.endswith(".py") and not f.startswith(("reports/", "tests/", "docs/")) \
                and Path(f).suffix in CODE_SUFFIXES and (REPO / f).is_file():
            said = set(WORD.findall((REPO / f).read_text(encoding="utf-8", errors="replace")))
            if f.endswith(TEMPLATES):
                live.methods |= said  # a template reads the attributes of what its view holds
            else:
                words |= said
    # loaded by path, by a name held as a string, or found as a case module (cases.case_modules: a file that declares
    # CASE, imported by its name)
    dynamic = {m.name for m in index.modules.values()
               if m.path in LOADED_BY_PATH or m.name in _strings(index) or m.name in CASE_MODULES}
    uses: Dict[Key, Refs] = {}
    nodes: Dict[Key, Tuple[Module, ast.AST]] = {}
    for mod in index.modules.values():
        docstrings = _docstrings(mod.tree)
        owned = {id(n) for n in mod.defs.values()}
        bodies = tuple(n for n in mod.tree.body if id(n) in owned) + \
            tuple(m for m in mod.methods.values())
        top = index.refs(mod, mod.tree, docstrings, skip=bodies)
        live.keys |= top.keys
        live.methods |= top.methods
        live.any_named |= top.any_named
        for name, node in [*mod.defs.items(), *mod.methods.items()]:
            key = (mod.name, name)
            nodes[key] = (mod, node)
            uses[key] = index.refs(mod, node, docstrings)
            if _is_root(mod, name, node):
                live.keys.add(key)
    reached: Set[Key] = set()
    grew = True
    while grew:
        grew = False
        for key, (mod, _) in nodes.items():
            if key in reached or not _reached(key, mod, live, words, dynamic):
                continue
            reached.add(key)
            found = uses[key]
            live.keys |= found.keys
            live.methods |= found.methods
            live.any_named |= found.any_named
            grew = True
    return {f"{nodes[k][0].path}:{nodes[k][1].lineno}: {k[1]}" for k in nodes if k not in reached}


def _reached(key: Key, mod: Module, live: Refs, words: Set[str], dynamic: Set[str]) -> bool:
    """Whether the live code so far references a definition."""
    short = key[1].rpartition(".")[2]
    if key in live.keys or short in live.any_named or short in words:
        return True
    if "." in key[1]:  # a method: any attribute of that name
        return short in live.methods
    return mod.name in dynamic and short in live.methods


def test_every_definition_is_used_outside_the_tests():
    assert sorted(dead_definitions()) == [], "delete it, or move it to the tests that are its only users"


def _scan(tmp_path, monkeypatch, files: Dict[str, str]) -> Set[str]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    monkeypatch.setattr(f"{__name__}.tracked", lambda: sorted(files))
    return dead_definitions()


def test_the_scan_finds_a_function_only_a_test_calls(tmp_path, monkeypatch):
    assert _scan(tmp_path, monkeypatch, {
        "lib.py": "def used():\n    return helper()\n\n\ndef helper():\n    return 1\n\n\n"
                  "def only_tested():\n    return 2\n\n\nx = used()\n",
        "tests/test_lib.py": "from lib import only_tested\n",
    }) == {"lib.py:9: only_tested"}


def test_a_homonym_keeps_no_function_alive(tmp_path, monkeypatch):
    """engines/cells.py's error_steps and output_stats lived on core/numerics.py's calls of its own functions of
    those names and on the cells' `output_stats` field: a reference reaches the definition it names."""
    found = _scan(tmp_path, monkeypatch, {
        "core/__init__.py": "", "engines/__init__.py": "",
        "core/numerics.py": "def error_steps(expected, actual):\n    return 0\n\n\n"
                            "def output_stats(a):\n    return {}\n",
        "engines/cells.py": "from core import numerics\n\n\n"
                            "def error_steps(got, expected):\n    return numerics.error_steps(expected, got)\n\n\n"
                            "def output_stats(bundle):\n    return {}\n\n\n"
                            "def judge(cell):\n    return cell.output_stats, numerics.output_stats(cell)\n\n\n"
                            "x = judge(None)\n",
        "tests/test_cells.py": "from engines.cells import error_steps\n",
    })
    assert found == {"engines/cells.py:4: error_steps", "engines/cells.py:8: output_stats",
                     "core/numerics.py:1: error_steps"}


def test_a_module_constant_only_its_own_definition_uses_is_dead(tmp_path, monkeypatch):
    found = _scan(tmp_path, monkeypatch, {
        "lib.py": "UNUSED = ('a', 'b')\nUSED = 2\nTWICE = USED * 2\nCHAIN = TWICE + 1\n\n\n"
                  "def f():\n    return TWICE\n\n\nx = f()\n",
        "other.py": "from lib import CHAIN as C\n",
        "tests/test_lib.py": "from lib import UNUSED\n",
    })
    assert {f.split(": ")[1] for f in found} == {"UNUSED", "CHAIN"}


def test_a_mention_in_words_is_no_use(tmp_path, monkeypatch):
    """A function named only by a docstring (its module's, its own), a comment, a message or the documentation is
    dead; one registered as "module:function", given to getattr, listed in __all__ or run by `python -c` is not. A
    template's word keeps a method alive, not a module function of that name."""
    lib = ('"""The oracles: oracle_named_in_a_docstring runs ONNX Runtime."""\n\n'
           "# oracle_in_a_comment\n"
           "message = 'call oracle_in_a_message() instead'\n"
           "spec = 'lib:registered'\n"
           "code = 'from lib import run_by_python_c; run_by_python_c()'\n"
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
           "class View:\n    def in_a_template(self):\n        return 11\n\n\n"
           "def itself():\n    \"\"\"itself() is never called.\"\"\"\n    return itself()\n\n\n"
           "x = getattr(object(), 'looked_up', None)\n")
    found = _scan(tmp_path, monkeypatch, {"lib.py": lib, "docs/lib.md": "oracle_in_the_docs() does it",
                                          "README.md": "see oracle_in_the_docs", "view.j2": "{{ in_a_template() }}"})
    assert {f.split(": ")[1] for f in found} == {"oracle_named_in_a_docstring", "oracle_in_a_comment",
                                                "oracle_in_a_message", "oracle_in_the_docs", "itself", "in_a_template"}
