"""The committed H100 sweep: cells built with the shared timing cache agree with those built without it."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

from core.cell import SCHEMA

SWEEP = Path(__file__).resolve().parents[2] / "reports" / "observed" / "nvidia-h100" / "timing-cache-sweep"


def _cells(run: str) -> dict:
    with gzip.open(SWEEP / f"8.6.0-{run}.jsonl.gz", "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return {r["bundle"]: r for r in records if r.get("schema") == SCHEMA}


def _outcome(cell: dict) -> tuple:
    steps = None if cell["max_error_steps"] is None else round(cell["max_error_steps"], 6)
    precision = tuple(sorted((n, e["precision"]) for n, e in cell["precision"].items()))
    return cell["status"], cell["last_stage"], cell["signature"], precision, steps


# Seed 013 (float16 scales) fails on TensorRT 8.x in every run, but where varies from run to run on one GPU:
# the parser's "Scale coefficients must all be positive" or the builder's weightsPtr.h "Assertion type() ==
# expectedDataType<T>() failed" (docs/findings.md, "Float16 scales on 8.x fail").
FAILURE_STAGE_VARIES = "fp16_scale_qdq/"


def test_every_run_agrees_cell_for_cell_with_the_uncached_one():
    runs = [row[1] for row in csv.reader((SWEEP / "sweep.tsv").open(), delimiter="\t")]
    assert {"w4-off", "w4-cold", "w4-warm", "w14-off", "w2-cold", "w8-cold", "w14-cold"} <= set(runs)
    base = _cells("w4-off")
    assert len(base) == 176
    for run in runs:
        other = _cells(run)
        assert base.keys() <= other.keys(), run
        differ = [b for b in base if _outcome(base[b]) != _outcome(other[b])]
        assert not differ, f"{run}: {differ[:5]}"


def test_the_whole_catalogue_runs_agree_with_the_committed_column_but_for_seed_013s_failure_stage():
    column = _column()
    for run in ("w2-cold", "w8-cold", "w14-cold"):
        other = _cells(run)
        assert other.keys() == column.keys() and len(other) == 219, run
        differ = [b for b in column if _outcome(column[b]) != _outcome(other[b])]
        assert all(b.startswith(FAILURE_STAGE_VARIES) for b in differ), f"{run}: {differ[:5]}"
        assert all(other[b]["status"] == column[b]["status"] == "fail" for b in differ), run


def test_the_cells_record_whether_they_used_the_cache():
    built = [c for c in _cells("w4-warm").values() if c["last_stage"] in ("build", "run", "compare")]
    assert built and all(c["options"]["timing_cache"] == "shared" for c in built)
    uncached = [c for c in _cells("w4-off").values() if c["last_stage"]]
    assert uncached and all(c["options"]["timing_cache"] == "off" for c in uncached)
    header = json.loads(gzip.open(SWEEP / "8.6.0-w4-warm.jsonl.gz", "rt").readline())
    assert header["cell_options"]["timing_cache"] == "on" and header["workers"] == "4"


def _column() -> dict:
    column = SWEEP.parent / "trt-8.6.0.jsonl"
    return {r["bundle"]: r for r in map(json.loads, column.read_text(encoding="utf-8").splitlines())
            if r.get("schema") == SCHEMA}


def test_the_committed_h100_column_built_with_the_cache_agrees_with_the_uncached_run():
    cells = _column()
    assert any(c["options"].get("timing_cache") == "shared" for c in cells.values())
    base = _cells("w4-off")
    assert len(base) == 176 and base.keys() <= cells.keys()
    differ = [b for b in base if _outcome(base[b]) != _outcome(cells[b])]
    assert not differ, differ[:5]
