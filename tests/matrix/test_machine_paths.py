"""No path of a machine in anything published: committed observations, recorded commands, reports."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
from pathlib import Path
from typing import List

import pytest

from core.portable import MACHINE_PATH, portable_command, portable_path
from matrix.__main__ import main
from tests.matrix.conftest import cells_from_report

REPO = Path(__file__).resolve().parents[2]
OBSERVED = REPO / "reports" / "observed"


def machine_paths(text: str) -> List[str]:
    """Every machine path in a text: what a published file must not hold."""
    return MACHINE_PATH.findall(text)


def text_of(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", errors="replace")


def test_no_committed_observation_holds_a_machine_path():
    found = {str(p.relative_to(OBSERVED)): machine_paths(text_of(p))[:3]
             for p in sorted(OBSERVED.rglob("*")) if p.is_file()}
    assert len(found) >= 50  # every committed file was read, not none
    assert {k: v for k, v in found.items() if v} == {}


def test_the_migration_has_nothing_left_to_change():
    spec = importlib.util.spec_from_file_location("migrate", REPO / "tools" / "migrate-observed.py")
    migrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migrate)
    changes = {str(p.relative_to(OBSERVED)): migrate.migrate_file(p)[1]
               for p in sorted(OBSERVED.rglob("*")) if p.is_file() and p.name != "MANIFEST.json"}
    assert len(changes) >= 50  # every committed file was looked at, not none
    assert {k: n for k, n in changes.items() if n} == {}


def test_a_recorded_command_is_relative_to_the_repository():
    argv = ["pytest", "tests/cells", f"--bundles={REPO / '.bundles-user'}", "--results",
            str(REPO / "results" / "check" / "x.jsonl"), "--trt-python=/root/qdq-gpu/payload/bin/python-trt-8.6.0"]
    assert portable_command(argv) == ("pytest tests/cells --bundles=.bundles-user --results results/check/x.jsonl "
                                      "--trt-python=…/bin/python-trt-8.6.0")
    assert portable_path("/home/someone/models/net.onnx") == "…/models/net.onnx"
    assert machine_paths("evidence [ONNX Layer: /layer1/conv/Conv] …/bin/python https://docs.nvidia.com/a/b") == []


@pytest.mark.slow
def test_a_fresh_report_holds_no_machine_path(make_cell, write_results, tmp_path):
    """Over the committed observations and a local file whose cells ran with absolute paths in their command."""
    here = make_cell(run={"source": "local", "date": "2026-11-24T00:00:00Z",
                          "command": f"pytest --bundles {tmp_path}/bundles --results {REPO}/results/x.jsonl"},
                     status="fail", verdict="new failure", error=f"Load model from {tmp_path}/b/q/x/model.onnx failed",
                     log=f"Traceback: {REPO}/engines/cells.py line 1; node /layer1/conv/Conv")
    local = write_results("local.jsonl", [here])
    out = tmp_path / "reports"
    main(["report", "--results", str(local), "--results", str(OBSERVED), "--out", str(out),
          "--bundles", str(tmp_path / "none")])
    published = [out / n for n in ("matrix.json", "matrix.md", "matrix.html", "plots.html", "junit.xml")]
    published += sorted((out / "cells").iterdir()) + sorted((out / "diff").iterdir())
    for path in published:
        text = path.read_text(encoding="utf-8")
        assert str(tmp_path) not in text and str(REPO) not in text and os.path.expanduser("~") + "/" not in text
        assert [p for p in machine_paths(text) if not p.startswith(str(tmp_path))] == [], path.name
    data = json.loads((out / "matrix.json").read_text(encoding="utf-8"))
    [mine] = [c for c in cells_from_report(data, out) if c.error.startswith("Load model")]
    assert mine.error == "Load model from …/x/model.onnx failed"
    assert mine.log == "Traceback: engines/cells.py line 1; node /layer1/conv/Conv"  # an ONNX node name is kept


def test_an_engine_error_naming_the_bundle_is_recorded_without_its_folder(tmp_path):
    from cases import get_case
    from engines.base import EngineInfo, Observation
    from engines.cells import judge_observation
    from generators.bundle import load_bundle
    from generators.write import write_bundle

    case = get_case("q_output_type")
    bundle = load_bundle(write_bundle(case, {"variant": "q_dq_chain", "activation": "int8", "plugin": "none"},
                                      tmp_path).path)
    obs = Observation(stage="", error=f"Load model from {bundle.model_path} failed: IR 10", log=f"{bundle.path}/x")
    info = EngineInfo("onnxruntime", "1.16.3", "cpu: x (avx2)", True)
    cell = judge_observation(case, bundle, info, obs, {"date": "2026-11-24T00:00:00Z"})
    assert str(tmp_path) not in cell.error + cell.log
    assert cell.error == "Load model from …/variant=q_dq_chain+activation=int8+plugin=none/model.onnx failed: IR 10"


def test_the_repository_folder_is_dropped_wherever_it_was_cloned():
    """A clone outside the machine roots (CI clones into /check/...) is still no path to publish."""
    from core.portable import scrub
    assert scrub(f"Traceback: {REPO}/engines/cells.py line 1") == "Traceback: engines/cells.py line 1"
    assert scrub("Traceback: /elsewhere/qdq/engines/cells.py", repo=Path("/elsewhere/qdq")) == \
        "Traceback: engines/cells.py"
