"""Sessions: tests, generate, one per engine version, matrix (the main job), conformance, report, diff, lock.

    nox -s matrix                 # every engine version this machine can run, then the reports
    nox -s conformance            # the conformance table alone (nox -s matrix includes it)
    nox -s tests                  # the unit tests (what CI runs)
    nox -s lock                   # refresh uv.lock, which every session installs from
    nox -s trt_existing -- /path/to/python-with-tensorrt [...]
    nox -s NAME -- --help         # what a session does and where its posargs go; it does nothing else
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime
import fcntl
import functools
import hashlib
import importlib.util
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

import nox  # its public API only (nox.__all__: session, parametrize, options, project, Session), never its modules

# The `nox` command (README: `. .venv/bin/activate; nox -s matrix`) puts its own bin/ first on sys.path, not the
# folder it runs in: the repository's packages are found from here, wherever nox was started.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import all_cases  # noqa: E402
from cases.onnx_node_tests import ID as ONNX_NODE_TESTS  # noqa: E402
from cases.qdq_companion import ID as QDQ_COMPANION  # noqa: E402
from core.engines import ENGINES, pin_group  # noqa: E402

# The pin table, read from the engine descriptors (core/engines.py, where each pin says why), never typed here:
# `python -m engines.pins` prints the same table for the GPU tools. The session names keep these constants' names.
_ORT, _OV, _TRT, _TRT10, _RTX = (pin_group(g) for g in ("ort", "openvino", "trt", "trt10", "rtx"))
ORT_VERSIONS = {v: list(_ORT.requirements(v)) for v in _ORT.versions}
OPENVINO_VERSIONS = {v: list(_OV.requirements(v)) for v in _OV.versions}
TRT_PYPI = list(_TRT.versions)
TRT_PYPI_REQUIRES = list(_TRT.requires)
TRT_PYTHON = _TRT.python
TRT_NVIDIA = list(_TRT10.versions)
TRT10_PYTHON = _TRT10.python
RTX_VERSIONS = list(_RTX.versions)
# What each in-process engine's session environment installs beside its group: its own session and `matrix`, which
# makes the same environments, read it here (one tuple per environment, so _sync_key sees one set of pins).
ENGINE_PINS = {f"rtx({v})": (f"tensorrt-rtx=={v}",) for v in RTX_VERSIONS}
ENGINE_PINS.update({f"ort({v})": (f"onnxruntime=={v}", *pins) for v, pins in ORT_VERSIONS.items()})
ENGINE_PINS.update({f"openvino({v})": (f"openvino=={v}", *pins) for v, pins in OPENVINO_VERSIONS.items()})
# The architectures a full run builds TensorRT-RTX plans for, each a column, for the cases whose outcome depends on it
# (Case.arch_dependent); the rest build for the default.
RTX_SWEEP = list(ENGINES["tensorrt-rtx"].option("target").sweep)
ARCH_CASES = [c.id for c in all_cases() if c.arch_dependent]
# the conformance bundles' cases (cases/onnx_node_tests.py, cases/qdq_companion.py; nox -s conformance)
CONFORMANCE = [ONNX_NODE_TESTS, QDQ_COMPANION]
NVIDIA_INDEX = _TRT10.index
# NVIDIA ModelOpt as a producer (`nox -s "producers(modelopt)"`, opt-in, never in the test group or CI): its [onnx]
# extra pins onnx 1.21 and onnxruntime-gpu (which runs on the CPU provider), and it needs a torch >= 2.8. A local CPU
# torch wheel is taken with UV_FIND_LINKS=DIR; otherwise uv resolves torch from PyPI.
MODELOPT = ["nvidia-modelopt[onnx]==0.47.0", "torch>=2.8"]

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
OBSERVED = HERE / "reports" / "observed"
PYPROJECT = nox.project.load_toml("pyproject.toml")
CELL_TIMEOUT = "--timeout=600"  # seconds one cell may take before it is a crash (pytest-timeout)
SYNCED = ".qdq-synced"  # in an environment: what it was last synced from (_sync)
PYCACHE = HERE / ".nox" / "pycache"  # the bytecode of every process a session starts (_env)

LONG_COMMAND = 400  # characters: a command line longer than this is said short (its --column count), in full with -v


def _help_asked(argv: List[str]) -> bool:
    """Whether this nox run is `nox -s NAME -- --help` (or -h among the arguments after --)."""
    return "--" in argv and bool({"-h", "--help"} & set(argv[argv.index("--") + 1:]))


# `nox -s NAME -- --help`: each session named prints its help (_helps) and does no work: no environment is made or
# synced (the "none" backend), none is waited for, no bundle is written.
HELP = _help_asked(sys.argv)

nox.options.default_venv_backend = "uv"  # the environments come from uv.lock, through uv
nox.options.reuse_venv = "yes"  # kept between runs; _sync says when one is as its lock and pins ask (nox -N: anew)
nox.options.sessions = ["tests"]
if HELP:
    nox.options.force_venv_backend = "none"


@contextlib.contextmanager
def _environment_lock(session: nox.Session, envdir: Path, name: str) -> Iterator[None]:
    """Hold .nox/<environment>.lock (fcntl, dropped when the process dies) while the environment is synced and used:
    a second run of the session waits for the first, saying whose it is."""
    lock = envdir.with_name(envdir.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+", encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "holder unknown"
            session.warn(f"{name}: its environment {envdir.name} is in use by another run ({holder}); waiting for it "
                         "to finish, so that neither syncs it under the other")
            fcntl.flock(f, fcntl.LOCK_EX)
        f.truncate(0)
        f.write(json.dumps({"pid": os.getpid(), "session": name, "command": " ".join(sys.argv[1:]),
                            "started": datetime.datetime.now().isoformat(timespec="seconds")}) + "\n")
        f.flush()
        try:
            yield
        finally:
            f.truncate(0)


def _nox_arguments(argv: List[str]) -> List[str]:
    """nox's own command-line arguments: those before `--` (the rest are the sessions' posargs)."""
    return argv[:argv.index("--")] if "--" in argv else list(argv)


def _sessions_named(argv: List[str]) -> List[str]:
    """The sessions named on nox's command line (-s/-e/--session/--sessions NAME..., else $NOXSESSION); [] where
    none is (nox runs its default sessions, or those -k or -t select)."""
    named: List[str] = []
    taking = False
    for arg in _nox_arguments(argv)[1:]:
        option, equals, value = arg.partition("=")
        if option in ("-s", "-e", "--session", "--sessions"):
            taking = not equals
            named += [value] if equals else []
        elif arg.startswith("-"):
            taking = False
        elif taking:
            named.append(arg)
    return named or [n for n in os.environ.get("NOXSESSION", "").split(",") if n]


def _verbose(argv: List[str]) -> bool:
    """Whether nox was asked for -v/--verbose (it then says every command whole)."""
    return bool({"-v", "--verbose"} & set(_nox_arguments(argv)))


def _helps(*command: str, posargs: str = "") -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The session, or, for `nox -s NAME -- --help`, its help alone: its docstring and where its posargs go (to
    `python COMMAND`, or as `posargs` says), then that command's own --help where the session's environment is made."""
    where = (posargs or f"they go to `python {' '.join(command)}`") + (
        ", whose options follow where its environment is made" if command else "")

    def wrap(func: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(func)
        def session_or_help(session: nox.Session, **params: str) -> None:
            if not HELP:
                with _environment_lock(session, _own_env(session), session.name):
                    return func(session, **params)
            if not _named(session):
                session.log(f"{session.name}: required by a session named for --help; nothing done")
                return None
            print(f"nox -s \"{session.name}\": {inspect.cleandoc(func.__doc__ or '')}")
            print(textwrap.fill(f"posargs (after --): {where}.", width=120))
            if command:
                _command_help(session, command)
            return None

        return session_or_help

    return wrap


def _named(session: nox.Session) -> bool:
    """Whether the session was named on the command line (or none was), not only required by one that was."""
    names = _sessions_named(sys.argv)
    return not names or session.name in names or session.name.split("(")[0] in names


def _command_help(session: nox.Session, command: tuple) -> None:
    """The options of the command a session's posargs go to, from the session's environment where it is made (a
    help request makes none: the command's imports need the environment's packages)."""
    python = _own_env(session) / "bin" / "python"
    said = f"`python {' '.join(command)} --help`"
    if not python.is_file():  # a command whose --help needs the standard library alone (check's) prints it here
        sys.stdout.flush()
        alone = subprocess.run([sys.executable, *command, "--help"], env=_over_ours(_env()), check=False,
                               capture_output=True, text=True)
        if alone.returncode == 0 and alone.stdout.strip():
            print(alone.stdout, end="")
            return
        session.log(f"{said} is not listed: its environment {_show(python.parent.parent)} is made by the session's "
                    "first run (without --help), and this help lists them after that")
        return
    sys.stdout.flush()
    if _status([str(python), *command, "--help"], _env()) != 0:
        session.log(f"{said} failed in {_show(python.parent.parent)}: a run of the session syncs it again")


def _own_env(session: nox.Session) -> Path:
    """The session's environment folder (nox's session.env_dir, made absolute), made or not."""
    return Path(os.path.abspath(session.env_dir))


def _over_ours(env: Dict[str, Optional[str]]) -> Dict[str, str]:
    """This process's environment with `env` over it (None: unset), for a command started without session.run."""
    merged = {**os.environ, **env}
    return {k: v for k, v in merged.items() if v is not None}


def _status(command: List[str], env: Dict[str, Optional[str]]) -> int:
    """The exit status of a command run with this process's environment and `env` over it (None: unset), its output
    going where nox's goes: nox's session.run says only whether a command passed."""
    try:
        return subprocess.run(command, env=_over_ours(env), check=False).returncode
    except OSError as e:
        print(f"{command[0]}: {e}", file=sys.stderr)
        return 127


def _group(name: str) -> list[str]:
    return nox.project.dependency_groups(PYPROJECT, name)


def _sync(session: nox.Session, *groups: str) -> None:
    """Install dependency groups (and numpy, packaging) at the versions in uv.lock; refuses a stale lock."""
    _sync_into(session, Path(session.virtualenv.location), groups)


def _sync_with_engine(session: nox.Session, group: str, *pins: str, required: bool = True) -> bool:
    """A locked group, then one engine version from the pin table over it; where they disagree the pin wins. False
    where the pins could not be installed and the caller takes that (`required=False`)."""
    return _sync_into(session, Path(session.virtualenv.location), (group,), pins, required=required)


def _sync_into(session: nox.Session, env: Path, groups: tuple, pins: tuple = (), required: bool = True) -> bool:
    """Sync an environment (this session's, or another session's that this one holds the lock of) to the locked
    groups and the pins, unless it was synced from the same uv.lock, pyproject.toml, groups and pins already. A
    lock that disagrees with pyproject.toml stops the session (uv sync --locked); pins that cannot be installed stop
    it too, or, not `required`, say False."""
    key = _sync_key(env, groups, pins)
    stamp = env / SYNCED
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == key:
        session.log(f"{env.name}: as uv.lock and the pins ask (synced before; nox -N makes it anew)")
        return True
    stamp.unlink(missing_ok=True)
    # `uv sync` rather than `uv export` to a requirements file: one command, --locked stops on a lock that
    # disagrees with pyproject.toml, and the venv ends up exactly the lock, a reused one included (nox's cookbook,
    # "Using a lockfile"). VIRTUAL_ENV names the same environment: the matrix session syncs its engines'
    # environments from its own, whose VIRTUAL_ENV uv would otherwise warn about once per environment.
    # uv's "Resolved ... / Installed ..." lines go to stderr, with nox's own: `nox -s diff -- ... > upgrade.md` is the
    # answer alone.
    done = session.run_install("uv", "sync", "--locked", "--no-install-project", *(f"--group={g}" for g in groups),
                               env={"UV_PROJECT_ENVIRONMENT": str(env), "VIRTUAL_ENV": str(env)}, stdout=sys.stderr)
    if done is None:  # -R/--no-install skipped the installs, so nothing is stamped
        return True
    if pins and not _install_pins(session, env, groups, pins):
        if required:
            session.error(f"{env.name}: {' '.join(p for p in pins if not p.startswith('-'))} could not be installed "
                          "(uv's message above)")
        return False
    stamp.write_text(_sync_key(env, groups, pins), encoding="utf-8")
    return True


def _install_pins(session: nox.Session, env: Path, groups: tuple, pins: tuple) -> bool:
    """The pins over the synced groups, from uv's cache where it has them, else from the index; whether they went in.
    The group's ranges go in again so that one resolve moves only what the pin forces (ORT 1.16.3's numpy<2 also
    takes ml-dtypes back from 0.6); every other package keeps its locked version."""
    install = ("pip", "install", "--python", str(env / "bin" / "python"), *[r for g in groups for r in _group(g)],
               *pins)
    if _from_uv_cache(session, install):
        return True
    session.log(shlex.join(["uv", *install]))
    return _status([_uv(), *install], {}) == 0


def _uv() -> str:
    """The uv to run: $UV, else the one on PATH, else the one installed beside nox (README's set-up puts it there;
    the uv package's documented find_uv_bin), as nox itself looks for it."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found:
        return found
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return "uv"


def _from_uv_cache(session: nox.Session, args: tuple) -> bool:
    """Whether `uv ARGS --offline` did it, from uv's cache alone. Eight environments synced side by side each ask the
    package index otherwise, and wait on it: 0.2 s for one, 5 to 12 s for eight (measured here). Where the cache
    lacks a wheel this says False, quietly, and the caller asks the index."""
    command = [_uv(), *args[:2], "--offline", *args[2:]]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False).returncode == 0
    except OSError:
        return False
    if done:
        session.log(f"{' '.join(['uv', *args[:2], '--offline', *args[2:4]])} ...: from uv's cache")
    return done


def _sync_key(env: Path, groups: tuple, pins: tuple) -> str:
    """What an environment is synced from: the lock, the project's groups, its interpreter, the groups and pins."""
    h = hashlib.sha256()
    for path in (HERE / "uv.lock", HERE / "pyproject.toml", env / "pyvenv.cfg"):
        h.update(path.read_bytes() if path.is_file() else b"-")
    h.update(json.dumps([sorted(groups), list(pins)]).encode())
    return h.hexdigest()


def _env() -> dict[str, str | None]:
    """What every command a session runs gets: the repository on its path, this process as the parent that a cell run
    dies with (engines/tensorrt/lifeline.py: a killed nox leaves no run behind), and Python's compiled bytecode kept
    in one folder under .nox/ (PYCACHE), where a machine that sets PYTHONDONTWRITEBYTECODE would otherwise have each
    of a run's fifty-odd processes compile numpy, onnx and pytest from source again."""
    return {"PYTHONPATH": str(HERE), _lifeline().PARENT_ENV: str(os.getpid()), **_bytecode_env()}


def _bytecode_env() -> dict[str, str | None]:
    """PYTHONPYCACHEPREFIX=.nox/pycache and PYTHONDONTWRITEBYTECODE unset, so that bytecode is written there (never
    beside a source file, which is what that setting keeps clean); a prefix the user set is kept as it is."""
    if os.environ.get("PYTHONPYCACHEPREFIX"):
        return {}
    return {"PYTHONPYCACHEPREFIX": str(PYCACHE), "PYTHONDONTWRITEBYTECODE": None}


def _lifeline():
    """engines/tensorrt/lifeline.py (standard library only), read from here: nox's interpreter has no numpy."""
    loaded = importlib.util.spec_from_file_location("qdq_lifeline", HERE / "engines" / "tensorrt" / "lifeline.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _workers(engine: str = "") -> str:
    """Cells at a time: up to 8 on the CPU engines; up to 4 for TensorRT on a GPU, where the H100 sweep
    (reports/observed/nvidia-h100/timing-cache-sweep) measured 37 s at 2 and 4 workers, 44 s at 1, 46 s at 8."""
    return str(max(1, min(4 if engine == "tensorrt" else 8, (os.cpu_count() or 2))))


RUN_POSARGS = ("they go to `python -m engines.run` after this version's columns (its own flags, `--only-case CASE`, "
               "`--fresh`; what it does not know goes on to pytest)")


def _run_cells(session: nox.Session, engine: str, *args: str) -> None:
    """Every bundle on one engine version, its columns in one pytest run, through engines.run: it reuses what the
    results files hold and says "N reused"; a column with nothing to run starts nothing. Exit 1 is failing cells,
    which are results, not a broken session; any other status fails it: 3 a broken run (collection or set-up
    errors), 5 no cell at all, 2 a usage error, 4 pytest's own interruption. posargs go to it (and on to pytest)."""
    _run_columns(session, "python", "-m", "engines.run", "--engine", engine, "-n", _workers(engine), *args,
                 CELL_TIMEOUT, *session.posargs, env=_env(), success_codes=[0, 1])


def _run_columns(session: nox.Session, *args: str, **kwargs: object) -> None:
    """session.run of an engines.run whose command line, over LONG_COMMAND characters, is said short: its --column
    JSON objects as their count (nox -v says it whole)."""
    line = shlex.join(args)
    if len(line) <= LONG_COMMAND or _verbose(sys.argv):
        session.run(*args, **kwargs)
        return
    session.log(_short_command(args))
    session.run(*args, log=False, **kwargs)


def _short_command(args: tuple) -> str:
    """A command line with each `--column JSON` left out and counted: "python -m engines.run -n 2 ... (63 columns
    given as --column JSON, which nox -v shows)"."""
    kept, columns, skip = [], 0, False
    for a in args:
        if skip:
            skip = False
        elif a == "--column":
            columns, skip = columns + 1, True
        else:
            kept.append(a)
    return f"{shlex.join(kept)} ({columns} columns given as --column JSON, which nox -v shows)"


def has_nvidia_gpu() -> bool:
    """An NVIDIA driver is present (the TensorRT adapter checks again, with the CUDA driver)."""
    return Path("/dev/nvidia0").exists() or Path("/proc/driver/nvidia/version").exists()


@nox.session
@_helps("-m", "pytest", posargs="they go to `python -m pytest` (with `-n 2` unless they give -n)")
def tests(session: nox.Session) -> None:
    """Unit tests: catalogue, generators, adapters (real ORT/OpenVINO), matrix; no GPU needed."""
    _sync(session, "test")
    named = any(a.startswith(("-n", "--numprocesses")) for a in session.posargs)  # nox -s tests -- -n 0
    session.run("python", "-m", "pytest", *([] if named else ["-n", "2"]), *session.posargs, env=_env())


@nox.session
@_helps("-m", "generators", posargs="they go to `python -m generators write`, or to `python -m generators` where the "
                                     "first is list or write")
def generate(session: nox.Session) -> None:
    """Write reproducer bundles (cached by digest) to .bundles/: nox -s generate [-- --case ID --param K=V].

    `nox -s generate -- list [--case ID]` prints the bundle ids instead."""
    _sync(session, "generate")
    command = [] if session.posargs[:1] in (["list"], ["write"]) else ["write"]
    session.run("python", "-m", "generators", *command, *session.posargs, env=_env())


@nox.session
@_helps(posargs="none: every bundle is written whatever they say (a session that requires this one keeps them)")
def bundles(session: nox.Session) -> None:
    """Every reproducer bundle (cached by digest), no arguments: each session that runs cells requires it.

    No posargs: `nox -s "ort(1.31.1)" -- -k x` gives -k x to pytest alone."""
    _sync(session, "generate")
    session.run("python", "-m", "generators", "write", env=_env())


@nox.session(name="ort", requires=["bundles"])
@nox.parametrize("version", list(ORT_VERSIONS), ids=list(ORT_VERSIONS))
@_helps("-m", "engines.run", posargs=RUN_POSARGS)
def ort(session: nox.Session, version: str) -> None:
    """Every bundle on one ONNX Runtime version (CPU); without VNNI also with session.x64quantprecision=1."""
    _sync_with_engine(session, "cells", *ENGINE_PINS[f"ort({version})"])
    _run_cells(session, "onnxruntime", "--engine-version", version, *_column_args(_ort_columns(session)))


def _ort_columns(session: nox.Session) -> List[Dict[str, object]]:
    """microsoft/onnxruntime#12088: the documented fix for u8s8 saturation is a column of its own where it can change
    an outcome (x86-64 without VNNI; with VNNI ORT leaves the graph as it is): the default column and that one."""
    return [{}] if _cpu_has_vnni(session) else [{}, {"options": {"x64quantprecision": "1"}}]


def _column_args(columns: List[Dict[str, object]]) -> List[str]:
    """Columns for engines.run: each a JSON object of its fields (engines.plan.Column), never words to split."""
    return [a for c in columns for a in ("--column", json.dumps(c, sort_keys=True))]


def _cpu_has_vnni(session: nox.Session) -> bool:
    """Whether this CPU's INT8 level (core.isa, from cpuid) has VNNI or AMX; asked once per nox run."""
    if "vnni" not in _ASKED:
        code = "import json; from core.isa import isa; i = isa(); print(json.dumps([i.level, i.vnni]))"
        out = session.run("python", "-c", code, env=_env(), silent=True) or ""
        level, vnni = json.loads((out.strip().splitlines() or ['["unknown", false]'])[-1])
        session.log(f"CPU INT8 level: {level}")
        _ASKED["vnni"] = bool(vnni)
    return _ASKED["vnni"]


_ASKED: dict = {}  # what this nox run asked the machine once


@nox.session(name="openvino", requires=["bundles"])
@nox.parametrize("version", list(OPENVINO_VERSIONS), ids=list(OPENVINO_VERSIONS))
@_helps("-m", "engines.run", posargs=RUN_POSARGS)
def openvino(session: nox.Session, version: str) -> None:
    """Every bundle on one OpenVINO version (CPU, f32 inference precision)."""
    _sync_with_engine(session, "cells", *ENGINE_PINS[f"openvino({version})"])
    _run_cells(session, "openvino", "--engine-version", version)


def _trt_impl(session: nox.Session, version: str, index: str | None, *pins: str) -> None:
    if not has_nvidia_gpu():
        session.skip("no NVIDIA GPU: TensorRT cells are written as not run by `nox -s matrix`")
    extra = ["--extra-index-url", index] if index else []
    if not _sync_with_engine(session, "cells", _trt_requirement(version), *pins, *extra, required=not index):
        # NVIDIA's index out of reach: honest "not run" cells that say so, and the session goes on
        session.run("python", "-m", "engines.idle", "--engine", "tensorrt", "--version", version, "--because",
                    f"tensorrt=={version} could not be installed from NVIDIA's index {index}", env=_env())
        session.skip(f"tensorrt=={version} not installable here (NVIDIA's index {index})")
    _run_cells(session, "tensorrt", "--engine-version", version, f"--trt-python={Path(session.bin) / 'python'}")


def _trt_requirement(version: str) -> str:
    """`tensorrt==V` for a full version string; a three-part one (11.5.0) takes that release's newest build."""
    return f"tensorrt=={version}" + (".*" if version.count(".") == 2 else "")


@nox.session(name="trt", python=TRT_PYTHON, requires=["bundles"])
@nox.parametrize("version", TRT_PYPI, ids=TRT_PYPI)
@_helps("-m", "engines.run", posargs=RUN_POSARGS)
def trt(session: nox.Session, version: str) -> None:
    """Every bundle on one TensorRT 8.5/8.6.0 version from PyPI (needs an NVIDIA GPU)."""
    _trt_impl(session, version, None, *TRT_PYPI_REQUIRES)  # 8.x's trt.nptype uses np.bool, gone in numpy 1.24


@nox.session(name="trt10", python=TRT10_PYTHON, requires=["bundles"])
@nox.parametrize("version", TRT_NVIDIA, ids=TRT_NVIDIA)
@_helps("-m", "engines.run", posargs=RUN_POSARGS)
def trt10(session: nox.Session, version: str) -> None:
    """Every bundle on one TensorRT 10.x or 11.x from NVIDIA's index (not verified on real TensorRT here)."""
    _trt_impl(session, version, NVIDIA_INDEX)


@nox.session(name="rtx", requires=["bundles"])
@nox.parametrize("version", RTX_VERSIONS, ids=RTX_VERSIONS)
@_helps("-m", "engines.run", posargs=RUN_POSARGS)
def rtx(session: nox.Session, version: str) -> None:
    """Every bundle on one TensorRT for RTX version: parse and ahead-of-time build here, run only on its GPUs."""
    _sync_with_engine(session, "cells", *ENGINE_PINS[f"rtx({version})"])
    _run_cells(session, "tensorrt-rtx", "--engine-version", version, f"--trt-python={Path(session.bin) / 'python'}",
               *_column_args(_rtx_columns()))


def _rtx_columns() -> List[Dict[str, object]]:
    """A TensorRT for RTX version's columns, all in one pytest run: its default build; the plugin reproducers again
    with a libtensorrt_rtx.so link (1.7's parser aborts on a Python IPluginV3 node unless it resolves, and the wheel
    ships only .so.1); and every target architecture for the cases whose outcome depends on it and the conformance
    bundles of the types whose support it decides (their case.json's trt.per_target)."""
    columns: List[Dict[str, object]] = [{}, {"options": {"plugin_link": "libtensorrt_rtx.so"}, "plugins_only": True}]
    columns += [{"options": {"target": t}, "only_cases": list(ARCH_CASES), "per_target": True} for t in RTX_SWEEP]
    return columns


def _session_envs(session: nox.Session, envs: Dict[str, tuple], locks: contextlib.ExitStack) -> Dict[str, Path]:
    """Other sessions' environments (session name -> its pins over the cells group), each made or synced as that
    session would, side by side, under its lock (held until `locks` closes); their interpreters by session name."""
    dirs = {name: _env_dir(session, name) for name in envs}
    for name, env in dirs.items():
        locks.enter_context(_environment_lock(session, env, f"{session.name}: {name}"))

    def make(name: str) -> None:
        if not (dirs[name] / "bin" / "python").exists():
            session.run_install("uv", "venv", "--quiet", "--python", sys.executable, str(dirs[name]))
        _sync_into(session, dirs[name], ("cells",), envs[name])

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(envs))) as pool:
        list(pool.map(make, envs))  # uv links from its cache; the waits overlap
    return {name: env / "bin" / "python" for name, env in dirs.items()}


