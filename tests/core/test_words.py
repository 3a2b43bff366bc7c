"""One vocabulary (core/words.py): every table a view says a status, verdict, outcome kind or failed stage in is total
over its key set, so a new key fails here instead of reaching a report as a silent default; one file-name sanitizer
and one number masker."""

from __future__ import annotations

from typing import Any, Collection, Mapping

import pytest

from cases.base import BASES, OUTCOMES
from core import words
from core.cell import STATUSES, VERDICTS, Cell
from core.engines import ENGINES
from core.outcome import Outcome, outcome
from core.words import FAILED_STAGE, KINDS, clip
from matrix.diff import CHANGE_NOUNS, CHANGES

# Every table of words, with the key set it must cover.
TABLES = {
    "STATUS_WORDS": (words.STATUS_WORDS, STATUSES),
    "VERDICT_MARKS": (words.VERDICT_MARKS, VERDICTS),
    "JUNIT": (words.JUNIT, VERDICTS),
    "GRID_LETTERS": (words.GRID_LETTERS, KINDS),
    "PLOT_WORDS": (words.PLOT_WORDS, KINDS),
    "TARGET_WORDS": (words.TARGET_WORDS, KINDS),
    "FAILS_AT": (words.FAILS_AT, words.STAGES),
    "EXPECTATION_WORDS": (words.EXPECTATION_WORDS, OUTCOMES),
    "CHANGE_NOUNS": (CHANGE_NOUNS, CHANGES),
    "DIFF_STATES": (words.DIFF_STATES, KINDS),
    "CONFORMANCE_WORDS": (words.CONFORMANCE_WORDS, KINDS),
    "ISSUE_STAGES": (words.ISSUE_STAGES, words.STAGES),
    "FAILED_STAGE": (FAILED_STAGE, ("", *words.STAGES)),
    "DID": (words.DID, words.RAN),
    "DOES": (words.DOES, words.RAN),
    "AGREES": (words.AGREES, BASES),
    "BASIS_WORDS": (words.BASIS_WORDS, BASES),
}


def missing_or_extra(table: Mapping[str, Any], keys: Collection[str]) -> str:
    """What keeps a table from being total over exactly its keys, "" for a total one."""
    missing, extra = sorted(set(keys) - set(table)), sorted(set(table) - set(keys))
    return "; ".join(x for x in (f"no words for {missing}" if missing else "",
                                 f"words for no key {extra}" if extra else "") if x)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_is_total_over_its_keys(name):
    table, keys = TABLES[name]
    assert missing_or_extra(table, keys) == "", name


def test_a_table_missing_a_key_fails():
    table, keys = TABLES["GRID_LETTERS"]
    assert missing_or_extra({k: v for k, v in table.items() if k != "fails-at-run"}, keys) == \
        "no words for ['fails-at-run']"
    assert missing_or_extra(dict(words.STATUS_WORDS, stale="stale"), STATUSES) == "words for no key ['stale']"
    assert missing_or_extra(words.STATUS_WORDS, (*STATUSES, "new_status")) == "no words for ['new_status']"


def test_the_key_sets_are_what_the_records_produce():
    """The statuses fall into exactly one group each, and KINDS is every kind an Outcome of any status has."""
    assert sorted(words.FAILED + words.WORKED + words.IDLE + words.HARNESS) == sorted(STATUSES)
    produced = {Outcome(s, FAILED_STAGE[stage] if s in words.FAILED else "", fused if s in words.WORKED else None).kind
                for s in STATUSES for stage in FAILED_STAGE for fused in (True, False, None)}
    produced.discard("fails-at-")
    assert produced == set(KINDS) and set(FAILED_STAGE.values()) == set(words.STAGES)
    assert set(words.GRID_LETTERS.values()) <= {code for code, _, _ in words.GRID_STATES}
    assert set(words.PLOT_WORDS.values()) == {name for name, _ in words.PLOT_CLASSES}
    assert set(words.CONFORMANCE_WORDS.values()) == set(words.CONFORMANCE)
    assert sorted(words.RAN + words.IDLE + words.HARNESS) == sorted(STATUSES)
    assert set(words.NOT_TRIED) | {"not_applicable"} == set(words.IDLE) and set(words.AGREES.values()) <= set(VERDICTS)
    assert set(words.UNEXPECTED) | {words.NO_REFERENCE} <= set(VERDICTS)


