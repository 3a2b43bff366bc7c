"""`python -m generators list|write`: list bundle ids, or build and write bundles (`write` without --case or --param:
the catalogue's, then the conformance bundles of generators.onnx_node_tests and generators.qdq_companion)."""

from __future__ import annotations

import os

# numpy's OpenBLAS threads spun idle after the builders' and onnx.reference's small products: about 1 s of CPU of a
# fresh write, in both of its processes. Read once, when numpy is first imported (below); a value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable, Dict, List, Optional, Sequence, Tuple  # noqa: E402

from cases import all_cases, bundle_id, get_case  # noqa: E402
from core.cli import ArgumentParser  # noqa: E402
from generators import write  # noqa: E402
from generators.bundle import bundles_root  # noqa: E402

EXIT_USAGE = 2


class UsageError(Exception):
    """A bad case id or parameter on the command line."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        case_ids, wanted = _selection(args.case, args.param)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "list":
        return _list(write.select(case_ids, wanted))
    return _write(case_ids if args.case else [], wanted, args.out)


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m generators", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("list", "print bundle ids"), ("write", "build and write bundles")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--case", action="append", default=[], metavar="ID", help="a case id (repeatable)")
        p.add_argument("--param", action="append", default=[], metavar="K=V", help="keep variants with K=V")
        if name == "write":
            p.add_argument("--out", type=Path, default=None, help="bundle root (default: $QDQ_BUNDLES or .bundles)")
    return parser


def _selection(case_ids: List[str], raw_params: List[str]) -> Tuple[List[str], Dict[str, list]]:
    """Case ids and parameter filter from the command line; UsageError names what is wrong."""
    try:
        cases = [get_case(c) for c in dict.fromkeys(case_ids)] if case_ids else all_cases()
    except KeyError as e:
        raise UsageError(e.args[0]) from None
    external = [c.id for c in cases if c.external]
    if external:
        raise UsageError(f"{external[0]} is not generated from a seed: its bundles are users' own models, made with "
                         "`python -m check MODEL.onnx` (or `--prepare-only --out DIR`)")
    return [c.id for c in cases], _parse_params(raw_params, cases)


def _parse_params(raw: List[str], cases: list) -> Dict[str, list]:
    """{axis: [values]} from K=V strings, each V matched against str() of the axis values."""
    wanted: Dict[str, list] = {}
    for item in raw:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {item!r}: write it as NAME=VALUE")
        values = [v for c in cases for v in c.axes.get(key, ())]
        if not any(key in c.axes for c in cases):
            axes = sorted({a for c in cases for a in c.axes})
            raise UsageError(f"no selected case has a parameter {key!r}; parameters: {', '.join(axes)}")
        matched = [v for v in values if _spells(v, text)]
        if not matched:
            known = ", ".join(dict.fromkeys(str(v) for v in values))
            raise UsageError(f"{key}={text!r} is not in the sweep; values: {known}")
        wanted.setdefault(key, []).extend(m for m in matched if m not in wanted[key])
    return wanted


def _spells(value: object, text: str) -> bool:
    if isinstance(value, bool):
        return text.lower() in ((str(value).lower(), "yes", "1") if value else (str(value).lower(), "no", "0"))
    return str(value) == text


def _list(selected: list) -> int:
    for case, params in selected:
        print(bundle_id(case, params))
    print(f"{len(selected)} bundles")
    return 0


def _write(case_ids: List[str], wanted: Dict[str, list], out: Optional[Path]) -> int:
    counts = {"written": 0, "cached": 0}

    def progress(done: int, total: int, bundle: str, status: str) -> None:
        counts[status] += 1
        print(f"[{done}/{total}] {bundle} {status}", flush=True)

    root = bundles_root() if out is None else out
    # the whole catalogue: the conformance bundles too (docs/conformance.md), written by a process of their own beside
    # the catalogue's (their own folder), so that two cores write both in the time of the longer
    conformance = _conformance_beside(out) if not case_ids and not wanted else None
    try:
        paths = write.write_all(case_ids, wanted, out, progress=progress)
    except OSError as e:  # a bundle folder that cannot be written: one line, never a traceback
        print(f"error: cannot write bundles in {root}: {e.strerror or e} ({e.filename or root})", file=sys.stderr)
        if conformance is not None:
            _ended(conformance)
        return EXIT_USAGE
    print(f"{len(paths)} bundles in {root}: {counts['written']} written, {counts['cached']} cached")
    return 0 if conformance is None else _ended(conformance)


def _conformance_beside(out: Optional[Path]) -> multiprocessing.process.BaseProcess:
    """The conformance writers (onnx's node tests, then the int8 companion), started in a forked process (before this
    one starts any engine thread)."""
    sys.stdout.flush()
    proc = multiprocessing.get_context("fork").Process(
        target=_exit_with, args=(_conformance_main, [] if out is None else ["--out", str(out)]))
    proc.start()
    return proc


def _conformance_main(argv: List[str]) -> int:
    """Both conformance bundle sets (docs/conformance.md): the first failing writer's status."""
    from generators import onnx_node_tests, qdq_companion

    return onnx_node_tests.main(argv) or qdq_companion.main(argv)


def _exit_with(main_: Callable[[List[str]], int], argv: List[str]) -> None:
    """Run a command's main in this (forked) process and exit with its status."""
    status = main_(argv)
    sys.stdout.flush()
    sys.exit(status)


def _ended(proc: multiprocessing.process.BaseProcess) -> int:
    """The forked writer's exit status, once it ended (a signal: 1)."""
    proc.join()
    return proc.exitcode if proc.exitcode is not None and proc.exitcode >= 0 else 1


if __name__ == "__main__":
    sys.exit(main())
