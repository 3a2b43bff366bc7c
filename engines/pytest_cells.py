"""pytest plugin: one test per cell, one JSONL results file per session, written by the controller only.

    pytest tests/cells --engine onnxruntime -n 2
    pytest tests/cells --engine tensorrt --trt-python bin/python-trt-8.6.0 --results out.jsonl

A worker builds the cell and hands it to the controller in the report's user_properties; the
controller appends it to the results file and flushes, so a crash loses nothing already run. A
test whose worker died (segfault, hang past --timeout) has no cell: the controller records it as
crashed and the run goes on (pytest-xdist starts a new worker).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
from pathlib import Path
from typing import Any, Dict, IO, Optional

import pytest

from cases import get_case
from cases.cell import Cell
from cases.verdict import rejudge
from engines.base import EngineInfo

CELL_KEY = "qdq_cell"
SESSION_SCHEMA = "qdq-matrix/session/1"
REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("qdq-matrix cells")
    group.addoption("--engine", help="engine to run the reproducers on: onnxruntime, openvino, tensorrt, or module:Class")
    group.addoption("--engine-version", default=None, help="version label for an engine that is not here")
    group.addoption("--trt-python", default=None, help="interpreter that already has TensorRT (existing-interpreter mode)")
    group.addoption("--trt-isolate", action="store_true", help="one TensorRT process per cell (slower; no shared state)")
    group.addoption("--ort-opt-level", default="ORT_ENABLE_ALL", help="ONNX Runtime graph optimization level name")
    group.addoption("--results", default=None, help="JSONL results file (default results/<engine>-<version>-<hardware>.jsonl)")
    group.addoption("--results-source", default="local", help="'local' for this machine's runs, 'observed' for committed data")
    group.addoption("--bundles", default=None, help="bundle folder (default $QDQ_BUNDLES or .bundles)")


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
        return
    engine = make_engine(config)
    info = engine.probe()
    config._qdq_info = info
    config._qdq_run = run_record(config)
    config._qdq_writer = ResultsWriter(results_path(config, info), info, config._qdq_run)
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
            name, python=config.getoption("--trt-python"), version=version, isolate=config.getoption("--trt-isolate")
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
    }


def results_path(config: pytest.Config, info: EngineInfo) -> Path:
    given = config.getoption("--results")
    if given:
        return Path(given)
    hw = re.sub(r"[^A-Za-z0-9.]+", "-", info.hardware).strip("-").lower() or "unknown"
    return REPO / "results" / f"{info.name}-{info.version}-{hw}.jsonl"


class ResultsWriter:
    """Appends one JSON object per line and flushes it; the controller is its only user."""

    def __init__(self, path: Path, info: EngineInfo, run: Dict[str, str]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = open(path, "w", encoding="utf-8")
        header = {
            "schema": SESSION_SCHEMA, "kind": "session", "engine": info.name, "engine_version": info.version,
            "hardware": info.hardware, "hardware_detail": info.hardware_detail, "versions": info.versions,
            "available": info.available, "reason": info.reason, **run,
        }
        self.write_line(json.dumps(header, sort_keys=True))
        self.counts: Dict[str, int] = {}

    def write_line(self, line: str) -> None:
        self._file.write(line + "\n")
        self._file.flush()

    def write(self, cell: Cell) -> None:
        self.write_line(cell.to_json())
        self.counts[cell.status] = self.counts.get(cell.status, 0) + 1

    def close(self) -> None:
        self._file.close()


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

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        config = self._config
        writer: ResultsWriter = config._qdq_writer
        props = dict(report.user_properties)
        if CELL_KEY in props and report.when == "call":
            writer.write(Cell.from_dict(json.loads(props[CELL_KEY])))
            return
        crashed = report.failed and report.when in ("call", "???")
        if crashed and CELL_KEY not in props and "[" in report.nodeid:
            writer.write(crashed_cell(report, config._qdq_info, config._qdq_run))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        writer: ResultsWriter = session.config._qdq_writer
        writer.close()
        counts = ", ".join(f"{n} {s}" for s, n in sorted(writer.counts.items())) or "no cells"
        session.config._qdq_summary = f"cells: {counts} -> {writer.path}"

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
