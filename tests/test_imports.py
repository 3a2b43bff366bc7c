"""The repository's import graph: the layers import downwards only, no cycle, core/, cases/ and matrix/ never load an
engine, tools/ never imports tests/.

What is read: every Python file of core/, cases/, check/, engines/, generators/, matrix/, tools/, noxfile.py and
tests/ (tests/data holds stand-in engines, not our modules). A file is a module named by its path (cases/base.py is
`cases.base`, a package's __init__.py is the package, tools/lint-vs-observed.py is `tools.lint-vs-observed`).

What is an import: every `import x` and `from x import y` statement of a file, at module level, inside a function or
under `if TYPE_CHECKING:`, as the longest repository module it names (`from cases import get_case` is `cases`, `from
matrix import render` is `matrix.render`); relative imports resolve against the importing package.
`importlib.import_module(name)` and the catalogue's "module:function" strings are data, not imports.

The rules:
- The layers, as the README draws them, bottom first: core (what every layer needs: the engine descriptors, the cell
  record and its schemas, the results reader, the CPU probe, the judge of outputs, the vocabulary) < cases (the
  catalogue) < generators < engines < matrix < check < tools < noxfile < tests. A module imports its own layer or one
  below it, never one above, function-level imports included: tests may import anything, nothing imports tests.
- No import cycle between the repository's modules, function-level imports included. `import a.b` is an edge to a.b
  only, not to the package a that Python runs first (a package's __init__ importing its own submodules is no cycle).
- core/, cases/ and matrix/ never load an engine implementation. A module of theirs must not import, at any depth
  of its own file, nor reach through the imports that run when the modules it imports are imported (their module-level
  imports, and the packages Python runs before them: importing a.b.c runs a and a.b), any of:
  - a module of an engine's implementation, engines.onnxruntime*, engines.openvino*, engines.tensorrt* (the packages
    of the adapters in core/engines.py);
  - an engine's own package: onnxruntime, openvino, tensorrt, tensorrt_rtx (the descriptors' `module`).
  An engine-neutral module of engines/ is allowed, and so is the engines package it runs, which reads core.engines and
  imports no engine (matrix/ imports none today: results are read by core.results). A function-level import inside
  another package (generators' ONNX Runtime cross-check, run only when a bundle is written) is that package's
  business, not the importer's.
- tools/ imports nothing from tests/, at any depth (a tool that needs a test's model takes it from check/).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple

from core.engines import ENGINES

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "cases", "check", "engines", "generators", "matrix", "tests")
SCRIPTS = ("noxfile.py",)
TOOLS = "tools"
SKIP = ("tests/data/",)  # stand-in tensorrt packages the tests put on PYTHONPATH: data, not repository modules
# From the engine descriptors, so a new engine is held to the rule without an edit here.
ENGINE_IMPLEMENTATIONS = tuple(sorted({spec.adapter.split(":")[0] for spec in ENGINES.values()}))
ENGINE_PACKAGES = tuple(sorted({spec.module.split(".")[0] for spec in ENGINES.values()}))
NEUTRAL_ROOTS = ("core", "cases", "matrix")
# The layers, bottom first (the README's folders): a module imports its own layer or one below it.
LAYERS = ("core", "cases", "generators", "engines", "matrix", "check", "tools", "noxfile", "tests")


def module_name(relative: str) -> str:
    """cases/base.py -> cases.base; engines/tensorrt/__init__.py -> engines.tensorrt; tools/x-y.py -> tools.x-y."""
    parts = relative[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def repository_modules(root: Path = REPO) -> Dict[str, Path]:
    """Every module this test reads, by name."""
    files = [root / s for s in SCRIPTS if (root / s).is_file()]
    files += sorted((root / TOOLS).glob("*.py"))
    for package in PACKAGES:
        files += sorted((root / package).rglob("*.py"))
    found = {}
    for path in files:
        relative = path.relative_to(root).as_posix()
        if "__pycache__" not in relative and not relative.startswith(SKIP):
            found[module_name(relative)] = path
    return found


@functools.lru_cache(maxsize=None)
def _parse(source: str) -> ast.AST:
    return ast.parse(source)


def _statements(tree: ast.AST, module_level: bool) -> Iterator[ast.AST]:
    """Every node of a tree; with module_level=True, none inside a function body (it runs only when called)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if module_level and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))


def imported_names(source: str, importer: str, is_package: bool = False,
                   module_level: bool = False) -> List[Tuple[str, Optional[str]]]:
    """(module, name) for every `from module import name`, (module, None) for every `import module`, at any depth
    (module_level=True: only what runs when the module is imported); relative imports resolved against the importer's
    package."""
    package = importer if is_package else importer.rpartition(".")[0]
    found: List[Tuple[str, Optional[str]]] = []
    for node in _statements(_parse(source), module_level):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                module = ".".join(parts[: len(parts) - node.level + 1] + ([module] if module else []))
            found += [(module, None if a.name == "*" else a.name) for a in node.names]
    return found


