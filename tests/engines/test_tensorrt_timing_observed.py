"""The committed H100 sweep: cells built with the shared timing cache agree with those built without it."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

SWEEP = Path(__file__).resolve().parents[2] / "reports" / "observed" / "nvidia-h100" / "timing-cache-sweep"


def _cells(run: str) -> dict:
    with gzip.open(SWEEP / f"8.6.0-{run}.jsonl.gz", "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return {r["bundle"]: r for r in records if r.get("schema") == "qdq-matrix/cell/1"}


def _outcome(cell: dict) -> tuple:
    steps = None if cell["max_error_steps"] is None else round(cell["max_error_steps"], 6)
    precision = tuple(sorted((n, e["precision"]) for n, e in cell["precision"].items()))
    return cell["status"], cell["stage"], cell["signature"], precision, steps


def test_every_run_agrees_cell_for_cell_with_the_uncached_one():
    runs = [row[1] for row in csv.reader((SWEEP / "sweep.tsv").open(), delimiter="\t")]
    assert {"w4-off", "w4-cold", "w4-warm", "w14-off"} <= set(runs)
    base = _cells("w4-off")
    assert len(base) == 176
    for run in runs:
        other = _cells(run)
        assert other.keys() == base.keys(), run
        differ = [b for b in base if _outcome(base[b]) != _outcome(other[b])]
        assert not differ, f"{run}: {differ[:5]}"


def test_the_cells_record_whether_they_used_the_cache():
    built = [c for c in _cells("w4-warm").values() if c["stage"] in ("build", "run", "compare")]
    assert built and all(c["options"]["timing_cache"] == "shared" for c in built)
    assert all(c["options"]["timing_cache"] == "off" for c in _cells("w4-off").values() if c["stage"])
    header = json.loads(gzip.open(SWEEP / "8.6.0-w4-warm.jsonl.gz", "rt").readline())
    assert json.loads(header["cell_options"])["timing_cache"] == "on" and header["workers"] == "4"


def test_the_committed_h100_column_built_with_the_cache_agrees_with_the_uncached_run():
    column = SWEEP.parent / "trt-8.6.0.jsonl"
    cells = {r["bundle"]: r for r in map(json.loads, column.read_text(encoding="utf-8").splitlines())
             if r.get("schema") == "qdq-matrix/cell/1"}
    assert any(c["options"].get("timing_cache") == "shared" for c in cells.values())
    base = _cells("w4-off")
    differ = [b for b in base if _outcome(base[b]) != _outcome(cells[b])]
    assert not differ, differ[:5]
