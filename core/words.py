"""The suite's vocabulary, in one place: the words each view says an outcome kind, a failed stage, a status or a
verdict in; the one file-name sanitizer and the one number masker; lists said in prose.

A cell's outcome (the stage that failed, what its nodes ran in) is core.outcome's, derived once; each view maps it to
its own words through a table here. The statuses, verdicts, stages and outcome kinds are defined here too, with every
group of them. Every table is total over its key set (KINDS, STAGES, STATUSES, VERDICTS): tests/core/test_words.py
fails on a missing key, and a view indexes a table, never `.get()`s it with a default: an unknown word is an error
naming it. No other module types a tuple of status words (tests/matrix/test_unknown_words.py greps for one).
Standard library only (the noxfile reads the catalogue, which reads STAGES, without numpy), and it ships in every bug
bundle beside core/judge.py (suite/words.py, with the engine descriptors it reads, suite/engines.py).
"""

from __future__ import annotations

import functools
import re
import signal
from dataclasses import dataclass
from typing import Sequence

from .engines import family  # relative: in a bug bundle, words.py and engines.py are the package qdq_suite

# ---- stages ----

# A cell's stages in order: load (the TensorRT family's ONNX parser), build, run, compare (the outputs against the
# reference). An expectation's `stage` is one of them; core.outcome names the one that failed.
STAGES = ("load", "build", "run", "compare")
BEFORE_RUN = STAGES[:2]  # the stages a plan built ahead of time got past: a documented failure there is fixed
# The stage that failed, from the last stage reached ("" reached none: the load failed); core.outcome reads it.
FAILED_STAGE = {"": "load", "load": "build", "build": "run", "run": "compare", "compare": "compare"}
# NVIDIA's bug template's word for the stage that failed (a bug bundle's ISSUE.md).
ISSUE_STAGES = {"load": "Load", "build": "Build", "run": "Runtime", "compare": "Accuracy"}
# A failure in a few words, by the stage that failed; a TensorRT-family load is its ONNX parser (fails_at).
FAILS_AT = {"load": "load fails", "build": "build fails", "run": "run fails", "compare": "outputs differ"}
PARSE_FAILS = "parse fails"


def fails_at(stage: str, engine: str) -> str:
    """"parse fails" (a TensorRT-family load is the ONNX parser), "load fails", "build fails", "run fails" or
    "outputs differ": a failure of one engine at one stage."""
    return PARSE_FAILS if stage == "load" and family(engine) == "tensorrt" else FAILS_AT[stage]


# ---- statuses and verdicts ----

# What happened in a cell (core.cell.Cell.status; its comment there says what each means).
STATUSES = ("pass", "fail", "crashed", "skipped", "not_run", "not_applicable", "built", "harness_error")
# Every status is one of these (core.outcome.Outcome's failed, worked, idle, harness_error).
FAILED = ("fail", "crashed")
WORKED = ("pass", "built")  # built: a TensorRT-RTX plan built ahead of time, not run on this machine
NOT_TRIED = ("skipped", "not_run")  # the engine is not here, or cannot run here: nothing was tried
IDLE = (*NOT_TRIED, "not_applicable")
# The suite's own code failed: neither the engine's failure nor a pass, never counted for or against the engine.
HARNESS = ("harness_error",)
RAN = (*WORKED, *FAILED)  # the engine ran the reproducer, whatever it did: what a regression or a bundle compares
EXECUTED = ("pass", *FAILED)  # it ran the model, not only built it ahead of time
NOT_JUDGED = (*IDLE, *HARNESS)  # nothing the engine did to judge (again)
REUSED = ("pass", "fail", "built")  # observations a run reuses as they are (engines.reuse says which others stand)
# What a bug bundle's repro.py can reproduce: the statuses of an engine that ran it, and a version without the API.
REPRODUCIBLE = (*RAN, "not_applicable")
STAGED = ("fail", "built")  # repro.py: a reproduction reaches the recorded cell's stage too
# The engine's deed, by status: a cell whose model has no reference (core.judge.unreferenced), and a version pair's
# runs that disagree (matrix.diff).
DID = {"pass": "ran it", "fail": "failed on it", "crashed": "crashed on it", "built": "built it"}
DOES = {"pass": "passes it", "fail": "fails it", "built": "builds it", "crashed": "crashes on it"}

