"""Command line: check your own quantized ONNX model on every engine version here, with a per-node INT8 report.

    python -m check model.onnx [more.onnx | a folder] [--inputs x.npz] [--shape input:1x3x224x224]
    python -m check model.onnx --shape images:1x3x320x320,4x3x640x640,8x3x640x640   # min,opt,max: a profile
    python -m check model.onnx --engine tensorrt --trt-python /path/py-8.5 --trt-python /path/py-8.6
    python -m check model.onnx --prepare-only --out user-bundles/    # bundles to run on a GPU machine
    python -m check --from-bundles user-bundles/ --trt-python bin/python-trt-8.6.0   # there: pytest + numpy only
    python -m check model.onnx --lint-only       # the TensorRT lint's predictions alone, no bundle, no engine
    python -m check model.onnx --float-model float.onnx --localize   # SQNR against both; where the drift starts

Each model is checked on its own: one that cannot be used gets its report and its summary line, and the
others go on. A dynamic dimension without --shape takes a default (batch 1, any other 64), said in the output
and in the bundle. Integer inputs that index a table are drawn inside it; masks are ones. In a folder,
<model>.npz beside <model>.onnx holds that model's inputs (--inputs names one file for one model only).

A model is sized from its declared shapes before anything is allocated: inputs at the shape they run at (and any one
tensor computed from them) over --max-input-bytes (2 GiB), or weights over --max-model-bytes (4 GiB), make it unusable,
its size in the reason; the others go on.

With several models, a --shape fixes only the dimensions each leaves open; a model that declares them keeps its
own, and says so.

Exit status: 0 every model checked and no engine failed one; 1 an engine failed a model (a failing or
crashed cell); 4 a model could not be checked (unreadable, unsafe external data, an invalid model: weights of 0 bytes
or one onnx.checker's full_check refuses, over the size budget, inputs that do not fit, or its reference could not
run, so numerics were not compared and the cells that ran it are "no reference"; one that failed at parse or
build needs no reference and counts as 1); 5 both; 2 a usage error, nothing run (bad
flag or number, unknown engine, a path that does not exist, an interpreter without TensorRT, a --shape that does not fit
the one model given or has another rank than an open input of one of several); 3 a folder that cannot be written
(a full disk, a read-only or forbidden --out, --results or --reports: one line naming it and the errno).
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import sys
import traceback
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence, Tuple

from check import CheckError, HarnessFailure
from core.cli import ArgumentParser
from core.thresholds import DEFAULT_MIN_COSINE, DEFAULT_MIN_SQNR_DB
from core.words import FAILED, HARNESS, NO_REFERENCE

if TYPE_CHECKING:
    from check.shapes import InputShape
    from core.cell import Cell

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / ".bundles-user"
DEFAULT_RESULTS = REPO / "results" / "check"
DEFAULT_REPORTS = REPO / "reports" / "check"
EXIT_OK, EXIT_ENGINE_FAILED, EXIT_USAGE, EXIT_UNWRITABLE, EXIT_MODEL_UNUSABLE = 0, 1, 2, 3, 4
# What the machine refuses: a full disk or quota, a read-only or forbidden folder (exit 3, as engines.run's).
UNWRITABLE = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG)


@dataclass(frozen=True)
class ModelCheck:
    """One model given: its bundle id, or the reason it could not be used; what check must say about it."""

    model: str  # as given on the command line (a path inside a folder named there)
    bundle: str = ""
    unusable: str = ""  # the model's own failure: nothing could run
    notes: Tuple[str, ...] = ()  # said once before the engines run: assumed shapes, checker warning, ...
    form: str = ""  # what the model is, as its summary line starts: "Q/DQ", "float model (no Q/DQ)", "dynamic ..."
    reference_error: str = ""
    cells: Tuple[str, ...] = field(default_factory=tuple)  # "<column>: <status>" once the engines ran, as said
    statuses: Tuple[str, ...] = field(default_factory=tuple)  # each cell's status, in the order of `cells`
    verdicts: Tuple[str, ...] = field(default_factory=tuple)  # each cell's verdict, in the order of `cells`
    report: str = ""  # an unusable model's report stem, its own in this run (unusable_stems)

    @property
    def failed(self) -> List[str]:
        """The statuses of the cells an engine failed: failing or crashed, and judged ("no reference" blames nobody)."""
        verdicts = self.verdicts or (NO_REFERENCE if self.reference_error else "",) * len(self.statuses)
        return [s for s, v in zip(self.statuses, verdicts) if s in FAILED and v != NO_REFERENCE]

    @property
    def checked(self) -> bool:
        return not self.unusable and not self.reference_error and not any(s in HARNESS for s in self.statuses)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from engines.results import ResultsUnwritable

    args = _parser().parse_args(argv)
    if args.bug:  # bug bundles for a checked model's failing cells (check/bug.py)
        from check.bug import bug_bundles
        return bug_bundles(args)
    try:
        return check(args)
    except CheckError as e:
        print(f"check: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, ResultsUnwritable) as e:  # a folder that cannot be written: the machine's fault
        why = unwritable(e)
        if not why:
            raise
        print(f"check: {why}", file=sys.stderr)
        return EXIT_UNWRITABLE


def unwritable(error: Exception) -> str:
    """"cannot write in …/results/check/: ENOSPC (No space left on device)" for a folder the machine refuses to
    write, "" for any other error."""
    from core.results import disk_error
    from engines.results import ResultsUnwritable

    if isinstance(error, ResultsUnwritable):
        return str(error)
    if not isinstance(error, OSError) or error.errno not in UNWRITABLE:
        return ""
    if error.filename:
        return disk_error(Path(error.filename).parent, error)
    code = errno.errorcode.get(error.errno or 0, f"errno {error.errno}")
    return f"cannot write in --out, --results or --reports: {code} ({error.strerror or error})"


def check(args: argparse.Namespace) -> int:
    """Prepare bundles (or take prepared ones), run every engine version, write and print the reports."""
    from check.index import unusable_stems, write_index
    from check.run import plan
    from check.shapes import parse_shapes

    if not args.models and not args.from_bundles:
        raise CheckError("name a model (.onnx file or folder), or --from-bundles DIR")
    if args.lint_only and not args.from_bundles:
        return lint_only(args.models)
    shapes = parse_shapes(args.shape or [])
    models = [] if args.from_bundles else model_files(args.models)
    if args.inputs and not Path(args.inputs).is_file():
        raise CheckError(f"--inputs {args.inputs}: no such file")
    if args.float_model and len(models) > 1:
        raise CheckError(f"--float-model is the float original of one model; {len(models)} models were given")
    if args.inputs and len(models) > 1:
        raise CheckError(f"--inputs names one file for one model, and {len(models)} models are given; put "
                         "<model>.npz beside each <model>.onnx instead")
    targets = [t.strip() for t in ",".join(args.target or []).split(",") if t.strip()]
    runs = [] if args.prepare_only or args.lint_only else plan(args.engine or [], args.trt_python or [],
                                                               args.rtx_python or [], targets)
    if args.from_bundles:
        root = Path(args.from_bundles)
        checks = [model_check(root, b) for b in prepared_ids(root)]
    else:
        root = Path(args.out)
        checks = prepare(args, models, shapes)
    usable = [o.bundle for o in checks if o.bundle]
    for o in checks:
        print_model_check(root, o)
    print_lint(root, usable)
    engines_run = not (args.prepare_only or args.lint_only)
    # said only where a model was usable: with none, no lint and no engine said anything of TensorRT
    unrun = trt_not_run([r.engine for r in runs]) if engines_run and usable else ""
    if engines_run and usable:
        cells = run_and_report(runs, root, usable, Path(args.results), Path(args.reports), args.results_source,
                               localize=args.localize, not_run=unrun)
        checks = [replace(o, cells=tuple(said for said, _, _ in cells.get(o.bundle, ())),
                          statuses=tuple(status for _, status, _ in cells.get(o.bundle, ())),
                          verdicts=tuple(verdict for _, _, verdict in cells.get(o.bundle, ()))) for o in checks]
    checks = unusable_stems(checks)
    for o in checks:
        if o.unusable and engines_run:
            print("wrote " + ", ".join(str(p) for p in unusable_report(o, Path(args.reports))))
    if engines_run:
        print(f"wrote {write_index(checks, Path(args.reports), unrun)}")
    return summary(checks, ran=engines_run, unrun=unrun)


def trt_not_run(engines: Sequence[str]) -> str:
    """The line a run without TensorRT itself says of it (its cells come only from an interpreter that has it, on a
    machine with an NVIDIA GPU), "" where TensorRT ran."""
    if "tensorrt" in engines:
        return ""
    from core.engines import spec
    from engines.tensorrt import gpu

    lines = ", ".join(dict.fromkeys(f"{v.split('.')[0]}.x" for g in spec("tensorrt").pins for v in g.versions))
    found = gpu.detect()
    where = "this machine has an NVIDIA GPU" if found.present else f"{found.reason or 'no NVIDIA GPU'} here"
    return (f"TensorRT ({lines}): not run here: no --trt-python was given, and {where}; what this check says "
            "of TensorRT is the lint's prediction, not a result (give --trt-python PY of an interpreter that has "
            "TensorRT, on a machine with an NVIDIA GPU, or --prepare-only and run the bundle there)")


def print_model_check(root: Path, result: ModelCheck) -> None:
    """What check says about one model before any engine runs: its bundle, or why it cannot be used."""
    if result.unusable:
        print(f"model {result.model}: cannot be checked: {result.unusable}")
        return
    print(f"bundle {result.bundle} in {root} (model {result.model})")
    for note in result.notes:
        print(f"  {note}")
    sys.stdout.flush()


def model_check(root: Path, bundle: str) -> ModelCheck:
    """A model's check from its bundle's case.json: the notes it carries and its reference error."""
    from check.inputs import MASK_RULE
    from check.shapes import AssumedDim, InputShape, describe
    from matrix.models import form_words
    from matrix.nodes import forms_view, main_form, read_meta, shape_notes

    meta = read_meta(root, bundle)
    notes: List[str] = []
    if meta.get("checker_warning"):
        notes.append(f"warning: {meta['checker_warning']}")
    forms = forms_view(meta)
    for f in forms:
        said = f"seed {f['seed']} ({f['case']}) documents it" if f["case"] else f["detail"]
        notes.append(f"quantization: {f['words']}: {f['ops']}; {said}; fix: {f['fix']}")
    prof = meta.get("profile") or {}
    shapes = {n: InputShape(tuple(p["min"]), tuple(p["opt"]), tuple(p["max"])) for n, p in prof.items()}
    assumed = [AssumedDim(a["input"], a["axis"], a["dim"], a["value"]) for a in meta.get("assumed_dims") or []]
    notes += describe(shapes, assumed, prof) + shape_notes(meta)
    generation = meta.get("input_generation") or {}
    notes += [f"input {n}: {g['why']}" for n, g in generation.items() if g.get("rule") not in ("uniform", "booleans")]
    if any(g.get("rule") in ("ones", "padded_tail") and "mask" in g.get("why", "") for g in generation.values()):
        notes.append(f"mask rule: {MASK_RULE} (give real masks with --inputs)")
    if meta.get("inputs_file"):
        notes.append(f"inputs from {meta['inputs_file']}")
    from check.rewrite import notes as rewrite_notes

    notes += rewrite_notes(meta.get("rewrite") or {}, root / bundle)
    error = str(meta.get("reference_error") or "")
    if error:
        notes.append(f"numerics not compared: {error}")
    model = (meta.get("source_model") or {}).get("name") or (meta.get("params") or {}).get("model") or bundle
    form = {"float": "float model (no Q/DQ)", "qdq": "Q/DQ"}.get(main_form(meta)) or form_words({"forms": forms})
    return ModelCheck(model=str(model), bundle=bundle, notes=tuple(notes), reference_error=error, form=form)


def print_lint(root: Path, ids: Sequence[str]) -> None:
    """Each bundle's lint findings, one a line, from its case.json (no onnx needed: a GPU box can print them)."""
    from matrix.nodes import read_meta
    from matrix.predict import summary_lines

    for bundle in ids:
        for line in summary_lines(bundle, read_meta(root, bundle).get("lint")):
            print(line)
    sys.stdout.flush()