def _env_dir(session: nox.Session, name: str) -> Path:
    """The folder nox keeps the session `name`'s environment in, beside this session's (session.env_dir): nox's
    naming, which nox does not export (tests/ci/test_nox_public_api.py checks it against nox's own env_dir)."""
    return Path(os.path.abspath(_env_path(session.env_dir.parent, name)))


def _env_path(envdir: Path, name: str) -> Path:
    """nox's folder for a session named `name` under `envdir`: the name's words joined by "-", lower case; a path
    too long for a shebang line (over 100 characters with bin/pythonX.Y) hashed, as nox does."""
    words = re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "-", name).strip().lower()).strip("-")
    words = words or hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    if len(os.path.join(str(envdir), words)) > 100 - len("bin/pythonX.Y") and len(str(envdir)) < 100 - 9:
        words = hashlib.sha1(words.encode("ascii")).hexdigest()[:8]
    return envdir / words


@nox.session(requires=["bundles"])
@_helps("-m", "engines.run", posargs="interpreters that have TensorRT (else $QDQ_TRT_PYTHON), and flags, which "
                                     "go to `python -m engines.run`")
def trt_existing(session: nox.Session) -> None:
    """The TensorRT column with interpreters that already have TensorRT: nox -s trt_existing -- PY [PY ...]."""
    pythons = [a for a in session.posargs if not a.startswith("-")] or _trt_pythons_from_env()
    if not pythons:
        session.error("name an interpreter that has TensorRT: nox -s trt_existing -- /path/to/python")
    _sync(session, "cells")
    flags = [a for a in session.posargs if a.startswith("-")]
    session.log(f"TensorRT columns with {', '.join(pythons)}")
    session.run("python", "-m", "engines.run", "--engine", "tensorrt", *(f"--trt-python={p}" for p in pythons),
                "-n", _workers("tensorrt"), CELL_TIMEOUT, *flags, env=_env(), success_codes=[0, 1])


