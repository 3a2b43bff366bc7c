"""pytest plugin of the cell runner (engines/runner.py): one test per cell (or per batch of one-node cells, each
handed back as it ends: engines.plan.cell_refs), one JSONL results file per column, written by the controller only.
engines.run writes the plan and starts it; the columns come from the plan alone (engines.run is the one command line
for columns; this plugin has none of its own):

    python -m engines.run --engine onnxruntime -n 2                   # which starts, per interpreter:
    python -m pytest -p engines.pytest_cells engines/runner.py --cells-plan PLAN.json -n 2

A worker builds the cell and hands it to the controller in the report's user_properties, as its JSON text; the
controller appends it to the column's results file and flushes, so a crash loses nothing already run. A test without
a cell is recorded by who failed. The engine: its worker process died (a segfault takes a pytest-xdist worker down,
and xdist starts a new one) or the cell ran past --timeout (its reason "timed out after N s (the cell timeout)");
the cell is "crashed" and the run goes on. The suite: its
own code raised (the runner, an adapter, the judging); the cell is "harness_error", with the exception and its
traceback, and says nothing about the engine. (A TensorRT-family worker subprocess that dies is the adapter's to
record: its cell comes back "crashed", with the signal or exit status.)

Long cells are not silent: every --heartbeat seconds (default 15, or $QDQ_HEARTBEAT_S; 0 turns it off) the
controller writes a line per cell still running to stderr, "[cells] <bundle> on <engine version>: running for
N s", and one when such a cell ends, so a user sees which model and which engine version a long build is on.

Runs resume: a results file is appended to, never truncated, and a cell it already holds for the
same bundle digest, engine, engine version, hardware, variant and engine options is reused instead of run
again where engines.reuse says it stands (`--fresh` runs everything; a cell run again replaces its earlier one when
the run ends). One run at a time holds a results file (an OS file lock); a second run on it waits `--results-wait`
seconds, then stops with a message naming the holder. A results folder the disk refuses is one line, never a
traceback: a usage error at the start, exit 3 once cells ran (the run stops at the first cell it cannot keep).

Every column of the plan is an engine version with its options over its bundles, with a results file of its own,
and the xdist workers are started once for all of them. A test id is `<column label>|<bundle>` (`<bundle>` in a run
of one column), for people; the controller finds a test's column and bundle in the table the plan gives
(engines.plan.cell_refs), and a test that is in no column of the plan stops the run.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, TextIO, Tuple

import pytest

from cases import get_case
from cases.verdict import rejudge
from core.cell import SOURCES, Cell
from core.engines import ENGINES, spec
from core.judge import Judged, Stored, judge
from core.portable import portable_command
from core.threads import start_quiet
from core.words import TIMED_OUT, timed_out
from engines.base import EngineInfo
from engines.environment import identity, installation
from engines.plan import PROGRESS_PREFIX, CellRef, Column, cell_refs, progress_path, read_plan, summary_path
from engines.results import (
    NotAResultsFile,
    ResultsBusy,
    ResultsUnwritable,
    ResultsWriter,
    default_path,
    info_key,
    stored_cells,
)
from engines.tensorrt import adopt_probe_answers, lifeline, probe_answers

EXIT_UNWRITABLE = int(pytest.ExitCode.INTERNAL_ERROR)  # a results file the disk refused: a broken run, not judged
CELL_KEY = "qdq_cell"
REUSED_KEY = "qdq_reused"
# A cell test that raised without handing back a cell: {"kind": "timeout" | "harness", "error", "traceback"}, set where
# the exception is (the worker), so that the controller never reads the failure back out of a report's text.
FAILURE_KEY = "qdq_failure"
HEARTBEAT_S = 15.0
HEARTBEAT_ENV = "QDQ_HEARTBEAT_S"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("qdq-matrix cells")
    group.addoption("--cells-plan", default=None, metavar="PLAN.json",
                    help="the columns to run, as `python -m engines.run` writes them (engines.plan)")
    group.addoption("--results-source", default="local", choices=SOURCES,
                    help="what the cells say they are; a claim only: a cell is observed where "
                         "reports/observed/MANIFEST.json lists its file with its digest (nox -s observe)")
    group.addoption("--bundles", default=None, help="bundle folder (default $QDQ_BUNDLES or .bundles)")
    group.addoption("--fresh", action="store_true", help="run every cell again, even those the results file holds")
    group.addoption("--results-wait", type=float, default=0.0,
                    help="seconds to wait for another run that holds the results file (default: stop at once)")
    group.addoption("--heartbeat", type=_seconds, default=None, metavar="SECONDS",
                    help=f"a line per running cell every SECONDS (default {HEARTBEAT_S:g}, or ${HEARTBEAT_ENV}; "
                         "0: off)")


@dataclass(frozen=True)
class ColumnRun:
    """A column as this run probed it: its engine, where and how its cells are recorded, what it may reuse."""

    column: Column
    info: EngineInfo
    run: Dict[str, str]
    reuse: Dict[str, Any]  # {"path", "upto"} of its results file, or {} with --fresh

    def to_dict(self) -> Dict[str, Any]:
        return {"column": self.column.to_dict(), "info": dict(self.info.__dict__), "run": dict(self.run),
                "reuse": dict(self.reuse)}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ColumnRun":
        return cls(Column.from_dict(data["column"]), EngineInfo(**data["info"]), data["run"], data["reuse"])


class UnknownCell(KeyError):
    """A test that is no cell of this run's plan: the run stops rather than guess its column."""