def lint_only(models: Sequence[str]) -> int:
    """The TensorRT lint for each model, one line a finding; no bundle, no engine. A model it cannot read is one
    line and exit status 4; the others are still linted."""
    from check.lint import LintInputError, lint_path, to_json
    from matrix.predict import summary_lines

    status = EXIT_OK
    for model in model_files(models):
        try:
            findings = lint_path(model)
        except LintInputError as e:
            print(f"lint {model}: cannot be linted: {e}")
            status = EXIT_MODEL_UNUSABLE
            continue
        for line in summary_lines(str(model), json.loads(to_json(findings))):
            print(line)
    return status


def prepare(args: argparse.Namespace, models: Sequence[Path], shapes: Mapping[str, InputShape]) -> List[ModelCheck]:
    """One bundle per model, each on its own: a model that cannot be used is checked alone, never the end of the run.
    A model is sized from its declared shapes before anything is allocated: inputs at the shape they run at (and any one
tensor computed from them) over --max-input-bytes (2 GiB), or weights over --max-model-bytes (4 GiB), make it unusable,
its size in the reason; the others go on.

With several models, a --shape fixes only the dimensions each model leaves open (check.shapes.fit)."""
    from check.budget import Budget
    from check.isolated import Crashed, out_of_memory, run_isolated

    several = len(models) > 1
    check_shapes(models, shapes, several)
    budget = Budget.from_env(args.max_input_bytes, args.max_model_bytes)
    checks: List[ModelCheck] = []
    taken: List[str] = []
    for model in models:
        npz = Path(args.inputs) if args.inputs else beside(model)
        print(f"preparing {model}" + (f" with inputs {npz}" if npz else "") + " ...", flush=True)
        try:  # in a child process: a crash or an allocation that fails costs this model alone
            bundle_id = run_isolated(partial(
                _bundle_id, model, Path(args.out), inputs_npz=npz, shapes=shapes, seed=args.seed,
                tolerance_steps=args.tolerance, strict_shape_names=False, taken=list(taken),
                float_model=args.float_model, min_sqnr_db=args.min_sqnr, min_cosine=args.min_cosine,
                fit_shapes=several, budget=budget))
        except Crashed as e:  # a segfault or an abort (protobuf, an engine's C++) while the bundle was made
            checks.append(ModelCheck(model=str(model), unusable=f"crashed while preparing: {e.signal or e}"))
            continue
        except (MemoryError, OSError) as e:  # over what this machine has, though within the budget: this model alone
            if not out_of_memory(e):
                raise
            said = f": {_first_line(e)}" if str(e) else ""
            checks.append(ModelCheck(model=str(model), unusable=f"out of memory while preparing it "
                                     f"({type(e).__name__}{said}); lower {_budget_flags()} to refuse such a model "
                                     "before it allocates"))
            continue
        except CheckError as e:
            said = str(e)
            checks.append(ModelCheck(model=str(model), unusable=said[len(f"{model}: "):] if said.startswith(
                f"{model}: ") else said))
            continue
        except HarnessFailure as e:  # a bug of ours on this model: said, this model alone, never the run's end
            print(f"{model}: the check failed while preparing it, a bug in qdq-matrix, not the model's fault; "
                  f"please report it with this traceback:\n{e}", file=sys.stderr, end="")
            lines = str(e).strip().splitlines()
            checks.append(ModelCheck(model=str(model), unusable="the check itself failed while preparing it (a bug in "
                                     f"qdq-matrix, not the model's fault: {lines[-1] if lines else 'no message'})"))
            continue
        taken.append(bundle_id.split("/", 1)[1])
        checks.append(replace(model_check(Path(args.out), bundle_id), model=str(model)))
    return checks


