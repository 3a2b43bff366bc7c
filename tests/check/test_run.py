"""check/run.py runs every engine version of a check through engines.run: one pytest pool, and a second check of
the same models starts nothing."""

from __future__ import annotations

import json

import pytest

from cases import get_case
from check.run import EngineRun, run_cells
from engines import run as runner
from generators.write import write_bundle


@pytest.fixture
def bundle(tmp_path):
    """One catalogue reproducer, written where a check would put the user's."""
    case = get_case("q_output_type")
    path = write_bundle(case, {"variant": "q_dq_chain", "activation": "int8", "plugin": "none"}, tmp_path / "b").path
    return tmp_path / "b", f"{path.parent.name}/{path.name}"


def test_a_second_check_starts_nothing_and_says_how_many_cells_it_reused(bundle, tmp_path, capsys, monkeypatch):
    root, bid = bundle
    runs = [EngineRun("onnxruntime", version=runner.installed_version("onnxruntime"))]
    [first] = run_cells(runs, root, [bid], tmp_path / "results")
    cell = [json.loads(line) for line in first.read_text().splitlines()][-1]
    assert (cell["bundle"], cell["engine"], cell["status"]) == (bid, "onnxruntime", "pass")
    capsys.readouterr()
    monkeypatch.setattr(runner, "launch", lambda *a, **k: pytest.fail("a check with every cell stored started pytest"))
    assert run_cells(runs, root, [bid], tmp_path / "results") == [first]
    said = capsys.readouterr().out
    assert "ONNX Runtime" in said and ": 1 reused" in said and "nothing to run here" in said, said
