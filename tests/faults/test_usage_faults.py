"""Faults against the command lines: every usage error of every command is one line on stderr and exit status 2,
nothing run (the README's promise); values argparse takes but the suite refuses (nan, a cosine above 1, a negative
seed) alike."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import List, Set

import pytest

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
SOURCES = ("core", "cases", "check", "engines", "generators", "matrix", "tools")  # where the suite's command lines are
# Each command line of the suite, with one bad flag or value (its module or script, then its arguments).
BAD = [
    ("-m check", "--min-sqnr nan model.onnx"),
    ("-m check", "--min-sqnr inf model.onnx"),
    ("-m check", "--min-cosine 2 model.onnx"),
    ("-m check", "--seed -1 model.onnx"),
    ("-m check", "--tolerance -5 model.onnx"),
    ("-m check", "--no-such-flag model.onnx"),
    ("-m check.lint", "model.onnx --no-such-flag"),
    ("-m check.reduce", "model.onnx --engine onnxruntime"),
    ("-m check.producers", "--no-such-flag"),
    ("-m check.backend_nodes", "--no-such-flag"),
    ("-m check.chain", "--nodes 8"),
    ("-m matrix", ""),
    ("-m matrix", "no-such-command"),
    ("-m matrix", "report --no-such-flag"),
    ("-m matrix", "diff tensorrt 8.5.3.1 8.6.0 --drift many"),
    ("-m matrix", "bugs --no-such-flag"),
    ("-m matrix", "observe --no-such-flag"),
    ("-m matrix", "conformance --no-such-flag"),
    ("-m engines.run", "--ort-x64quantprecision 7"),
    ("-m engines.run", "--workers some"),
    ("-m engines.pins", "--no-such-flag"),
    ("-m engines.idle", "--engine tensorrt"),
    ("-m engines.tensorrt.rederive", ""),
    ("-m generators", "no-such-command"),
    ("-m generators.onnx_node_tests", "--no-such-flag"),
    ("-m generators.qdq_companion", "--no-such-flag"),
    ("-m cases.catalogue", "--no-such-flag"),
    ("tools/benchmark.py", "--check no-such-engine"),
    ("tools/benchmark.py", "--batch 4"),
    ("tools/matrix-benchmark.py", "--runs 7"),
    ("tools/check-memory.py", "--mb many"),
    ("tools/migrate-observed.py", "--no-such-flag"),
    ("tools/lint-vs-observed.py", "--no-such-flag"),
    ("tools/conformance-ort.py", "--no-such-flag"),
    ("tools/browser.py", "reports/matrix.html shot.png --width wide"),
]


def command(where: str, args: str) -> List[str]:
    return [PY, *where.split(), *args.split()]


@pytest.mark.parametrize("where, args", BAD, ids=[f"{w} {a}".strip() for w, a in BAD])
def test_a_usage_error_is_one_line_and_exit_2(where, args):
    done = subprocess.run(command(where, args), cwd=str(REPO), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr  # no usage block, no traceback
    assert "error:" in done.stderr and "usage:" not in done.stderr and done.stdout == ""


def test_the_check_values_say_what_is_wrong():
    said = {args: subprocess.run(command(where, args), cwd=str(REPO), capture_output=True, text=True).stderr.strip()
            for where, args in BAD[:4]}
    assert said["--min-sqnr nan model.onnx"] == ("python -m check: error: argument --min-sqnr: 'nan': give a finite "
                                                 "number above zero (see --help)")
    assert "a cosine similarity is at most 1" in said["--min-cosine 2 model.onnx"]
    assert "give a whole number >= 0" in said["--seed -1 model.onnx"]


def parser_files() -> Set[str]:
    """Every Python file of the suite that builds an argument parser."""
    found = set()
    for path in (p for top in SOURCES for p in (REPO / top).rglob("*.py")):
        rel = path.relative_to(REPO)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                    == "ArgumentParser":
                found.add(str(rel))
    return found


def test_every_command_line_builds_the_one_line_parser_and_is_tested_here():
    files = parser_files()
    plain = {f for f in files
             if "argparse.ArgumentParser(" in (REPO / f).read_text(encoding="utf-8") and f != "core/cli.py"}
    assert plain == set(), "build core.cli.ArgumentParser: argparse's own prints its usage block on an error"
    tested = {w.split()[-1] if w.endswith(".py") else w.split()[-1].replace(".", "/") for w, _ in BAD}
    untested = {f for f in files - {"core/cli.py"}
                if f not in tested and f.rsplit("/__main__.py", 1)[0] not in tested and f[:-3] not in tested}
    assert untested == set(), "a command line without a usage-error test here"