def _bundle_id(model: Path, *args: object, **kwargs: object) -> str:
    """check.bundle.bundle_from_model's bundle id: what comes back from the child process that made it, which says
    every 15 s what it is doing (check.progress)."""
    from check.bundle import bundle_from_model
    from check.progress import Ticker

    with Ticker(f"preparing {model.name}"):
        try:
            return bundle_from_model(model, *args, **kwargs).id  # type: ignore[arg-type]
        except (CheckError, MemoryError, OSError):  # the model's, the user's or the machine's: prepare says which
            raise
        except Exception as e:  # anything else is ours: its traceback goes back with it
            raise HarnessFailure(traceback.format_exc()) from e


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0]


def _budget_flags() -> str:
    from check.budget import INPUT_FLAG, MODEL_FLAG

    return f"{INPUT_FLAG} or {MODEL_FLAG}"


def size(text: str) -> int:
    """argparse type: a size in bytes ("2GiB", "500MB", "1e9"; check.budget.parse_size)."""
    from check.budget import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def check_shapes(models: Sequence[Path], shapes: Mapping[str, InputShape], several: bool) -> None:
    """Usage errors of --shape, before any bundle is made: a name no model that can be read has as an input, a shape
    that does not fit the one model given, or, among several, a shape of another rank than an input with an open
    dimension (naming the model). A --shape name that only an unreadable model might have is a warning."""
    from check.bundle import declared_dims
    from check.shapes import check_fits, fit

    if not shapes:
        return
    inputs: Dict[Path, Dict[str, list]] = {}
    for model in models:
        try:
            inputs[model] = declared_dims(model)
        except (CheckError, OSError):  # the model's own report says why it cannot be used
            continue
    for model, declared in inputs.items():
        try:
            if several:
                fit(declared, shapes)
            else:
                for name, shape in shapes.items():
                    if name in declared:
                        check_fits(name, declared[name], shape)
        except CheckError as e:
            raise CheckError(f"{e} ({model})") from None
    known = {name for declared in inputs.values() for name in declared}
    unmatched = [n for n in shapes if n not in known]
    if unmatched and len(inputs) == len(models):
        raise CheckError(f"--shape names no input {unmatched[0]!r} of the model{'s' if several else ''} given "
                         f"({'their' if several else 'its'} inputs: {', '.join(sorted(known)) or 'none'})")
    for name in unmatched:
        print(f"warning: --shape {name} names no input of the models that could be read")