def test_id(nodeid: str) -> str:
    """The id pytest gave a cell test's parameter, as its node id ends: "engines/runner.py::test_cell[<id>]"."""
    _, bracket, inner = nodeid.partition("[")
    return inner[:-1] if bracket and inner.endswith("]") else nodeid


def cell_of(config: pytest.Config, nodeid: str) -> CellRef:
    """The column (its index in the plan) and bundle of a cell test, from the plan's table; UnknownCell for a test
    that is not in it."""
    ref = config._qdq_cells.get(test_id(nodeid))
    if ref is None:
        raise UnknownCell(f"{nodeid}: not a cell of this run's plan (its columns: "
                          f"{', '.join(r.column.label or r.column.engine for r in config._qdq_columns)})")
    return ref


def _seconds(text: str) -> float:
    """A finite number of seconds, 0 or more."""
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(text)
    return value


def heartbeat_interval(config: pytest.Config) -> float:
    """--heartbeat, else $QDQ_HEARTBEAT_S, else 15 s; a bad environment value is a usage error."""
    given = config.getoption("--heartbeat")
    if given is not None:
        return given
    try:
        return _seconds(os.environ.get(HEARTBEAT_ENV) or str(HEARTBEAT_S))
    except ValueError:
        raise pytest.UsageError(f"${HEARTBEAT_ENV}={os.environ[HEARTBEAT_ENV]!r}: give seconds, 0 or more") from None


def running_cells(config: pytest.Config) -> bool:
    """Whether this run runs cells: a plan is named."""
    return bool(config.getoption("--cells-plan"))


