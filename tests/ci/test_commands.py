"""Every command README.md, docs/ and the rendered report tell a user to type works when pasted in README's own set-up
(a .venv with nox and uv, nothing else; issue 40): each is run with --help, and `nox -s NAME -- --help` prints that
session's own help and does no work, for every session in noxfile.py."""

from __future__ import annotations

import html
import os
import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"  # README's set-up: python3 -m venv .venv; pip install nox uv
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# What counts as a command: a code block's line or an inline code span that starts so (after VAR=value settings).
COMMAND = re.compile(r"^(?:[A-Z_]+=\S+ )*(nox |python3? -m |\.nox/[\w.-]+/bin/python -m |tools/|bash \.ci/run)")
# Commands that are not run here, each with why; matched as the start of the command.
EXCLUDED = {
    "python3 -m venv": "README's set-up itself: this test runs in the environment it makes",
    "bash .ci/run": "the suite itself, which runs this test",
    "tools/": "GPU-machine, emulation and maintenance scripts, whose header comment is their help: most take no --help "
              "and start work on any argument (tools/gpu-remote-setup.sh unpacks into the folder it runs in); each "
              "one named is checked to exist",
    "python -m check --from-bundles": "docs/check.md: on a GPU box, in an interpreter with pytest and numpy only",
    "python -m generators write": "docs/engines.md, 'Without nox': an interpreter that has the suite's packages",
    "python -m engines.run --engine tensorrt --trt-python": "docs/engines.md, 'Without nox', as above",
    "python -m matrix report --results out.jsonl": "docs/engines.md, 'Without nox', as above",
    "python -m pytest -p engines.pytest_cells": "docs/engines.md: what engines.run starts, quoted to say how it runs",
}
WORK = ("Creating virtual environment", "nox > uv ", "nox > python ")  # nox says each command it runs
SECONDS = 20  # a help request on a loaded 2-core machine; measured 0.2-1.3 s per session