def beside(model: Path) -> Optional[Path]:
    """<model>.npz beside <model>.onnx, where there is one: that model's own inputs."""
    npz = model.with_suffix(".npz")
    return npz if npz.is_file() else None


def run_and_report(runs, root: Path, ids: Sequence[str], results: Path, reports: Path, source: str = "local",
                   localize: bool = False, not_run: str = "") -> Dict[str, List[Tuple[str, str, str]]]:
    """Run the bundles on each engine version, then write and print one per-node report per bundle (each saying
    `not_run`, what was not run at all: trt_not_run); returns, per bundle, ("<column>: <status>", status, verdict)
    for each cell (cell_words)."""
    from check.run import run_cells
    from matrix.merge import load_results
    from matrix.nodes import node_report, read_meta, write_node_reports

    label = ids[0].split("/", 1)[1] + (f"+{len(ids) - 1}" if len(ids) > 1 else "")
    for run in runs:
        print(f"running {len(ids)} bundle(s) on {run.label}{' with ' + run.python if run.python else ''} ...",
              flush=True)
    files = run_cells(runs, root, ids, results / label, ["--results-source", source])
    merged = load_results(files)
    found: Dict[str, List[Tuple[str, str, str]]] = {}
    for bundle in ids:
        cells = [c for c in merged.cells if c.bundle == bundle]
        meta = read_meta(root, bundle)
        found[bundle] = [(cell_words(c, bool(meta.get("reference_error"))), c.status, c.verdict) for c in cells]
        report = dict(node_report(cells, meta), not_run=not_run)
        if localize:
            report["localize"] = localized(root, bundle, cells)
        stem = bundle.split("/", 1)[1]
        try:
            paths = write_node_reports(report, reports, stem)
        except ImportError:  # no jinja2 (a GPU box's bare controller): JSON now, Markdown/HTML via `nox -s report`
            reports.mkdir(parents=True, exist_ok=True)
            paths = [reports / f"{stem}.json"]
            paths[0].write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            for col in report["columns"]:
                print(f"{col['heading']} [{col['hardware']}]: {col['status']}; {col['summary']}; {col['numerics']}")
        else:
            md = paths[0].read_text(encoding="utf-8")
            print(md.split("\n## Evidence", 1)[0].rstrip() + "\n")
        print("wrote " + ", ".join(str(p) for p in paths))
    print("cells: " + ", ".join(str(f) for f in files))
    return found


