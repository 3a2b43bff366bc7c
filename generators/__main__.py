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
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple  # noqa: E402

from cases import all_cases, bundle_id, get_case  # noqa: E402
from core.cli import ArgumentParser  # noqa: E402
from core.threads import hold_signals, release_signals, start_held  # noqa: E402
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
    root = bundles_root() if out is None else out
    todo = write.select(case_ids, wanted)
    report = _Report(todo)
    # the whole catalogue: the conformance bundles too (docs/conformance.md), written by a process of their own beside
    # this one (their own folder), which then takes the catalogue's bundles from the same list as this process does,
    # so that two cores write both and end together
    shared = _Shared(len(todo)) if not case_ids and not wanted else None
    if shared is not None:
        write.preload(todo, out)
    helper = _helper_beside(todo, out, shared) if shared is not None else None
    try:
        for index in iter(shared.take, None) if shared is not None else range(len(todo)):
            report.add(index, write.write_bundle(*todo[index], out))
            if shared is not None:
                report.drain(shared)
            if report.failed or report.crashed:
                break
    except OSError as e:  # a bundle folder that cannot be written: one line, never a traceback
        report.failed = report.failed or f"{e.strerror or e} ({e.filename or root})"
    finally:
        if shared is not None:
            shared.stop()
    status = 0 if helper is None else report.rest(shared, helper)
    return _summary(report, root, out, status, whole=shared is not None)


def _summary(report: "_Report", root: Path, out: Optional[Path], status: int, whole: bool) -> int:
    """The last line (or the error that ended the write), the stale bundles pruned after a whole catalogue written;
    the exit status."""
    if report.failed:
        print(f"error: cannot write bundles in {root}: {report.failed}", file=sys.stderr)
        return EXIT_USAGE
    if report.crashed:
        print(report.crashed, file=sys.stderr, end="")
        return 1
    missing = [i for i, p in enumerate(report.paths) if p is None]
    if missing:  # the helper died (a signal) with bundles it had taken
        print(f"error: the writer beside this one ended before it wrote {len(missing)} bundles, "
              f"{bundle_id(*report.todo[missing[0]])} first", file=sys.stderr)
        return 1
    if whole:
        write.prune([p for p in report.paths if p is not None], out)
    print(f"{len(report.paths)} bundles in {root}: {report.counts['written']} written, {report.counts['cached']} "
          "cached")
    return status


class _Report:
    """The catalogue's bundles as they are written, by either process: one progress line each, in the order done."""

    def __init__(self, todo: List[Tuple[Any, dict]]) -> None:
        self.todo = todo
        self.paths: List[Optional[Path]] = [None] * len(todo)
        self.counts = {"written": 0, "cached": 0}
        self.failed = ""  # an OSError's words: the bundle folder cannot be written
        self.crashed = ""  # the helper's traceback

    def add(self, index: int, written: write.Written) -> None:
        self.paths[index] = written.path
        self.counts[written.status] += 1
        done = sum(self.counts.values())
        print(f"[{done}/{len(self.todo)}] {bundle_id(*self.todo[index])} {written.status}", flush=True)

    def told(self, told: "_Told") -> None:
        """One report of the helper's."""
        if told.path:
            self.add(told.index, write.Written(Path(told.path), told.status))
        self.failed = self.failed or told.oserror
        self.crashed = self.crashed or told.traceback

    def drain(self, shared: "_Shared") -> None:
        """The helper's reports that came so far (none more once it ended)."""
        try:
            while shared.reports.poll():
                self.told(shared.reports.recv())
        except EOFError:
            pass

    def rest(self, shared: "_Shared", helper: multiprocessing.process.BaseProcess) -> int:
        """The helper's reports until it ends, then its exit status."""
        while True:
            try:
                self.told(shared.reports.recv())
            except EOFError:
                return _ended(helper)


class _Told(NamedTuple):
    """What the helper tells of one catalogue bundle: its folder and status, or why it could not write it."""

    index: int
    path: str = ""
    status: str = ""
    oserror: str = ""  # the words of an OSError: the bundle folder cannot be written
    traceback: str = ""  # any other error (a builder's), as this process would have printed it


