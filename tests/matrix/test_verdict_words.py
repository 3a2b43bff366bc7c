"""Verdicts against the catalogue: "as documented" never rests on this repository's own files (those are baselines,
"as observed before"), and a harness error says nothing of the engine. Every view's words for each verdict and status
are tests/core/test_words.py's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cases.base import BASES, repository_path, upstream
from cases.verdict import expectation_record
from core.cell import VERDICTS
from core.judge import verdict_of
from core.words import AGREES, BASIS_WORDS
from matrix.merge import load_results

REPO = Path(__file__).resolve().parents[2]
OBSERVED = REPO / "reports" / "observed"


@pytest.fixture(scope="module")
def committed():
    """The committed observations, merged and judged again against today's catalogue."""
    return load_results([OBSERVED])


def test_no_as_documented_verdict_rests_on_a_file_of_this_repository(committed):
    documented = [c for c in committed.cells if c.verdict == "as documented"]
    baseline = [c for c in committed.cells if c.verdict == "as observed before"]
    assert len(documented) >= 100 and len(baseline) >= 40, (len(documented), len(baseline))
    assert [c.bundle for c in documented if not upstream(c.expectation["source"])] == []
    assert {c.expectation["basis"] for c in documented} == {"documented"}
    for c in baseline:
        e = c.expectation
        assert e["basis"] == "baseline" and repository_path(e["source"]) and (REPO / e["source"]).is_file(), c.bundle
        assert e["hardware"] and e["source"] in c.explanation and "documented" not in c.explanation, c.explanation


def test_no_explanation_calls_a_baseline_documented(committed):
    """A cell judged against a baseline, whatever its verdict (fixed, regressed too), names the observation."""
    judged = [c for c in committed.cells if c.expectation.get("basis") == "baseline"]
    assert judged
    for c in judged:
        assert "documented" not in c.explanation and "observed" in c.explanation, (c.verdict, c.explanation)


def test_the_baselines_own_cells_say_they_are_the_baseline(committed):
    """A committed cell that is the very observation its baseline cites agrees with itself: its explanation says it is
    the baseline, never that a second run agreed; a cell from any other file does not say so."""
    from core.judge import THE_BASELINE_ITSELF

    baseline = [c for c in committed.cells if c.verdict == "as observed before"]
    itself = [c for c in baseline if c.run.get("file") == c.expectation["source"]]
    others = [c for c in baseline if c.run.get("file") != c.expectation["source"]]
    assert len(itself) >= 16 and others, (len(itself), len(others))  # seed 032's 16 TensorRT 8.x cells among them
    assert all(c.explanation.endswith(THE_BASELINE_ITSELF) for c in itself)
    assert not [c for c in others if THE_BASELINE_ITSELF in c.explanation]


def test_the_reports_count_baseline_matches_apart(committed, tmp_path):
    from cases.verdict import cites_itself
    from matrix.view import build_view
    from tests.matrix.conftest import write_reports

    view = build_view(committed, "2026-01-01")
    agreeing = sum(c.verdict == "as observed before" for c in committed.cells)
    itself = sum(cites_itself(c) for c in committed.cells)
    baseline = agreeing - itself  # the baseline cells are not a later run that agrees with them
    assert view["totals"]["baseline"] == baseline > 0 and view["totals"]["baseline_itself"] == itself > 0
    assert sum(s["verdicts"]["as observed before"] for s in view["summary"]) == agreeing
    assert sum(s["baseline_itself"] for s in view["summary"]) == itself
    assert sum(s["verdicts"]["as documented"] for s in view["summary"]) == \
        sum(c.verdict == "as documented" for c in committed.cells)
    write_reports(committed, tmp_path, generated="2026-01-01")
    md = (tmp_path / "matrix.md").read_text(encoding="utf-8")
    assert (f"{baseline} as observed before (runs that agree with this suite's own earlier run, not documentation; "
            f"the {itself} baseline cells themselves not counted)") in md
    assert "| as documented | as observed before |" in md  # the columns table: a count of each
    html = (tmp_path / "matrix.html").read_text(encoding="utf-8")
    assert re.search(r'<input type="radio" name="fv" id="fv1">as observed before', html)


def test_each_basis_has_its_verdict_and_its_words():
    assert set(AGREES) == set(BASIS_WORDS) == set(BASES) == {"documented", "baseline"}
    assert AGREES == {"documented": "as documented", "baseline": "as observed before"}
    assert set(AGREES.values()) <= set(VERDICTS)


