"""tools/matrix-benchmark.py: the machine's own speed beside each timed run, and the table that shows it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "matrix-benchmark.py"


def tool():
    spec = importlib.util.spec_from_file_location("matrix_benchmark", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_probe_times_its_fixed_work_on_every_core():
    seconds = tool().machine_probe()
    assert isinstance(seconds, float) and 0.0 < seconds < 120.0


def test_the_table_shows_each_runs_probe_before_and_after():
    mb = tool()
    run = mb.Run("fresh", 52.1, 300.0, 0, 1.1, 80.0, 14.0, 3.2, {"matrix": 47.7}, [], 1.04, 1.31)
    text = mb.table([run], "abc1234")
    header, _, row = text.splitlines()[2:5]
    assert header.endswith("| machine probe s before, after |")
    assert row.endswith("| 1.1, 3.2 | 1.04, 1.31 |"), row
