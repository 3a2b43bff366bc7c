"""noxfile.py uses nox only through its public API (issue 43, item 4): no nox module beyond `nox` itself, no private
attribute; uv.lock still holds (a session refuses a lock that pyproject.toml no longer matches), a second run of a
session waits for the first, and the same noxfile works with the next nox release (the newest one on PyPI other than
README's pin), installed here with uv into a temporary environment."""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest

from tests.ci.test_commands import readme_env

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"  # README's set-up: nox and uv, at the versions README and .ci/run pin
NOX_PIN = re.search(r'"nox==([^"]+)"', (REPO / ".ci" / "run").read_text(encoding="utf-8")).group(1)
# nox's documented API: its __all__ (nox.project is a documented module of helpers); everything else is internal.
PUBLIC = {"session", "parametrize", "param", "options", "project", "Session", "needs_version", "main"}
# What the noxfile imports at its top: the packages a temporary project links to, beside its own noxfile and lock.
PACKAGES = ("cases", "core", "engines", "generators", "matrix", "check", "tools")
STALE = "needs to be updated, but `--locked` was provided"  # uv's words for a lock pyproject.toml no longer matches


def internals(source: str) -> List[str]:
    """Every use of nox beyond its public API in a noxfile's source: `import nox.X`, `from nox.X import ...`,
    `from nox import <not public>`, `nox.<not public>`, and any private attribute (`session._runner`, also through
    getattr), each as "line: what"."""
    found: List[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.startswith("nox.")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "nox":
            hidden = [a.name for a in node.names if node.module != "nox" or a.name not in PUBLIC]
            found += [f"{node.lineno}: from {node.module} import {n}" for n in hidden]
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "nox" and node.attr not in PUBLIC:
                found.append(f"{node.lineno}: nox.{node.attr}")
            elif node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            names = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            found += [f"{node.lineno}: {node.func.id}(..., {n!r})" for n in names if n.startswith("_")]
    return sorted(found, key=lambda f: int(f.split(":")[0]))


def test_the_noxfile_uses_nox_only_through_its_public_api():
    assert internals((REPO / "noxfile.py").read_text(encoding="utf-8")) == []


def test_the_scan_finds_each_kind_of_internal_use():
    """What the noxfile once did to hold its environment lock (patching nox.sessions.SessionRunner.execute)."""
    old = ("import nox\nimport nox.sessions\nfrom nox.logger import logger\nfrom nox import Session, registry\n"
           "runner = nox.sessions.SessionRunner\nx = getattr(nox.virtualenv, 'UV', 'uv')\n"
           "config = getattr(session, '_runner', None)\ny = session._runner.global_config\n"
           "try:\n    pass\nexcept nox.command.CommandFailed:\n    pass\nz = nox.options.sessions\n")
    assert internals(old) == ["2: import nox.sessions", "3: from nox.logger import logger",
                              "4: from nox import registry", "5: nox.sessions", "6: nox.virtualenv",
                              "7: getattr(..., '_runner')", "8: ._runner", "11: nox.command"]


def _run(nox: Path, folder: Path, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    """`nox ARGS` in `folder` as a user of README's set-up runs it (its output and errors together)."""
    return subprocess.run([str(nox), *args], cwd=folder, env=readme_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def pinned_nox() -> Path:
    if not (VENV_BIN / "nox").exists():
        pytest.skip("README's set-up (.venv with nox) is not made here: bash .ci/run makes it")
    return VENV_BIN / "nox"


@pytest.fixture(scope="module")
def next_nox(tmp_path_factory, pinned_nox) -> Path:
    """The newest nox on PyPI other than README's pin: a newer one where there is one, else the one before it,
    installed with uv (from uv's cache where the index is out of reach) beside the pinned uv."""
    venv = tmp_path_factory.mktemp("next-nox") / "venv"
    uv = str(VENV_BIN / "uv")
    made = subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    uv_pin = re.search(r'"uv==([^"]+)"', (REPO / ".ci" / "run").read_text(encoding="utf-8")).group(1)
    said = []
    for wanted in (f"nox>{NOX_PIN}", f"nox<{NOX_PIN}"):
        for offline in ([], ["--offline"]):
            done = subprocess.run([uv, "pip", "install", "--quiet", *offline, "--python", str(venv / "bin" / "python"),
                                   wanted, f"uv=={uv_pin}"], capture_output=True, text=True, timeout=300)
            if done.returncode == 0:
                return venv / "bin" / "nox"
            said.append(f"{wanted}{' (offline)' if offline else ''}: {done.stderr.strip()[-300:]}")
            if "unsatisfiable" in done.stderr:
                break  # the index answered: no such release, so the cache has none either
    pytest.skip("could not install the next nox release (no package index here, and uv's cache has none): " +
                " | ".join(said))


@pytest.fixture(params=["pinned", pytest.param("next", marks=pytest.mark.network)])
def any_nox(request) -> Path:
    """README's pinned nox, then the next release."""
    return request.getfixturevalue(f"{request.param}_nox")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the noxfile with its own pyproject.toml and uv.lock, the repository's packages linked beside it."""
    for name in ("noxfile.py", "pyproject.toml", "uv.lock"):
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    for name in PACKAGES:
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    return tmp_path


def _locked(project: Path, package: str) -> str:
    """The version uv.lock holds of a package."""
    lock = (project / "uv.lock").read_text(encoding="utf-8")
    return re.search(rf'\[\[package\]\]\nname = "{package}"\nversion = "([^"]+)"', lock).group(1)


def _stale(project: Path) -> str:
    """pyproject.toml's report group refuses the jinja2 that uv.lock holds, so the lock no longer matches it; that
    version."""
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    locked = _locked(project, "jinja2")
    [wanted] = re.findall(r'"jinja2([^"]*)"', text)
    pyproject.write_text(text.replace(f'"jinja2{wanted}"', f'"jinja2{wanted},!={locked}"'), encoding="utf-8")
    return locked


@pytest.mark.slow
def test_a_session_refuses_a_lock_that_pyproject_no_longer_matches(any_nox: Path, project: Path):
    """The report session syncs from uv.lock; after pyproject.toml moves away from the lock, the same session (its
    environment synced before) stops with uv's message and a non-zero exit, installing nothing."""
    first = _run(any_nox, project, "-s", "report", "--install-only")
    assert first.returncode == 0 and "uv sync --locked" in first.stdout, first.stdout[-3000:]
    locked = _stale(project)
    again = _run(any_nox, project, "-s", "report", "--install-only")
    assert again.returncode == 1, again.stdout[-3000:]
    said = " ".join(again.stdout.split())  # uv wraps its message at the terminal's width ($COLUMNS)
    assert STALE in said and "Session report failed" in said, again.stdout[-3000:]
    assert not (project / ".nox" / "report" / ".qdq-synced").exists()
    assert list((project / ".nox" / "report").glob(f"lib/python*/site-packages/jinja2-{locked}.dist-info"))


@pytest.mark.slow
def test_reuse_without_installs_skips_the_sync(pinned_nox: Path, project: Path):
    """nox -R (reuse, no installs) leaves a made environment as it is: no uv sync, so no lock check either."""
    assert _run(pinned_nox, project, "-s", "report", "--install-only").returncode == 0
    _stale(project)
    again = _run(pinned_nox, project, "-R", "-s", "report", "--install-only")
    assert again.returncode == 0 and "uv sync" not in again.stdout, again.stdout[-3000:]


@pytest.mark.slow
def test_a_second_run_of_a_session_waits_for_the_first(any_nox: Path, project: Path):
    """While another run holds the session's environment lock, the session says whose it is and waits, running
    nothing; it goes on once the lock is free."""
    lock = project / ".nox" / "lock.lock"
    lock.parent.mkdir()
    said = project / "said.txt"
    with open(lock, "a+", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write(json.dumps({"pid": os.getpid(), "session": "lock", "command": "a test"}) + "\n")
        held.flush()
        with open(said, "w", encoding="utf-8") as out:
            waiting = subprocess.Popen([str(any_nox), "-s", "lock", "--", "--check"], cwd=project,
                                       env=readme_env(), stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + 120
            while "in use by another run" not in said.read_text() and time.monotonic() < deadline:
                assert waiting.poll() is None, said.read_text()
                time.sleep(0.2)
            text = said.read_text()
            assert f'"pid": {os.getpid()}' in text and "a test" in text, text
            assert "uv lock" not in text and waiting.poll() is None, text
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
        assert waiting.wait(timeout=120) == 0, said.read_text()
    assert "uv lock --check" in said.read_text()


@pytest.mark.network
def test_the_next_nox_lists_the_sessions_runs_one_and_helps(next_nox: Path, pinned_nox: Path, project: Path):
    """The next nox release reads the noxfile as the pinned one does (`nox -l`, `nox -s tests --list`), runs a
    session that makes its environment (the lock session's `uv lock --check`), and prints a session's help."""
    listed = {str(nox): _run(nox, REPO, "-l") for nox in (pinned_nox, next_nox)}
    sessions = {nox: re.findall(r"^[*-] (\S+)", done.stdout, flags=re.M) for nox, done in listed.items()}
    assert sessions[str(next_nox)] == sessions[str(pinned_nox)] and "matrix" in sessions[str(next_nox)], listed
    version = _run(next_nox, REPO, "--version")
    assert NOX_PIN not in version.stdout, version.stdout
    selected = _run(next_nox, REPO, "-s", "tests", "--list")
    assert selected.returncode == 0 and re.search(r"^\* tests ", selected.stdout, flags=re.M), selected.stdout
    checked = _run(next_nox, project, "-s", "lock", "--", "--check")
    assert checked.returncode == 0 and "uv lock --check" in checked.stdout, checked.stdout[-3000:]
    helped = _run(next_nox, project, "--envdir", str(project / "help-envs"), "-s", "matrix", "--", "--help")
    assert helped.returncode == 0 and 'nox -s "matrix": The main job' in helped.stdout, helped.stdout[-3000:]
    assert not (project / "help-envs").exists() or not any((project / "help-envs").iterdir())


def _env_path_function():
    """noxfile.py's _env_path (the name nox gives a session's environment folder), run from its source: the test
    environment has no nox to import the noxfile with."""
    source = (REPO / "noxfile.py").read_text(encoding="utf-8")
    [node] = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "_env_path"]
    scope: Dict[str, object] = {"os": os, "re": re, "hashlib": hashlib, "Path": Path}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "noxfile.py", "exec"), scope)  # noqa: S102
    return scope["_env_path"]


def test_other_sessions_environments_are_where_nox_puts_them(any_nox: Path, tmp_path: Path):
    """The matrix session makes the engine sessions' environments in the folders nox gives those sessions: nox's
    session.env_dir for each name, with a short envdir and with one long enough that nox hashes the name."""
    names = ["ort(1.16.3)", "openvino(2026.4.1)", "rtx(1.7.1.116)", "producers(modelopt)", "matrix", "trt10(11.5.0)"]
    noxfile = tmp_path / "noxfile.py"
    noxfile.write_text("import nox\n\nfor name in %r:\n"
                       "    @nox.session(name=name, venv_backend='none')\n"
                       "    def where(session):\n"
                       "        print('ENV', session.name, session.env_dir, flush=True)\n" % (names,),
                       encoding="utf-8")
    env_path = _env_path_function()
    # nox hashes a name whose folder path (as --envdir gives it, here relative) passes 87 characters
    for envdir in ("e", "x" * 80):
        done = _run(any_nox, tmp_path, "-f", str(noxfile), "--envdir", envdir, "-s", *names)
        assert done.returncode == 0, done.stdout[-3000:]
        found = dict(re.findall(r"^ENV (\S+) (\S+)$", done.stdout, flags=re.M))
        assert set(found) == set(names), done.stdout[-3000:]
        assert {n: str(env_path(Path(envdir), n)) for n in names} == found
    assert re.fullmatch(r"[0-9a-f]{8}", Path(found["rtx(1.7.1.116)"]).name), found  # the long envdir: hashed


def test_uv_says_what_it_installed_on_stderr_so_a_command_s_answer_is_its_stdout_alone() -> None:
    """`nox -s diff -- ... > upgrade.md` once began with uv's "Resolved 74 packages / Installed 10 packages" lines: the
    noxfile's `uv sync` sends its output to stderr (nox's own log is there too)."""
    tree = ast.parse((REPO / "noxfile.py").read_text(encoding="utf-8"))
    syncs = [call for call in ast.walk(tree) if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
             and call.func.attr in ("run", "run_install") and [a.value for a in call.args[:2]
                                                               if isinstance(a, ast.Constant)] == ["uv", "sync"]]
    assert syncs, "the noxfile's uv sync is not where this test looks"
    for call in syncs:
        stdout = next((k.value for k in call.keywords if k.arg == "stdout"), None)
        assert stdout is not None and ast.unparse(stdout) == "sys.stderr", ast.unparse(call)
