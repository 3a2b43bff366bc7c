"""pytest plugin: one test per cell, one JSONL results file per session, written by the controller only.

    pytest tests/cells --engine onnxruntime -n 2
    pytest tests/cells --engine tensorrt --trt-python bin/python-trt-8.6.0 --results out.jsonl

A worker builds the cell and hands it to the controller in the report's user_properties; the
controller appends it to the results file and flushes, so a crash loses nothing already run. A
test whose worker died (segfault, hang past --timeout) has no cell: the controller records it as
crashed and the run goes on (pytest-xdist starts a new worker).

Runs resume: a results file is appended to, never truncated, and a cell it already holds for the
same bundle digest, engine, engine version, hardware and cell options is reused instead of run
again (`--fresh` runs everything). One run at a time holds a results file (an OS file lock); a
second run on it waits `--results-wait` seconds, then stops with a message naming the holder.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import platform
import re
import time
from pathlib import Path
from typing import Any, Dict, IO, Optional, Tuple

import pytest

from cases import get_case
from cases.cell import Cell
from cases.verdict import rejudge
from engines.base import EngineInfo

CELL_KEY = "qdq_cell"
REUSED_KEY = "qdq_reused"
SESSION_SCHEMA = "qdq-matrix/session/1"
REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("qdq-matrix cells")
    group.addoption("--engine", help="engine to run the reproducers on: onnxruntime, openvino, tensorrt, or module:Class")
    group.addoption("--engine-version", default=None, help="version label for an engine that is not here")
    group.addoption("--trt-python", default=None, help="interpreter that already has TensorRT (existing-interpreter mode)")
    group.addoption("--trt-isolate", action="store_true", help="one TensorRT process per cell (slower; no shared state)")
    group.addoption("--trt-tactics", default=os.environ.get("QDQ_TRT_TACTICS") or "default",
                    choices=("default", "tensorrt-only"),
                    help="TensorRT tactic sources: its default, or its own kernels only (no cuBLAS/cuDNN); "
                         "default $QDQ_TRT_TACTICS or 'default'")
    group.addoption("--ort-opt-level", default="ORT_ENABLE_ALL", help="ONNX Runtime graph optimization level name")
    group.addoption("--results", default=None, help="JSONL results file (default results/<engine>-<version>-<hardware>.jsonl)")
    group.addoption("--results-source", default="local", help="'local' for this machine's runs, 'observed' for committed data")
    group.addoption("--bundles", default=None, help="bundle folder (default $QDQ_BUNDLES or .bundles)")
    group.addoption("--fresh", action="store_true", help="run every cell again, even those the results file holds")
    group.addoption("--results-wait", type=float, default=0.0,
                    help="seconds to wait for another run that holds the results file (default: stop at once)")

# Options that do not change what a cell observes, so they are left out of its reuse key.
NOT_CELL_OPTIONS = ("engine", "trt_python", "trt_isolate", "results", "results_source", "bundles", "fresh",
                    "results_wait", "engine_version")
REUSABLE = ("pass", "fail")  # observations stand; crashed, skipped and not-run cells are tried again


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> Optional[bool]:
    """tests/cells runs only when an engine is named."""
    if collection_path.name == "cells" and collection_path.parent.name == "tests" and not config.getoption("--engine"):
        return True
    return None


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--engine"):
        return
    if config.getoption("--bundles"):
        os.environ["QDQ_BUNDLES"] = str(Path(config.getoption("--bundles")).resolve())
    if hasattr(config, "workerinput"):
        config._qdq_info = EngineInfo(**json.loads(config.workerinput["qdq_engine_info"]))
        config._qdq_run = json.loads(config.workerinput["qdq_run"])
        config._qdq_reuse = json.loads(config.workerinput["qdq_reuse"])
        return
    engine = make_engine(config)
    info = engine.probe()
    config._qdq_info = info
    config._qdq_run = run_record(config)
    writer = ResultsWriter(results_path(config, info), info, config._qdq_run, wait=config.getoption("--results-wait"))
    config._qdq_writer = writer
    config._qdq_reuse = {} if config.getoption("--fresh") else {"path": str(writer.path), "upto": writer.resume_offset}
    config.pluginmanager.register(_ControllerHooks(config), "qdq-controller")


def make_engine(config: pytest.Config):
    """The adapter named by --engine, with its options."""
    from engines import get_engine

    name = config.getoption("--engine")
    version = config.getoption("--engine-version")
    if ":" in name:  # a custom adapter, module:Class
        import importlib

        module, cls = name.split(":")
        return getattr(importlib.import_module(module), cls)()
    if name == "tensorrt":
        return get_engine(
            name, python=config.getoption("--trt-python"), version=version, isolate=config.getoption("--trt-isolate"),
            tactics=config.getoption("--trt-tactics"),
        )
    if name == "onnxruntime":
        return get_engine(name, graph_optimization_level=config.getoption("--ort-opt-level"))
    return get_engine(name)


def run_record(config: pytest.Config) -> Dict[str, str]:
    """Where and when this session ran, and how to run it again."""
    argv = " ".join(["pytest"] + [a for a in config.invocation_params.args])
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "command": argv,
        "source": config.getoption("--results-source"),
        "python": platform.python_version(),
        "cell_options": json.dumps(cell_options(config), sort_keys=True),
    }


def cell_options(config: pytest.Config) -> Dict[str, Any]:
    """The options of this plugin that change what a cell observes (an ORT optimization level, say)."""
    group = config.getoption
    names = [a.dest for a in config._parser.getgroup("qdq-matrix cells").options]
    return {n: group(n) for n in sorted(names) if n not in NOT_CELL_OPTIONS}


ReuseKey = Tuple[str, str, str, str, str, str]


def reuse_key(cell: Cell) -> ReuseKey:
    """What must match for a stored cell to stand for a new run of it."""
    return (cell.bundle, cell.digest, cell.engine, cell.engine_version, cell.hardware,
            cell.run.get("cell_options", ""))


def stored_cells(path: Path, upto: int) -> Dict[ReuseKey, Cell]:
    """The reusable cells in the first `upto` bytes of a results file, the last of each key winning."""
    found: Dict[ReuseKey, Cell] = {}
    try:
        with open(path, "rb") as f:
            data = f.read(upto)
    except OSError:
        return found
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
            if record.get("schema") == SESSION_SCHEMA:
                continue
            cell = Cell.from_dict(record)
        except (ValueError, AttributeError, TypeError):  # another schema or a damaged line: never reused
            continue
        if cell.status != "crashed":
            found[reuse_key(cell)] = cell
    return found


def same_not_run(new: Cell, stored: Optional[Cell]) -> bool:
    """A not-run cell that says what the stored one said: nothing new to write."""
    return (stored is not None and new.status in ("skipped", "not_run") and new.status == stored.status
            and new.reason == stored.reason)


def stored_cell(config: pytest.Config, bundle_id: str, digest: str) -> Optional[Cell]:
    """The stored cell of this bundle under this run's key, if any (the file is read once per process)."""
    reuse = config._qdq_reuse
    if not reuse:
        return None
    if not hasattr(config, "_qdq_stored"):
        config._qdq_stored = stored_cells(Path(reuse["path"]), int(reuse["upto"]))
    info: EngineInfo = config._qdq_info
    key = (bundle_id, digest, info.name, info.version, info.hardware, config._qdq_run.get("cell_options", ""))
    return config._qdq_stored.get(key)