def _trt_pythons_from_env() -> list[str]:
    return [p for p in os.environ.get("QDQ_TRT_PYTHON", "").split(os.pathsep) if p]


@nox.session
@_helps("-m", "matrix", "report")
def report(session: nox.Session) -> None:
    """Merge results/ and reports/observed/ into reports/matrix.{md,html,json} and JUnit XML."""
    _sync(session, "report")
    session.run("python", "-m", "matrix", "report", *_results_args(), "--out", str(HERE / "reports"),
                *session.posargs, env=_env())


def _results_args() -> List[str]:
    """--results for results/ and reports/observed/, each where it exists: a fresh clone has no results/ yet, and its
    committed observations are a report of their own."""
    return [a for p in (RESULTS, OBSERVED) if p.exists() for a in ("--results", str(p))]


@nox.session
@_helps("-m", "matrix", "observe")
def observe(session: nox.Session) -> None:
    """List files under reports/observed/ as observations: nox -s observe -- FILE... --machine M [--command C].

    Only reports/observed/MANIFEST.json makes a cell observed (its file listed with its sha256, machine and
    command); `nox -s observe -- --check` checks every listed file against its digest."""
    _sync(session, "report")
    session.run("python", "-m", "matrix", "observe", *session.posargs, env=_env())


@nox.session
@_helps("-m", "matrix", "diff")
def diff(session: nox.Session) -> None:
    """What changed between two versions of an engine: nox -s diff -- ENGINE FROM TO (exits with matrix diff's status:
    4 where a version never ran on any machine here)."""
    _sync(session, "report")
    status = _run_for_status(session, "-m", "matrix", "diff", *session.posargs, *_results_args())
    if status == 1:  # nox's own failure status: nox ends the session and says so
        session.error("python -m matrix diff exited with status 1")
    if status:
        raise SystemExit(status)