def test_a_harness_error_says_nothing_of_the_engine():
    from core.words import UNEXPECTED
    from matrix.bugbundle import wanted
    from tests.matrix.conftest import cell

    broken = cell(status="harness_error", verdict="harness error", reason="KeyError: 'x'", fused=None, precision={},
                  log="Traceback (most recent call last): ...")
    assert verdict_of({}, "harness_error", None)[0] == "harness error" not in UNEXPECTED
    assert not wanted(broken)  # no bug bundle: it is not the engine's bug
    from matrix.causes import root_causes
    from matrix.junit import junit_xml
    from matrix.merge import build
    from matrix.view import build_view

    result = build([broken, cell("q_output_type/out=int8")])
    assert root_causes(result.cells) == []
    view = build_view(result, "2026-01-01")
    assert view["totals"]["harness_errors"] == 1 and view["totals"]["unexpected"] == 0
    xml = junit_xml(result).decode()
    assert 'errors="1"' in xml and 'failures="0"' in xml and "<error " in xml and "Traceback" in xml


def test_no_reference_blames_nobody_in_any_view():
    """A user model's cell with no reference: skipped in JUnit, `~` in the grid, not unexpected, no bug bundle unless
    asked, and rejudging keeps it."""
    from cases import get_case
    from cases.verdict import rejudge
    from core.words import UNEXPECTED
    from matrix.bugbundle import wanted
    from matrix.grid import cell_code
    from matrix.junit import junit_xml
    from matrix.merge import build
    from tests.matrix.conftest import cell

    blameless = cell("user_model/m", params={"model": "m.onnx"}, status="fail", expectation={},
                     verdict="no reference", explanation="no reference to judge it by, which is the model's ...")
    assert "no reference" not in UNEXPECTED and cell_code(blameless)[0].endswith("~")
    assert not wanted(blameless) and wanted(blameless, unreferenced=True)
    assert rejudge(blameless, get_case("user_model")).verdict == "no reference"
    xml = junit_xml(build([blameless])).decode()
    assert 'skipped="1"' in xml and 'failures="0"' in xml


@pytest.mark.parametrize("basis", ["baseline", "documented"])
def test_a_bug_bundle_never_calls_a_baseline_documented(basis, committed, catalogue_bundles):
    """The committed H100 8.6.0 cell of seed 024's quantize_static form fails as observed before; the same cell made
    to pass is "fixed" against that observation, and its ISSUE.md says so, never "documented upstream"."""
    import json
    from dataclasses import replace

    from cases import get_case
    from cases.verdict import rejudge
    from matrix.bugbundle import render, view

    [failed] = [c for c in committed.cells if c.bundle == "silu_qdq/form=quantize_static"
                and c.engine_version == "8.6.0" and c.hardware.startswith("NVIDIA H100")]
    case = get_case("silu_qdq")
    if basis == "documented":  # the same expectation with an upstream source, for contrast
        e = case.expectation_for("tensorrt", "8.6.0", failed.params)
        e = replace(e, basis="documented", source="https://github.com/NVIDIA/TensorRT/issues/3640")
        case = replace(case, expectations=(e,))
    fixed = rejudge(replace(failed, status="pass", last_stage="compare", error="", fused=True), case)
    assert fixed.verdict == "fixed"
    meta = json.loads((catalogue_bundles / fixed.bundle / "case.json").read_text(encoding="utf-8"))
    issue = render("ISSUE.md.j2", dict(view(fixed, meta, [fixed]), files=[]))
    if basis == "baseline":
        assert "documented" not in fixed.explanation and "observed to fail before in reports/observed/" in issue
        assert "a failure that this suite observed before" in issue and "documented upstream" not in issue
        assert "Verdict against the suite's own earlier observation (a baseline, not documentation)" in issue
        assert "Documented expectation" not in issue
    else:
        assert "a failure documented upstream does not happen" in issue and "observed before" not in issue


def test_a_crash_is_as_documented_only_where_the_source_documents_the_crash():
    """TensorRT-RTX's porting guide says plugins are unsupported (a parse failure); a parser that aborts the process
    on a plugin node did not do what it says. Only an expectation that documents the process dying agrees with a
    crash; a documented failure still agrees with a failure."""
    from cases.base import Expectation

    source = "https://docs.nvidia.com/deeplearning/tensorrt-rtx/latest/inference-library/porting.html"
    fails = Expectation("tensorrt-rtx", "", "fail", source, stage="load")
    assert verdict_of(expectation_record(fails), "crashed", None)[0] == "new failure"
    assert "died" in verdict_of(expectation_record(fails), "crashed", None)[1]
    assert verdict_of(expectation_record(fails), "fail", None)[0] == "as documented"
    crashes = expectation_record(Expectation("tensorrt-rtx", "", "fail", source, crashes=True))
    assert verdict_of(crashes, "crashed", None)[0] == "as documented"
