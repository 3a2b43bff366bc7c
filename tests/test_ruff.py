"""The tools that pyproject.toml names run in the suite: ruff on the whole tree, and a timeout on every test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parent.parent


def _ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """ruff from the locked test group (the interpreter running the tests has it), never one found on PATH."""
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=str(cwd), capture_output=True, text=True,
                          timeout=120)


def test_the_whole_tree_lints_clean():
    """`ruff check .` with pyproject.toml's rules: a new violation anywhere fails `nox -s tests`."""
    done = _ruff("check", ".")
    assert done.returncode == 0 and "All checks passed" in done.stdout, done.stdout + done.stderr


def test_the_rules_catch_what_they_name(tmp_path: Path):
    """The configured rules find an unused import, a long line, unsorted imports and a loop-variable closure."""
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport json\n\nx = '" + "a" * 130 + "'\n"
                   "fs = []\nfor i in range(2):\n    fs.append(lambda: i)\n", encoding="utf-8")
    done = _ruff("check", "--config", str(REPO / "pyproject.toml"), "--output-format", "concise", str(bad))
    found = {line.split(" ")[1] for line in done.stdout.splitlines() if line.startswith(str(bad))}
    assert done.returncode == 1 and {"F401", "E501", "I001", "B023"} <= found, done.stdout + done.stderr


def test_every_test_has_a_timeout(request: pytest.FixtureRequest):
    """pytest-timeout is on, and every collected test has a positive limit: the default of pyproject.toml, or its own
    @pytest.mark.timeout."""
    default = float(request.config.getini("timeout") or 0)
    assert default > 0, "no `timeout` in [tool.pytest.ini_options]"
    assert request.config.pluginmanager.hasplugin("timeout")
    unbounded: List[str] = []
    for item in request.session.items:
        marker = item.get_closest_marker("timeout")
        limit = (marker.args[0] if marker.args else marker.kwargs.get("timeout")) if marker else default
        if not limit or float(limit) <= 0:
            unbounded.append(item.nodeid)
    assert not unbounded, f"tests without a timeout: {unbounded}"