@nox.session
@_helps("-m", "check")
def check(session: nox.Session) -> None:
    """Your own quantized model on every engine here, with a per-node INT8 report: nox -s check -- model.onnx [...]."""
    _sync(session, "check")
    status = _run_for_status(session, "-m", "check", *session.posargs)
    # nox's own exit status is 0 or 1: leave with check's documented one (1 an engine failed a model, 2 usage
    # error, 3 a folder it cannot write, 4 a model could not be checked, 5 both), so a script or CI job can tell
    # them apart.
    if status == 1:  # nox's own failure status: nox ends the session and says so
        session.error("python -m check exited with status 1: an engine failed a model")
    if status:
        session.log(f"python -m check exited with status {status} (see `python -m check --help`)")
        raise SystemExit(status)


def _run_for_status(session: nox.Session, *args: str) -> int:
    """`python ARGS` in the session's environment (said as nox says a command), and its exit status, which nox's
    session.run does not give; under nox --install-only, where session.run runs nothing, nothing and 0."""
    if session.run("python", "-c", "", env=_env(), silent=True, log=False) is None:  # --install-only
        return 0
    session.log(shlex.join(["python", *args]))
    env = {**session.env, **_env(), "PATH": os.pathsep.join([session.bin, os.environ.get("PATH", "")])}
    return _status([str(Path(session.bin) / "python"), *args], env)


