"""The GPU matrix workflow template: valid GitHub Actions, and in step with noxfile.py's pin table."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read the workflow (add it to the test group)")

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "ci" / "github" / "gpu-matrix.yml"
NOXFILE = REPO / "noxfile.py"


def pins_github(*groups: str) -> Dict[str, Any]:
    """What the workflow's pins job writes to $GITHUB_OUTPUT: `python -m engines.pins --github ...`, run here."""
    done = subprocess.run([sys.executable, "-m", "engines.pins", "--github", *groups], capture_output=True, text=True,
                          cwd=REPO, check=True, timeout=60)
    key, _, value = done.stdout.strip().partition("=")
    assert key == "tensorrt", done.stdout
    return json.loads(value)


def nox_sessions() -> List[str]:
    """Session names in noxfile.py: the name= of @nox.session, else the function name."""
    names = []
    for node in ast.parse(NOXFILE.read_text()).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if ast.unparse(target) == "nox.session":
                kw = {k.arg: k.value for k in getattr(deco, "keywords", [])}
                names.append(ast.literal_eval(kw["name"]) if "name" in kw else node.name)
    return names


@pytest.fixture(scope="module")
def workflow() -> Dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def steps_running(job: Dict[str, Any]) -> List[str]:
    return [s["run"] for s in job["steps"] if "run" in s]


def check_jsonschema() -> List[str]:
    """How to call check-jsonschema here, or skip: it vendors schemastore's GitHub workflow schema."""
    if importlib.util.find_spec("check_jsonschema") is not None:
        return [sys.executable, "-m", "check_jsonschema"]
    exe = shutil.which("check-jsonschema")
    if exe is None:
        pytest.skip("check-jsonschema is not installed (add it to the test dependency group)")
    return [exe]


