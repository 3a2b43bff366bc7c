"""The upgrade answer's words mean one thing and its counts count what they name (issue 40, items 3, 4 and 7)."""

from __future__ import annotations

from core.words import REGRESSION_MARK
from matrix.diff import REWORDED, diff
from matrix.merge import build, load_results
from matrix.upgrade import HEADLINE_LIMIT, headline, pair_view, shown
from matrix.view import build_view

H100, H200 = "NVIDIA H100 80GB HBM3 (sm_90)", "NVIDIA H200 (sm_90)"
# a failure at build (load is the last stage it reached) that no source documents
FAILED = dict(status="fail", last_stage="load", verdict="new failure", fused=None, max_error_steps=None,
              expectation={}, explanation="")


def _pair(make_cell, bundle, before, after, **common):
    return [make_cell(bundle, engine_version="8.5.3.1", **before, **common),
            make_cell(bundle, engine_version="8.6.0", **after, **common)]


def test_an_error_in_other_source_lines_function_names_or_trt_for_tensorrt_is_reworded_not_changed(make_cell):
    """Only the words count: line numbers, bracketed source functions, a parser function in parentheses and "TRT"
    for "TensorRT" are set aside; the headline counts none of these, and a real change still counts."""
    texts = [
        ("[optimizer.cpp::computeCosts::3873] Error Code 10: Internal Error (Could not find any implementation)",
         "[optimizer.cpp::computeCosts::3901] Error Code 10: Internal Error (Could not find any implementation)"),
        ("In node -1 with name:  and operator:  (parseGraph): UNSUPPORTED_NODE: Failed to import initializer: w",
         "In node -1 with name:  and operator:  (importInitializers): UNSUPPORTED_NODE: Failed to import "
         "initializer: w"),
        ("TRT only supports per-tensor scales [node node_of_y (DequantizeLinear), QuantDequantLinearHelper]",
         "TensorRT only supports per-tensor scales [node node_of_y (DequantizeLinear), buildZeroPointTensor]"),
        ("Assertion failed: scale > 0", "Invalid Node - node_of_y: vector::_M_range_check"),
    ]
    cells = [c for i, (old, new) in enumerate(texts)
             for c in _pair(make_cell, f"grouped_conv/g={i}", dict(FAILED, error=old), dict(FAILED, error=new))]
    report = diff(cells, "tensorrt", "8.5.3.1", "8.6.0")
    kinds = {c.bundle: c.kind for c in report.changes}
    assert kinds == {"grouped_conv/g=0": REWORDED, "grouped_conv/g=1": REWORDED, "grouped_conv/g=2": REWORDED,
                     "grouped_conv/g=3": "error changed"}
    view = pair_view(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert view["headline"] == "1 error text changed (4 reproducers compared)"
    assert any("Not counted as changes: 3 error texts reworded" in u for u in view["under"])


def test_the_zero_point_assertion_8_6_rewords_is_one_failure(make_cell, write_results):
    """8.5.3.1's "TRT only supports symmetric quantization - zeroPt must be all zeros" and 8.6.0's "TensorRT only
    supports symmetric quantization. The zero point for the ... must be all zeros." (the committed H100 cells of
    dq_blocked_axis): one catalogue signature once judged, so a rewording, never an error text changed."""
    old = 'Assertion failed: shiftIsAllZeros(zeroPoint) && "TRT only supports symmetric quantization - zeroPt must ' \
          'be all zeros"'
    new = 'Assertion failed: shiftIsAllZeros(zeroPoint) && "TensorRT only supports symmetric quantization. The zero ' \
          'point for the QuantizeLinear/DequantizeLinear operator must be all zeros."'
    cells = _pair(make_cell, "dq_blocked_axis/axis=0", dict(FAILED, error=f"ONNX parse failed: {old}"),
                  dict(FAILED, error=f"ONNX parse failed: {new}"), params={"axis": 0}, hardware=H100)
    merged = load_results([write_results("trt.jsonl", cells)]).cells
    assert {c.signature for c in merged} == {"nonzero_zero_point"}
    report = diff(merged, "tensorrt", "8.5.3.1", "8.6.0")
    assert [c.kind for c in report.changes] == [REWORDED] and report.count("error changed") == 0


def test_reproducers_compared_are_reproducers_not_hardware_pairs(make_cell):
    """One reproducer on two GPUs is one reproducer compared, on two hardware settings."""
    cells = [c for hw in (H100, H200) for c in _pair(make_cell, "grouped_conv/g=2", {}, {}, hardware=hw)]
    report = diff(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert (report.compared, report.compared_runs) == (1, 2)
    assert report.said_compared == "1 reproducer compared on 2 hardware settings"


def test_nothing_compared_says_why_and_never_no_changes(make_cell):
    """A version whose cells all did not run has nothing to compare: said so, with why, never "no changes"."""
    cells = [make_cell("grouped_conv/g=2", engine_version="8.5.3.1"),
             make_cell("grouped_conv/g=2", engine_version="8.6.0", status="not_run", verdict="not run",
                       reason="no NVIDIA GPU", fused=None)]
    report = diff(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert report.compared == 0 and "no changes" not in report.verdict
    assert report.verdict.endswith("nothing compared: none of 1 reproducer ran on both versions on " + H200)
    assert headline(report) == f"nothing compared: none of 1 reproducer ran on both versions on {H200}"


def test_a_headline_is_one_line_and_the_rest_goes_under_it(make_cell):
    """However many kinds of change, the headline holds HEADLINE_LIMIT characters; what did not fit is said under."""
    fixed, regressed = dict(FAILED, error="boom"), {}
    cells = []
    for i in range(120):  # fixes, regressions, error changes and drift, on three GPUs each
        before, after = [(fixed, {}), (regressed, fixed), (dict(FAILED, error=f"a{i}"), dict(FAILED, error=f"b{i}")),
                         ({"max_error_steps": 0.0}, {"max_error_steps": 9.0})][i % 4]
        for hw in (H100, H200, "NVIDIA A100-SXM4-80GB (sm_80)"):
            cells += _pair(make_cell, f"grouped_conv/g={i}", before, after, hardware=hw)
    view = pair_view(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert len(view["headline"]) <= HEADLINE_LIMIT and view["headline"].startswith("30 regressions, 30 fixes")
    assert "H100" not in view["headline"] and any("H100" in u for u in view["under"])


def test_before_and_after_are_shown_whole_where_clipping_would_make_them_read_the_same():
    same = "x" * 200
    assert shown(same + " old", same + " new") == (same + " old", same + " new")
    assert shown("short old", "short new") == ("short old", "short new")
    assert shown("a" * 300, "b" * 300)[0].endswith(" …")


def test_a_regression_is_one_word_in_the_columns_grid_causes_and_upgrade_answer(make_cell):
    """grouped_conv cpg=2 with an output Q/DQ: pass and fused on 8.5.3.1, no implementation on 8.6.0, on two GPUs,
    where no source documents either. The Columns table counts it as a regression of 8.6.0, the grid marks it, its
    root cause is its own (with 8.6.0's error, not folded into 8.5.1.7's failure of the same signature) and the upgrade
    answer names the runs it rests on."""
    error = "[optimizer.cpp::computeCosts::3873] Error Code 10: Internal Error (Could not find any implementation)"
    cells = []
    for hw, folder in ((H100, "nvidia-h100"), (H200, "nvidia-h200")):
        for version, fields in (("8.5.1.7", dict(FAILED, error="[builder.cpp::buildSerializedNetwork::751] Error "
                                                 "Code 2: Internal Error (Could not find any implementation)")),
                                ("8.5.3.1", dict(expectation={}, verdict="undocumented")),
                                ("8.6.0", dict(FAILED, error=error))):
            run = {"source": "observed", "file": f"reports/observed/{folder}/trt-{version}.jsonl",
                   "date": "2026-11-27"}
            cells.append(make_cell("grouped_conv/g=2", engine_version=version, hardware=hw, run=run,
                                   signature="no_implementation", **fields))
    view = build_view(build(cells), "2026-01-01")
    counts = {(s["heading"], s["hardware"]): s["regressions"] for s in view["summary"]}
    assert counts == {("tensorrt@8.5.1.7", H100): 0, ("tensorrt@8.5.1.7", H200): 0, ("tensorrt@8.5.3.1", H100): 0,
                      ("tensorrt@8.5.3.1", H200): 0, ("tensorrt@8.6.0", H100): 1, ("tensorrt@8.6.0", H200): 1}
    codes = [c["code"] for g in view["grid"]["groups"] for r in g["rows"] for c in r["cells"] if c]
    assert codes.count(f"B*{REGRESSION_MARK}") == 2 and codes.count("B*") == 2  # 8.6.0 marked, 8.5.1.7 not
    [regression] = [k for k in view["causes"] if k["regression"]]
    assert regression["versions"] == "8.6.0" and regression["n"] == 2 and "computeCosts" in regression["example"]
    assert regression["regression"].startswith("regression from 8.5.3.1 (pass (fused) there, fail at build here")
    assert "observed by this suite only" in regression["regression"]
    [older] = [k for k in view["causes"] if not k["regression"]]
    assert older["versions"] == "8.5.1.7"
    [pair] = [p for e in view["upgrade"] for p in e["pairs"] if (p["from"], p["to"]) == ("8.5.3.1", "8.6.0")]
    assert pair["headline"].startswith("1 regression (1 reproducer compared on 2 hardware settings)")
    [basis] = [u for u in pair["under"] if "regression" in u]
    assert basis.startswith("1 regression observed by this suite only (no upstream source documents it)")
    assert f"8.6.0 on {H100} (reports/observed/nvidia-h100/trt-8.6.0.jsonl)" in basis
    assert f"8.5.3.1 on {H200} (reports/observed/nvidia-h200/trt-8.5.3.1.jsonl)" in basis


def test_users_models_compared_are_counted_apart_from_the_catalogues_reproducers(make_cell):
    """A user's model checked on both versions is compared, and said as a user model: "N reproducers" counts the
    catalogue's reproducers only (the page once said 350 with 332 in the catalogue)."""
    cells = [*_pair(make_cell, "grouped_conv/g=2", {}, {}, hardware=H100),
             *_pair(make_cell, "user_model/det-0123456789", {}, {}, hardware=H100, case="user_model")]
    report = diff(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert (report.compared, report.compared_models) == (2, 1)
    assert report.said_compared == "1 reproducer and 1 user model compared"


def test_nothing_compared_counts_users_models_apart_too(make_cell):
    """"none of 341 reproducers" was said with 332 in the catalogue and 9 user models (a user trial)."""
    gone = dict(status="not_run", verdict="not run", reason="no NVIDIA GPU", fused=None)
    cells = [make_cell("grouped_conv/g=2", engine_version="8.5.3.1"),
             make_cell("grouped_conv/g=2", engine_version="8.6.0", **gone),
             make_cell("user_model/det-0123456789", engine_version="8.5.3.1", case="user_model"),
             make_cell("user_model/det-0123456789", engine_version="8.6.0", case="user_model", **gone)]
    report = diff(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert report.why_nothing.startswith("none of 1 reproducer and 1 user model ran on both versions"), \
        report.why_nothing
    view = pair_view(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert view["not_compared_words"] == "1 reproducer and 1 user model", view["not_compared_words"]



def test_the_lines_under_a_headline_count_regressions_and_fusion_lost_as_it_does(make_cell):
    """A headline of "1 regression, 1 fusion lost" had "2 regressions observed by this suite only" under it (a user
    trial): each kind is counted apart, in the headline's words."""
    from matrix.upgrade import regression_basis_lines

    fused = {"fused": True, "precision": {"y": {"precision": "int8"}}}
    cells = [make_cell("grouped_conv/g=2", engine_version="8.5.3.1"),
             make_cell("grouped_conv/g=2", engine_version="8.6.0", status="fail", last_stage="build",
                       verdict="new failure", fused=None, error="boom"),
             make_cell("grouped_conv/g=4", engine_version="8.5.3.1", **fused),
             make_cell("grouped_conv/g=4", engine_version="8.6.0", fused=False,
                       precision={"y": {"precision": "float"}})]
    report = diff(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert headline(report).startswith("1 regression, 1 fusion lost"), headline(report)
    lines = regression_basis_lines(report)
    assert lines[0].startswith("1 regression observed by this suite only"), lines
    assert lines[1].startswith("1 fusion lost documented upstream: "), lines
    assert not any(line.startswith("2 regressions") for line in lines)


def test_two_models_under_one_bundle_id_are_two_user_models_in_the_header(make_cell):
    """Reductions name their model "reduced": two of them are two models ("Your models" lists both), and the page's
    header said one fewer (a user trial read "34 user models" above "35 models checked")."""
    from matrix.view import _totals

    cells = [make_cell("grouped_conv/g=2", engine_version="8.6.0"),
             make_cell("user_model/reduced", engine_version="8.6.0", case="user_model", digest="a" * 64),
             make_cell("user_model/reduced", engine_version="8.5.3.1", case="user_model", digest="b" * 64)]
    totals = _totals(build(cells))
    assert totals["rows_said"] == "1 reproducer and 2 user models", totals["rows_said"]


def test_the_lines_under_a_headline_count_each_change_as_the_headline_does(make_cell):
    """One reproducer that regresses with another error on each of two GPUs is two changes in the headline (a change
    is said once per text); the line under it counted reproducers, and said one."""
    from matrix.upgrade import regression_basis_lines

    cells = []
    for hardware, error in ((H100, "boom on one"), (H200, "boom on the other")):
        cells += [make_cell("grouped_conv/g=2", engine_version="8.5.3.1", hardware=hardware, expectation={}),
                  make_cell("grouped_conv/g=2", engine_version="8.6.0", hardware=hardware, status="fail",
                            last_stage="build", verdict="new failure", fused=None, error=error, expectation={})]
    report = diff(cells, "tensorrt", "8.5.3.1", "8.6.0")
    assert report.count("regressed") == 2 and headline(report).startswith("2 regressions"), headline(report)
    lines = regression_basis_lines(report)
    assert [line.split(" observed by")[0] for line in lines] == ["2 regressions"], lines
