"""Command line: check your own quantized ONNX model on every engine version here, with a per-node INT8 report.

    python -m check model.onnx [more.onnx | a folder] [--inputs x.npz] [--shape input:1x3x224x224]
    python -m check model.onnx --engine tensorrt --trt-python /path/py-8.5 --trt-python /path/py-8.6
    python -m check model.onnx --prepare-only --out user-bundles/    # bundles to run on a GPU machine
    python -m check --from-bundles user-bundles/ --trt-python bin/python-trt-8.6.0   # there: pytest + numpy only
    python -m check model.onnx --lint-only       # the TensorRT lint's predictions alone, no bundle, no engine

Before any engine runs, each bundle's lint findings (predictions, stored in its case.json) are printed one a line;
the per-node report then sets them against what each TensorRT version did.

Bad input (not ONNX, checker failure, missing files, wrong input names or shapes, unknown engine, an
interpreter without TensorRT) is one line on stderr and exit status 2; a cell that fails is exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from check import CheckError

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / ".bundles-user"
DEFAULT_RESULTS = REPO / "results" / "check"
DEFAULT_REPORTS = REPO / "reports" / "check"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.bug:  # bug bundles for a checked model's failing cells (check/bug.py)
        from check.bug import bug_bundles
        return bug_bundles(args)
    try:
        return check(args)
    except CheckError as e:
        print(f"check: {e}", file=sys.stderr)
        return 2


def check(args: argparse.Namespace) -> int:
    """Prepare bundles (or take prepared ones), run every engine version, write and print the reports."""
    from check.run import plan

    if not args.models and not args.from_bundles:
        raise CheckError("name a model (.onnx file or folder), or --from-bundles DIR")
    if args.lint_only and not args.from_bundles:
        return lint_only(args.models)
    targets = [t.strip() for t in ",".join(args.target or []).split(",") if t.strip()]
    runs = [] if args.prepare_only or args.lint_only else plan(args.engine or [], args.trt_python or [],
                                                               args.rtx_python or [], targets)
    if args.from_bundles:
        root, ids = Path(args.from_bundles), prepared_ids(Path(args.from_bundles))
    else:
        root, ids = Path(args.out), prepare(args)
    for bundle in ids:
        print(f"bundle {bundle} in {root}")
    print_lint(root, ids)
    if args.prepare_only or args.lint_only:
        return 0
    return run_and_report(runs, root, ids, Path(args.results), Path(args.reports), args.results_source)


def print_lint(root: Path, ids: Sequence[str]) -> None:
    """Each bundle's lint findings, one a line, from its case.json (no onnx needed: a GPU box can print them)."""
    from matrix.nodes import read_meta
    from matrix.predict import summary_lines

    for bundle in ids:
        for line in summary_lines(bundle, read_meta(root, bundle).get("lint")):
            print(line)
    sys.stdout.flush()


def lint_only(models: Sequence[str]) -> int:
    """The TensorRT lint for each model, one line a finding; no bundle, no engine."""
    from check.lint import LintInputError, lint_path, to_json
    from matrix.predict import summary_lines

    for model in model_files(models):
        try:
            findings = lint_path(model)
        except LintInputError as e:
            raise CheckError(str(e)) from e
        for line in summary_lines(str(model), json.loads(to_json(findings))):
            print(line)
    return 0


def prepare(args: argparse.Namespace) -> List[str]:
    """Write one bundle per model; their ids."""
    from check.bundle import bundle_from_model

    models = model_files(args.models)
    shapes = parse_shapes(args.shape or [])
    names = unique_names(models)
    ids = []
    for model in models:
        bundle = bundle_from_model(model, Path(args.out), inputs_npz=args.inputs, shapes=shapes, seed=args.seed,
                                   name=names[model], tolerance_steps=args.tolerance)
        ids.append(bundle.id)
    return ids


def run_and_report(runs, root: Path, ids: Sequence[str], results: Path, reports: Path, source: str = "local") -> int:
    """Run the bundles on each engine version, then write and print one per-node report per bundle."""
    from check.run import run_cells
    from matrix.merge import load_results
    from matrix.nodes import node_report, read_meta, write_node_reports

    label = ids[0].split("/", 1)[1] + (f"+{len(ids) - 1}" if len(ids) > 1 else "")
    files = []
    for run in runs:
        print(f"running {len(ids)} bundle(s) on {run.label}{' with ' + run.python if run.python else ''} ...",
              flush=True)
        files.append(run_cells(run, root, ids, results / label, ["--results-source", source]))
    merged = load_results(files)
    failed = 0
    for bundle in ids:
        cells = [c for c in merged.cells if c.bundle == bundle]
        failed += sum(c.status in ("fail", "crashed") for c in cells)
        report = node_report(cells, read_meta(root, bundle))
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
    return 1 if failed else 0


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


def unique_names(models: Sequence[Path]) -> Dict[Path, str]:
    """A bundle slug per model: its file name, with its folder's name in front where two names clash."""
    from cases.user_model import model_slug

    slugs = {m: model_slug(m) for m in models}
    clashing = {s for s in slugs.values() if list(slugs.values()).count(s) > 1}
    names: Dict[Path, str] = {}
    for m, s in slugs.items():
        name = f"{model_slug(m.parent.name or 'model')}-{s}" if s in clashing else s
        n, base = 1, name
        while name in names.values():
            n += 1
            name = f"{base}-{n}"
        names[m] = name
    return names


def parse_shapes(given: Sequence[str]) -> Dict[str, List[int]]:
    """--shape name:1x3x224x224 (repeatable) -> {name: [1, 3, 224, 224]}."""
    shapes: Dict[str, List[int]] = {}
    for text in given:
        name, _, dims = text.rpartition(":")
        try:
            values = [int(d) for d in dims.lower().split("x")]
        except ValueError:
            values = []
        if not name or not values or any(v <= 0 for v in values):
            raise CheckError(f"--shape {text!r}: write it as NAME:1x3x224x224")
        shapes[name] = values
    return shapes


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m check", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="ONNX model files or folders of them")
    parser.add_argument("--inputs", default=None, help="inputs as a .npz file, by input name (default: seeded random)")
    parser.add_argument("--shape", action="append", metavar="NAME:1x3x224x224", help="shape of a dynamic input")
    parser.add_argument("--seed", type=int, default=0, help="seed for generated inputs (default 0)")
    parser.add_argument("--tolerance", type=float, default=2.0,
                        help="tolerance in output steps (quantization step, else max|reference|/127; default 2)")
    parser.add_argument("--engine", action="append", metavar="ENGINE",
                        help="onnxruntime, openvino, tensorrt-rtx or tensorrt (repeatable; default: those installed, "
                             "and tensorrt for each --trt-python)")
    parser.add_argument("--trt-python", action="append", metavar="PY", help="an interpreter that has TensorRT")
    parser.add_argument("--rtx-python", action="append", metavar="PY",
                        help="an interpreter that has TensorRT-RTX (default: this one, where it has tensorrt_rtx)")
    parser.add_argument("--target", action="append", metavar="SM86,SM89",
                        help="TensorRT-RTX ahead-of-time targets, one column each (default: its own default set)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="bundle folder (default: .bundles-user/)")
    parser.add_argument("--prepare-only", action="store_true", help="write the bundles and stop (ship them to a GPU box)")
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
    sys.exit(main())
