"""The cell plugin: one JSONL line per cell, written by the controller, and crashes cost one cell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.engines.fakes import write_fake_bundle

REPO = Path(__file__).resolve().parents[2]


def _fake_bundle(root: Path, name: str) -> None:
    """A hand-made bundle of the grouped_conv case; only the plumbing reads it."""
    write_fake_bundle(root, name)


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    bundles, results = tmp_path / "bundles", tmp_path / "out.jsonl"
    for name in ("a-ok", "b-crash", "c-hang", "d-ok"):
        _fake_bundle(bundles, name)
    cmd = [
        sys.executable, "-m", "pytest", "tests/cells", "-p", "no:cacheprovider", "-q",
        "--engine", "tests.engines.fakes:PlumbingEngine", "--bundles", str(bundles), "--results", str(results), *args,
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    return proc, lines


def test_crash_and_hang_cost_one_cell_each(tmp_path: Path) -> None:
    proc, lines = _run(tmp_path, "-n", "2", "--timeout", "5")
    header, cells = lines[0], {c["bundle"].split("/")[1]: c for c in lines[1:]}
    assert header["kind"] == "session" and header["engine"] == "fake", proc.stdout
    assert set(cells) == {"a-ok", "b-crash", "c-hang", "d-ok"}, proc.stdout + proc.stderr
    assert cells["a-ok"]["status"] == cells["d-ok"]["status"] == "pass"
    assert cells["b-crash"]["status"] == "crashed" and "crashed" in cells["b-crash"]["reason"]
    assert cells["c-hang"]["status"] == "crashed" and "Timeout" in cells["c-hang"]["reason"]
    assert cells["b-crash"]["digest"] == json.loads((tmp_path / "bundles/grouped_conv/b-crash/case.json").read_text())["digest"]
    assert proc.returncode == 1  # the crashed cells fail their tests; the others still ran


def test_results_are_flushed_cell_by_cell(tmp_path: Path) -> None:
    """Without xdist a segfault ends the run, but every cell before it is already on disk."""
    proc, lines = _run(tmp_path, "-p", "no:xdist")
    bundles = [c["bundle"] for c in lines[1:]]
    assert bundles == ["grouped_conv/a-ok"], proc.stdout + proc.stderr
    assert proc.returncode != 0
