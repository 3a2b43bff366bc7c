"""Command line: report writes the matrix, diff compares two versions, bugs bundles bugs, conformance writes the
conformance page alone, observe lists observations."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from core.cli import ArgumentParser
from matrix.merge import MergeResult, catalogue_bundles, load_results

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS = (REPO / "results", REPO / "reports" / "observed")


CATALOGUE_BROKEN = 3  # a case module does not import: nothing is judged, nothing written


def main(argv: Optional[Sequence[str]] = None) -> int:
    from cases import CaseModuleError

    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except CaseModuleError as e:  # every cell is judged again against the catalogue: a stale verdict is no answer
        import traceback

        print("".join(traceback.format_exception(type(e.error), e.error, e.error.__traceback__)).rstrip(),
              file=sys.stderr)
        print(f"matrix {args.command}: {e}; the cells are judged against the catalogue as it is now, so nothing is "
              f"written until it imports (exit {CATALOGUE_BROKEN})", file=sys.stderr)
        return CATALOGUE_BROKEN


def report(args: argparse.Namespace) -> int:
    """Merge every results file and write matrix.md, matrix.html, matrix.json, junit.xml and the per-node reports,
    all rendered in a staging folder first and then swapped in; exit 1 when a results file or a cell was refused, 3
    when --out cannot be written. Nothing is rendered where the inputs have not moved since the reports in --out
    were (matrix/inputs.py), unless --force."""
    from matrix import inputs

    key = inputs.digest(_results_paths(args.results), report_bundles(args.bundles))
    done = None if args.force else inputs.unchanged(Path(args.out), key)
    if done is not None:
        print(f"report: nothing changed since {done['date']} ({key['files']} inputs: results, observations, bundles, "
              f"catalogue, templates); the reports in {args.out} stand as they are (--force renders them again)")
        for line in done.get("summary", [])[:1]:
            print(line)
        _say_over_budget(Path(args.out))
        return int(done.get("status", 0))
    with _no_cycle_collection():
        loaded = _load(args.results, catalogue_bundles(args.bundles))
        if loaded is None:
            return 2
        try:
            paths, view = _write_all_reports(loaded, Path(args.out), Path(args.bundles))
        except OSError as e:
            return _unwritable("report", Path(args.out), e)
        from matrix.console import summary_lines

        summary = summary_lines(view)  # from the view the reports were rendered from: nothing computed twice
        errors = loaded.errors
        del loaded, view  # freed while the collector is off: it finds nothing of them to walk when it is on again
    from core.words import many

    print("\n".join(summary))
    for p in paths:
        print(f"wrote {p}")
    _say_over_budget(Path(args.out))
    refused = sorted({p.file for p in errors if p.whole_file})
    cells = [p for p in errors if not p.whole_file]
    status = 1 if errors else 0
    try:
        inputs.remember(Path(args.out), key, paths, status, summary)
    except OSError as e:
        return _unwritable("report", Path(args.out), e)
    if refused:
        print(f"matrix report: {many(len(refused), 'results file')} refused, their cells are not in the reports: "
              f"{', '.join(refused)}", file=sys.stderr)
    if cells:
        print(f"matrix report: {len(cells)} cells refused (unlike their file's session header), not in the reports: "
              f"{', '.join(f'{p.file}:{p.line}' for p in cells[:5])}{', ...' if len(cells) > 5 else ''}",
              file=sys.stderr)
    return status


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off while a report reads and renders: the merged cells are millions of objects that
    live until the end, and each full collection walked them all again (a sixth of a report's time, and no memory
    saved: the report makes no garbage cycles worth it). On again after, whatever happened."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _say_over_budget(out: Path) -> None:
    """A warning on stdout per decision page over its size budget (matrix.render.BUDGETS)."""
    from matrix.render import over_budget

    for warning in over_budget(out):
        print(f"matrix report: warning: {warning}")


EXIT_UNWRITABLE = 3  # an output folder that cannot be written (read-only, full): nothing half-written is left


def _unwritable(command: str, folder: Path, error: OSError) -> int:
    """One line naming the folder and the errno, and the exit status that says so."""
    from core.results import disk_error

    print(f"matrix {command}: {disk_error(folder, error)}", file=sys.stderr)
    return EXIT_UNWRITABLE


def _results_paths(given: Optional[List[str]]) -> List[Path]:
    """The results files and folders a report reads: those given, else the default ones that exist."""
    return [Path(p) for p in given] if given else [p for p in DEFAULT_RESULTS if p.exists()]


def report_bundles(bundles: str) -> List[Path]:
    """The bundle folders a report reads: --bundles, and the user bundles the per-node reports find models in."""
    return [Path(bundles), REPO / ".bundles-user"]


def _write_all_reports(result: MergeResult, out: Path, bundles: Path) -> Tuple[List[Path], Dict[str, Any]]:
    """Render every report into a staging folder inside out, then swap each into place: a report that cannot be
    rendered leaves the reports that were there untouched, and they never disagree with each other. Return the paths
    written and the report's view (matrix.view.build_view, built once), which the console summary reads."""
    import shutil
    import tempfile

    from matrix.beside import beside
    from matrix.conformance import read_manifest
    from matrix.nodes import write_all
    from matrix.render import write_cells, write_diffs, write_pages
    from matrix.view import build_view, side_views

    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    if (out / "nodes").is_dir():
        (staging / "nodes").mkdir()  # swapped in even when empty: no per-node report outlives its cells
    try:
        # the machine's other core: a child sends back the parts of the view that need nothing else of it (the
        # upgrade answer, the conformance page), then writes cells/ and junit.xml
        manifest = read_manifest(bundles)
        with beside(lambda: side_views(result, manifest), lambda views: write_cells(result, staging)) as side:
            nodes = write_all(result.cells, staging / "nodes", [bundles, REPO / ".bundles-user"])
            view = build_view(result, out=staging, node_reports=nodes, elsewhere=side.answer)
            written = write_pages(result, view, staging) + [Path(n["html"]) for n in nodes]
            write_diffs(view["upgrade"], staging)
            side.wait()  # the child's files are whole before anything is swapped in
        old = staging / ".old"
        old.mkdir()
        for entry in sorted(p for p in staging.iterdir() if p.name != ".old"):
            if (out / entry.name).is_dir():
                os.replace(out / entry.name, old / entry.name)
            os.replace(entry, out / entry.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / p.relative_to(staging) for p in written], view