def resolve(name: str, known: Set[str]) -> Optional[str]:
    """The longest module of `known` that a dotted name is or lies in, or None for a name from outside."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def _target(module: str, name: Optional[str], known: Set[str]) -> Optional[str]:
    """`from a import b` is module a.b where a.b is one, else a; `import a.b` is a.b (or the longest that exists)."""
    if name and f"{module}.{name}" in known:
        return f"{module}.{name}"
    return resolve(module, known) if module else None


def import_graph(modules: Mapping[str, str], packages: Iterable[str] = (),
                 module_level: bool = False) -> Dict[str, Set[str]]:
    """module -> the repository modules it imports, from {module name: its source}; `packages` names the modules that
    are packages (their relative imports resolve inside them)."""
    packages, known = set(packages), set(modules)
    graph = {}
    for name, source in modules.items():
        targets = {_target(m, n, known) for m, n in imported_names(source, name, name in packages, module_level)}
        graph[name] = {t for t in targets if t and t != name}
    return graph


def external_imports(modules: Mapping[str, str], packages: Iterable[str] = (),
                     module_level: bool = False) -> Dict[str, Set[str]]:
    """module -> the top-level names it imports from outside the repository (numpy, onnxruntime, ...)."""
    packages, known = set(packages), set(modules)
    return {name: {m.split(".")[0] for m, n in imported_names(source, name, name in packages, module_level)
                   if m and _target(m, n, known) is None}
            for name, source in modules.items()}


def find_cycle(graph: Mapping[str, Set[str]]) -> Optional[List[str]]:
    """One import cycle as [a, b, ..., a], or None when the graph is acyclic (depth-first, three colours)."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> Optional[List[str]]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def parent_packages(module: str, known: Mapping[str, object]) -> List[str]:
    """The packages Python runs before a module: a and a.b before a.b.c."""
    parts = module.split(".")
    return [p for p in (".".join(parts[:end]) for end in range(1, len(parts))) if p in known]


def is_engine_implementation(module: str) -> bool:
    """engines.tensorrt, engines.tensorrt.worker, an engines.tensorrt_rtx beside it: the engines.<engine>* modules."""
    return module.startswith(ENGINE_IMPLEMENTATIONS)


Edges = Tuple[Dict[str, Set[str]], Dict[str, Set[str]]]  # (repository modules, outside packages) by module


def engine_chain(start: str, anywhere: Edges, at_import: Edges) -> Optional[List[str]]:
    """The shortest chain by which a module loads an engine implementation or an engine's package, or None.

    Its own imports count at any depth (its functions run them); past it, only what runs when a module is imported
    (at_import): the module-level imports of each module on the chain, and the packages Python runs before it."""
    seen = {start: [start]}
    todo = [start]
    while todo:
        node = todo.pop(0)
        graph, external = anywhere if node == start else at_import
        engines = sorted(external[node] & set(ENGINE_PACKAGES))
        if engines:
            return seen[node] + engines[:1]
        explicit = sorted(graph[node])
        for nxt in explicit + [p for t in explicit for p in parent_packages(t, graph) if p not in explicit]:
            if nxt not in seen:
                seen[nxt] = seen[node] + [nxt]
                if is_engine_implementation(nxt):
                    return seen[nxt]
                todo.append(nxt)
    return None


def engine_chains(sources: Mapping[str, str], packages: Iterable[str] = (),
                  roots: Iterable[str] = NEUTRAL_ROOTS) -> List[str]:
    """For every module under `roots` that loads an engine: its chain, as text."""
    anywhere = (import_graph(sources, packages), external_imports(sources, packages))
    at_import = (import_graph(sources, packages, module_level=True),
                 external_imports(sources, packages, module_level=True))
    chains = (engine_chain(m, anywhere, at_import) for m in sorted(sources) if m.split(".")[0] in tuple(roots))
    return [" -> ".join(c) for c in chains if c]


def layer(module: str) -> Optional[int]:
    """The layer of a module, 0 for core; None for one outside the layers."""
    top = module.split(".")[0]
    return LAYERS.index(top) if top in LAYERS else None


def upward_imports(graph: Mapping[str, Set[str]]) -> List[str]:
    """"cases.isa -> engines.hardware" for every import of a module in a layer above the importer's."""
    found = []
    for module, targets in graph.items():
        for target in sorted(targets):
            low, high = layer(module), layer(target)
            if low is not None and high is not None and high > low:
                found.append(f"{module} -> {target}")
    return sorted(found)