@pytest.mark.parametrize("status", STATUSES)
def test_every_status_has_its_words_in_every_view(status):
    """A cell of each status gets a grid letter, a plot class and an architecture sentence's words."""
    from matrix.grid import cell_code
    from matrix.plots import plot_class
    from matrix.targets import target_words

    cell = Cell(bundle="q_output_type/out=uint8", case="q_output_type", params={}, digest="d", engine="tensorrt-rtx",
                engine_version="1.7.1.116", hardware="no GPU", status=status, verdict="undocumented",
                last_stage="build", precision={"n": {"precision": "fp8"}},
                fused=True if status in words.WORKED else None)
    assert outcome(cell).kind in KINDS
    assert cell_code(cell)[0] and plot_class(cell) and target_words(cell)
    assert "{" not in target_words(cell)  # the quantized types filled in: "built, FP8"


def test_a_failure_is_said_by_its_stage_and_engine():
    assert words.fails_at("load", "tensorrt") == words.fails_at("load", "tensorrt-rtx") == "parse fails"
    assert words.fails_at("load", "onnxruntime") == "load fails"
    assert [words.fails_at(s, "openvino") for s in words.STAGES] == \
        ["load fails", "build fails", "run fails", "outputs differ"]
    with pytest.raises(KeyError):
        words.fails_at("bake", "tensorrt")  # a stage outside STAGES is an error, never a default


@pytest.mark.parametrize("rule", [words.IDS, words.LABELS, words.MODELS, words.COLUMNS])
@pytest.mark.parametrize("text", ["", "..", "../../etc/passwd", "/abs/path", "a b\\c", "ü", "__", "x/y:z"])
def test_a_file_name_never_leaves_its_folder(rule, text):
    name = words.file_name(text, rule)
    assert name and name not in (".", "..") and "/" not in name and "\\" not in name


def test_the_file_names_already_on_disk_keep_their_spelling():
    """Results files, user model ids, bug bundle folders and reports/cells/ keep the names they had."""
    assert words.file_name("cpu: Intel(R) Xeon(R) Processor (amx) target SM86", words.LABELS) == \
        "cpu-intel-r-xeon-r-processor-amx-target-sm86"
    assert words.file_name("NVIDIA H100 80GB HBM3 (sm_90)", words.LABELS) == "nvidia-h100-80gb-hbm3-sm-90"
    assert words.file_name("_my net+v2.onnx", words.MODELS) == "my_net_v2.onnx"
    assert words.file_name("user_model__net=1,+x y") == "user_model__net=1,+x_y"
    assert words.file_name("tensorrt-rtx_1.7.1.116_target=SM75_local no GPU, a", words.COLUMNS) == \
        "tensorrt-rtx_1.7.1.116_target=SM75_local_no_GPU_a"


def test_numbers_are_masked_where_they_stand_alone():
    assert words.mask_numbers("expected 3 inputs, got 12.5 at -1") == "expected N inputs, got N at -N"
    assert words.mask_numbers("conv2 of Int8Identity v1.7") == "conv2 of Int8Identity v1.7"


def test_every_engine_says_a_load_failure():
    assert {words.fails_at("load", e) for e in ENGINES} == {"parse fails", "load fails"}


def test_the_catalogue_and_the_vocabulary_load_without_numpy():
    """The noxfile reads the catalogue (which reads core.words's stages) and the descriptors in nox's own Python, which
    has no numpy; engines.pins runs on a GPU machine's bare Python."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; import cases, core.words, core.engines, engines.pins; cases.all_cases(external=True); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'onnx', 'jsonschema')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_clip_cuts_between_words_and_says_so():
    """A cause's example read "... asymmetric quantization if it i …": the cut lands before a whole word."""
    text = "Please set the flag to enable asymmetric quantization if it is on DLA."
    assert clip(text, 58) == "Please set the flag to enable asymmetric quantization if …"
    assert clip(text, 200) == text
    assert clip("x" * 80, 50) == "x" * 50 + " …", "no space near the limit: cut there"
    assert len(clip(text, 58)) <= 58 + 2


def test_first_few_names_a_list_cut_short_and_by_how_much():
    from core.words import first_few

    assert first_few(["a", "b", "c"], 4) == "a, b, c"
    assert first_few(["a", "b", "c", "d", "e", "f"], 4) == "a, b, c, d and 2 more"
    assert first_few([], 4) == ""