NOTHING_TO_COMPARE = 4  # matrix diff: a version named never ran on any machine of this project (one line says why)


def diff_cmd(args: argparse.Namespace) -> int:
    """Print what changed between two versions of one engine, as Markdown; exit 4 where a version never ran."""
    from matrix.conformance import diff_markdown
    from matrix.diff import NeverRun, diff

    result = _load(args.results, ())
    if result is None:
        return 2
    conformance = result.conformance  # their own section, in their own words
    cells = result.cells
    if args.model:  # a user's model: its bundle only (python -m check made it)
        from cases.user_model import bundle_ids_for

        wanted = [i for m in args.model for i in bundle_ids_for(m)]
        cells = tuple(c for c in cells if c.bundle in wanted)
        if not cells:
            print(f"matrix diff: no cells for {', '.join(wanted)}; run `python -m check` on the model first",
                  file=sys.stderr)
            return 2
    try:
        found = diff(cells, args.engine, args.from_version, args.to_version, args.hardware, args.drift)
    except NeverRun as e:  # not a usage error: the version is real, and no machine here could install it
        print(f"matrix diff: {e}", file=sys.stderr)
        return NOTHING_TO_COMPARE
    except ValueError as e:
        print(f"matrix diff: {e}", file=sys.stderr)
        return 2
    text = found.markdown()
    if not args.model:
        extra = diff_markdown(conformance, args.engine, args.from_version, args.to_version)
        text += ("\n\n" + extra.rstrip("\n")) if extra else ""
    print(text)
    if args.out:
        try:
            Path(args.out).write_text(text + "\n", encoding="utf-8")
        except OSError as e:
            return _unwritable("diff", Path(args.out).parent, e)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    return 1 if args.strict and found.regressions else 0


MANY_BUGS = 100  # more bug bundles than this to write: a line says how many before the work starts