def _trt_setting(bundle_id: str, name: str) -> bool:
    """Whether a bundle's case.json sets one of its TensorRT settings (trt.plugins: its model needs a plugin;
    trt.per_target: it is built once per TensorRT-RTX target)."""
    from generators.bundle import bundles_root

    try:
        meta = json.loads((bundles_root() / bundle_id / "case.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool((meta.get("trt") or {}).get(name))


def _needs_plugin(bundle_id: str) -> bool:
    return _trt_setting(bundle_id, "plugins")


def _per_target(bundle_id: str) -> bool:
    return _trt_setting(bundle_id, "per_target")


def _one_node(bundle_id: str) -> bool:
    """Whether a bundle's case makes one-node models (Case.one_node), which run in batches."""
    try:
        return get_case(bundle_id.split("/", 1)[0]).one_node
    except KeyError:  # no case of the catalogue: a bundle of its own test
        return False


def _catalogue(bundle_id: str) -> bool:
    """Whether a bundle is a reproducer of the catalogue (not a user's model, nor a bundle of a test of its own):
    such bundles join batches on a quick column (engines.plan.Column.quick)."""
    try:
        return not get_case(bundle_id.split("/", 1)[0]).external
    except KeyError:
        return False


def plan_cells(columns: List[Column]) -> Dict[str, CellRef]:
    """The cell tests of a plan's columns (engines.plan.cell_refs over the bundles present); a usage error where
    there is no bundle at all, or where two columns would give one test id."""
    from generators.bundle import bundle_ids, bundles_root

    present = bundle_ids()
    if not present:
        raise pytest.UsageError(f"no bundles under {bundles_root()}: run `python -m generators write` first")
    try:
        return cell_refs(columns, present, _needs_plugin, _per_target, _one_node, _catalogue)
    except ValueError as e:
        raise pytest.UsageError(f"--cells-plan: {e}") from None


def pytest_configure(config: pytest.Config) -> None:
    if not running_cells(config):
        return
    lifeline.few_collections()
    if config.getoption("--bundles"):
        os.environ["QDQ_BUNDLES"] = str(Path(config.getoption("--bundles")).resolve())
    lifeline.keep()  # a worker dies with the controller, the controller with the engines.run that started it
    if hasattr(config, "workerinput"):
        config._qdq_columns = [ColumnRun.from_dict(c) for c in config.workerinput["qdq_columns"]]
        config._qdq_cells = {name: CellRef(column, bundle, tuple(batch))
                             for name, column, bundle, batch in config.workerinput["qdq_cells"]}
        adopt_probe_answers(config.workerinput.get("qdq_probes", []))
        return
    os.environ[lifeline.PARENT_ENV] = str(os.getpid())  # what the xdist workers started from here are told
    try:
        columns = read_plan(Path(config.getoption("--cells-plan")))
    except ValueError as e:
        raise pytest.UsageError(f"--cells-plan {e}") from None
    config._qdq_cells = plan_cells(columns)
    writers: List[ResultsWriter] = []
    runs: List[ColumnRun] = []
    try:
        for column in columns:
            run, writer = _open_column(config, column)
            runs.append(run)
            writers.append(writer)
    except BaseException:
        for w in writers:
            w.close()
        raise
    config._qdq_columns = runs
    config._qdq_writers = writers
    config._qdq_stopped = ""  # why the run stopped early (a results file the disk refused), "" while it goes on
    config._qdq_alone = [[] for _ in runs]  # per column, the bundles of batches that died: engines.run runs each alone
    interval = heartbeat_interval(config)
    labels = [engine_label(r.info) for r in runs]

    def cell_words(nodeid: str) -> str:  # "<bundle> on <engine version>", of a cell the logstart hook found
        ref = cell_of(config, nodeid)
        return f"{batch_words(ref)} on {labels[ref.column]}"

    config._qdq_heartbeat = Heartbeat(cell_words, interval) if interval > 0 else None
    config.pluginmanager.register(_ControllerHooks(config), "qdq-controller")


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """A plan whose columns select no bundle gives pytest's empty-parameter placeholder: no cell, so it goes."""
    if not running_cells(config):
        return
    empty = [i for i in items if not isinstance(getattr(i, "callspec", None) and i.callspec.params.get("cell"),
                                                 CellRef)]
    if empty:
        items[:] = [i for i in items if i not in empty]
        config.hook.pytest_deselected(items=empty)


def _open_column(config: pytest.Config, column: Column) -> Tuple[ColumnRun, ResultsWriter]:
    """Probe one column's engine, open its results file (locked) and say what it may reuse."""
    engine = make_engine_for(column)
    try:
        info = engine.probe()
    finally:
        getattr(engine, "close", lambda: None)()
    if info.available and info.name in ENGINES:  # which install ran: a cell fails as "environment broken" if it changes
        installed = identity(info.origin) if info.origin else installation(spec(info.name).module)
        info = replace(info, installation=installed)
    run = run_record(config, info, column)
    try:
        writer = ResultsWriter(Path(column.results) if column.results else default_path(info), info, run,
                               wait=config.getoption("--results-wait"))
    except (ResultsBusy, NotAResultsFile, ResultsUnwritable) as e:
        raise pytest.UsageError(str(e)) from None
    writer.reused = column.reused  # the stored cells engines.run found standing, which this run is not given
    if writer.notice:
        sys.stderr.write(f"qdq-matrix: {writer.notice}\n")
    reuse = {} if config.getoption("--fresh") else {"path": str(writer.path), "upto": writer.resume_offset}
    return ColumnRun(column, info, run, reuse), writer


def batch_words(ref: CellRef) -> str:
    """A test as a heartbeat line names it: its bundle, or "<n> bundles (<first> to <last>)"."""
    if not ref.batch:
        return ref.bundle
    return f"{len(ref.batch)} bundles ({ref.batch[0]} to {ref.batch[-1]})"


def engine_label(info: EngineInfo) -> str:
    """"TensorRT-RTX 1.7.1.116 (target=SM86)": the engine version a heartbeat line names."""
    from core.engines import variant_label

    title = ENGINES[info.name].title if info.name in ENGINES else info.name
    return f"{title} {info.version}" + (f" ({variant_label(info.variant)})" if info.variant else "")


class Heartbeat:
    """Every `interval` seconds, a line per cell still running (bundle, engine version, elapsed time), written by
    a thread of the controller to its own copy of stderr, so that pytest's output capture never holds it back.
    `cell_words`: a function of the cell's node id that names its bundle and the engine version it runs on."""

    def __init__(self, cell_words: Callable[[str], str], interval: float, out: Optional[TextIO] = None) -> None:
        self.cell_words = cell_words
        self.interval = interval
        self._out = out or os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
        self._running: Dict[str, float] = {}
        self._told: set = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = start_quiet(threading.Thread(target=self._loop, name="qdq-heartbeat", daemon=True))

    def started(self, nodeid: str) -> None:
        with self._lock:
            self._running.setdefault(nodeid, time.monotonic())

    def finished(self, nodeid: str, status: str = "", why: str = "") -> None:
        """A cell ended ("<status> after N s", and why where said): said only where a heartbeat line told the user it
        was running."""
        with self._lock:
            start = self._running.pop(nodeid, None)
            told = nodeid in self._told
            self._told.discard(nodeid)
        if start is not None and told:
            self._write(f"{self.cell_words(nodeid)}: {status or 'done'} after "
                        f"{time.monotonic() - start:.0f} s" + (f": {why}" if why else ""))

    def beat(self) -> None:
        """One line per running cell."""
        now = time.monotonic()
        with self._lock:
            running = sorted(self._running.items(), key=lambda kv: kv[1])
            self._told.update(n for n, _ in running)
        for nodeid, start in running:
            self._write(f"{self.cell_words(nodeid)}: running for {now - start:.0f} s")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            self._out.close()
        except OSError:
            pass

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def _write(self, text: str) -> None:
        try:
            self._out.write(PROGRESS_PREFIX + text + "\n")
            self._out.flush()
        except (OSError, ValueError):  # the terminal went away: progress is not worth a failed run
            pass


def make_engine_for(column: Column):
    """The adapter of one column, with its options."""
    from engines import get_engine

    name = column.engine
    if ":" in name:  # a custom adapter, module:Class
        import importlib

        module, cls = name.split(":")
        return getattr(importlib.import_module(module), cls)()
    if name not in ENGINES:
        raise pytest.UsageError(f"--engine {name}: unknown engine; known engines: {', '.join(ENGINES)}")
    family = {}
    if spec(name).family == "tensorrt":
        family = {"python": column.python or None, "version": column.version or None, "isolate": column.isolate}
    return get_engine(name, **column.options, **family)


def run_record(config: pytest.Config, info: EngineInfo, column: Column) -> Dict[str, Any]:
    """Where and when this session ran, and how to run it again.

    A stand-in engine (a test double that says so in its probe) gets the source "stand-in", which
    no report accepts, whatever --results-source says.
    """
    # no path of this machine in a record
    argv = column.command or portable_command(["pytest", *config.invocation_params.args])
    source = config.getoption("--results-source")
    if info.versions.get("stand_in"):
        source = "stand-in"
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": argv,
        "source": source,
        "python": platform.python_version(),
        "cell_options": dict(sorted(column.options.items())),
        # cells at a time (pytest-xdist workers): TensorRT builds on one GPU contend, so it is measured and recorded
        "workers": str(getattr(config.option, "numprocesses", None) or 1),
    }


def stored_cell(config: pytest.Config, column: int, bundle_id: str, digest: str) -> Optional[Cell]:
    """The stored cell of this bundle under its column's key, if any (each file is read once per process)."""
    run: ColumnRun = config._qdq_columns[column]
    if not run.reuse:
        return None
    stored = getattr(config, "_qdq_stored", None)
    if stored is None:
        stored = config._qdq_stored = {}
    path = run.reuse["path"]
    if path not in stored:
        stored[path] = stored_cells(Path(path), int(run.reuse["upto"]))
    return stored[path].get(info_key(run.info, bundle_id, digest, run.run.get("cell_options") or {}))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A cell test that raised without a cell: say whose failure it is, a timeout (the engine ran past --timeout) or
    the harness's own exception, with its traceback."""
    report: pytest.TestReport = yield
    if call.when != "call" or call.excinfo is None or not running_cells(item.config):
        return report
    if any(k == CELL_KEY for k, _ in report.user_properties) or call.excinfo.errisinstance(pytest.skip.Exception):
        return report  # the cell is handed back (its verdict failed the test), or the test skipped itself
    report.user_properties.append((FAILURE_KEY, failure_record(call.excinfo)))
    return report


def failure_record(excinfo: pytest.ExceptionInfo) -> Dict[str, str]:
    """{"kind", "error", "traceback"} of a cell test's exception: "timeout" where pytest-timeout stopped it (its
    signal method fails the test with "Timeout >N s"; its thread method kills the worker, a crash), else "harness"."""
    import traceback

    error = f"{excinfo.typename}: {excinfo.value}".strip()
    timeout = excinfo.errisinstance(pytest.fail.Exception) and str(excinfo.value).startswith("Timeout")
    text = "".join(traceback.format_exception(excinfo.type, excinfo.value, excinfo.tb))
    return {"kind": "timeout" if timeout else "harness", "error": str(excinfo.value) if timeout else error,
            "traceback": text[-TRACEBACK_LIMIT:]}


TRACEBACK_LIMIT = 8000  # characters of a harness error's traceback kept in its cell's log


class _ControllerHooks:
    """Hooks that only the controller (or a run without xdist) installs."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._started: Dict[str, float] = {}  # when each cell's test started, for a worker the timeout killed
        self._progress = _open_progress(config)

    def _recorded(self, ref: CellRef, bundle: str) -> None:
        """A cell of this run's own process is in its results file (or stood there): said at once, so that where the
        process dies, engines.run runs only the rest again (engines.plan.read_progress)."""
        if self._progress is not None:
            self._progress.write(json.dumps({"column": ref.column, "bundle": bundle}) + "\n")
            self._progress.flush()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["qdq_columns"] = [r.to_dict() for r in node.config._qdq_columns]
        node.workerinput["qdq_cells"] = [[name, ref.column, ref.bundle, list(ref.batch)]
                                         for name, ref in node.config._qdq_cells.items()]
        node.workerinput["qdq_probes"] = probe_answers()  # the columns' probes, asked once, here

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        cell_of(self._config, nodeid)  # a test that is no cell of the plan stops the run here
        self._started[nodeid] = time.monotonic()
        if self._config._qdq_heartbeat is not None:
            self._config._qdq_heartbeat.started(nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        config = self._config
        ref = cell_of(config, report.nodeid)
        if ref.batch:
            self._batch_report(ref, report)
            return
        writer: ResultsWriter = config._qdq_writers[ref.column]
        props = dict(report.user_properties)
        beat = config._qdq_heartbeat
        if report.failed and report.when in ("call", "???") and CELL_KEY not in props:
            run: ColumnRun = config._qdq_columns[ref.column]
            elapsed = time.monotonic() - self._started.get(report.nodeid, time.monotonic())
            cell = lost_cell(report, ref.bundle, props.get(FAILURE_KEY), run.info, run.run, cell_timeout(config),
                             elapsed)
            if beat is not None:  # "crashed after 601 s: timed out after 600 s (the cell timeout)"
                beat.finished(report.nodeid, cell.status, cell.reason if cell.explanation == TIMED_OUT else "")
            self._write(writer, cell)
            self._recorded(ref, ref.bundle)
            return
        record = handed_cell(props[CELL_KEY]) if CELL_KEY in props else None  # decoded once, for both uses below
        if beat is not None and (report.when in ("teardown", "???") or record is not None):
            beat.finished(report.nodeid, record.get("status", "") if record is not None else "")
        if record is not None and report.when == "call":
            if props.get(REUSED_KEY):  # already in the file
                writer.reused += 1
            else:
                self._write(writer, Cell.from_dict(record))
            self._recorded(ref, ref.bundle)

    def _batch_report(self, ref: CellRef, report: pytest.TestReport) -> None:
        """A batch's cells, each recorded as its own test's would be; the bundles it ended without (its process died,
        it ran past the timeout, the harness raised) are left for engines.run to run again one per test, so that what
        broke costs the one cell it breaks alone, exactly as without batches."""
        beat = self._config._qdq_heartbeat
        if report.when not in ("call", "???"):
            return
        writer: ResultsWriter = self._config._qdq_writers[ref.column]
        handed = set()
        for key, value in report.user_properties:
            if key == CELL_KEY:
                record = handed_cell(value)
                handed.add(record["bundle"])
                self._write(writer, Cell.from_dict(record))
                self._recorded(ref, record["bundle"])
            elif key == REUSED_KEY:  # already in the file: the bundle's id
                handed.add(value)
                writer.reused += 1
                self._recorded(ref, value)
        rest = [b for b in ref.batch if b not in handed]
        self._config._qdq_alone[ref.column].extend(rest)
        if beat is not None:
            beat.finished(report.nodeid, f"{len(handed)} cells" if not rest else
                          f"{len(handed)} cells, {len(rest)} left to run alone")

    def _write(self, writer: ResultsWriter, cell: Cell) -> None:
        """Record a cell; where the disk refuses it, stop the run with one line (no cell runs that cannot be kept)."""
        if self._config._qdq_stopped:
            return
        try:
            writer.write(cell)
        except ResultsUnwritable as e:
            self._config._qdq_stopped = str(e)
            pytest.exit(f"qdq-matrix: {e}: the run stopped; no later cell is recorded", returncode=EXIT_UNWRITABLE)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        writers: List[ResultsWriter] = session.config._qdq_writers
        for writer in writers:
            writer.close()
        if self._progress is not None:
            self._progress.close()
        if session.config._qdq_heartbeat is not None:
            session.config._qdq_heartbeat.close()
        lines: List[str] = []
        ran = reused = 0
        for writer, alone in zip(writers, session.config._qdq_alone):
            done = sum(writer.counts.values())
            counts = ", ".join(f"{n} {s}" for s, n in sorted(writer.counts.items())) or "none"
            left = f"; {len(alone)} of batches that ended early, to run one per test" if alone else ""
            lines += [writer.notice, f"cells: {writer.reused} reused from earlier runs, run now: {counts} -> "
                                     f"{writer.path} ({done + writer.reused} cells in all{left})"]
            ran, reused = ran + done, reused + writer.reused
        _write_summary(session.config, writers)
        errors = len(_reporter(session).stats.get("error", [])) if _reporter(session) else 0
        if session.config._qdq_stopped:
            session.exitstatus = EXIT_UNWRITABLE
            lines.append(f"qdq-matrix: {session.config._qdq_stopped}: the run stopped after {ran} cells "
                         f"(exit {EXIT_UNWRITABLE})")
        elif errors:  # collection or set-up broke: failing cells are exit 1, a broken run must not look like one
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            lines.append(f"qdq-matrix: {errors} errors outside the cells (collection or set-up): the run is broken, "
                         f"not judged (exit {int(session.exitstatus)})")
        elif ran + reused + sum(map(len, session.config._qdq_alone)) == 0:
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
            lines.append(f"qdq-matrix: no cell ran (exit {int(session.exitstatus)})")
        session.config._qdq_summary = "\n".join(filter(None, lines))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = getattr(terminalreporter.config, "_qdq_summary", "")
        if summary:
            terminalreporter.write_line(summary)


def handed_cell(value: str) -> Dict[str, Any]:
    """The cell a test handed back in its user_properties, from its JSON text (engines.runner: xdist passes one string
    in one piece, where a nested object costs its Python serializer a call per field)."""
    return json.loads(value)


def _open_progress(config: pytest.Config) -> Optional[TextIO]:
    """The progress file of a plan whose cells run in this process (no xdist workers: `-n 0`), else None: a worker
    that dies under xdist costs its own cell, and the controller goes on to say what it recorded."""
    plan = config.getoption("--cells-plan")
    if not plan or config.getoption("numprocesses", None):
        return None
    try:
        return open(progress_path(Path(plan)), "w", encoding="utf-8")
    except OSError:  # engines.run then reruns every cell of a run that died, as it could not know better
        return None


def _reporter(session: pytest.Session) -> Any:
    return session.config.pluginmanager.get_plugin("terminalreporter")


def _write_summary(config: pytest.Config, writers: List[ResultsWriter]) -> None:
    """What each column recorded, as data, beside the plan engines.run wrote (engines.plan.summary_path): its counts
    are then what was written, whatever pytest's exit status."""
    plan = config.getoption("--cells-plan")
    if not plan:
        return
    columns = [{"results": str(w.path), "reused": w.reused, "written": dict(w.counts), "alone": list(alone)}
               for w, alone in zip(writers, config._qdq_alone)]
    try:
        summary_path(Path(plan)).write_text(json.dumps({"columns": columns, "stopped": config._qdq_stopped}),
                                            encoding="utf-8")
    except OSError:  # engines.run then says it does not know what ran
        pass


def cell_timeout(config: pytest.Config) -> float:
    """The run's cell timeout in seconds (pytest-timeout's --timeout, or its ini value), 0 for none."""
    try:
        given = config.getoption("timeout", None)
        return float(given if given is not None else config.getini("timeout") or 0)
    except (ValueError, TypeError):  # no pytest-timeout, or a value it would refuse
        return 0.0


def lost_cell(report: pytest.TestReport, bundle_id: str, failure: Optional[Dict[str, str]], info: EngineInfo,
              run: Dict[str, Any], limit: float = 0.0, elapsed: float = 0.0) -> Cell:
    """The cell of a test that ended without handing back its cell, by who failed: the worker's process died (xdist's
    report of a crashed worker, when "???") or the cell ran past --timeout, the engine's crash, its reason "timed out
    after N s (the cell timeout)" for the latter (a worker that died at the limit included); else the harness's own
    exception (the failure the worker recorded; one it could not record is the harness's too)."""
    said = failure or {}
    if said.get("kind") == "timeout" or (report.when == "???" and limit > 0 and elapsed >= limit):
        cell = crashed_cell(report, bundle_id, info, run, timed_out(limit))
        return replace(cell, error=cell.reason, explanation=TIMED_OUT)
    if report.when == "???":
        return crashed_cell(report, bundle_id, info, run, said.get("error", ""))
    return harness_error_cell(report, bundle_id, info, run, said.get("error", ""), said.get("traceback", ""))


def crashed_cell(report: pytest.TestReport, bundle_id: str, info: EngineInfo, run: Dict[str, Any],
                 why: str = "") -> Cell:
    """A cell for a test whose worker died without handing back its cell (segfault), or that ran past --timeout."""
    reason = str(report.longrepr).strip().splitlines()
    first = why or next((line for line in reason if "crashed" in line), reason[0] if reason else "crashed")
    said = judge(Stored("crashed", reason=first.strip()[:500]), {})  # the catalogue's expectation: rejudge, below
    cell = replace(_lost(bundle_id, info, run, said), log=str(report.longrepr)[-4000:])
    try:
        return rejudge(cell, get_case(cell.case))
    except KeyError:  # not a case of the catalogue: no expectation to judge against
        return cell


def harness_error_cell(report: pytest.TestReport, bundle_id: str, info: EngineInfo, run: Dict[str, Any], error: str,
                       trace: str) -> Cell:
    """A cell for a test that raised in the suite's own code: status harness_error, the exception and its traceback;
    nothing said about the engine."""
    text = trace or str(report.longrepr)
    lines = text.strip().splitlines()
    said = judge(Stored("harness_error", reason=(error or (lines[-1] if lines else "the harness raised"))[:500]), {})
    return replace(_lost(bundle_id, info, run, said), log=text[-TRACEBACK_LIMIT:])


def _lost(bundle_id: str, info: EngineInfo, run: Dict[str, Any], said: Judged) -> Cell:
    """What a cell that never came back is known by: its bundle, the bundle's case.json and the column's engine, and
    how core.judge judged what is known of it."""
    meta = _bundle_meta(bundle_id)
    return Cell(
        bundle=bundle_id, case=bundle_id.split("/", 1)[0], params=meta.get("params", {}), digest=meta.get("digest", ""),
        engine=info.name, engine_version=info.version, hardware=info.hardware, status=said.status, verdict=said.verdict,
        reason=said.reason, explanation=said.explanation, hardware_detail=dict(info.hardware_detail),
        versions=dict(info.versions), variant=dict(info.variant),
        run=dict(run),
    )


def _bundle_meta(bundle_id: str) -> Dict[str, Any]:
    from generators.bundle import bundles_root

    path = bundles_root() / bundle_id / "case.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