@nox.session
@_helps("-m", "check.lint")
def lint(session: nox.Session) -> None:
    """TensorRT readiness of a model without any engine: nox -s lint -- model.onnx [--json]."""
    _sync(session, "generate")
    session.run("python", "-m", "check.lint", *session.posargs, env=_env())


@nox.session
@_helps("-m", "check.reduce")
def reduce(session: nox.Session) -> None:
    """A failing model -> minimal reproducer -> bug bundle: nox -s reduce -- model.onnx --engine E --out DIR."""
    _sync(session, "check")
    session.run("python", "-m", "check.reduce", *session.posargs, env=_env())


@nox.session
@_helps("-m", "check.producers")
def producers(session: nox.Session) -> None:
    """Write the onnxruntime-quantized producer models: nox -s producers -- --out DIR [--archs [--large] | --forms]."""
    _sync(session, "generate")
    session.run("python", "-m", "check.producers", *session.posargs, env=_env())


@nox.session(name="producers(modelopt)")
@_helps("-m", "check.producers", posargs="they go to `python -m check.producers --producer modelopt`")
def producers_modelopt(session: nox.Session) -> None:
    """ModelOpt's INT8, FP8 and INT4 models of the same blocks, in an environment of their own: -- --out DIR."""
    session.install(*MODELOPT)
    session.run("python", "-m", "check.producers", "--producer", "modelopt", *session.posargs, env=_env())


