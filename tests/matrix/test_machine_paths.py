"""No path of a machine in anything published (issue 26.7): committed observations, recorded commands, reports."""

from __future__ import annotations

import gzip
import importlib.util
import os
from pathlib import Path

from cases.portable import machine_paths, portable_command, portable_path
from matrix.__main__ import main

REPO = Path(__file__).resolve().parents[2]
OBSERVED = REPO / "reports" / "observed"


def text_of(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", errors="replace")


def test_no_committed_observation_holds_a_machine_path():
    found = {str(p.relative_to(OBSERVED)): machine_paths(text_of(p))[:3]
             for p in sorted(OBSERVED.rglob("*")) if p.is_file()}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_migration_has_nothing_left_to_change():
    spec = importlib.util.spec_from_file_location("migrate", REPO / "tools" / "migrate-observed.py")
    migrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migrate)
    changes = {str(p.relative_to(OBSERVED)): migrate.migrate_file(p)[1]
               for p in sorted(OBSERVED.rglob("*")) if p.is_file() and p.name != "MANIFEST.json"}
    assert {k: n for k, n in changes.items() if n} == {}


def test_a_recorded_command_is_relative_to_the_repository():
    argv = ["pytest", "tests/cells", f"--bundles={REPO / '.bundles-user'}", "--results",
            str(REPO / "results" / "check" / "x.jsonl"), "--trt-python=/root/qdq-gpu/payload/bin/python-trt-8.6.0"]
    assert portable_command(argv) == ("pytest tests/cells --bundles=.bundles-user --results results/check/x.jsonl "
                                      "--trt-python=…/bin/python-trt-8.6.0")
    assert portable_path("/home/someone/models/net.onnx") == "…/models/net.onnx"
    assert machine_paths("evidence [ONNX Layer: /layer1/conv/Conv] …/bin/python https://docs.nvidia.com/a/b") == []


def test_a_fresh_report_holds_no_machine_path(make_cell, write_results, tmp_path):
    """Over the committed observations and a local file whose cells ran with absolute paths in their command."""
    here = make_cell(run={"source": "local", "date": "2026-11-24T00:00:00Z",
                          "command": f"pytest --bundles {tmp_path}/bundles --results {REPO}/results/x.jsonl"})
    local = write_results("local.jsonl", [here])
    out = tmp_path / "reports"
    main(["report", "--results", str(local), "--results", str(OBSERVED), "--out", str(out),
          "--bundles", str(tmp_path / "none")])
    for name in ("matrix.json", "matrix.md", "matrix.html", "junit.xml"):
        text = (out / name).read_text(encoding="utf-8")
        assert str(tmp_path) not in text and str(REPO) not in text and os.path.expanduser("~") + "/" not in text
        assert [p for p in machine_paths(text) if not p.startswith(str(tmp_path))] == [], name