def tools_importing_tests(graph: Mapping[str, Set[str]], external: Mapping[str, Set[str]]) -> List[str]:
    """tools.x -> tests.y for every import of a test module by a tool (a `tests` that resolves nowhere counts too)."""
    found = [f"{m} -> {t}" for m, targets in graph.items() if m.startswith(TOOLS + ".")
             for t in sorted(targets) if t == "tests" or t.startswith("tests.")]
    found += [f"{m} -> tests" for m, names in external.items() if m.startswith(TOOLS + ".") and "tests" in names]
    return sorted(found)


@functools.lru_cache(maxsize=None)
def _repository() -> Tuple[Dict[str, str], Set[str]]:
    """{module: source} of the repository, and which of them are packages."""
    paths = repository_modules()
    sources = {name: path.read_text(encoding="utf-8") for name, path in paths.items()}
    packages = {name for name, path in paths.items() if path.name == "__init__.py"}
    return sources, packages


# ---- the repository ----

def test_the_walk_sees_every_part_of_the_repository():
    sources, _ = _repository()
    tops = {name.split(".")[0] for name in sources}
    assert tops == set(LAYERS)  # every top-level part of the repository has its layer
    assert {"matrix.render", "engines.tensorrt.worker", "tools.lint-vs-observed", "tests.test_imports"} <= set(sources)
    # the rule's engines, as the docstring names them
    assert set(ENGINE_IMPLEMENTATIONS) >= {"engines.onnxruntime", "engines.openvino", "engines.tensorrt"}
    assert set(ENGINE_PACKAGES) >= {"onnxruntime", "openvino", "tensorrt", "tensorrt_rtx"}


def test_every_import_goes_down_the_layers():
    sources, packages = _repository()
    found = upward_imports(import_graph(sources, packages))
    assert found == [], "an import upwards (layers, bottom first: " + " < ".join(LAYERS) + "):\n" + "\n".join(found)


def test_the_repository_has_no_import_cycle():
    sources, packages = _repository()
    cycle = find_cycle(import_graph(sources, packages))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_core_cases_and_matrix_never_import_an_engine():
    sources, packages = _repository()
    chains = engine_chains(sources, packages)
    assert chains == [], "core/, cases/ or matrix/ reaches an engine:\n" + "\n".join(chains)


def test_tools_never_import_tests():
    sources, packages = _repository()
    found = tools_importing_tests(import_graph(sources, packages), external_imports(sources, packages))
    assert found == [], found


# ---- each rule can fail: synthetic modules ----

def test_an_upward_import_is_named_with_its_layers():
    sources = {
        "core": "", "core.words": "import re\n", "cases": "", "cases.base": "from core.words import STAGES\n",
        "engines": "", "engines.results": "from core.words import file_name\nfrom cases.base import Case\n",
        "matrix": "", "matrix.grid": "from core import words\nfrom engines.results import read\n",
        "tests": "", "tests.test_x": "from matrix.grid import grid_view\n", "noxfile": "from cases.base import Case\n",
    }
    packages = {"core", "cases", "engines", "matrix", "tests"}

    def found(**changed: str) -> List[str]:
        return upward_imports(import_graph({**sources, **{k.replace("__", "."): v for k, v in changed.items()}},
                                           packages))

    assert found() == []  # downwards, into one's own layer, and anything from tests
    assert found(cases__base="def f():\n    from engines.results import read\n") == ["cases.base -> engines.results"]
    assert found(core__words="from matrix.grid import grid_view\n") == ["core.words -> matrix.grid"]
    assert found(engines__results="from ..matrix import grid\n") == ["engines.results -> matrix.grid"]
    assert found(matrix__grid="import tests.test_x\n") == ["matrix.grid -> tests.test_x"]  # nothing imports tests
    assert found(noxfile="import tests\n") == ["noxfile -> tests"]


def test_an_upward_import_in_a_tree_fails_the_walk(tmp_path):
    """The whole test as it runs on the repository, on a tree of files with one upward import in it."""
    for path, text in {"core/__init__.py": "", "core/isa.py": "import os\n", "cases/__init__.py": "",
                       "cases/base.py": "from core.isa import isa\n", "engines/__init__.py": "",
                       "engines/hardware.py": "from core.isa import isa\n", "tests/test_a.py": "import engines\n",
                       "tools/t.py": "from cases.base import x\n", "noxfile.py": "import cases\n"}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)

    def walk() -> List[str]:
        paths = repository_modules(tmp_path)
        sources = {name: path.read_text() for name, path in paths.items()}
        return upward_imports(import_graph(sources, {n for n, p in paths.items() if p.name == "__init__.py"}))

    assert walk() == []
    (tmp_path / "core" / "isa.py").write_text("import os\n\n\ndef probe():\n    from engines.hardware import x\n")
    assert walk() == ["core.isa -> engines.hardware"]