def results_path(config: pytest.Config, info: EngineInfo) -> Path:
    given = config.getoption("--results")
    if given:
        return Path(given)
    hw = re.sub(r"[^A-Za-z0-9.]+", "-", info.hardware).strip("-").lower() or "unknown"
    return REPO / "results" / f"{info.name}-{info.version}-{hw}.jsonl"


class ResultsBusy(pytest.UsageError):
    """Another run holds the results file."""


class ResultsWriter:
    """Appends one JSON object per line and flushes it; the controller is its only user.

    It holds an exclusive lock on the file for the whole run (fcntl.flock: the OS drops it when the
    process dies, so a killed run never leaves a stale lock). A line cut off by a killed run is
    removed before anything is appended: it was never a finished cell.
    """

    def __init__(self, path: Path, info: EngineInfo, run: Dict[str, str], wait: float = 0.0) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = open(path, "a+", encoding="utf-8")
        self._owner = path.with_name(path.name + ".owner")
        self._lock(wait, run)
        self._refuse_foreign()
        self.resume_offset = self._drop_cut_off_line()
        header = {
            "schema": SESSION_SCHEMA, "kind": "session", "engine": info.name, "engine_version": info.version,
            "hardware": info.hardware, "hardware_detail": info.hardware_detail, "versions": info.versions,
            "available": info.available, "reason": info.reason, **run,
        }
        self.write_line(json.dumps(header, sort_keys=True))
        self.counts: Dict[str, int] = {}
        self.reused = 0

    def _lock(self, wait: float, run: Dict[str, str]) -> None:
        deadline = time.monotonic() + max(0.0, wait)
        while True:
            try:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = self._holder()
                    self._file.close()
                    raise ResultsBusy(
                        f"results file {self.path} is in use by another run ({holder}); wait for it to finish, "
                        "pass --results-wait SECONDS, or choose another --results file"
                    ) from None
                time.sleep(0.2)
        owner = {"pid": os.getpid(), "host": platform.node(), "date": run.get("date", ""),
                 "command": run.get("command", "")}
        self._owner.write_text(json.dumps(owner), encoding="utf-8")

    def _holder(self) -> str:
        try:
            o = json.loads(self._owner.read_text(encoding="utf-8"))
            return f"pid {o['pid']} on {o['host']}, started {o['date']}: {o['command']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "holder unknown"

    def _refuse_foreign(self) -> None:
        """Never append to a file that is not a results file (a typo in --results must not damage it)."""
        with open(self.path, "rb") as f:
            first = f.readline(1 << 20)
        if not first.strip():
            return
        try:
            ours = json.loads(first).get("schema") == SESSION_SCHEMA
        except (ValueError, AttributeError):
            ours = False
        if not ours:
            self.close()
            raise pytest.UsageError(f"{self.path} is not a qdq-matrix results file (its first line is not a "
                                    f"{SESSION_SCHEMA} header); refusing to append to it: name another --results")

    def _drop_cut_off_line(self) -> int:
        """Truncate a last line without its newline (a killed writer's); return the size after that."""
        self._file.flush()
        with open(self.path, "rb") as f:
            data = f.read()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            os.truncate(self.path, keep)
            return keep
        return len(data)

    def write_line(self, line: str) -> None:
        self._file.write(line + "\n")
        self._file.flush()

    def write(self, cell: Cell) -> None:
        self.write_line(cell.to_json())
        self.counts[cell.status] = self.counts.get(cell.status, 0) + 1

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            self._owner.unlink()
        except OSError:
            pass
        self._file.close()  # closing the file releases the lock