def test_workflow_validates_against_githubs_workflow_schema():
    done = subprocess.run([*check_jsonschema(), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_catches_a_broken_workflow(tmp_path, workflow):
    broken = dict(workflow)
    broken["jobs"] = {"cells": {k: v for k, v in workflow["jobs"]["cells"].items() if k != "runs-on"}}
    path = tmp_path / "broken.yml"
    path.write_text(yaml.safe_dump(broken))
    done = subprocess.run([*check_jsonschema(), "--builtin-schema", "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0


def test_triggers_are_manual_and_scheduled(workflow):
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert set(triggers) == {"workflow_dispatch", "schedule"}
    assert "trt_python" in triggers["workflow_dispatch"]["inputs"]


def test_cells_job_runs_on_gpu_runners_over_the_pin_table(workflow):
    """One job per TensorRT version of the pin table, which the pins job prints from the engine descriptors."""
    from core.engines import pin_group

    pins = workflow["jobs"]["pins"]
    run = next(s["run"] for s in pins["steps"] if "run" in s)
    groups = run.split("--github", 1)[1].split(">>", 1)[0].split()
    assert run.startswith("python3 -m engines.pins --github") and run.rstrip().endswith('>> "$GITHUB_OUTPUT"')
    assert pins["outputs"]["tensorrt"] == "${{ steps.pins.outputs.tensorrt }}"
    cells = workflow["jobs"]["cells"]
    assert cells["runs-on"] == ["self-hosted", "linux", "gpu"] and cells["needs"] in ("pins", ["pins"])
    assert cells["strategy"]["matrix"] == "${{ fromJSON(needs.pins.outputs.tensorrt) }}"
    entries = pins_github(*groups)["include"]
    versions = [e["trt"] for e in entries]
    assert versions == list(pin_group("trt").versions) + list(pin_group("trt10").versions)
    sessions = set(nox_sessions())
    for e in entries:
        family = "trt" if e["trt"] in pin_group("trt").versions else "trt10"
        assert family in sessions and e["session"] == f"{family}({e['trt']})", e


def test_versions_fan_out_over_the_runners(workflow):
    """Each TensorRT version is a job of its own on a GPU runner, and nothing serialises them: with N free runners, N
    versions run at once (a runner takes one job at a time, so one GPU still runs one version)."""
    from core.engines import pin_group

    strategy = workflow["jobs"]["cells"]["strategy"]
    assert "max-parallel" not in strategy, strategy
    assert strategy["fail-fast"] is False  # one version's failure does not cancel the others
    entries = pins_github("trt", "trt10")["include"]
    assert len({e["trt"] for e in entries}) == len(entries) == len(pin_group("trt").versions) + len(
        pin_group("trt10").versions)


def test_cells_job_installs_nox_runs_sessions_and_uploads_results(workflow):
    cells = workflow["jobs"]["cells"]
    runs = "\n".join(steps_running(cells))
    ci_run = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    pins = re.findall(r'"((?:nox|uv)==[^"]+)"', ci_run)
    assert len(pins) == 2 and all(f'"{p}"' in runs for p in pins)  # the same bootstrap pins as .ci/run
    assert "nox -s generate" in runs and 'nox -s "$NOX_SESSION"' in runs
    upload = next(s for s in cells["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["path"] == "results/*.jsonl"
    assert "${{ matrix.trt }}" in upload["with"]["name"]


def test_existing_interpreter_mode_passes_only_options_after_the_interpreter(workflow):
    """trt_existing takes every argument not starting with '-' as another interpreter."""
    script = next(r for r in steps_running(workflow["jobs"]["cells"]) if "trt_existing" in r)
    line = next(x for x in script.splitlines() if "nox -s trt_existing" in x)
    after = shlex.split(line.split("--", 1)[1])
    assert after[0] == "$python" and all(a.startswith("-") for a in after[1:]), after
    assert "trt_existing" in nox_sessions()


def test_merge_job_reports_and_writes_the_diff_to_the_step_summary(workflow):
    merge = workflow["jobs"]["merge"]
    assert merge["needs"] in ("cells", ["cells"])
    download = next(s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == "results-tensorrt-*" and download["with"]["path"] == "results"
    runs = steps_running(merge)
    assert any(r.strip() == "nox -s report" for r in runs)
    diff = next(r for r in runs if "nox -s diff -- tensorrt" in r)
    assert diff.rstrip().endswith('>> "$GITHUB_STEP_SUMMARY"') and "env -u GITHUB_STEP_SUMMARY" in diff
    assert {"report", "diff"} <= set(nox_sessions())
    uploads = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert any("reports/matrix.md" in s["with"]["path"] for s in uploads)
    # the conformance page, with the opsets a node test could not be converted to (the bundles' manifest)
    assert any("reports/conformance.html" in s["with"]["path"] for s in uploads)
    assert runs.index("nox -s generate") < runs.index("nox -s report")


def zizmor_findings(path: Path) -> subprocess.CompletedProcess:
    """zizmor (the locked test group's) on one workflow file, offline, at medium severity and above."""
    if sys.version_info < (3, 11):
        pytest.skip("zizmor needs Python 3.11+ (the test group installs it there only)")
    exe = shutil.which("zizmor") or str(Path(sys.executable).with_name("zizmor"))
    if not Path(exe).exists():
        pytest.fail("zizmor is not installed: it is in the test group of pyproject.toml (uv.lock pins it)")
    return subprocess.run([exe, "--offline", "--no-progress", "--min-severity", "medium", "--format", "plain",
                           str(path)], capture_output=True, text=True, timeout=120)


def test_the_template_passes_zizmor_at_medium_and_above() -> None:
    # Pinned actions (by commit, the tag in a comment), no persisted credentials, least-privilege permissions.
    done = zizmor_findings(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_finds_an_unpinned_action_and_persisted_credentials(tmp_path: Path) -> None:
    # The audit can fail: the template as it was before it was hardened.
    text = re.sub(r"@[0-9a-f]{40}  # (v[\d.]+)", r"@v4", WORKFLOW.read_text())
    text = re.sub(r"\n        with:\n          persist-credentials: false[^\n]*", "", text)
    bad = tmp_path / "gpu-matrix.yml"
    bad.write_text(text)
    done = zizmor_findings(bad)
    assert done.returncode != 0
    assert "unpinned-uses" in done.stdout and "artipacked" in done.stdout, done.stdout