def bugs_cmd(args: argparse.Namespace) -> int:
    """Write a bug bundle for every failing or unexpected cell, or for the one cell named, or for the failing cells of
    the user models named; a user model whose bundle is not here is listed as needing the model, not refused."""
    from core.words import many
    from matrix.bugbundle import earlier, make_all, model_cells, select, wanted

    named = [args.cell, args.engine, args.version]
    if any(named) and not all(named):
        print("matrix bugs: --cell needs --engine and --version (and --hardware, --variant where several match)",
              file=sys.stderr)
        return 2
    result = _load(args.results, ())
    if result is None:
        return 2
    if args.cell:
        try:
            cells = [select(result.all_cells, args.cell, args.engine, args.version, args.hardware, args.variant)]
        except ValueError as e:
            print(f"matrix bugs: {e}", file=sys.stderr)
            return 2
    elif args.model:
        mine = model_cells(result.cells, args.model)
        if not mine:
            known = sorted({c.bundle for c in result.cells if c.case == "user_model"})
            print(f"matrix bugs: no cells of {', '.join(args.model)}; user models with cells: "
                  f"{', '.join(known) or 'none (run python -m check MODEL first)'}", file=sys.stderr)
            return 2
        cells = [c for c in mine if wanted(c, args.include_documented, args.include_unreferenced)]
    else:  # a conformance entry is a table's answer, not a bug to file: named with --cell, it gets its bundle
        cells = [c for c in result.cells if wanted(c, args.include_documented, args.include_unreferenced)]
        if not args.include_documented:
            _say_documented(result.cells)
    if not cells:
        print("no failing or unexpected cells: no bug bundles to write")
        return 0
    if len(cells) > MANY_BUGS:  # minutes of work and hundreds of MB: say so before it starts, not after
        print(f"writing {many(len(cells), 'bug bundle')} to {args.out}, a model, its data and repro.py each (the whole "
              "catalogue's: minutes and several hundred MB); --cell CELL --engine E --version V, or --model M, "
              "writes one", flush=True)
    try:
        made = make_all(cells, result.all_cells, Path(args.bundles), Path(args.out), archive=args.zip,
                        user_bundles=Path(args.user_bundles))
    except OSError as e:
        return _unwritable("bugs", Path(args.out), e)
    for m in made:
        what = f"{m.cell.bundle} on {m.cell.engine} {m.cell.engine_version} [{m.cell.setting}]"
        if m.refused and not m.needs_model:
            print(f"matrix bugs: refused {what}: {m.refused}", file=sys.stderr)
        elif not m.refused:
            print(f"wrote {m.path}/ ({m.cell.status}, {m.cell.verdict})" + (f" and {m.archive}" if m.archive else ""))
    _say_needs_model([m for m in made if m.needs_model], Path(args.user_bundles))
    refused = sum(1 for m in made if m.refused and not m.needs_model)
    waiting = sum(1 for m in made if m.needs_model)
    models = len({m.cell.bundle for m in made if m.needs_model})
    print(f"{many(len(made) - refused - waiting, 'bug bundle')} written to {args.out}" + (f", {refused} refused"
          if refused else "") + (f", {many(waiting, 'cell')} of {many(models, 'user model')} need the model"
                                 if waiting else ""))
    older = earlier(Path(args.out), made)
    if older:
        print(f"  {many(len(older), 'other bug bundle')} in {args.out} from an earlier run, not written now (first: "
              f"{older[0].relative_to(args.out)}); remove them or write to an empty --out")
    return 1 if refused else 0


def _say_documented(cells: Sequence) -> None:
    """One line for the failing cells left out because their error is a documented signature, by signature."""
    from core.words import many
    from matrix.bugbundle import documented_failure

    left = Counter(c.signature for c in cells if c.verdict != "as documented" and documented_failure(c))
    if left:
        counts = ", ".join(f"{n} {name}" for name, n in sorted(left.items(), key=lambda kv: (-kv[1], kv[0])))
        print(f"not bundled: {many(sum(left.values()), 'failing cell')} whose error is a documented signature "
              f"({counts}): an upstream source documents that refusal, nothing new to file; --include-documented "
              "writes them")


def _say_needs_model(made: Sequence, root: Path) -> None:
    """One line per user model whose failing cells wait for its bundle, then how to make it."""
    from matrix.bugbundle import show

    by_model: dict = {}
    for m in made:
        by_model.setdefault(m.cell.bundle, []).append(f"{m.cell.engine} {m.cell.engine_version}")
    for bundle, columns in sorted(by_model.items()):
        print(f"needs the model: {bundle} ({len(columns)} failing cells: {', '.join(sorted(set(columns)))})")
    if by_model:
        print(f"  a user model's bundle is not in the repository: its owner runs `python -m check MODEL.onnx` (bundle "
              f"in {show(root)}) or `nox -s bugs -- --model MODEL.onnx --user-bundles DIR`")