class _ControllerHooks:
    """Hooks that only the controller (or a run without xdist) installs."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        config = node.config
        info = config._qdq_info
        node.workerinput["qdq_engine_info"] = json.dumps(info.__dict__)
        node.workerinput["qdq_run"] = json.dumps(config._qdq_run)
        node.workerinput["qdq_reuse"] = json.dumps(config._qdq_reuse)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        config = self._config
        writer: ResultsWriter = config._qdq_writer
        props = dict(report.user_properties)
        if CELL_KEY in props and report.when == "call":
            if REUSED_KEY in props:  # already in the file
                writer.reused += 1
                return
            writer.write(Cell.from_dict(json.loads(props[CELL_KEY])))
            return
        crashed = report.failed and report.when in ("call", "???")
        if crashed and CELL_KEY not in props and "[" in report.nodeid:
            writer.write(crashed_cell(report, config._qdq_info, config._qdq_run))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        writer: ResultsWriter = session.config._qdq_writer
        writer.close()
        counts = ", ".join(f"{n} {s}" for s, n in sorted(writer.counts.items())) or "none"
        session.config._qdq_summary = (f"cells: {writer.reused} reused from earlier runs, run now: {counts} "
                                       f"-> {writer.path}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = getattr(terminalreporter.config, "_qdq_summary", "")
        if summary:
            terminalreporter.write_line(summary)


def crashed_cell(report: pytest.TestReport, info: EngineInfo, run: Dict[str, str]) -> Cell:
    """A cell for a test that died without handing back its cell (segfault, timeout)."""
    bundle_id = report.nodeid.split("[", 1)[1].rstrip("]")
    reason = str(report.longrepr).strip().splitlines()
    first = next((line for line in reason if "crashed" in line or "Timeout" in line), reason[0] if reason else "crashed")
    case_id = bundle_id.split("/", 1)[0]
    meta = _bundle_meta(bundle_id)
    cell = Cell(
        bundle=bundle_id, case=case_id, params=meta.get("params", {}), digest=meta.get("digest", ""),
        engine=info.name, engine_version=info.version, hardware=info.hardware, status="crashed",
        verdict="new failure", reason=first.strip()[:500],
        explanation="the engine's process died before it reported a result",
        hardware_detail=dict(info.hardware_detail), versions=dict(info.versions), log=str(report.longrepr)[-4000:],
        run=dict(run),
    )
    try:
        return rejudge(cell, get_case(case_id))
    except KeyError:  # not a case of the catalogue: no expectation to judge against
        return cell


def _bundle_meta(bundle_id: str) -> Dict[str, Any]:
    from generators.bundle import bundles_root

    path = bundles_root() / bundle_id / "case.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