def cell_words(cell: "Cell", unreferenced: bool) -> str:
    """A cell as the summary line says it: "<column>: <status>"; where the model has no reference, a cell that ran it
    says so beside its status ("pass (no reference)": its outputs were not judged), and a failure before any output
    (parse or build, judged all the same) says its stage and the engine's error too."""
    from core.judge import ran_inputs
    from core.outcome import outcome

    column = f"{cell.engine}@{cell.engine_version}{' [' + _variant(cell) + ']' if cell.variant else ''}"
    if unreferenced and cell.verdict == NO_REFERENCE:
        return f"{column}: {cell.status} ({cell.verdict})"
    if not unreferenced or cell.status not in FAILED or ran_inputs(cell.status, cell.last_stage):
        return f"{column}: {cell.status}"
    error = cell.engine_reason or cell.error_line or (cell.error.splitlines() or [""])[0]  # why, not only where
    return f"{column}: {cell.status} at {outcome(cell).failed_stage} ({cell.verdict}), before any output: {error}"


def localized(root: Path, bundle: str, cells: Sequence) -> List[Dict]:
    """--localize for each cell of one bundle, at the bundle's own SQNR line (check.localize)."""
    from check.localize import localize_cells
    from engines.cells import measure
    from generators.bundle import load_bundle

    found = load_bundle(root / bundle)
    line = measure(found.meta).get("min_sqnr_db", DEFAULT_MIN_SQNR_DB)
    print(f"localizing {bundle}: every quantized activation marked as an output ...", flush=True)
    return localize_cells(found, cells, line)