def conformance_cmd(args: argparse.Namespace) -> int:
    """Write the conformance page alone (conformance.md, .html, .json in --out) and print its table per engine
    version; `report` writes it too, with the rest."""
    import datetime as _dt

    from matrix.conformance import read_manifest
    from matrix.render import conformance_files
    from matrix.view import conformance_page

    result = _load(args.results, ())
    if result is None:
        return 2
    view = {"generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "conformance": conformance_page(result.conformance, read_manifest(Path(args.bundles)))}
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in conformance_files(view).items():
            (out / name).write_text(text, encoding="utf-8")
    except OSError as e:
        return _unwritable("conformance", out, e)
    page = view["conformance"]
    print(f"conformance: {page['headline']}")
    for r in page["summary"]:
        print(f"  {r['column']}: {r['all']['text']}")
    for g in page["idle"]:
        print(f"  {', '.join(g['columns'])}: not run ({g['reason']})")
    if page["companion"]["tests"]:
        print(f"int8 companion: {page['companion']['headline']}")
        for f in page["companion"]["forms"]:
            print(f"  {f['column']}: {f['text']}")
    print(f"wrote {out / 'conformance.md'}, {out / 'conformance.html'} and {out / 'conformance.json'}")
    return 0


def observe_cmd(args: argparse.Namespace) -> int:
    """List observed files in reports/observed/MANIFEST.json (their digest, machine and command), or check it."""
    from matrix import observed

    try:
        manifest = observed.load(Path(args.root))
        if args.check:
            problems = observed.verify(manifest)
            commit, changed = observed.since_commit(manifest)
            for p in problems + changed:
                print(f"matrix observe: {p}", file=sys.stderr)
            print(f"{len(manifest.entries)} observed files listed in {observed.show(manifest.path)}"
                  + (f", {len(problems)} problems" if problems else ", all present with their digests")
                  + (f"; {len(changed)} entries differ from the manifest of commit {commit} (commit them, or "
                     "`git checkout` the folder)" if changed else f"; the manifest is the one of commit {commit}"))
            return 1 if problems or changed else 0
        if not args.files:
            raise observed.ManifestError("name the files to list (under reports/observed/), or --check")
        new = observed.add(manifest, [Path(f) for f in args.files], args.machine or "", args.command or "")
    except observed.ManifestError as e:
        print(f"matrix observe: {e}", file=sys.stderr)
        return 2
    for rel, entry in sorted(new.entries.items()):
        if manifest.entries.get(rel) != entry:
            was = manifest.entries.get(rel)
            print(f"{'updated' if was else 'added'} {rel}: sha256 {entry.sha256[:16]}..., machine: {entry.machine}; "
                  f"command: {entry.command}")
    print(f"wrote {observed.show(observed.save(new))} ({len(new.entries)} files)")
    return 0


def _load(given: Optional[List[str]], catalogue: Sequence[str]) -> Optional[MergeResult]:
    """Merged results, problems on stderr; None (and why) when nothing could be read."""
    paths = given if given else [p for p in DEFAULT_RESULTS if p.exists()]
    if not paths:
        where = ", ".join(str(p) for p in DEFAULT_RESULTS)
        print(f"matrix: no results found (looked in {where}); run `python -m engines.run --engine ...` "
              "first, or name files with --results", file=sys.stderr)
        return None
    result = load_results(paths, catalogue)
    for p in result.problems:
        if p.level != "note":  # notes (duplicates resolved, idle columns) are in the reports themselves
            print(f"matrix: {p}", file=sys.stderr)
    if not result.all_cells:
        print(f"matrix: nothing could be read: no cells in {len(result.files)} results files under "
              f"{', '.join(map(str, paths))}", file=sys.stderr)
        return None
    return result


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m matrix", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="merge results files and write the matrix reports")
    rep.add_argument("--results", action="append", metavar="PATH",
                     help="a results file or folder (repeatable; default: results/ and reports/observed/)")
    rep.add_argument("--out", default=str(REPO / "reports"), help="folder for the reports (default: reports/)")
    rep.add_argument("--bundles", default=os.environ.get("QDQ_BUNDLES", str(REPO / ".bundles")),
                     help="bundle folder whose reproducers get a row even without cells (default: .bundles)")
    rep.add_argument("--force", action="store_true", help="render even when no input changed since the last report")
    rep.set_defaults(func=report)
    dif = sub.add_parser("diff", help="what changed between two versions of one engine, as Markdown",
                         epilog="exit status: 0 compared (also with changes), 1 --strict and something regressed, 2 "
                                "usage error or no such cells, 3 the output cannot be written or a case module does "
                                "not import, 4 a version never ran on any machine of this project (nothing to "
                                "compare; one line says why)")
    dif.add_argument("engine")
    dif.add_argument("from_version", metavar="FROM")
    dif.add_argument("to_version", metavar="TO")
    dif.add_argument("--results", action="append", metavar="PATH",
                     help="a results file or folder (repeatable; default: results/ and reports/observed/)")
    dif.add_argument("--hardware", default=None, help="compare on this hardware label only")
    dif.add_argument("--drift", type=float, default=0.5, help="numeric drift threshold in steps (default 0.5)")
    dif.add_argument("--out", default=None, help="also write the Markdown to this file")
    dif.add_argument("--strict", action="store_true", help="exit 1 when anything regressed")
    dif.add_argument("--model", action="append", metavar="MODEL.onnx",
                     help="only the bundle of this user model (checked with `python -m check`; repeatable)")
    dif.set_defaults(func=diff_cmd)
    bug = sub.add_parser("bugs", help="bug bundles (model, data, repro.py, ISSUE.md) for failing or unexpected cells")
    bug.add_argument("--results", action="append", metavar="PATH",
                     help="a results file or folder (repeatable; default: results/ and reports/observed/)")
    bug.add_argument("--bundles", default=os.environ.get("QDQ_BUNDLES", str(REPO / ".bundles")),
                     help="the reproducer bundles that ran (default: $QDQ_BUNDLES or .bundles)")
    bug.add_argument("--out", default=str(REPO / "bug-bundles"), help="output folder (default: bug-bundles/)")
    bug.add_argument("--cell", metavar="BUNDLE_ID", help="only this bundle id (any status); needs --engine, --version")
    bug.add_argument("--engine", help="the cell's engine (with --cell)")
    bug.add_argument("--version", help="the cell's engine version (with --cell)")
    bug.add_argument("--hardware", default=None, help="the cell's hardware label, where several match")
    bug.add_argument("--variant", default=None, metavar="K=V",
                     help="the cell's column options as the report names them (target=SM89, x64quantprecision=1; "
                          "'default' for the engine's own), where several match")
    bug.add_argument("--zip", action="store_true", help="also write <folder>.zip next to each bug bundle")
    bug.add_argument("--include-documented", action="store_true",
                     help="also cells that do what an upstream source documents (as documented: nothing new to file; "
                          "their ISSUE.md says so first)")
    bug.add_argument("--include-unreferenced", action="store_true",
                     help="also cells of a user model the reference cannot run (no reference: the model's or its "
                          "inputs' fault; their ISSUE.md says so first)")
    bug.add_argument("--model", action="append", metavar="MODEL",
                     help="only the failing cells of this user model: its .onnx file, bundle id or name (repeatable)")
    bug.add_argument("--user-bundles", default=str(REPO / ".bundles-user"),
                     help="where python -m check wrote the user models' bundles (default: .bundles-user)")
    bug.set_defaults(func=bugs_cmd)
    con = sub.add_parser("conformance", help="the conformance page alone: conformance.md, .html and .json")
    con.add_argument("--results", action="append", metavar="PATH",
                     help="a results file or folder (repeatable; default: results/ and reports/observed/)")
    con.add_argument("--bundles", default=os.environ.get("QDQ_BUNDLES", str(REPO / ".bundles")),
                     help="the bundle folder whose conformance manifest lists the conversions (default: .bundles)")
    con.add_argument("--out", default=str(REPO / "reports"), help="folder for the page (default: reports/)")
    con.set_defaults(func=conformance_cmd)
    obs = sub.add_parser("observe", help="list files under reports/observed/ as observations in its MANIFEST.json")
    obs.add_argument("files", nargs="*", metavar="FILE", help="files under reports/observed/ (committed with it)")
    obs.add_argument("--machine", help="what it ran on: GPU or CPU, driver, CUDA, libraries (a new file needs it)")
    obs.add_argument("--command", help="what made it (default for a results file: its session headers' commands)")
    obs.add_argument("--check", action="store_true",
                     help="check the manifest instead: every listed file present with its digest, every file listed")
    obs.add_argument("--root", default=str(REPO / "reports" / "observed"), help=argparse.SUPPRESS)
    obs.set_defaults(func=observe_cmd)
    return parser


if __name__ == "__main__":
    sys.exit(main())
