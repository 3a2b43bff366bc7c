"""The README's `nox -s ...` is the `nox` command, whose sys.path starts with its own bin/, not the clone: the
noxfile must find the repository's packages itself, and .ci/run must call that same command."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {p.parent.name for p in REPO.glob("*/__init__.py")}


def first_repo_import_and_path_insert(source: str):
    """(line of the first module-level import of a repository package, line of the first module-level
    sys.path.insert); None for one that is missing."""
    first_import = path_insert = None
    for node in ast.parse(source).body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if first_import is None and any(n.split(".")[0] in PACKAGES for n in names):
            first_import = node.lineno
        if path_insert is None and isinstance(node, ast.Expr) and "sys.path.insert" in ast.unparse(node):
            path_insert = node.lineno
    return first_import, path_insert


def test_the_noxfile_puts_its_folder_on_sys_path_before_importing_the_repository():
    first_import, path_insert = first_repo_import_and_path_insert((REPO / "noxfile.py").read_text(encoding="utf-8"))
    assert first_import is not None and path_insert is not None and path_insert < first_import


def test_the_check_fails_on_a_noxfile_that_imports_first():
    assert first_repo_import_and_path_insert("import sys\nfrom cases import x\nsys.path.insert(0, 'a')\n") == (2, 3)


def test_ci_runs_the_nox_command_not_python_m_nox():
    text = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert '"$VENV/bin/nox" --error-on-missing-interpreters -s tests' in text
    assert '"$VENV/bin/python" -m nox' not in text