# What a status means against the catalogue (core.cell.Cell.verdict; its comment there says what each means).
VERDICTS = ("as documented", "as observed before", "fixed", "fails against expectation", "new failure", "undocumented",
            "not run", "not applicable", "harness error", "no reference")
# Verdict values older files store, read as today's word (the committed 8.5.3.1 observations say "regressed").
LEGACY_VERDICTS = {"regressed": "fails against expectation"}
UNEXPECTED = ("fixed", "fails against expectation", "new failure")  # what a reader must look at
NO_REFERENCE = "no reference"
# The verdict of a cell that agrees with its expectation, by what the expectation rests on (cases.base.BASES), and
# how a report names that basis.
AGREES = {"documented": "as documented", "baseline": "as observed before"}
BASIS_WORDS = {"documented": "documented", "baseline": "observed before"}

STATUS_WORDS = {"pass": "pass", "fail": "fail", "crashed": "crashed", "skipped": "skipped", "not_run": "not run",
                "not_applicable": "not applicable", "built": "built", "harness_error": "harness error"}
# A mark after a grid cell's letter per verdict: the verdicts a reader must not miss, and a cell that agrees with this
# project's own earlier run rather than with an upstream document.
VERDICT_MARKS = {"as documented": "", "as observed before": "=", "fixed": "+", "fails against expectation": "!",
                 "new failure": "*", "undocumented": "?", "not run": "", "not applicable": "", "harness error": "",
                 "no reference": "~"}
# A mark after a grid cell's letter (and verdict mark) for a regression: it passed, built or fused on the engine's
# version before on this hardware, and fails, crashes or lost fusion here (matrix.diff.regressions), whatever the
# verdict.
REGRESSION_MARK = "↓"
# What JUnit makes of each verdict: a failure, an error (the harness's), a skip, or a passed test ("").
JUNIT = {"as documented": "", "as observed before": "", "fixed": "failures",
         "fails against expectation": "failures", "new failure": "failures", "undocumented": "", "not run": "skipped",
         "not applicable": "skipped", "harness error": "errors", "no reference": "skipped"}

# ---- outcome kinds (core.outcome.Outcome.kind) ----

# Every value of Outcome.kind: what every view's table of kind words is total over.
KINDS = ("int8", "float", "passes", "built-int8", "built-float", "built", *(f"fails-at-{s}" for s in STAGES),
         "crashed", "harness_error", "skipped", "not_run", "not_applicable")

# The grid: a code letter, css class and meaning per state; a letter reads without colour and without an emoji font.
GRID_STATES = (
    ("8", "k8", "pass, quantized nodes fused in INT8"),
    ("P", "kp", "pass (fusion not reported)"),
    ("f", "kf", "pass, but a quantized node ran in float"),
    ("A", "ka", "built ahead of time, quantized nodes in INT8 (or FP8, INT4) kernels; not run here"),
    ("a", "kf", "built ahead of time, but a quantized node is computed in float; not run here"),
    ("b", "kb", "built ahead of time (fusion not reported); not run here"),
    ("L", "kx", "fails at load (parse)"),
    ("B", "kx", "fails at build"),
    ("R", "kx", "fails at run"),
    ("C", "kx", "fails the output comparison"),
    ("X", "kc", "crashed (the engine process died, or it ran past the cell timeout)"),
    ("H", "kh", "harness error (the suite's own code failed; nothing said about the engine)"),
    ("-", "kn", "not run"),
    ("s", "kn", "skipped"),
    ("/", "kn", "not applicable"),
)
# The grid's letter of each outcome kind: a failure's is its failed stage's first.
GRID_LETTERS = {"int8": "8", "passes": "P", "float": "f", "built-int8": "A", "built-float": "a", "built": "b",
                "fails-at-load": "L", "fails-at-build": "B", "fails-at-run": "R", "fails-at-compare": "C",
                "crashed": "X", "harness_error": "H", "not_run": "-", "skipped": "s", "not_applicable": "/"}
# The plots: outcome classes in drawing order, with the css class the template colours them by.
PLOT_CLASSES = (("INT8 fused", "k8"), ("pass", "kp"), ("built, INT8", "ka"), ("built", "kb"),
                ("float fallback", "kf"), ("fail", "kx"), ("crashed", "kc"), ("harness error", "kh"), ("not run", "kn"))