@nox.session
@_helps("tools/benchmark.py")
def benchmark(session: nox.Session) -> None:
    """Bundle generation, CPU-engine cell throughput, `-- --check`: python -m check on ~300/900-node models."""
    _sync(session, "check")  # generate's packages and the locked OpenVINO
    session.run("python", "tools/benchmark.py", *session.posargs, env=_env())


@nox.session(requires=["bundles"])
@_helps("-m", "matrix", "bugs")
def bugs(session: nox.Session) -> None:
    """Bug bundles (model, data, repro.py, ISSUE.md) for every failing or unexpected cell: nox -s bugs [-- --zip].

    A user model's: nox -s bugs -- --model MODEL.onnx (its bundle from .bundles-user, else listed as needing it)."""
    # generate: onnx, which reads the model's Q/DQ types (the title's precision) and target ops (the worker's request)
    _sync(session, "report", "generate")  # numpy comes with every sync (the project's own dependency)
    session.run("python", "-m", "matrix", "bugs", *_results_args(), *session.posargs, env=_env())


def _columns_here(session: nox.Session, py: Dict[str, Path], gpu: bool) -> List[Dict[str, object]]:
    """Every column `nox -s matrix` runs in its one engines.run: TensorRT's "not run here" columns where no GPU is
    (its sessions run where one is), every TensorRT-RTX version's, and the CPU engines' under their interpreters."""
    idle = [] if gpu else [{"engine": "tensorrt", "version": v} for v in TRT_PYPI + TRT_NVIDIA]

    def engine(name: str, version: str, session_name: str) -> Dict[str, object]:
        return {"engine": name, "version": version, "python": str(py[f"{session_name}({version})"])}

    columns = idle + [{**engine("tensorrt-rtx", v, "rtx"), **c} for v in RTX_VERSIONS for c in _rtx_columns()]
    columns += [{**engine("onnxruntime", v, "ort"), **c} for v in ORT_VERSIONS for c in _ort_columns(session)]
    return columns + [engine("openvino", v, "openvino") for v in OPENVINO_VERSIONS]


