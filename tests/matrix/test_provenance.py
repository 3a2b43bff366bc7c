"""Provenance the merge can check: only files the observations manifest lists are observed.

The fakes: a results file that copies the committed H200 8.6.0 cells and claims to be an
observation of TensorRT 11.4.0.106, and one that claims the committed H200 8.6.0 column itself, dated 2099.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from matrix import observed
from matrix.__main__ import main
from matrix.diff import diff
from matrix.merge import column_key, load_results

OBSERVED = Path(__file__).resolve().parents[2] / "reports" / "observed"
H200_860 = OBSERVED / "nvidia-h200" / "trt-8.6.0.jsonl"


def forged(path: Path, change: Callable[[Dict], None]) -> Path:
    """A copy of the committed H200 8.6.0 file, every line claiming 'observed', each cell changed by `change` and
    each session header made to say the same engine version (a cell unlike its header is refused by its line)."""
    lines = []
    for line in H200_860.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["schema"] == "qdq-matrix/session/2":
            probe = {"engine_version": record["engine_version"], "run": {}}
            change(probe)
            record.update(source="observed", engine_version=probe["engine_version"])
        else:
            record["run"]["source"] = "observed"
            change(record)
        lines.append(json.dumps(record, sort_keys=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def as_11_4(record: Dict) -> None:
    record.update(engine_version="11.4.0.106", status="pass", verdict="undocumented", error="", last_stage="compare")


def dated_2099(record: Dict) -> None:
    record.update(status="pass", verdict="undocumented", error="", last_stage="compare")
    record["run"]["date"] = "2099-01-01T00:00:00Z"


def observed_cells(cells) -> List:
    return sorted(((c.bundle, c.engine_version, c.hardware, c.status, c.last_stage, c.error) for c in cells
                   if column_key(c)[4] == "observed"))


@pytest.fixture(scope="module")
def committed():
    return load_results([OBSERVED])


def test_every_committed_results_file_merges_as_observed(committed):
    assert committed.cells and not committed.errors
    assert {c.source for c in committed.columns} == {"observed"}
    assert not [p for p in committed.problems if "local" in p.message]


def test_every_tensorrt_only_cell_lands_in_its_own_column(committed):
    """The H200's tensorrt-only files: their 258 parse-failure and not-run cells never fall into the default
    column as duplicates; each version's tensorrt-only column holds all 116 of its cells."""
    # A later round of the same default column (round-2026-11-28 ran seed 032 and grouped_conv again) gives duplicates
    # that agree; none lands in the tensorrt-only column, and none disagrees.
    duplicates = [p.duplicate for p in committed.problems if p.duplicate]
    assert not [d for d in duplicates if "tensorrt-only" in d.column]
    assert not [p for p in committed.problems if "different statuses" in p.message]
    only = [c for c in committed.columns if c.variant == (("tactics", "tensorrt-only"),)]
    assert len(only) == 4
    for col in only:
        assert sum(column_key(c) == col.key for c in committed.cells) == 116, col.id


def test_a_fake_observed_tensorrt_11_4_gives_no_observed_column(tmp_path, committed):
    fake = forged(tmp_path / "results" / "fake.jsonl", as_11_4)
    result = load_results([fake, OBSERVED])
    columns = [c for c in result.columns if c.engine_version == "11.4.0.106"]
    assert columns and all(c.source == "local" for c in columns)
    assert all(c.provenance.startswith("local run") for c in columns)
    upgrade = diff(result.cells, "tensorrt", "8.6.0", "11.4.0.106", "NVIDIA H200 (sm_90)")
    assert any("an observation is compared with a local run (8.6.0: observed; 11.4.0.106: local)" in n
               for n in upgrade.notes)
    [why] = [p for p in result.problems if p.file.endswith("fake.jsonl") and p.level == "warning"]
    assert "local runs, not observations: it is not under reports/observed" in why.message
    assert len(observed_cells(committed.cells)) > 2000  # the comparison below compares the committed cells
    assert observed_cells(result.cells) == observed_cells(committed.cells)