# The plots' class of each outcome kind.
PLOT_WORDS = {"int8": "INT8 fused", "float": "float fallback", "passes": "pass", "built-int8": "built, INT8",
              "built-float": "float fallback", "built": "built", "fails-at-load": "fail", "fails-at-build": "fail",
              "fails-at-run": "fail", "fails-at-compare": "fail", "crashed": "crashed",
              "harness_error": "harness error", "not_run": "not run", "skipped": "not run", "not_applicable": "not run"}
# An outcome kind in the few words a sentence across GPU architectures needs (matrix.targets); {quantized} is the
# low-precision types a built plan's target nodes run in.
TARGET_WORDS = {"int8": "INT8", "float": "not INT8", "passes": "passes", "built-int8": "built, {quantized}",
                "built-float": "built, not quantized", "built": "built", "fails-at-load": "fails at load",
                "fails-at-build": "fails at build", "fails-at-run": "fails at run",
                "fails-at-compare": "fails at compare", "crashed": "crashed", "harness_error": "harness error",
                "skipped": "skipped", "not_run": "not run", "not_applicable": "not applicable"}
# What an expectation says a cell does (cases.base.OUTCOMES), in the words of the sentences above.
EXPECTATION_WORDS = {"fail": "fails", "pass": "passes", "int8": "INT8", "not_int8": "not INT8", "unknown": "unknown"}
# A version pair's diff: each side's outcome kind in a few words.
DIFF_STATES = {"int8": "pass (fused)", "float": "pass (not fused)", "passes": "pass", "built-int8": "built (fused)",
               "built-float": "built (not fused)", "built": "built",
               **{f"fails-at-{s}": f"fail at {s}" for s in STAGES}, "crashed": "crashed",
               "harness_error": "harness_error", "skipped": "skipped", "not_run": "not_run",
               "not_applicable": "not_applicable"}
# The conformance table's words, in its reading order (matrix.conformance), and its word per outcome kind: a failure is
# wrong where its outputs were compared, else refused.
CONFORMANCE = ("right", "wrong", "refused", "built only", "crashed", "not run", "not applicable", "harness error")
CONFORMANCE_WORDS = {"int8": "right", "float": "right", "passes": "right", "built-int8": "built only",
                     "built-float": "built only", "built": "built only", "fails-at-load": "refused",
                     "fails-at-build": "refused", "fails-at-run": "refused", "fails-at-compare": "wrong",
                     "crashed": "crashed", "harness_error": "harness error", "skipped": "not run", "not_run": "not run",
                     "not_applicable": "not applicable"}
# A per-node report's other quantized nodes (not compute nodes), by what the evidence says of each, in reading order.
OTHER_NODE_WORDS = {"fused": "fused into generated kernels (no per-node precision)", "int8": "INT8",
                    "float": "float fallback", "unknown": "no evidence"}

# ---- names and numbers ----


@dataclass(frozen=True)
class NameRule:
    """Which characters a file name keeps: letters, digits and `keep`; any run of others becomes `fill`, then `strip`
    is taken off both ends (and the name lowered where `lower`); `empty` where nothing is left."""

    keep: str
    fill: str = "_"
    strip: str = "."
    lower: bool = False
    empty: str = "_"


# Every file name the suite makes from text is one of these. Each names files that already exist on users' disks or
# in committed data, which is why they differ; a new name takes IDS.
IDS = NameRule("._=+,-")  # a bundle id or text from a results file: bug bundle folders, per-node reports
LABELS = NameRule(".", fill="-", strip="-", lower=True, empty="unknown")  # a hardware label: results/, timing caches
MODELS = NameRule("._-", strip="._", empty="model")  # a user model's file name, in its bundle id (committed cells)
COLUMNS = NameRule(".=+-", strip="._")  # a column's label: reports/cells/ files, bug bundles' column folders


def file_name(text: str, rule: NameRule = IDS) -> str:
    """One file name from any text, by one of the rules above: never a separator, never "." or "..", never empty."""
    name = re.sub(f"[^A-Za-z0-9{re.escape(rule.keep)}]+", rule.fill, text).strip(rule.strip)
    if not name.strip("."):  # "", "." or "..": no name of a file
        return rule.empty
    return name.lower() if rule.lower else name


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")  # a number on its own, not a part of a name


