"""One judge of a cell (core/judge.py): the runner, the report's re-judging and a bug bundle's repro.py call it, the
rules are written once, and a fresh cell and the same cell judged again say the same."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path
from typing import List

import numpy as np
import pytest

from core import judge as judging
from core.engines import REPRO_ALWAYS
from engines.base import Observation

REPO = Path(__file__).resolve().parents[2]
# What only the rules of judging a cell say: each is written in exactly one file, core/judge.py.
HALLMARKS = {
    "a crash's status": r'status\s*=\s*"crashed"',
    "outputs compared once every stage ran": r'stage\s*==\s*"run"\s+and\s+not\s+\w*\.?error',
    "a plan built ahead of time": r'not_run_here\s+if\s+status\s*==\s*"built"',
    "a verdict without a source": r"no source documents a failure here",
    "a crash's words": r"process died before it reported a result",
    "a version that removed the API": r"removed the API the reproducer's documented path needs",
    "a cell that agrees with a baseline": r"this cell is that observation: the baseline",
}


def product_code() -> List[str]:
    """Every tracked Python file outside the tests."""
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [f for f in files.split() if not f.startswith("tests/")]


@pytest.mark.parametrize("what", sorted(HALLMARKS))
def test_the_rules_of_judging_a_cell_are_written_once(what):
    found = sorted(f for f in product_code() if re.search(HALLMARKS[what], (REPO / f).read_text(encoding="utf-8")))
    assert found == ["core/judge.py"], f"{what}: {found}"


def test_repro_imports_the_judge_the_bundle_ships():
    """repro.py loads suite/judge.py (core/judge.py, shipped unchanged) and calls its judge; it decides no status."""
    assert REPRO_ALWAYS["suite/judge.py"] == "core/judge.py"
    tree = ast.parse((REPO / "matrix" / "repro.py").read_text(encoding="utf-8"))
    calls = {ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert "suite('judge').judge(obs, case, references=references)" in calls
    statuses = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "status" for t in n.targets)]
    assert statuses == [], statuses


def test_the_shipped_judge_imports_only_numpy_and_its_siblings():
    tree = ast.parse((REPO / "core" / "judge.py").read_text(encoding="utf-8"), feature_version=(3, 9))
    absolute = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    absolute |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}
    relative = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level for a in n.names}
    assert absolute <= {"__future__", "dataclasses", "typing", "numpy"} and relative == {"numerics", "words"}
    shipped = {Path(p).name for name, p in REPRO_ALWAYS.items() if name.startswith("suite/")}
    assert {"numerics.py", "words.py", "engines.py"} <= shipped


def documented(**more) -> dict:
    return {"outcome": "fail", "versions": "", "source": "https://github.com/NVIDIA/TensorRT/issues/1",
            "stage": "build", "signature": "", "hardware": "", "note": "", "basis": "documented", **more}


@pytest.mark.parametrize("status, seen", [
    ("crashed", Observation(stage="build", crashed="signal 11 (SIGSEGV)")),
    ("fail", Observation(stage="load", error="no importer")),
    ("not_applicable", Observation(stage="load", options={"not_applicable": "TensorRT 11.0 removed calibration"})),
    ("built", Observation(stage="build", not_run_here="no GPU here")),
])
@pytest.mark.parametrize("expectation", [{}, documented(), documented(crashes=True), documented(outcome="int8")])
def test_a_fresh_cell_and_the_same_cell_judged_again_say_the_same(status, seen, expectation):
    """What once differed between the runner and the re-judging (a crash's words, a removed API's reason) is said
    alike: both go through one judge."""
    against = judging.Against(expectation, known="its error matches seed 032")
    fresh = judging.judge(seen, {}, against)
    stored = judging.Stored(fresh.status, fresh.stage, fresh.error, fresh.reason, fresh.fused)
    again = judging.judge(stored, {}, against)
    assert fresh.status == status
    assert (again.verdict, again.explanation) == (fresh.verdict, fresh.explanation)


def test_a_crash_and_a_removed_api_are_said_in_one_place():
    crash = judging.judge(Observation(stage="build", crashed="signal 11"), {}, judging.Against(documented()))
    assert crash.explanation.startswith("the engine's process died before it reported a result; ")
    assert crash.verdict == "new failure"  # a crash is never the documented failure unless the source says so
    gone = judging.judge(Observation(options={"not_applicable": "calibration removed"}), {})
    assert (gone.status, gone.verdict) == ("not_applicable", "not applicable")
    assert gone.explanation.endswith(": calibration removed") and gone.reason == "calibration removed"


def test_outputs_are_compared_by_the_bundle_measure():
    meta = {"tolerance_steps": 1, "target_nodes": ["conv"]}
    reference = {"y": np.array([0.0, 1.0], np.float32)}
    ran = Observation(stage="run", outputs={"y": np.array([0.0, 3.0], np.float32)},
                      precision={"conv": {"precision": "int8"}})
    said = judging.judge(ran, meta, references=lambda: (reference, {}))
    assert (said.status, said.stage, said.fused) == ("fail", "run", None) and said.error
    ran = Observation(stage="run", outputs=dict(reference), precision={"conv": {"precision": "int8"}})
    said = judging.judge(ran, meta, references=lambda: (reference, {}))
    assert (said.status, said.stage, said.fused, said.worst_steps) == ("pass", "compare", True, 0.0)


def test_an_unknown_status_is_refused():
    with pytest.raises(ValueError, match="'bogus'"):
        judging.verdict_of({}, "bogus", None)


def test_a_reference_that_lacks_an_operator_is_its_own_fault_never_the_models():
    """onnx.reference without a com.microsoft operator (QLinearConcat) is the suite's reference's limit: the model is
    valid and an engine runs it; any other reference failure stays the model's (or its inputs') fault."""
    from core.judge import reference_fault, unreferenced

    lacking = ("no reference that is not an engine under test: onnx.reference 1.23.2 cannot run it: "
               "NotImplementedError: Node type 'QLinearConcat' from domain 'com.microsoft' is unknown")
    said = unreferenced(True, "pass", lacking)
    assert "the fault of the suite's reference (it lacks one of the model's operators)" in said
    assert "the model's (or its inputs') fault" not in said
    assert reference_fault("the reference's outputs are not finite (NaN)") == "the model's (or its inputs') fault"


def test_a_failure_before_any_output_needs_no_reference_a_run_does():
    """A user model the reference cannot run (TensorRT-RTX refusing a QOperator model's com.microsoft ops at parse):
    a parse or build failure is the engine's, judged as any failure and named by its stage; "no reference" stays for a
    cell whose outputs could not be compared (a pass, a failure at run), whether judged now or judged again."""
    from core.judge import Against, Stored

    meta = {"reference_error": "onnx.reference cannot run it: NotImplementedError: Node type 'QLinearConcat' from "
                               "domain 'com.microsoft' is unknown", "outputs": {"y": {"step": None}}}
    user = Against(external=True)
    parse = judging.judge(Observation(stage="", error="In node 3 (importModel): No importer registered for "
                                      "op: QLinearConcat"), meta, user)
    build = judging.judge(Observation(stage="load", error="no implementation"), meta, user)
    for said, stage in ((parse, "load"), (build, "build")):
        assert (said.status, said.verdict) == ("fail", "new failure"), said
        assert f"it failed at {stage}, before any output, which needs no reference" in said.explanation
        assert "no reference to judge it by" not in said.explanation
    ran = judging.judge(Observation(stage="run", outputs={"y": np.ones(2, np.float32)}), meta, user)
    at_run = judging.judge(Observation(stage="build", error="illegal memory access"), meta, user)
    assert ran.verdict == at_run.verdict == "no reference" and at_run.status == "fail"
    built = judging.judge(Observation(stage="build", not_run_here="no GPU here"), meta, user)
    assert (built.status, built.verdict) == ("built", "undocumented"), "a plan built ahead of time has no output"
    again = Stored("fail", "", parse.error, verdict="no reference", explanation="no reference to judge it by, ...")
    assert judging.judge(again, {}, user).verdict == "new failure", "a parse failure judged before is judged again"
    kept = Stored("fail", "build", "illegal memory access", verdict="no reference", explanation="no reference ...")
    assert judging.judge(kept, {}, user).verdict == "no reference"