def _variant(cell) -> str:
    from core.engines import variant_label

    return variant_label(cell.variant)


def unusable_report(result: ModelCheck, reports: Path) -> List[Path]:
    """The report of a model that could not be used: what was given and why, as JSON and Markdown, under a name no
    checked model's report has (check.index.unusable_stem)."""
    from check.index import unusable_stem
    from core.portable import scrub

    stem = result.report or unusable_stem(result.model, ())
    reports.mkdir(parents=True, exist_ok=True)
    name = Path(result.model).name
    reason = scrub(result.unusable)  # a model's or --inputs' path as result: never this machine's own
    record = {"schema": "qdq-matrix/check-unusable/1", "model": name, "path": scrub(result.model), "status": "unusable",
              "reason": reason}
    invalid = reason.startswith("invalid model: ")
    md = f"# {name}: {'invalid model' if invalid else 'not checked'}\n\n" + (
        "This model is invalid (the model's fault), so no engine was asked to judge it:" if invalid else
        f"{scrub(result.model)} could not be used, so no engine ran it:") + f"\n\n    {reason}\n"
    paths = [reports / f"{stem}.json", reports / f"{stem}.md"]
    paths[0].write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    paths[1].write_text(md, encoding="utf-8")
    return paths


def summary(checks: Sequence[ModelCheck], ran: bool = True, unrun: str = "") -> int:
    """The summary, a line a model, what did not run (`unrun`), and the exit status it adds up to."""
    print(f"\nsummary: {len(checks)} model{'s' if len(checks) != 1 else ''}")
    status = EXIT_OK
    for o in checks:
        if o.unusable:
            line = f"unusable: {o.unusable}"
        else:
            line = "; ".join(o.cells) if o.cells else ("bundle ready, no engine run" if not ran else "no cell")
            line = f"{o.form}; {line}" if o.form else line
            if o.reference_error:
                line += f"; {reference_words(o)}"
        print(f"  {o.model}: {line}")
        if o.failed:
            status |= EXIT_ENGINE_FAILED
        if not o.checked:
            status |= EXIT_MODEL_UNUSABLE
    if unrun:
        print(f"  {unrun}")
    print(f"exit status {status}: " + _status_words(status))
    return status