@nox.session(requires=["bundles"])
@_helps("-m", "engines.run", posargs="they go to its one `python -m engines.run` over every column here (with a"
                                     " GPU, nox gives them to the report session it starts as well)")
def conformance(session: nox.Session) -> None:
    """The conformance table alone (nox -s matrix runs it too): which Q/DQ operator forms each engine version accepts.

    The onnx package's node tests for the quantization operators (written by the bundles session, each at its own
    opset and converted to every opset the engines read) and the int8 companion (generators/qdq_companion.py) on every
    engine version this machine can run, reused like
    every cell, then reports/conformance.{md,html,json} (docs/conformance.md). With a GPU, the TensorRT sessions run
    their conformance bundles and the report session follows."""
    _sync(session, "generate", "cells", "report")
    gpu = has_nvidia_gpu()
    with contextlib.ExitStack() as locks:
        py = _session_envs(session, ENGINE_PINS, locks)
        columns = [dict(c, only_cases=list(CONFORMANCE)) if not c.get("per_target") else dict(c, only_cases=[])
                   for c in _columns_here(session, py, gpu) if not c.get("plugins_only")]
        _run_columns(session, "python", "-m", "engines.run", *_column_args(columns), "-n", _workers("tensorrt-rtx"),
                     CELL_TIMEOUT, *session.posargs, env=_env(), success_codes=[0, 1])
    if gpu:
        for version in TRT_PYPI:
            session.notify(f"trt({version})", [a for c in CONFORMANCE for a in ("--only-case", c)])
        for version in TRT_NVIDIA:
            session.notify(f"trt10({version})", [a for c in CONFORMANCE for a in ("--only-case", c)])
        session.notify("report")
        return
    session.run("python", "-m", "matrix", "conformance", *_results_args(), "--out", str(HERE / "reports"), env=_env())


