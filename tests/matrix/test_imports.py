"""The report package reads top-down: no module of matrix/ imports, even inside a function, one that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

MATRIX = Path(__file__).resolve().parents[2] / "matrix"
PACKAGE = "matrix"


def imported_modules(tree: ast.AST) -> Set[str]:
    """Every matrix.<x> a module imports at any depth: `import matrix.x`, `from matrix.x import y`, `from . import x`"""
    found: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PACKAGE + "."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith(PACKAGE + "."):
                found.add(node.module)
            elif node.module == PACKAGE:
                found.update(f"{PACKAGE}.{a.name}" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 1:  # from .x import y, from . import x
            found.update(f"{PACKAGE}.{node.module}" if node.module else f"{PACKAGE}.{a.name}" for a in node.names)
    return {".".join(name.split(".")[:2]) for name in found}


def import_graph(folder: Path = MATRIX) -> Dict[str, Set[str]]:
    """matrix.<module> -> the matrix modules it imports (the package's own __init__ is matrix.__init__)."""
    modules = {f"{PACKAGE}.{p.stem}": p for p in sorted(folder.glob("*.py"))}
    graph = {}
    for name, path in modules.items():
        edges = imported_modules(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        graph[name] = {m for m in edges if m in modules and m != name}
    return graph


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
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


def test_the_matrix_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 10 and graph["matrix.render"], graph  # the walk saw the package
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in matrix/: " + " -> ".join(cycle or [])


def test_a_cycle_through_a_function_level_import_is_named(tmp_path):
    (tmp_path / "a.py").write_text("from matrix.b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    from matrix.c import y\n")
    (tmp_path / "c.py").write_text("import matrix.a\n")
    (tmp_path / "d.py").write_text("from matrix import a\n")
    graph = import_graph(tmp_path)
    assert graph == {"matrix.a": {"matrix.b"}, "matrix.b": {"matrix.c"}, "matrix.c": {"matrix.a"},
                     "matrix.d": {"matrix.a"}}
    assert find_cycle(graph) == ["matrix.a", "matrix.b", "matrix.c", "matrix.a"]
    (tmp_path / "c.py").write_text("import os\n")
    assert find_cycle(import_graph(tmp_path)) is None