def test_a_fake_of_the_committed_h200_column_dated_2099_replaces_no_committed_cell(tmp_path, committed):
    fake = forged(tmp_path / "results" / "fake.jsonl", dated_2099)
    result = load_results([fake, OBSERVED])
    assert len(observed_cells(committed.cells)) > 2000
    assert observed_cells(result.cells) == observed_cells(committed.cells)  # not one committed cell replaced
    h200 = [c for c in result.columns if c.engine_version == "8.6.0" and c.hardware == "NVIDIA H200 (sm_90)"
            and not c.variant]
    assert sorted(c.source for c in h200) == ["local", "observed"]  # two columns, side by side
    loud = [p for p in result.problems if p.level == "warning" and "never replaces an observed one" in p.message]
    assert loud and "fake.jsonl" in loud[0].file
    # the upgrade answer compares the observations: the fake's passes change nothing in 8.5.3.1 -> 8.6.0
    before = diff(committed.cells, "tensorrt", "8.5.3.1", "8.6.0", "NVIDIA H200 (sm_90)")
    after = diff(result.cells, "tensorrt", "8.5.3.1", "8.6.0", "NVIDIA H200 (sm_90)")
    assert after.changes == before.changes and before.regressions == 4


def test_a_file_under_reports_observed_counts_only_at_its_listed_digest(tmp_path, make_cell, write_results):
    path = write_results("trt.jsonl", [make_cell(run={"source": "observed", "date": "2026-11-22T00:00:00Z"})])
    root = path.parent
    listed = observed.add(observed.Manifest(root), [path], "an H200", "pytest tests/cells")
    assert [c.source for c in load_results([path], manifest=listed).columns] == ["observed"]
    path.write_text(path.read_text().replace("10.3.0", "10.4.0"))  # edited after it was listed
    result = load_results([path], manifest=listed)
    assert not result.columns and not result.cells  # refused whole: no answer uses it
    [why] = result.errors
    assert "changed after it was observed" in why.message and "file refused" in why.message
    assert "git checkout -- " in why.message and "nox -s observe -- " in why.message
    assert "trt.jsonl: its sha256 is not the listed one" in observed.verify(listed)[0]


@pytest.mark.parametrize("field, value, why", [
    ("engine", "fake", "engine 'fake' is not one of"),
    ("versions", {"stand_in": "tests/engines/trt_stand_in.py"}, "stand-in"),
    ("run", {"source": "stand-in"}, "stand-in"),
])
def test_a_stand_in_or_unknown_engine_never_becomes_a_column(make_cell, write_results, field, value, why):
    path = write_results("double.jsonl", [make_cell(**{field: value})])
    result = load_results([path])
    assert not result.cells and not result.columns
    assert why in result.errors[0].message and "file refused" in result.errors[0].message


def test_observe_lists_a_file_with_machine_and_command_and_check_finds_what_changed(tmp_path, capsys):
    root = tmp_path / "observed"
    (root / "gpu").mkdir(parents=True)
    results = root / "gpu" / "trt-8.6.0.jsonl"
    results.write_text(json.dumps({"schema": "qdq-matrix/session/2", "command": "pytest tests/cells"}) + "\n")
    assert main(["observe", str(results), "--root", str(root)]) == 2
    assert "needs --machine" in capsys.readouterr().err
    assert main(["observe", str(results), "--machine", "an H200, driver 580", "--root", str(root)]) == 0
    [entry] = observed.load(root).entries.values()
    assert (entry.path, entry.machine, entry.command) == ("gpu/trt-8.6.0.jsonl", "an H200, driver 580",
                                                          "pytest tests/cells")
    assert main(["observe", "--check", "--root", str(root)]) == 0
    (root / "gpu" / "extra.jsonl").write_text("{}\n")
    results.write_text(results.read_text() + "\n")
    assert main(["observe", "--check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "gpu/trt-8.6.0.jsonl: its sha256 is not the listed one" in err and "gpu/extra.jsonl: not listed" in err
    assert main(["observe", str(tmp_path / "elsewhere.jsonl"), "--machine", "x", "--root", str(root)]) == 2
    assert "is a file under" in capsys.readouterr().err