def reference_words(o: ModelCheck) -> str:
    """What a model without a reference says of it: its cells that ran it are "no reference" and blame no engine; a
    failure before any output (parse or build) needed none, and is judged."""
    from core.judge import reference_fault

    said = f"no reference, {reference_fault(o.reference_error)}"
    if o.failed:
        blameless = "no engine blamed where it ran the model; a failure before any output needs none" \
            if NO_REFERENCE in o.verdicts else "a failure before any output needs none"
        return f"{said} ({blameless}): {o.reference_error}"
    return f"{said}, no engine blamed: {o.reference_error}"


def _status_words(status: int) -> str:
    if status == EXIT_OK:
        return "every model checked, no engine failed"
    words = []
    if status & EXIT_ENGINE_FAILED:
        words.append("an engine failed a model")
    if status & EXIT_MODEL_UNUSABLE:
        words.append("a model could not be (fully) checked")
    return " and ".join(words)


def prepared_ids(root: Path) -> List[str]:
    """The user bundles already under root (made with --prepare-only)."""
    from generators.bundle import iter_bundles

    if not root.is_dir():
        raise CheckError(f"--from-bundles {root}: no such folder")
    ids = [b.id for b in iter_bundles(root) if b.meta.get("case") == "user_model"]
    if not ids:
        raise CheckError(f"--from-bundles {root}: no user-model bundles (make them with --prepare-only)")
    return ids


def model_files(given: Sequence[str]) -> List[Path]:
    """The .onnx files named, and those inside folders named; CheckError for a path that is neither."""
    found: List[Path] = []
    for item in map(Path, given):
        if item.is_dir():
            inside = sorted(item.rglob("*.onnx"))
            if not inside:
                raise CheckError(f"{item}: a folder with no .onnx model in it")
            found += inside
        elif item.is_file():
            found.append(item)
        else:
            raise CheckError(f"{item}: no such model file or folder")
    return list(dict.fromkeys(found))