def test_a_cycle_through_a_function_level_import_is_named():
    sources = {
        "matrix.a": "from matrix.b import x\n",
        "matrix.b": "def f():\n    from matrix.c import y\n",
        "matrix.c": "import matrix.a\n",
        "matrix.d": "from matrix import a\n",
        "matrix": "",
    }
    graph = import_graph(sources, {"matrix"})
    assert graph == {"matrix.a": {"matrix.b"}, "matrix.b": {"matrix.c"}, "matrix.c": {"matrix.a"},
                     "matrix.d": {"matrix.a"}, "matrix": set()}
    assert find_cycle(graph) == ["matrix.a", "matrix.b", "matrix.c", "matrix.a"]
    sources["matrix.c"] = "import os\n"
    assert find_cycle(import_graph(sources, {"matrix"})) is None


def test_relative_imports_resolve_inside_their_package():
    sources = {"engines": "", "engines.tensorrt": "from . import worker\nfrom .layers import attribute\n",
               "engines.tensorrt.worker": "from ..results import read_results\n", "engines.tensorrt.layers": "",
               "engines.results": "from .tensorrt import worker\n"}
    graph = import_graph(sources, {"engines", "engines.tensorrt"})
    assert graph["engines.tensorrt"] == {"engines.tensorrt.worker", "engines.tensorrt.layers"}
    assert graph["engines.tensorrt.worker"] == {"engines.results"}
    assert find_cycle(graph) == ["engines.results", "engines.tensorrt.worker", "engines.results"]


def test_a_cycle_between_packages_and_scripts_is_found():
    graph = import_graph({"check.run": "from generators import write\n", "generators": "",
                          "generators.write": "def f():\n    import check.run\n", "noxfile": "import check.run\n"},
                         {"generators"})
    assert find_cycle(graph) == ["check.run", "generators.write", "check.run"]


def test_an_engine_import_in_core_cases_or_matrix_is_named_with_its_chain():
    sources = {
        "engines": "from core.engines import ENGINES\n", "engines.reasons": "import re\n",
        "engines.tensorrt": "", "engines.tensorrt.layers": "import json\n",
        "core.engines": "", "cases": "", "generators": "",
        "generators.reference": "def f():\n    import onnxruntime\n",
        "matrix": "", "matrix.causes": "from engines.reasons import symptom\n",
    }
    packages = {"engines", "engines.tensorrt", "cases", "generators", "matrix"}

    def chains(**changed: str) -> List[str]:
        found = {**sources, **{k.replace("__", "."): v for k, v in changed.items()}}
        return engine_chains(found, packages)

    assert chains() == []  # an engine-neutral module of engines/ is allowed
    assert chains(matrix__render="def f():\n    from engines.tensorrt.layers import dtype\n") == \
        ["matrix.render -> engines.tensorrt.layers"]
    assert chains(cases__isa="import openvino as ov\n") == ["cases.isa -> openvino"]
    assert chains(core__isa="def f():\n    import onnxruntime\n") == ["core.isa -> onnxruntime"]
    # past the importing module, what runs at import: generators' cross-check imports onnxruntime when it is called
    assert chains(matrix__plots="from generators.reference import cross_check\n") == []
    assert chains(matrix__plots="from generators.reference import cross_check\n",
                  generators__reference="import onnxruntime\n") == \
        ["matrix.plots -> generators.reference -> onnxruntime"]
    # through a package's __init__: importing engines.reasons runs engines/__init__.py
    assert chains(engines="import engines.tensorrt\n") == ["matrix.causes -> engines -> engines.tensorrt"]
    assert chains(generators__bundle="import tensorrt_rtx\n") == []  # generators/ is not held to the rule


def test_a_tool_importing_a_test_module_is_named():
    sources = {"tools.benchmark": "from check.arch_models import yolo\n", "check": "", "check.arch_models": "",
               "tests": "", "tests.check": "", "tests.check.models": ""}
    packages = {"check", "tests", "tests.check"}
    assert tools_importing_tests(import_graph(sources, packages), external_imports(sources, packages)) == []
    sources["tools.benchmark"] = "def f():\n    from tests.check.models import yolo\n"
    assert tools_importing_tests(import_graph(sources, packages), external_imports(sources, packages)) == \
        ["tools.benchmark -> tests.check.models"]
    sources["tools.trt-bare"] = "import tests\n"
    del sources["tests"], sources["tests.check"], sources["tests.check.models"]
    assert tools_importing_tests(import_graph(sources, set()), external_imports(sources, set())) == \
        ["tools.benchmark -> tests", "tools.trt-bare -> tests"]