class _Shared:
    """The catalogue's bundles as one list that both writing processes take from, and the helper's reports."""

    def __init__(self, total: int) -> None:
        context = multiprocessing.get_context("fork")
        self.total = total
        self._next = context.Value("i", 0)
        self.reports, self.sender = context.Pipe(duplex=False)

    def take(self) -> Optional[int]:
        """The index of the next bundle nobody has taken; None when each one is taken."""
        with self._next.get_lock():
            index = self._next.value
            if index >= self.total:
                return None
            self._next.value = index + 1
        return index

    def stop(self) -> None:
        """Nobody takes another bundle."""
        with self._next.get_lock():
            self._next.value = self.total


def _helper_beside(todo: List[Tuple[Any, dict]], out: Optional[Path],
                   shared: _Shared) -> multiprocessing.process.BaseProcess:
    """The conformance writers (onnx's node tests, then the int8 companion), then a share of the catalogue, in a forked
    process (started before this one starts any engine thread)."""
    sys.stdout.flush()
    held = hold_signals()  # a Ctrl-C during the fork would be dropped in an at-fork callback (core.threads)
    proc = multiprocessing.get_context("fork").Process(target=_exit_with,
                                                       args=(_helper_main, todo, out, shared, held))
    start_held(proc, held)
    try:
        release_signals(held)  # a signal held during the fork is acted on here, where the helper is ended after it
    except BaseException:
        proc.kill()
        proc.join()
        raise
    shared.sender.close()  # the helper's end: its reports end (EOFError) when the helper does
    return proc


def _helper_main(todo: List[Tuple[Any, dict]], out: Optional[Path], shared: _Shared, held: Any = None) -> int:
    """The conformance bundles, then catalogue bundles until none is left, each reported: the conformance writers'
    status. `held`: the signal mask the parent forked it with (its signals are acted on from here)."""
    release_signals(held)
    shared.reports.close()
    status = _conformance_main([] if out is None else ["--out", str(out)])
    try:
        for index in iter(shared.take, None):
            told = _written(index, todo[index], out)
            shared.sender.send(told)
            if not told.path:
                break
    except BrokenPipeError:  # the other process is gone (it failed): nobody to report to
        pass
    return status


def _written(index: int, variant: Tuple[Any, dict], out: Optional[Path]) -> _Told:
    """Write one catalogue bundle in the helper: what to tell."""
    try:
        written = write.write_bundle(*variant, out)
    except OSError as e:
        return _Told(index, oserror=f"{e.strerror or e} ({e.filename or (bundles_root() if out is None else out)})")
    except Exception:  # a builder's error
        return _Told(index, traceback=traceback.format_exc())
    return _Told(index, str(written.path), written.status)


def _conformance_main(argv: List[str]) -> int:
    """Both conformance bundle sets (docs/conformance.md): the first failing writer's status."""
    from generators import onnx_node_tests, qdq_companion

    return onnx_node_tests.main(argv) or qdq_companion.main(argv)


def _exit_with(main_: Callable[..., int], *args: Any) -> None:
    """Run a command's main in this (forked) process and exit with its status."""
    status = main_(*args)
    sys.stdout.flush()
    sys.exit(status)


def _ended(proc: multiprocessing.process.BaseProcess) -> int:
    """The forked writer's exit status, once it ended (a signal: 1)."""
    proc.join()
    return proc.exitcode if proc.exitcode is not None and proc.exitcode >= 0 else 1


def _tune_malloc() -> None:
    """glibc's malloc told to serve large arrays from its heap and keep them there once freed: by default each one of
    over 128 KiB is mapped anew and unmapped when freed, and a fresh write page-faulted 235,000 times (52,000 after) on
    the detector-sized Conv bundles' arrays, onnx.reference's im2col above all. Elsewhere (no mallopt): nothing."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 256 << 20) or mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # an older glibc: 32 MiB at most
    mallopt(_M_TRIM_THRESHOLD, 1 << 30)
    # and no fastbins: onnx's version converter builds and frees its table of adapters on every call (217 calls, about
    # 5 ms each); glibc's malloc and free were a quarter of that (perf: malloc_consolidate, _int_free, unlink_chunk),
    # and the calls take about a tenth less CPU without fastbins
    mallopt(_M_MXFAST, 0)


_M_MXFAST, _M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = 1, -1, -3  # glibc's malloc.h


if __name__ == "__main__":
    _tune_malloc()
    sys.exit(main())