def readme_env() -> Dict[str, str]:
    """The environment of a user who ran README's set-up and `. .venv/bin/activate`: not this test's session's."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NOX_CURRENT_SESSION", "PYTHONHOME")}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and "/.nox/" not in p]
    env["PATH"] = os.pathsep.join([str(VENV_BIN), *path])
    return env


def commands_in(text: str, markdown: bool = True) -> List[str]:
    """Every command in a page: code blocks' lines (their # comments left out) and inline code spans."""
    found: List[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced or (markdown and line.startswith("    ") and not line.lstrip().startswith(("-", "|"))):
            found.append(re.split(r"\s+#\s", line.strip())[0])
        else:
            found += [c.strip() for c in re.findall(r"`([^`\n]+)`", line)]
    return [c for c in found if COMMAND.match(c)]


def report_commands(folder: Path) -> List[Tuple[str, str]]:
    """(file, command) for the rendered matrix.md's code spans and matrix.html's <code> elements."""
    from matrix.merge import build
    from tests.matrix.conftest import cell, write_reports

    cells = [cell("grouped_conv/g=2", engine_version=v, status="fail" if v == "8.6.0" else "pass", fused=None,
                  verdict="fails against expectation" if v == "8.6.0" else "as documented",
                  last_stage="run" if v == "8.6.0" else "compare", error="no implementation" if v == "8.6.0" else "")
             for v in ("8.5.3.1", "8.6.0")]
    write_reports(build(cells), folder, generated="2026-01-01")
    md = [("reports/matrix.md", c) for c in commands_in((folder / "matrix.md").read_text(encoding="utf-8"))]
    page = (folder / "matrix.html").read_text(encoding="utf-8")
    codes = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<code>(.*?)</code>", page, flags=re.S)]
    return md + [("reports/matrix.html", c) for c in codes if COMMAND.match(c)]


@pytest.fixture(scope="module")
def every_command(tmp_path_factory) -> List[Tuple[str, str]]:
    """(where, command) for every command of README.md, docs/*.md and a report rendered from test data."""
    found = [(str(p.relative_to(REPO)), c) for p in PAGES for c in commands_in(p.read_text(encoding="utf-8"))]
    found += report_commands(tmp_path_factory.mktemp("report"))
    assert len(found) > 100 and any(w.startswith("reports/") for w, _ in found)
    return found


def excluded(command: str) -> str:
    """Why a command is not run here ("" where it is)."""
    words = re.sub(r"^(?:[A-Z_]+=\S+ )+", "", command)
    return next((why for start, why in EXCLUDED.items() if words.startswith(start)), "")


def session_of(command: str) -> str:
    """The session a `nox -s NAME ...` command names."""
    found = re.search(r"\s-s\s+(\"[^\"]+\"|'[^']+'|\S+)", command)
    assert found, command
    return shlex.split(found.group(1))[0]


@pytest.fixture(scope="module")
def nox_sessions() -> List[str]:
    """Every session noxfile.py has, as `nox -l` lists it in README's set-up."""
    if not (VENV_BIN / "nox").exists():
        pytest.skip("README's set-up (.venv with nox) is not made here: bash .ci/run makes it")
    done = subprocess.run([str(VENV_BIN / "nox"), "-l"], cwd=REPO, env=readme_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    names = re.findall(r"^[*-] (\S+)", done.stdout, flags=re.M)
    assert "matrix" in names and "tests" in names
    return names


def nox_help(sessions: List[str], envdir: Path) -> Tuple[subprocess.CompletedProcess, float]:
    """`nox -s S... -- --help` as a user types it, with a fresh envdir (a fresh clone's), and its seconds."""
    start = time.monotonic()
    done = subprocess.run([str(VENV_BIN / "nox"), "--envdir", str(envdir), "-s", *sessions, "--", "--help"], cwd=REPO,
                          env=readme_env(), capture_output=True, text=True, timeout=300)
    return done, time.monotonic() - start


def test_each_sessions_help_is_its_own_and_does_no_work(nox_sessions, tmp_path):
    done, seconds = nox_help(nox_sessions, tmp_path / "nox")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    for name in nox_sessions:
        own = said.split(f'nox -s "{name}": ', 1)
        assert len(own) == 2, f"{name} printed no help of its own"
        assert "posargs (after --): " in own[1].split("nox > Session ", 1)[0], f"{name}: where its posargs go"
    assert not [w for w in WORK if w in said], said[-3000:]
    assert not [p for p in (tmp_path / "nox").glob("*") if p.is_dir()], "a help request made an environment"
    assert seconds < SECONDS * 2, seconds


def test_the_main_jobs_help_returns_in_seconds(nox_sessions, tmp_path):
    done, seconds = nox_help(["matrix"], tmp_path / "nox")
    assert done.returncode == 0 and 'nox -s "matrix": The main job' in done.stdout, done.stdout + done.stderr
    assert seconds < SECONDS, seconds
    # a session that requires another (conformance requires bundles): the required one does nothing either
    done, seconds = nox_help(["conformance"], tmp_path / "nox")
    assert done.returncode == 0 and "bundles: required by a session named for --help; nothing done" in done.stderr
    assert seconds < SECONDS, seconds


def test_checks_options_are_listed_before_its_environment_is_made(tmp_path):
    """A fresh clone's `nox -s check -- --help` lists check's options (a user trial found none listed before the
    session's first run): its parser needs the standard library alone, so nox's own interpreter prints it."""
    done, _ = nox_help(["check"], tmp_path / "nox")
    assert done.returncode == 0 and "usage: python -m check" in done.stdout, done.stdout + done.stderr
    assert "--shape NAME:1x3x224x224" in done.stdout and "--trt-python" in done.stdout
    assert not [p for p in (tmp_path / "nox").glob("*") if p.is_dir()], "a help request made an environment"


def test_every_nox_command_names_a_session_whose_help_runs(every_command, nox_sessions):
    """The session named exists; its help runs in test_each_sessions_help_is_its_own_and_does_no_work."""
    nox = [(w, c) for w, c in every_command if re.sub(r"^(?:[A-Z_]+=\S+ )+", "", c).startswith("nox ")]
    assert not [c for _, c in nox if " -s " not in c and c != "nox -l"]  # nox -l: the nox_sessions fixture runs it
    named = {session_of(c): w for w, c in nox if c != "nox -l"}
    assert {"matrix", "check", "diff", "bugs"} <= set(named)
    # a parametrized session's base name runs each of its versions; NAME(V) stands for any one, NAME for any session
    missing = [f"{w}: {n}" for n, w in named.items() if n not in nox_sessions and not re.fullmatch("[A-Z]+", n)
               and not (re.fullmatch(r"\w+(\([A-Z]+\))?", n)
                        and any(s.startswith(n.split("(")[0] + "(") for s in nox_sessions))]
    assert not missing, f"commands naming no session: {missing}"


def test_every_python_command_runs_in_the_readme_set_up(every_command, nox_sessions):
    """`python -m MODULE ...` with .venv's python (nox and uv only), and `.nox/NAME/bin/python -m MODULE` where the
    session NAME is one and has made it, each with --help."""
    modules: Dict[str, str] = {}
    for where, command in every_command:
        words = command.split()
        if command.startswith(("python ", "python3 ", ".nox/")) and not excluded(command):
            modules.setdefault(f"{words[0]} -m {words[2]}", where)
    assert modules
    failed = []
    for run, where in sorted(modules.items()):
        python, module = run.split(" -m ")
        if python.startswith(".nox/"):
            env = python.split("/")[1]
            assert any(re.sub(r"[^\w]+", "-", s).strip("-").lower() == env for s in nox_sessions), f"{where}: {run}"
            if not (REPO / python).exists():
                continue  # made by that session's first run: a fresh clone has none
        done = subprocess.run([python, "-m", module, "--help"], cwd=REPO, env=readme_env(), capture_output=True,
                              text=True, timeout=120)
        if done.returncode != 0 or "usage:" not in done.stdout:
            failed.append(f"{where}: {run} --help: exit {done.returncode}: {done.stderr.strip()[-200:]}")
    assert not failed, "\n".join(failed)


def test_every_excluded_command_is_named_with_its_reason_and_its_files_exist(every_command):
    tools = {m.rstrip(".,;:") for _, c in every_command for m in re.findall(r"tools/[\w./-]+", c)}
    assert "tools/gpu-round.sh" in tools
    assert not [t for t in tools if not (REPO / t).exists()], tools
    assert (REPO / ".ci" / "run").is_file()
    assert all(len(why) > 20 for why in EXCLUDED.values())


def test_the_extraction_finds_what_a_page_tells_a_user_to_type():
    page = ("Run `nox -s check -- model.onnx` or `engines.run`.\n\n    nox -s diff -- a 1 2   # what changed\n"
            "    python -m check x.onnx\n\n```\nbash .ci/run -n 0\n```\n| `python -m matrix` | a table |\n")
    assert commands_in(page) == ["nox -s check -- model.onnx", "nox -s diff -- a 1 2", "python -m check x.onnx",
                                "bash .ci/run -n 0", "python -m matrix"]
    assert session_of('QDQ_TRT_PYTHON=/p nox -s "ort(1.31.1)" -- -k x') == "ort(1.31.1)"
    assert excluded("bash .ci/run -n 0") and not excluded("python -m check model.onnx")
