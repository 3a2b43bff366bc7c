"""engines.reuse: which stored cell stands for a new run of it (the controller and the cell test apply one rule)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cases import get_case
from core.cell import Cell
from engines.environment import broken
from engines.reuse import reusable

META = {"digest": "d" * 16, "tolerance_steps": 1.0}


def stored(**fields) -> Cell:
    """A stored TensorRT-RTX 1.7 cell of a plugin reproducer whose parser abort the catalogue documents."""
    base = dict(bundle="q_output_type/variant=plugin_qdq_around+activation=int8+plugin=v3", case="q_output_type",
                params={"variant": "plugin_qdq_around", "activation": "int8", "plugin": "v3"}, digest="d" * 16,
                engine="tensorrt-rtx", engine_version="1.7.1.116", hardware="no GPU: ahead-of-time build",
                status="fail", verdict="as documented", last_stage="load", tolerance_steps=1.0)
    base.update(fields)
    return Cell(**base)


CASE = get_case("q_output_type")
CHAIN = {"bundle": "q_output_type/variant=q_dq_chain+activation=int8+plugin=none",
         "params": {"variant": "q_dq_chain", "activation": "int8", "plugin": "none"}}  # no source says it fails


@pytest.mark.parametrize("cell, stands", [
    (stored(status="pass"), True),
    (stored(status="built"), True),
    (stored(status="fail", last_stage="run", max_error_steps=1.5, tolerance_steps=2.0), False),  # judged again
    (stored(status="pass", digest="e" * 16), False),  # another model
    (stored(status="not_applicable", options={"not_applicable": "INT8 calibration was removed"}), True),
    # the porting guide documents plugins as unsupported, not the parser's abort: no documented crash, no signal kept
    (stored(status="crashed", reason="signal 6 (SIGABRT)"), False),
    (stored(status="crashed", reason="timeout after 600 s", **CHAIN), False),  # undocumented, and no fault of its own
    (stored(status="crashed", options={"crash_signal": "SIGSEGV"}, **CHAIN), True),  # the engine's own fault
    (stored(status="crashed", options={"crash_signal": "SIGKILL"}, **CHAIN), False),  # from outside
    (stored(status="skipped", reason="tensorrt_rtx not importable"), False),  # the engine failed to import
    (stored(status="fail", error="... Unsupported model IR version: 10, max supported IR version: 9"), False),
], ids=["pass", "built", "other-tolerance", "other-digest", "not-applicable", "documented-crash", "timeout",
        "segfault", "killed", "skipped", "stored-before-not-applicable"])
def test_what_stands_for_a_new_run(cell, stands):
    assert reusable(cell, META, CASE, static_not_run=True) is stands


def test_a_not_run_cell_stands_only_where_the_engine_decides_it_from_the_bundle_and_never_a_broken_environment():
    plugin = stored(status="not_run", verdict="not run", last_stage="",
                    reason="needs custom op X; onnxruntime has none")
    assert reusable(plugin, META, CASE, static_not_run=True)
    assert not reusable(plugin, META, CASE, static_not_run=False)  # TensorRT: its cuDNN may have changed
    gone = broken("qdq_no_such_module", "…/x/__init__.py dev 1 inode 1 mtime 1")
    assert gone.startswith("environment broken")
    assert not reusable(replace(plugin, reason=gone), META, CASE, static_not_run=True)


NETWORK = {"digest": "d" * 16, "judge": {"measure": "network", "min_sqnr_db": 20.0, "min_cosine": 0.99}}
MEASURED = {"measure": "network", "min_sqnr_db": 20.0, "min_cosine": 0.99, "within_output_steps": 1.0,
            "fragile_margin_db": 3.0, "outputs": {"y": {"sqnr_db": 40.0, "cosine": 0.9999}}}
FLOATS = dict(NETWORK, float_reference={"digest": "f" * 64})


@pytest.mark.parametrize("cell, stands", [
    (stored(status="built", last_stage="build"), True),  # a TensorRT-RTX plan: no output was ever measured
    (stored(status="fail", last_stage="load"), True),  # failed before the outputs: any measure gives that verdict
    (stored(status="pass", last_stage="compare", output_stats=MEASURED), True),
    (stored(status="pass", last_stage="compare", output_stats=dict(MEASURED, min_sqnr_db=30.0)), False),
    (stored(status="pass", last_stage="compare", output_stats={k: v for k, v in MEASURED.items()
                                                                if k != "within_output_steps"}), False),  # older rule
    (stored(status="pass", last_stage="compare", output_stats={k: v for k, v in MEASURED.items()
                                                                if k != "fragile_margin_db"}), False),  # no fragile
    (stored(status="pass", last_stage="compare", max_error_steps=0.5), False),  # by steps, before cells said so
], ids=["built", "failed-at-load", "same-measure", "other-threshold", "before-the-one-step-rule",
        "before-the-fragile-rule", "steps-era"])
def test_a_user_models_cell_is_judged_again_only_where_its_outputs_were_measured_otherwise(cell, stands):
    """python -m check again with nothing changed reuses its TensorRT-RTX plan cell, never builds it again."""
    assert reusable(cell, NETWORK, CASE, static_not_run=True) is stands


def test_a_cell_made_for_other_parameters_is_run_again():
    """A user model whose bundle now names the seed case its form matches (check.forms) is judged by that case: its
    cells from before are not its cells any more, though the model's bytes are the same."""
    cell = stored(status="pass", params={"model": "crnn.onnx"})
    assert reusable(cell, dict(META, params={"model": "crnn.onnx"}), CASE, static_not_run=True)
    like = {"model": "crnn.onnx", "like_case": "dynamic_quantize", "like_variant": "ort_dynamic_conv"}
    assert not reusable(cell, dict(META, params=like), CASE, static_not_run=True)


def test_a_cell_judged_with_other_float_outputs_is_judged_again():
    """The fragile floor reads the float outputs: a cell measured without them, or with others, does not stand."""
    same = stored(status="pass", last_stage="compare", output_stats=dict(MEASURED, float_digest="f" * 64))
    assert reusable(same, FLOATS, CASE, static_not_run=True)
    assert not reusable(stored(status="pass", last_stage="compare", output_stats=MEASURED), FLOATS, CASE,
                        static_not_run=True)
    assert not reusable(replace(same, output_stats=dict(MEASURED, float_digest="e" * 64)), FLOATS, CASE,
                        static_not_run=True)


def test_a_crash_the_catalogue_documents_stands_for_a_new_run():
    """An expectation that documents the process dying (Expectation.crashes) makes its crash as documented: reused."""
    documented = tuple(replace(e, crashes=True) if e.engine == "tensorrt-rtx" and e.outcome == "fail" else e
                       for e in CASE.expectations)
    crash = stored(status="crashed", reason="signal 6 (SIGABRT)")
    assert reusable(crash, META, replace(CASE, expectations=documented), static_not_run=True)
    assert not reusable(crash, META, CASE, static_not_run=True)