def positive_float(text: str) -> float:
    """argparse type: a finite number above zero (nan, inf, 0 and -5 are refused, exit status 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number above zero")
    return value


def cosine(text: str) -> float:
    """argparse type: a cosine similarity threshold in (0, 1]."""
    value = positive_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a cosine similarity is at most 1")
    return value


def seed_int(text: str) -> int:
    """argparse type: a whole number >= 0 (numpy's generators refuse negative seeds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number >= 0")
    return value


def _parser() -> argparse.ArgumentParser:
    doc = __doc__.split("\n\n")
    parser = ArgumentParser(prog="python -m check", description=doc[0].splitlines()[0],
                                     epilog="\n\n".join(doc[2:]), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="ONNX model files or folders of them")
    parser.add_argument("--inputs", default=None,
                        help="inputs as a .npz file, by input name, for one model (default: <model>.npz beside the "
                             "model, else generated with --seed)")
    parser.add_argument("--shape", action="append", metavar="NAME:1x3x224x224[,OPT,MAX]",
                        help="shape of an input: fixed, or min,opt,max for an optimization profile (repeatable; "
                             "default for a dynamic dimension: batch 1, any other 64)")
    parser.add_argument("--seed", type=seed_int, default=0, help="seed for generated inputs (default 0)")
    parser.add_argument("--tolerance", type=positive_float, default=2.0,
                        help="the error in output steps that the report states beside SQNR (quantization step, else "
                             "max|reference|/127; default 2); a whole model is judged by --min-sqnr and --min-cosine")
    parser.add_argument("--min-sqnr", type=positive_float, default=DEFAULT_MIN_SQNR_DB, metavar="DB",
                        help="an output passes with SQNR against the simulated Q/DQ reference at or above this, in dB "
                             f"(default {DEFAULT_MIN_SQNR_DB:g}; docs/numerics.md says where it comes from)")
    parser.add_argument("--min-cosine", type=cosine, default=DEFAULT_MIN_COSINE, metavar="C",
                        help=f"... and cosine similarity at or above this, in (0, 1] (default {DEFAULT_MIN_COSINE:g})")
    parser.add_argument("--max-input-bytes", type=size, metavar="SIZE",
                        help="refuse a model whose inputs at the shape they run at, or any one tensor computed from "
                             "them, need more (default $QDQ_MAX_INPUT_BYTES, else 2GiB; check/budget.py)")
    parser.add_argument("--max-model-bytes", type=size, metavar="SIZE",
                        help="refuse a model whose weights (initializers and constants, external data too) need more "
                             "(default $QDQ_MAX_MODEL_BYTES, else 4GiB)")
    parser.add_argument("--float-model", metavar="F.onnx",
                        help="the float model the quantized one came from: its outputs for the same inputs are the "
                             "second comparison (quantization loss apart from engine fidelity)")
    parser.add_argument("--localize", action="store_true",
                        help="for each ONNX Runtime and OpenVINO cell, name the first node whose quantized output "
                             "drifts below --min-sqnr (every quantized activation marked as an output; "
                             "docs/numerics.md)")
    parser.add_argument("--engine", action="append", metavar="ENGINE",
                        help="onnxruntime, openvino, tensorrt-rtx or tensorrt (repeatable; default: those installed, "
                             "and tensorrt for each --trt-python)")
    parser.add_argument("--trt-python", action="append", metavar="PY", help="an interpreter that has TensorRT")
    parser.add_argument("--rtx-python", action="append", metavar="PY",
                        help="an interpreter that has TensorRT-RTX (default: this one, where it has tensorrt_rtx)")
    parser.add_argument("--target", action="append", metavar="SM86,SM89",
                        help="TensorRT-RTX ahead-of-time targets, one column each (default: its own default set)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="bundle folder (default: .bundles-user/)")
    parser.add_argument("--prepare-only", action="store_true",
                        help="write the bundles and stop (ship them to a GPU box)")
    parser.add_argument("--from-bundles", metavar="DIR", help="run bundles made by --prepare-only (needs no onnx)")
    parser.add_argument("--lint-only", action="store_true",
                        help="print the TensorRT lint's predictions and stop: no bundle, no engine "
                             "(with --from-bundles: the predictions stored in the bundles)")
    parser.add_argument("--results", default=str(DEFAULT_RESULTS), help="results folder (default: results/check/)")
    parser.add_argument("--reports", default=str(DEFAULT_REPORTS), help="report folder (default: reports/check/)")
    parser.add_argument("--bug", metavar="MODEL", help="bug bundles for a checked model's failing cells (check/bug.py)")
    parser.add_argument("--results-source", default="local", choices=("local", "observed"),
                        help="what the cells' lines claim; only reports/observed/MANIFEST.json makes a committed file "
                             "observed (nox -s observe)")
    return parser


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # the options alone: no engine's package, no numpy (a fresh clone's
        _parser().print_help()                # nox -s check -- --help, before the session's environment is made)
        sys.exit(EXIT_OK)
    from engines.tensorrt import lifeline

    lifeline.keep()  # nox, or whoever named itself in $QDQ_PARENT_PID: this check, and so its engines, end with it
    sys.exit(main())
