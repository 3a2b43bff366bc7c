"""Faults against provenance: a forged cell in a local results file, an edited committed observation.

The forgeries are the issue's own: a TensorRT 11.5.0 "pass" on an H100 copied into an ONNX Runtime results file
written on a CPU, and one cell of the H100 8.6.0 observations flipped from fail to pass after it was listed.
Neither may change an answer: the grid, the upgrade answer, `matrix diff`, the lint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from check.observations import ResultsFileError, engine_cells, observed_cells
from core.results import read_results
from engines.results import stored_cells
from matrix import observed
from matrix.__main__ import main
from matrix.diff import diff
from matrix.merge import load_results
from matrix.upgrade import upgrade_view

REPO = Path(__file__).resolve().parents[2]
OBSERVED = REPO / "reports" / "observed"
ORT = OBSERVED / "cpu-avx2-emulated" / "onnxruntime-1.31.1.jsonl"
H100 = OBSERVED / "nvidia-h100"
FORGED_VERSION = "11.5.0"


def _lines(path: Path) -> List[Dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _forged_line() -> Dict:
    """An H100 TensorRT cell relabelled 11.5.0, passing, claiming to be an observation."""
    cell = next(r for r in _lines(H100 / "trt-8.6.0.jsonl") if r.get("status") == "fail")
    cell.update(engine_version=FORGED_VERSION, status="pass", verdict="undocumented", error="", error_line="",
                engine_reason="", failing_node="", last_stage="compare")
    cell["run"]["source"] = "observed"
    return cell


@pytest.fixture
def local_ort(tmp_path: Path) -> Tuple[Path, int]:
    """A local ONNX Runtime results file (a CPU's, by its header) with the forged line appended: (file, its line)."""
    path = tmp_path / "results" / "onnxruntime-1.31.1-cpu.jsonl"
    path.parent.mkdir()
    text = ORT.read_text(encoding="utf-8")
    path.write_text(text + json.dumps(_forged_line(), sort_keys=True) + "\n", encoding="utf-8")
    return path, text.count("\n") + 1


def test_a_forged_cell_unlike_its_header_is_refused_by_its_line(local_ort: Tuple[Path, int]) -> None:
    path, line = local_ort
    result = load_results([path])
    [refused] = result.errors
    assert (refused.line, refused.whole_file) == (line, False) and refused.file.endswith(path.name)
    assert "engine 'tensorrt'" in refused.message and "engine 'onnxruntime'" in refused.message
    assert "cell refused" in refused.message
    assert not [c for c in result.cells if c.engine_version == FORGED_VERSION]
    assert len(result.cells) == len(_lines(ORT)) - 1  # the file's own cells stand: the header and the forged line out
    assert not any(k[2] == FORGED_VERSION for k in stored_cells(path))  # never reused by a run either
    assert [n for n, _ in read_results(path).foreign] == [line]


def test_a_forged_cell_changes_no_answer(local_ort: Tuple[Path, int], tmp_path: Path) -> None:
    """No tensorrt@11.5.0 column, no upgrade answer naming it, `matrix report` exits 1 naming the line."""
    path, line = local_ort
    before = load_results([OBSERVED])
    after = load_results([path.parent, OBSERVED])
    assert {c.id for c in after.columns} - {c.id for c in before.columns} == {
        c.id for c in after.columns if c.engine == "onnxruntime" and c.source == "local"}
    trt = [e for e in upgrade_view(after.cells) if e["engine"] == "tensorrt"]
    assert trt and FORGED_VERSION not in trt[0]["versions"]
    with pytest.raises(ValueError):
        diff(after.cells, "tensorrt", "8.6.0", FORGED_VERSION, "NVIDIA H100 80GB HBM3 (sm_90)")
    out = tmp_path / "reports"
    assert main(["report", "--results", str(path.parent), "--results", str(OBSERVED), "--out", str(out)]) == 1
    report = (out / "matrix.md").read_text(encoding="utf-8")
    assert f"tensorrt@{FORGED_VERSION}" not in report and f":{line}" in report


@pytest.fixture
def observations(tmp_path: Path) -> Path:
    """The H100's 8.5.3.1 and 8.6.0 observations, copied with a manifest of their own that lists them."""
    root = tmp_path / "observed"
    (root / "nvidia-h100").mkdir(parents=True)
    files = [shutil.copy(H100 / name, root / "nvidia-h100" / name) for name in ("trt-8.5.3.1.jsonl", "trt-8.6.0.jsonl")]
    observed.save(observed.add(observed.Manifest(root), [Path(f) for f in files], "an H100", "tools/gpu-round.sh"))
    return root


def _flip_one_failure(path: Path, older: Path) -> str:
    """One cell that failed on both versions flipped to pass in the newer file (a "fix", were it believed)."""
    failed = {r["bundle"] for r in _lines(older) if r.get("status") == "fail"}
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record.get("status") == "fail" and record["bundle"] in failed:
            record.update(status="pass", verdict="undocumented", error="", error_line="", last_stage="compare")
            lines[i] = json.dumps(record, sort_keys=True)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            return record["bundle"]
    raise AssertionError("no cell failed on both versions")


def test_an_edited_observation_gives_no_cell_to_any_answer(observations: Path, tmp_path: Path) -> None:
    older, newer = observations / "nvidia-h100" / "trt-8.5.3.1.jsonl", observations / "nvidia-h100" / "trt-8.6.0.jsonl"
    bundle = _flip_one_failure(newer, older)
    believed = load_results([observations], manifest=observed.add(observed.load(observations), [newer]))
    assert any(c.bundle == bundle and c.kind == "fixed" for c in
               diff(believed.cells, "tensorrt", "8.5.3.1", "8.6.0").changes)  # what the edit would have said
    manifest = observed.load(observations)
    result = load_results([observations], manifest=manifest)
    assert not [c for c in result.cells if c.engine_version == "8.6.0"]  # the grid and every answer from it
    [refused] = result.errors
    assert refused.file.endswith("nvidia-h100/trt-8.6.0.jsonl") and refused.whole_file
    assert "git checkout -- " in refused.message and "nox -s observe -- " in refused.message
    trt = [e for e in upgrade_view(result.cells) if e["engine"] == "tensorrt"][0]
    assert "8.6.0" not in trt["versions"]
    with pytest.raises(ValueError):
        diff(result.cells, "tensorrt", "8.5.3.1", "8.6.0")
    knowledge = observed_cells(observations)  # what the lint predicts from
    assert knowledge and {c["engine_version"] for c in knowledge} == {"8.5.3.1"}
    from tests.matrix.conftest import write_reports

    write_reports(result, tmp_path / "reports", generated="2026-01-01")  # the answers say they are without it
    md = (tmp_path / "reports" / "matrix.md").read_text(encoding="utf-8")
    said = md[md.index("## Upgrade answer"):md.index("\n### ", md.index("## Upgrade answer"))]
    assert "**1 results file refused, so every answer here is without its cells:**" in said
    assert refused.file in said


def test_the_lint_refuses_an_edited_committed_observation_named_to_it(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`--cells` naming a listed file whose bytes changed: refused, saying how to restore it."""
    copy = tmp_path / "observed"
    (copy / "nvidia-h100").mkdir(parents=True)
    for name in ("trt-8.5.3.1.jsonl", "trt-8.6.0.jsonl"):
        shutil.copy(H100 / name, copy / "nvidia-h100" / name)
    shutil.copy(OBSERVED / observed.MANIFEST_NAME, copy / observed.MANIFEST_NAME)
    monkeypatch.setattr(observed, "OBSERVED", copy)
    target = copy / "nvidia-h100" / "trt-8.6.0.jsonl"
    assert engine_cells([target])  # listed at its digest: read
    _flip_one_failure(target, copy / "nvidia-h100" / "trt-8.5.3.1.jsonl")
    with pytest.raises(ResultsFileError, match="git checkout -- "):
        engine_cells([target])


def _session_and_cell(version: str, status: str) -> List[Dict]:
    """A TensorRT session header and one cell of it, as a local GPU run would write them, relabelled `version`."""
    header = dict(_lines(H100 / "trt-8.6.0.jsonl")[0], engine_version=version, source="local")
    cell = _forged_line()
    cell.update(engine_version=version, status=status)
    cell["run"]["source"] = "local"
    return [header, cell]


def test_a_local_file_claiming_a_gpu_engine_on_a_machine_without_one_is_refused(tmp_path: Path, monkeypatch) -> None:
    """A results file of this machine's, not in the manifest, saying TensorRT 11.5.0 passed where no NVIDIA GPU is:
    refused from every answer with file:line, and no answer changes."""
    import core.engines

    monkeypatch.setattr(core.engines, "nvidia_gpu_present", lambda *a: False)
    path = tmp_path / "results" / f"tensorrt-{FORGED_VERSION}.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in _session_and_cell(FORGED_VERSION, "pass")))
    before = load_results([OBSERVED])
    after = load_results([path.parent, OBSERVED])
    refused = [p for p in after.errors if p.file.endswith(path.name)]
    assert refused and refused[0].line == 2 and "no NVIDIA GPU" in refused[0].message, after.problems
    assert {c.id for c in after.columns} == {c.id for c in before.columns}
    assert sorted((c.bundle, c.column, c.status) for c in after.cells) == sorted(
        (c.bundle, c.column, c.status) for c in before.cells)


def test_a_local_not_run_cell_of_a_gpu_engine_stands(tmp_path: Path, monkeypatch) -> None:
    import core.engines

    monkeypatch.setattr(core.engines, "nvidia_gpu_present", lambda *a: False)
    path = tmp_path / "results" / "tensorrt-8.6.0.jsonl"
    path.parent.mkdir()
    header, cell = _session_and_cell("8.6.0", "not_run")
    path.write_text(json.dumps(header, sort_keys=True) + "\n" + json.dumps(cell, sort_keys=True) + "\n")
    assert not [p for p in load_results([path]).errors if p.file.endswith(path.name)]


def test_two_cells_of_one_reproducer_and_column_with_different_statuses_are_both_refused(tmp_path: Path) -> None:
    rows = _lines(ORT)
    first = next(r for r in rows if r.get("status") == "pass")
    other = dict(first, status="fail", error="forged", last_stage="compare")
    a, b = tmp_path / "a" / "ort.jsonl", tmp_path / "b" / "ort.jsonl"
    for path, extra in ((a, first), (b, other)):
        path.parent.mkdir()
        path.write_text(json.dumps(rows[0], sort_keys=True) + "\n" + json.dumps(extra, sort_keys=True) + "\n")
    merged = load_results([a, b])
    assert not [c for c in merged.cells if c.bundle == first["bundle"]]
    refused = [p for p in merged.errors if "different statuses" in p.message]
    assert sorted((Path(p.file).parent.name, p.line) for p in refused) == [("a", 2), ("b", 2)], merged.problems
    assert "a/ort.jsonl:2 says pass" in refused[0].message and "b/ort.jsonl:2 says fail" in refused[0].message


def _git(where: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-C", str(where), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True, timeout=60)


def test_observe_check_sees_a_file_and_its_digest_edited_since_the_last_commit(observations: Path) -> None:
    """The manifest attests the files; git history attests the manifest: an edit of both is not 'observed' quietly."""
    _git(observations.parent, "init", "-q")  # a repository that holds the observed folder, as this one does
    _git(observations.parent, "add", "-A")
    _git(observations.parent, "commit", "-qm", "observed")
    manifest = observed.load(observations)
    assert observed.since_commit(manifest)[1] == []
    path = observations / "nvidia-h100" / "trt-8.6.0.jsonl"
    _flip_one_failure(path, observations / "nvidia-h100" / "trt-8.5.3.1.jsonl")
    observed.save(observed.add(manifest, [path], "an H100", "tools/gpu-round.sh"))  # the digest "repaired" too
    assert observed.verify(observed.load(observations)) == []  # the manifest alone attests itself
    commit, changed = observed.since_commit(observed.load(observations))
    assert changed == [f"nvidia-h100/trt-8.6.0.jsonl: its digest changed since commit {commit} (the file and its "
                       "manifest entry were both edited, not committed)"]
    assert main(["observe", "--check", "--root", str(observations)]) == 1