@nox.session
@_helps(posargs="none of its own: nox gives them to the sessions it starts (the report session, where an input "
                "moved, whose options are `nox -s report -- --help`; with a GPU or $QDQ_TRT_PYTHON, trt(V), "
                "trt10(V) and trt_existing)")
def matrix(session: nox.Session) -> None:
    """The main job: the bundles (as the bundles session writes them), every engine version this machine can run,
    then the reports.

    The bundles are written by `python -m generators write` in this session's environment (which holds the generate
    group) while the engine versions' environments, those of their own sessions (rtx(V), ort(V), openvino(V)), are
    made or synced side by side under their locks; no cell starts before the bundles are written. One engines.run asks
    every column's results file first and starts only what is left: every TensorRT-RTX version in one pytest pool
    (each version's workers under its own environment), each ONNX Runtime and OpenVINO version in a pytest of its
    environment beside it. The report session starts only where an input moved."""
    _sync(session, "generate", "cells")
    writing = _start(session, "python", "-m", "generators", "write")
    gpu = has_nvidia_gpu()
    if gpu:  # 10.x/11.x come from NVIDIA's index; where it is out of reach their cells say so
        for version in TRT_PYPI:
            session.notify(f"trt({version})")
        for version in TRT_NVIDIA:
            session.notify(f"trt10({version})")
    # without a GPU, honest "not run here" TensorRT cells, never guessed: every TensorRT column in one pass, no pytest
    with contextlib.ExitStack() as locks:  # rtx with or without a GPU: the build is real
        try:
            py = _session_envs(session, ENGINE_PINS, locks)
            columns = _columns_here(session, py, gpu)  # (asks the CPU's INT8 level) while the bundles are written
        finally:
            _finish(session, writing, "the bundles (python -m generators write)")
        _run_columns(session, "python", "-m", "engines.run", *_column_args(columns), "-n",
                     _workers("tensorrt-rtx"), CELL_TIMEOUT, env=_env(), success_codes=[0, 1])
    if _trt_pythons_from_env():
        session.notify("trt_existing")
    if gpu or _trt_pythons_from_env() or not _reports_current():
        session.notify("report")
    else:
        session.log("report: no results file, observation, bundle, case or template changed since the reports were "
                    f"rendered: {_show(HERE / 'reports')} stands as it is (nox -s report -- --force renders it)")


def _start(session: nox.Session, *args: str) -> subprocess.Popen:
    """A command of this session's environment started in the background (its output passed on as it comes), with what
    session.run gives every command (_env): the caller goes on, and _finish waits for it."""
    session.log(f"{shlex.join(args)} (in the background)")
    return subprocess.Popen(list(args), env=_over_ours({
        "PATH": os.pathsep.join([session.bin, os.environ.get("PATH", "")]),
        "VIRTUAL_ENV": session.virtualenv.location, **_env()}))


def _finish(session: nox.Session, proc: subprocess.Popen, what: str) -> None:
    """Wait for a command _start started; the session fails where it did (or stops it where the session itself
    failed before it ended)."""
    if sys.exc_info()[0] is not None:  # the session is failing: the command is not waited for
        proc.kill()
        proc.wait()
        return
    status = proc.wait()
    if status != 0:
        session.error(f"{what} exited with status {status}")


def _reports_current() -> bool:
    """Whether the report session would render nothing (matrix/inputs.py, standard library only, read from here)."""
    loaded = importlib.util.spec_from_file_location("qdq_report_inputs", HERE / "matrix" / "inputs.py")
    inputs = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(inputs)  # type: ignore[union-attr]
    bundles = Path(os.environ.get("QDQ_BUNDLES") or HERE / ".bundles")
    key = inputs.digest([RESULTS, OBSERVED], [bundles, HERE / ".bundles-user"])
    return inputs.unchanged(HERE / "reports", key) is not None


def _show(path: Path) -> str:
    return os.path.relpath(path, Path.cwd())


@nox.session
@_helps(posargs="they go to `uv lock` (without any: --upgrade)")
def lock(session: nox.Session) -> None:
    """Refresh uv.lock to the newest versions pyproject.toml allows: nox -s lock [-- --upgrade-package onnx]."""
    session.run("uv", "lock", *(session.posargs or ["--upgrade"]))