def mask_numbers(text: str) -> str:
    """Every number that stands on its own as "N" ("expected 3 got 4" -> "expected N got N"; "conv2" stays): what
    one failure reads as from any model, build or version."""
    return _NUMBER.sub("N", text)


# An engine's error as two versions of it are compared by (matrix.diff): what changes from build to build without the
# failure changing. Source line numbers and folders, a source function in brackets
# ("[optimizer.cpp::computeCosts::3873]", or a parser function: "[QuantDequantLinearHelper]",
# "[node x (Op), parseGraph]"), a parser function in parentheses ("(parseGraph)") and "TRT" for "TensorRT".
_ERROR_NOISE = (
    (re.compile(r"\[[\w./-]+\.(?:cpp|cc|cu|c|h|hpp)::\w+(?:::\d+)?\]"), "[…]"),
    (re.compile(r"(\[node [^\]]*?), [A-Za-z_]\w*\]"), r"\1]"),
    (re.compile(r" ?\[[A-Za-z_]\w*\]"), ""),
    (re.compile(r"(?<=[\s:])\([a-z]+[A-Z]\w*\)"), "(…)"),
    (re.compile(r"[^\s'\"()\[\]]*[\\/](?=[^\s'\"()\[\]/\\]+\.(?:cpp|cc|cu|c|h|hpp|py)\b)"), ""),
    (re.compile(r"\b([\w-]+\.(?:cpp|cc|cu|c|h|hpp|py)):\d+"), r"\1"),
    (re.compile(r"\bTRT\b"), "TensorRT"),
)


@functools.lru_cache(maxsize=4096)  # a report compares each cell's error with those of every other version
def error_words(text: str) -> str:
    """An error's first line in the words that matter across versions: source line numbers and folders, function names
    in brackets or parentheses and "TRT" for "TensorRT" normalised ("" for no error)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    for pattern, said in _ERROR_NOISE:
        line = pattern.sub(said, line)
    return " ".join(line.split())


# ---- prose ----


def say_list(items: Sequence[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


CLIP_BACK = 30  # how far clip goes back from its limit to a space


def first_few(items: Sequence[str], shown: int) -> str:
    """ "a, b, c" or, past `shown` items, "a, b, c and 4 more": a list cut short, saying by how much."""
    items = list(items)
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def first_line(text: str) -> str:
    """The first line of a text, "" for none."""
    return text.strip().splitlines()[0] if text.strip() else ""


def clip(text: str, limit: int) -> str:
    """text cut at limit characters, " …" saying so; at the last space before the limit where one is near, so that no
    word is cut in two ("if it i …" read as a word of the engine's)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space >= limit - CLIP_BACK else cut).rstrip() + " …"


def many(n: int, one: str, more: str = "") -> str:
    """ "1 problem", "2 problems": a count with its noun in the number it takes (`more`: an irregular plural)."""
    return f"{n} {one if n == 1 else more or one + 's'}"


def reproducers_and_models(reproducers: int, models: int) -> str:
    """The rows of a report or a comparison by what they are: the catalogue's reproducers and users' models, never
    one count under the first word ("332 reproducers and 30 user models")."""
    said = many(reproducers, "reproducer")
    return f"{said} and {many(models, 'user model')}" if models else said


def timed_out(seconds: float) -> str:
    """A crashed cell's reason where the cell timeout stopped it: "timed out after 600 s (the cell timeout)"."""
    return f"timed out after {seconds:g} s (the cell timeout)" if seconds > 0 else "timed out (the cell timeout)"


TIMED_OUT = ("the engine ran past the cell timeout (the run's --timeout) and was stopped before it reported a result; "
             "a longer --timeout may let it finish")


def signal_text(num: int) -> str:
    """"signal 11 (SIGSEGV)": how a cell, and the report of a process that died, say a process died of a signal."""
    name = signal_name(num)
    return f"signal {num} ({name})" if name else f"signal {num}"


def signal_name(num: int) -> str:
    """A signal's name ("SIGSEGV"), "" for a number that names none."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return ""
