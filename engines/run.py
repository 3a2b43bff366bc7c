"""The cell runner, called without test ids: it asks the results files first, and starts pytest only for the rest.

    python -m engines.run --engine onnxruntime [-n 2] [--fresh] [-- PYTEST ARGS]
    python -m engines.run --engine tensorrt-rtx --engine-version 1.7.1.116 --trt-python .nox/rtx-1-7-1-116/bin/python \\
        --column '{}' --column '{"options": {"plugin_link": "libtensorrt_rtx.so"}, "plugins_only": true}' \\
        --column '{"options": {"target": "SM75"}, "only_cases": ["fp8_qdq"]}'

A column is one engine version with its options over its bundles, written to one results file (engines.plan.Column).
Before anything starts, every column's results files are read: a bundle whose stored cell stands for a new run of it
(same digest, engine version, hardware, options; engines.reuse says which statuses stand) is reused, and a column
with nothing left says "N reused" and starts nothing. The columns with work run together in one run of the cell
runner (engines/runner.py, executed by pytest with --cells-plan), so the xdist workers start once; pytest only drives
(one writer per results file, a crash costs one cell, timeouts). The flags name one column; `--column` names one
more each time, as a JSON object of its fields: engine, version, python (a TensorRT-family interpreter, or one that
has an in-process engine's version), results (a file), options (the engine's own options by name, core.engines),
only_cases (case ids), plugins_only and per_target (also the bundles built once per target); a field it leaves out
comes from the flags. `--version V[=PYTHON]` repeats every column for each version.

An in-process engine (ONNX Runtime, OpenVINO) runs under the interpreter that has its version: this one, or the
column's python=; each such interpreter gets a pytest of its own, side by side with the others. A column with work
that no interpreter at hand can run is a usage error.

Before anything starts, each results folder must take a file (a read-only or full disk is one line naming the
folder and the errno, exit 3), and the owner files of runs that were killed are removed. The counts at the end are
what the pytest controllers recorded (engines.plan.summary_path), never what was planned. Every process started here
dies with this one (engines.tensorrt.lifeline), and this one with the nox session that started it.

Exit status: pytest's where it ran (0, or 1 for failing cells; the worst where several ran); 0 when every cell was
reused; 2 a usage error; 3 a results folder that cannot be written; 5 no bundle to run at all.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import queue
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from cases import get_case
from core.cell import Cell
from core.cli import ArgumentParser
from core.engines import ENGINES, spec, variant_label
from core.portable import portable_command
from core.tempdirs import owned, reap
from core.threads import WAIT_SLICE_S, start_quiet
from engines.base import EngineInfo
from engines.plan import PROGRESS_PREFIX, Column, pytest_command, read_progress, summary_path, write_plan
from engines.results import REPO, ResultsUnwritable, check_writable, clean_stale_owners, stored_cells
from engines.reuse import reusable
from engines.tensorrt import lifeline
from generators.bundle import bundle_ids, bundles_root

# A --column's fields and the JSON type each takes (engines.plan.Column's fields of the same names).
SPEC_FIELDS = {"engine": str, "version": str, "python": str, "results": str, "options": dict, "only_cases": list,
               "plugins_only": bool, "per_target": bool}
# pytest says only its summary (engines.run passes on what matters); --tb=no: no failures section, whose text
# nobody reads (a failing cell is its results line) and which pytest builds in time quadratic in the cells
PYTEST_QUIET = ["-q", "-rN", "--no-header", "--tb=no"]
# pytest's own exit statuses for a run it stopped (interrupted, internal error, usage error, no tests): never a crash
PYTEST_STOPPED = (2, 3, 4, 5)
RUNNER = "python -m engines.run"
EXIT_UNWRITABLE = 3  # a results folder that cannot be written: the run is broken, nothing is judged
# One-node bundles (Case.one_node), and on a quick engine (Column.quick) every reproducer, per pytest test: each
# costs the engine milliseconds, and a test of its own costs pytest and xdist about as much again; a batch of this
# many is about a second of work on the slowest engine here.
BATCH = 32


class UsageError(Exception):
    """A column that cannot be run as given: exit 2 with the reason."""


@dataclass(frozen=True)
class Decision:
    """What one column needs: the bundles to run, how many stored cells stand, and whether it can run here."""

    column: Column
    run: Tuple[str, ...]
    reused: int
    here: bool  # this interpreter can run it (an in-process engine at another version cannot)
    why_not_here: str = ""

    @property
    def title(self) -> str:
        return column_title(self.column)


def column_title(column: Column) -> str:
    """"TensorRT for RTX 1.7.1.116 (target=SM75)": a column as a person reads it."""
    name = spec(column.engine).title if column.engine in ENGINES else column.engine
    variant = spec(column.engine).variant(column.options) if column.engine in ENGINES else {}
    cases = column.only_cases
    only = "plugin bundles" if column.plugins_only else (", ".join(cases) if len(cases) < 3 else f"{len(cases)} cases")
    if column.per_target:
        only = " and ".join(x for x in (only, "per-target bundles") if x)
    extra = ", ".join(x for x in (variant_label(variant), only and f"only {only}") if x)
    version = column.version or (installed_version(column.engine) if column.engine in ENGINES else "") or "(installed)"
    return f"{name} {version}" + (f" ({extra})" if extra else "")


def column_label(column: Column) -> str:
    """A column's test-id prefix: engine, version and the options off their defaults."""
    variant = spec(column.engine).variant(column.options) if column.engine in ENGINES else {}
    return f"{column.engine}-{column.version or 'installed'}" + "".join(f",{k}={v}" for k, v in sorted(variant.items()))


# ---- columns from the command line ---------------------------------------------------------------------------


def resolved_options(engine: str, given: Dict[str, Optional[str]]) -> Dict[str, str]:
    """Every option of the engine's descriptor: given, else its environment variable, else its default."""
    if engine not in ENGINES:
        return {}
    try:
        return spec(engine).resolve(given)
    except ValueError as e:
        raise UsageError(str(e)) from None


def column_spec(text: str) -> Dict[str, Any]:
    """One --column: a JSON object of column fields (SPEC_FIELDS), read once, here; UsageError for anything else."""
    try:
        spec_ = json.loads(text)
    except ValueError as e:
        raise UsageError(f"--column {text!r}: not a JSON object ({e})") from None
    if not isinstance(spec_, dict):
        raise UsageError(f"--column {text!r}: not a JSON object of column fields ({', '.join(SPEC_FIELDS)})")
    for key, value in spec_.items():
        kind = SPEC_FIELDS.get(key)
        if kind is None:
            raise UsageError(f"--column {text!r}: no column field {key!r}; fields: {', '.join(SPEC_FIELDS)}")
        if not isinstance(value, kind) or (kind is dict and not all(isinstance(v, str) for v in value.values())) \
                or (kind is list and not all(isinstance(v, str) for v in value)):
            said = {str: "a string", dict: "an object of strings", list: "a list of strings", bool: "true or false"}
            raise UsageError(f"--column {text!r}: {key} is {said[kind]}")
    return spec_


def columns_from(args: argparse.Namespace) -> List[Column]:
    """The columns the command line names, each with its label, resolved options and the command that reruns it."""
    flags = {o.name: getattr(args, _dest(o.flag), None) for e in ENGINES.values() for o in e.options}
    if args.trt_timing_cache_off:
        flags["timing_cache"] = "off"
    base = {"engine": args.engine, "version": args.engine_version or "", "python": "",
            "results": args.results or "", "options": {k: v for k, v in flags.items() if v is not None},
            "only_cases": tuple(args.only_case), "plugins_only": args.plugin_bundles_only,
            "per_target": args.per_target_bundles}
    specs = [{**base, **s, "options": {**base["options"], **s.get("options", {})}}
             for s in map(column_spec, args.column or ["{}"])]
    versions = [v.partition("=")[::2] for v in args.version] + [("", p) for p in args.trt_python]
    if versions:
        specs = [dict(s, version=v or s["version"], python=p or s["python"]) for v, p in versions for s in specs]
    columns = []
    for s in specs:
        if not s.get("engine"):
            raise UsageError("name an engine: --engine NAME (or engine=NAME in every --column)")
        options = resolved_options(s["engine"], s["options"])
        unknown = sorted(set(s["options"]) - set(options)) if s["engine"] in ENGINES else []
        if unknown:
            raise UsageError(f"{s['engine']} has no option {unknown[0]!r}; options: {', '.join(options) or 'none'}")
        column = Column(engine=s["engine"], options=options, version=s["version"], python=s["python"],
                        isolate=args.trt_isolate, results=s["results"], only_cases=tuple(s["only_cases"]),
                        plugins_only=bool(s["plugins_only"]), per_target=bool(s["per_target"]))
        columns.append(replace(column, label=column_label(column) if len(specs) > 1 else "",
                               command=_rerun_command(column)))
    return _unique(columns)


def _unique(columns: List[Column]) -> List[Column]:
    """Two columns that would write one results file cannot run together (one writer per file)."""
    seen: Dict[Tuple[Any, ...], Column] = {}
    for c in columns:
        key = (c.engine, c.version, c.python, tuple(sorted(c.options.items())), c.results)
        if key in seen:
            raise UsageError(f"two columns of {column_title(c)} with the same options would write one results file; "
                             "give them different options, or one --column")
        seen[key] = c
    return columns


def _rerun_command(column: Column) -> str:
    """How to run this column again, as its cells record it (no path of this machine)."""
    words = [RUNNER, "--engine", column.engine]
    if column.version:
        words += ["--engine-version", column.version]
    if column.python:
        words.append(f"--trt-python={column.python}")
    if column.engine in ENGINES:
        for name, value in spec(column.engine).variant(column.options).items():
            words += [spec(column.engine).option(name).flag, value]
    if column.plugins_only:
        words.append("--plugin-bundles-only")
    for case in column.only_cases:
        words += ["--only-case", case]
    if column.per_target:
        words.append("--per-target-bundles")
    return portable_command(words)


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


# ---- what is already there ------------------------------------------------------------------------------------


def bundle_metas(root: Path) -> Dict[str, Dict[str, Any]]:
    """Every bundle's case.json by id (a bundle whose case.json cannot be read gets {}: it runs, and says why)."""
    found = {}
    for bid in bundle_ids(root):
        try:
            found[bid] = json.loads((root / bid / "case.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            found[bid] = {}
    return found


def selection(column: Column, metas: Dict[str, Dict[str, Any]]) -> List[str]:
    """The bundles a column runs (Column.select, the cell runner's choice too)."""
    return column.select(list(metas), lambda i: bool((metas[i].get("trt") or {}).get("plugins")),
                         lambda i: bool((metas[i].get("trt") or {}).get("per_target")))


@dataclass(frozen=True)
class Expected:
    """What a cell of a column would say about its engine, known without starting it; None fields are unknown."""

    version: str
    variant: Dict[str, str]
    cell_options: Dict[str, str]
    same_machine: Callable[[str, Dict[str, str]], bool]
    static_not_run: bool


def expected(column: Column) -> Optional[Expected]:
    """A column's reuse key without its engine: the version it must be (or the one installed here), its variant and
    options, and the adapter's own check of a hardware label; None where only a probe can say (a TensorRT-family
    interpreter of unknown version, a custom adapter)."""
    if column.engine not in ENGINES:
        return None
    adapter = _adapter_class(column.engine)
    version = column.version or ("" if column.python else installed_version(column.engine))
    if not version or not hasattr(adapter, "same_machine"):
        return None
    return Expected(version, spec(column.engine).variant(column.options), dict(column.options), adapter.same_machine,
                    bool(getattr(adapter, "static_not_run", False)))


def _adapter_class(engine: str) -> Any:
    import importlib

    module, cls = spec(engine).adapter.split(":")
    return getattr(importlib.import_module(module), cls)


def installed_version(engine: str) -> str:
    """The version of an engine's package in this interpreter, from its metadata (nothing imported); "" if none."""
    try:
        return metadata.version(spec(engine).module)
    except metadata.PackageNotFoundError:
        return ""


def runs_here(column: Column) -> str:
    """Why no interpreter at hand can run the column ("" where one can): an in-process engine at another version
    than this interpreter's, and no python= of its own."""
    if column.engine not in ENGINES or spec(column.engine).family == "tensorrt" or not column.version:
        return ""
    if column.python:
        return "" if Path(column.python).exists() else f"{column.python}: no such interpreter"
    have = installed_version(column.engine)
    if have == column.version:
        return ""
    return f"this interpreter has {spec(column.engine).module} {have or 'not installed'}, not {column.version}"


class Store:
    """Results files read once each: their cells by reuse key, or none where the schema refuses the file; and the
    digests a column's decision is remembered by (`decided`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files: Dict[Path, Dict[Tuple[str, ...], Cell]] = {}
        self._digests: Dict[Path, str] = {}
        self._metas: Dict[str, str] = {}

    def cells(self, path: Path) -> Dict[Tuple[str, ...], Cell]:
        if path not in self._files:
            # nothing from a file that is missing, unreadable, or refused by its schema (the writer sets it aside)
            self._files[path] = stored_cells(path) if path.is_file() else {}
        return self._files[path]

    def digest(self, path: Path) -> str:
        """sha256 of a results file's bytes ("" for none)."""
        if path not in self._digests:
            try:
                self._digests[path] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                self._digests[path] = ""
        return self._digests[path]

    def meta_digest(self, bundle: str, meta: Dict[str, Any]) -> str:
        """What a bundle's case.json says, as one digest (its own meta_digest where it has one)."""
        if bundle not in self._metas:
            self._metas[bundle] = str(meta.get("meta_digest") or hashlib.sha256(
                json.dumps(meta, sort_keys=True, default=str).encode("utf-8")).hexdigest())
        return self._metas[bundle]

    def candidates(self, column: Column, version: str) -> List[Path]:
        if column.results:
            return [Path(column.results)]
        return sorted(self.folder.glob(f"{column.engine}-{version}-*.jsonl"))


def decide(column: Column, metas: Dict[str, Dict[str, Any]], store: Store, fresh: bool) -> Decision:
    """Which of a column's bundles must run; the others' stored cells stand. A column found whole before, from the
    same results files, bundles, catalogue and code on the same machine, is not read again (`decided`)."""
    wanted = selection(column, metas)
    why = runs_here(column)
    key = None if fresh else expected(column)
    if key is None:
        return Decision(column, tuple(wanted), 0, not why, why)
    paths = store.candidates(column, key.version)
    remembered = _decided(column, key, wanted, metas, paths, store)
    said = _remembered(remembered)
    if said is not None and all(key.same_machine(h, d) == m for h, d, m in said.get("machines", [])):
        return Decision(column, (), len(wanted), not why, why)
    found: Dict[str, Cell] = {}
    machines: Dict[Any, Tuple[str, Dict[str, str], bool]] = {}  # each machine the files name, asked once whether here
    for path in paths:
        for cell in store.cells(path).values():
            machine = _machine(cell, machines, key)
            if (cell.engine == column.engine and cell.engine_version == key.version and cell.variant == key.variant
                    and cell.run.get("cell_options") == key.cell_options and machine[2]
                    and cell.digest == metas.get(cell.bundle, {}).get("digest")):  # as results.info_key keys it
                found[cell.bundle] = cell
    cases: Dict[str, Any] = {}  # each case looked up once per column (a column holds hundreds of one case's cells)
    run = tuple(b for b in wanted if not _stands(found.get(b), metas[b], key.static_not_run, cases))
    if not run and wanted:
        _remember(remembered, [[h, d, here] for h, d, here in machines.values()])
    return Decision(column, run, len(wanted) - len(run), not why, why)


def _machine(cell: Cell, machines: Dict[Any, Tuple[str, Dict[str, str], bool]],
             key: Expected) -> Tuple[str, Dict[str, str], bool]:
    """The cell's machine (hardware label and detail) and whether it is this one, asked of the adapter once per
    machine, not once per cell (a CPU engine's check reads /proc/cpuinfo). A stored cell's detail is strings (its
    schema), so the pairs name the machine."""
    name = (cell.hardware, tuple(sorted(cell.hardware_detail.items())))
    if name not in machines:
        machines[name] = (cell.hardware, dict(cell.hardware_detail),
                          key.same_machine(cell.hardware, cell.hardware_detail))
    return machines[name]


DECIDED = ".decided"  # <results folder>/.decided/<column>.json: a column whose stored cells all stood, and from what


def _decided(column: Column, key: Expected, wanted: Sequence[str], metas: Dict[str, Dict[str, Any]],
             paths: Sequence[Path], store: Store) -> Tuple[Path, str]:
    """Where a column's decision is remembered, and the digest of everything it rests on: the column, the reuse key
    without the machine, every wanted bundle's case.json, the results files' bytes, and the catalogue's and the
    runner's code (what engines.reuse judges by). The machine is checked apart (its recorded hardware labels)."""
    ident = json.dumps([column.engine, column.version, column.python, sorted(column.options.items()), column.results,
                        list(column.only_cases), column.plugins_only, column.per_target, list(column.bundles)])
    h = hashlib.sha256(ident.encode("utf-8"))
    h.update(json.dumps([key.version, key.variant, key.cell_options, key.static_not_run, _code_digest()],
                        sort_keys=True).encode("utf-8"))
    for b in wanted:
        h.update(f"\0{b}\0{store.meta_digest(b, metas[b])}".encode("utf-8"))
    for path in paths:
        h.update(f"\0{path.name}\0{store.digest(path)}".encode("utf-8"))
    folder = Path(column.results).parent if column.results else store.folder
    return folder / DECIDED / (hashlib.sha256(ident.encode("utf-8")).hexdigest()[:24] + ".json"), h.hexdigest()


def _remembered(decided: Tuple[Path, str]) -> Optional[Dict[str, Any]]:
    """The remembered decision, where it was made from exactly this (None where not)."""
    path, digest = decided
    try:
        said = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return said if isinstance(said, dict) and said.get("digest") == digest else None


def _remember(decided: Tuple[Path, str], machines: List[List[Any]]) -> None:
    path, digest = decided
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"digest": digest, "machines": machines}, sort_keys=True), encoding="utf-8")
    except OSError:  # not remembered: the next run reads the files, as it always could
        pass


_CODE: List[str] = []


def _code_digest() -> str:
    """sha256 of the catalogue's and the engines' Python sources: what judges whether a stored cell stands."""
    if not _CODE:
        h = hashlib.sha256()
        for folder in ("cases", "engines"):
            for path in sorted((REPO / folder).rglob("*.py")):
                h.update(path.relative_to(REPO).as_posix().encode("utf-8") + b"\0" + path.read_bytes())
        _CODE.append(h.hexdigest())
    return _CODE[0]


def _stands(cell: Optional[Cell], meta: Dict[str, Any], static_not_run: bool, cases: Dict[str, Any]) -> bool:
    if cell is None or not meta:
        return False
    if cell.case not in cases:
        try:
            cases[cell.case] = get_case(cell.case)
        except KeyError:
            cases[cell.case] = None
    return reusable(cell, meta, cases[cell.case], static_not_run)


# ---- running the rest -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Launched:
    """What the pytest runs did: the worst exit status, the cells their controllers recorded and the stored cells
    they counted as standing (those engines.run found, and any a controller found itself), and why a run stopped
    early or left no summary ("" where each said what it wrote)."""

    status: int
    written: int
    reused: int
    unknown: str = ""
    alone: Tuple[Decision, ...] = ()  # the bundles of batches that ended early, per column: to run one per test

    def then(self, again: "Launched") -> "Launched":
        """This launch and the one that ran its batches' leftovers alone, as one: a broken run's status first, else
        the worse, and the cells of both."""
        broken = [s for s in (self.status, again.status) if s not in (0, 1)]
        return Launched(broken[0] if broken else max(self.status, again.status), self.written + again.written,
                        self.reused + again.reused, self.unknown or again.unknown, again.alone)


def launch(decisions: Sequence[Decision], workers: int, bundles: Path, extra: Sequence[str],
           fresh: bool, out: Callable[[str], None], meanwhile: Callable[[], None] = lambda: None,
           batch: int = 0, own_process: bool = False,
           ended: Callable[[Sequence[Decision]], None] = lambda _: None) -> Launched:
    """One pytest run per interpreter that the columns with work need (this one for the TensorRT family, whose
    workers run under each column's own; another for an in-process engine installed there), side by side: the run
    with the most cells gets `workers` xdist workers, the others one each; `meanwhile` runs here while they do.
    `batch`: one-node bundles per test (engines.plan.Column.batch; every reproducer where the engine is
    Column.quick); what a batch ended without comes back in `alone`. `own_process`: a run of one worker runs its cells
    in its own process (`-n 0`: no xdist worker to start, no report to pass between two processes); where that
    process dies without saying what it recorded, the cells its progress file does not hold come back in `alone`, to
    run again one per test under xdist, so that what broke costs its own cell. `ended`: called here with a run's
    decisions as soon as that run has ended and said what it recorded, while the others go on."""
    groups: Dict[str, List[Column]] = {}
    origin: Dict[int, Decision] = {}  # each launched column's decision, by the column's identity
    for d in decisions:
        if d.run:
            launched = replace(d.column, bundles=d.run, reused=d.reused, batch=batch)
            origin[id(launched)] = d
            groups.setdefault(interpreter(d.column), []).append(launched)
    biggest = max(groups, key=lambda k: sum(len(c.bundles) for c in groups[k]))
    env = lifeline.child_env(dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))))
    # numpy's OpenBLAS threads in the harness's processes spun idle after its small products: 3.1% of a fresh
    # matrix's CPU (perf: blas_thread_server). The engines bring their own libraries. A value the user set is kept.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    with owned("qdq-plan-") as tmp:  # reaped by the next run where this one was killed
        runs = []
        plans = []
        alone_here = []  # per run: its cells run in its own process
        parts = _parts(groups, biggest, workers, own_process)
        for i, (python, columns, n) in enumerate(parts):
            plan = write_plan(columns, Path(tmp) / f"plan-{i}.json")
            plans.append(plan)
            alone_here.append(own_process and n == 1)
            command = [*pytest_command(plan, python), *PYTEST_QUIET, "--bundles", str(bundles.resolve()),
                       "-n", str(0 if alone_here[-1] else n), *(["--fresh"] if fresh else []), *extra]
            tag = "" if len(parts) == 1 else _tag(columns)
            runs.append(_Pytest(command, env, out, tag))
        meanwhile()
        summaries: List[Optional[Dict[str, Any]]] = [None] * len(runs)

        def finished(i: int) -> None:  # run i ended: what it says it recorded, read once; its columns handed on
            summaries[i] = _summary(plans[i])
            if summaries[i] is not None:
                ended([origin[id(c)] for c in parts[i][1]])

        statuses = _wait_all(runs, finished)
        died = [own and s is None and status not in PYTEST_STOPPED
                for own, s, status in zip(alone_here, summaries, statuses)]
        progress = [read_progress(plan) if d else {} for plan, d in zip(plans, died)]
    leftovers: List[Decision] = []
    for i, (r, (_, columns, _)) in enumerate(zip(runs, parts)):
        if not died[i]:
            continue
        recorded = progress[i]
        kept = sum(len(v) for v in recorded.values())
        out(f"engines.run: {r.tag}its process ended ({_status_words(statuses[i])}) after recording {kept} cells "
            "without saying what it recorded; the rest run again, one per test")
        for k, c in enumerate(columns):
            done = set(recorded.get(k, ()))
            left = [b for b in c.bundles if b not in done]
            if left:
                leftovers.append(_again(c, left))
        summaries[i] = {"columns": [{"written": {"recorded": len(recorded.get(k, ()))}, "reused": 0, "alone": []}
                                    for k in range(len(columns))], "stopped": ""}
        statuses[i] = 0  # what it left is run again; that run's status stands for it
    for r, status, summary in zip(runs, statuses, summaries):
        if status not in (0, 1) and not (summary and summary.get("stopped")):  # a stop says why in the last line
            r.say_tail()
    broken = [s for s in statuses if s not in (0, 1)]
    written = sum(sum(c["written"].values()) for s in summaries if s for c in s["columns"])
    reused = sum(sum(c["reused"] for c in s["columns"]) if s else sum(c.reused for c in columns)
                 for s, (_, columns, _) in zip(summaries, parts))
    unknown = next((s["stopped"] for s in summaries if s and s.get("stopped")), "")
    if not unknown and not all(summaries):
        unknown = "a pytest run stopped before it said what it recorded"
    alone = tuple(_again(c, said["alone"]) for s, (_, columns, _) in zip(summaries, parts) if s
                  for c, said in zip(columns, s["columns"]) if said["alone"]) + tuple(leftovers)
    return Launched(broken[0] if broken else max(statuses), written, reused, unknown, alone)


def _again(column: Column, bundles: Sequence[str]) -> Decision:
    """A column's bundles that a batch or a run ended without, to run again one per test (no batch, nothing reused)."""
    return Decision(replace(column, bundles=(), reused=0, batch=0), tuple(bundles), 0, True)


def _parts(groups: Dict[str, List[Column]], biggest: str, workers: int,
           own_process: bool) -> List[Tuple[str, List[Column], int]]:
    """The pytest runs of a launch, each (interpreter, its columns, its xdist workers): one per interpreter, the
    biggest with `workers` workers and the others one each; with `own_process`, the biggest interpreter's columns,
    where there are at least `workers` of them, go to `workers` runs of one process each instead (_shares: each
    version's columns whole to one run, or the columns in order in runs of about equal cells; a column is never
    split, so each results file keeps its one writer)."""
    parts: List[Tuple[str, List[Column], int]] = []
    for python, columns in groups.items():
        n = min(workers, sum(len(c.bundles) for c in columns)) if python == biggest else min(workers, 1)
        if own_process and n > 1 and len(columns) >= n:
            parts += [(python, share, 1) for share in _shares(columns, n)]
        else:
            parts.append((python, columns, n))
    return parts


def _shares(columns: List[Column], n: int) -> List[List[Column]]:
    """The columns cut into n non-empty runs of about equal work: where they are the same cells on several versions of
    one engine (each version's columns the same number of cells, at least n versions), each version's columns go
    whole to one run, the latest version first to the run with the least work so far, counting a version's work by
    its place in the order (the k-th costs k), since a later version builds more of the catalogue (a fresh run here:
    TensorRT-RTX 1.4.0.76's worker 8.9 s of CPU, 1.7.1.116's 14.8 s, for the same 1,158 cells): four versions go 1+4
    and 2+3, and the runs end together; otherwise the columns in order, in runs of about equal cells. A column is
    never split, so each results file keeps its one writer; each run keeps the columns' order."""
    versions: Dict[Tuple[str, str, str], List[Column]] = {}
    for column in columns:
        versions.setdefault((column.engine, column.version, column.python), []).append(column)
    sizes = {sum(len(c.bundles) for c in group) for group in versions.values()}
    if len(versions) >= n and len(sizes) == 1:
        load = [0] * n
        home: Dict[int, int] = {}  # a version's place in the order -> its run
        for k in range(len(versions), 0, -1):
            run = min(range(n), key=lambda r: (load[r], r))
            home[k - 1], load[run] = run, load[run] + k
        dealt: List[List[Column]] = [[] for _ in range(n)]
        for k, group in enumerate(versions.values()):
            dealt[home[k]].extend(group)
        return dealt
    total = sum(len(c.bundles) for c in columns)
    shares: List[List[Column]] = [[]]
    done = 0
    for k, column in enumerate(columns):
        left = len(columns) - k  # columns still to place, this one included
        if shares[-1] and len(shares) < n and (done >= total * len(shares) / n or left <= n - len(shares)):
            shares.append([])
        shares[-1].append(column)
        done += len(column.bundles)
    return shares


def _wait_all(runs: Sequence["_Pytest"], each: Callable[[int], None]) -> List[int]:
    """Every run's exit status, in their order; `each(i)` is called as run i ends, in the order they end."""
    import threading

    done: "queue.Queue[int]" = queue.Queue()
    for i, r in enumerate(runs):
        # quiet: Ctrl-C lands on the main thread, which waits on `done` (core.threads)
        start_quiet(threading.Thread(target=lambda i=i, r=r: (r.wait(), done.put(i)), daemon=True))
    for _ in runs:
        each(_next(done))
    return [r.wait() for r in runs]


def _next(done: "queue.Queue[int]") -> int:
    """The next run that ended, waited for in slices (core.threads.WAIT_SLICE_S: a Ctrl-C that lands just before an
    endless wait blocks would wait for the next run to end)."""
    while True:
        try:
            return done.get(timeout=WAIT_SLICE_S)
        except queue.Empty:
            continue


def _status_words(status: int) -> str:
    """"signal 11 (SIGSEGV)" or "exit status 1": how a pytest process ended."""
    if status < 0:
        from core.words import signal_text

        return signal_text(-status)
    return f"exit status {status}"


def _summary(plan: Path) -> Optional[Dict[str, Any]]:
    """What a pytest controller says it recorded (engines.pytest_cells), None where it said nothing."""
    try:
        data = json.loads(summary_path(plan).read_text(encoding="utf-8"))
        for column in data["columns"]:
            column["written"] = {str(k): int(v) for k, v in column["written"].items()}
            column["reused"] = int(column["reused"])
            column["alone"] = [str(b) for b in column.get("alone") or []]
        return data
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _tag(columns: Sequence[Column]) -> str:
    """"[ort 1.16.3] ", "[rtx] ": which of several pytest runs side by side a line comes from."""
    names = sorted({spec(c.engine).short if c.engine in ENGINES else c.engine for c in columns})
    versions = sorted({c.version for c in columns})
    return f"[{'+'.join(names)}{' ' + versions[0] if len(versions) == 1 and versions[0] else ''}] "


def interpreter(column: Column) -> str:
    """The interpreter a column's pytest runs under: this one, or an in-process engine's own (python=)."""
    if column.python and column.engine in ENGINES and spec(column.engine).family != "tensorrt":
        return column.python
    return sys.executable


class _Pytest:
    """One pytest run, started at once; its heartbeat and summary lines passed on as they come (tagged where several
    run side by side), and where it fails, its last lines."""

    def __init__(self, command: Sequence[str], env: Dict[str, str], out: Callable[[str], None], tag: str = "") -> None:
        import threading
        from collections import deque

        self.out, self.tag = out, tag
        self.tail: "deque[str]" = deque(maxlen=15)
        self.proc = subprocess.Popen(list(command), cwd=REPO, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, encoding="utf-8", errors="replace")
        self._reader = start_quiet(threading.Thread(target=self._read, daemon=True))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for line in self.proc.stdout:
                line = line.rstrip("\n")
                self.tail.append(line)
                at = line.find(PROGRESS_PREFIX)  # pytest's "." for the cell may come first on the same line
                if at >= 0:
                    self.out(f"  {self.tag}{line[at + len(PROGRESS_PREFIX):]}")
                elif line.startswith(("cells: ", "qdq-matrix: ")):
                    self.out(f"  {self.tag}{line}")

    def wait(self) -> int:
        status = self.proc.wait()
        self._reader.join()
        return status

    def say_tail(self) -> None:
        """Its exit status and last lines, for a run that broke."""
        self.out(f"engines.run: {self.tag}pytest exited with status {self.proc.returncode}; its last lines:")
        for line in self.tail:
            self.out("  | " + line)


def idle_probe(column: Column) -> Optional[EngineInfo]:
    """The probe of a GPU engine's column that cannot run on this machine (no NVIDIA GPU: nothing is started to
    know), or None: such a column's cells are written "not run: why" in one pass, with no pytest (engines.idle)."""
    if column.engine not in ENGINES or spec(column.engine).device != "nvidia-gpu" or column.python:
        return None
    from engines.tensorrt import gpu

    if gpu.detect().present:  # a GPU is here: the column runs (its probe starts a worker, which only pytest needs)
        return None
    from engines.pytest_cells import make_engine_for

    adapter = make_engine_for(column)
    try:
        info = adapter.probe()
    finally:
        getattr(adapter, "close", lambda: None)()
    return None if info.available else info


def write_idle(column: Column, info: EngineInfo, root: Path, metas: Dict[str, Dict[str, Any]],
               out: Callable[[str], None]) -> int:
    """Every bundle of an idle column as its not-run cell (an unchanged one is left as it is); how many."""
    from engines.idle import run_record, write_column
    from generators.bundle import Bundle

    run = dict(run_record(column.engine, []), command=column.command, cell_options=dict(sorted(column.options.items())))
    chosen = [Bundle(path=root / b, meta=metas[b]) for b in selection(column, metas) if metas[b]]
    counts = write_column(info, chosen, run, Path(column.results) if column.results else None)
    out(f"engines.run: {column_title(column)}: {len(chosen)} not run here ({info.reason}); {counts['written']} "
        f"written, {counts['unchanged']} as they were")
    return len(chosen)


def run(columns: Sequence[Column], bundles: Path, workers: int = 2, fresh: bool = False,
        extra: Sequence[str] = (), results: Optional[Path] = None, out: Callable[[str], None] = print,
        batch: int = BATCH) -> int:
    """Decide every column, say what stands, run the rest in one pytest; the exit status (module docstring)."""
    start = time.perf_counter()
    metas = bundle_metas(bundles)
    if not metas:
        raise UsageError(f"no bundles under {bundles}: run `python -m generators write` first")
    writable(columns, results or REPO / "results", out)
    store = Store(results or REPO / "results")
    idle = {i: info for i, c in enumerate(columns) for info in [idle_probe(c)] if info is not None}
    written: List[int] = []

    def write_all_idle() -> None:  # while pytest starts and runs: no cell of these columns needs it
        written.extend(write_idle(columns[i], info, bundles, metas, out) for i, info in idle.items())

    decisions = [decide(c, metas, store, fresh) for i, c in enumerate(columns) if i not in idle]
    if not sum(len(d.run) + d.reused for d in decisions):
        write_all_idle()
        if not sum(written):
            out("engines.run: no cell to run and none stored (no bundle is selected)")
            return 5
        return 0
    for d in decisions:
        out(f"engines.run: {d.title}: {d.reused} reused" + (f", {len(d.run)} to run" if d.run else ""))
    elsewhere = [d for d in decisions if d.run and not d.here]
    if elsewhere:
        raise UsageError(f"{elsewhere[0].title}: {elsewhere[0].why_not_here}: run it where that version is installed "
                         "(its nox session), or give the column python=PYTHON of an environment that has it")
    here = [d for d in decisions if d.run]
    reused = sum(d.reused for d in decisions)
    if not here:
        write_all_idle()
        out(f"engines.run: {reused} cells reused, nothing to run here ({time.perf_counter() - start:.1f} s)")
        return 0
    settled: List[Decision] = []

    def remember(decisions: Sequence[Decision]) -> None:
        """A run that ended and said what it wrote: each of its columns that now stands whole is remembered, so that
        the next run need not read it, while the other runs go on (what a later rerun writes changes the files'
        digests, and with them what the next run finds remembered)."""
        after = Store(results or REPO / "results")
        for d in decisions:
            decide(d.column, metas, after, False)
            settled.append(d)

    def remember_now(decisions: Sequence[Decision]) -> None:
        """remember() while other runs go on: what it cannot do now (a results file it cannot read) is left for the
        closing pass below, which raises as it always did, never in the middle of the runs."""
        try:
            remember(decisions)
        except Exception:
            pass

    done = launch(here, workers, bundles, extra, fresh, out, meanwhile=write_all_idle, batch=batch, own_process=True,
                  ended=remember_now)
    rerun = bool(done.alone) and done.status in (0, 1)
    if rerun:  # a batch's or a run's process died (or it timed out, or raised)
        out(f"engines.run: {sum(len(d.run) for d in done.alone)} cells of batches or runs that ended early run "
            "again, one per test, so that what broke costs its own cell alone")
        done = done.then(launch(done.alone, workers, bundles, extra, fresh, out))
    if done.status in (0, 1):  # the columns not remembered as their run ended; after a rerun, all of them again
        remember([d for d in here if rerun or not any(d is s for s in settled)])
    reused += done.reused - sum(d.reused for d in here)  # the launched columns' own count, whoever decided it
    missing = sum(len(d.run) + d.reused for d in here) - done.written - done.reused
    lost = f", {missing} not recorded" if missing > 0 else ""
    why = f" ({done.unknown})" if done.unknown and (missing > 0 or done.status not in (0, 1)) else ""
    out(f"engines.run: {reused} cells reused, {done.written} run{lost}{why} ({time.perf_counter() - start:.1f} s, "
        f"{exit_words(done.status)})")
    return done.status


def exit_words(status: int) -> str:
    """pytest's exit status as the run's last line says it: 1 is cells with unexpected verdicts, which are results."""
    if status == 1:
        return "pytest exit 1: some cells have unexpected verdicts, which are results, not a failed run"
    return f"pytest exit {status}"


def writable(columns: Sequence[Column], folder: Path, out: Callable[[str], None]) -> None:
    """Each results folder the columns write takes a file (ResultsUnwritable where not); a killed run's owner files
    there are removed, and said."""
    folders = {Path(c.results).resolve().parent if c.results else REPO / "results" for c in columns} | {folder}
    for f in sorted(folders):
        check_writable(f)
        stale = clean_stale_owners(f)
        if stale:
            out(f"engines.run: removed {len(stale)} owner files of runs that were killed "
                f"({', '.join(p.name for p in stale[:3])}{', ...' if len(stale) > 3 else ''})")
    reap("qdq-plan-")  # a killed run's plan folder, whether or not this run has cells to run


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog=RUNNER, description=__doc__.split("\n\n")[0], allow_abbrev=False,
                                     epilog="Anything after -- (or any flag not listed here) goes to pytest.")
    parser.add_argument("--engine", default=None, help=f"engine: {', '.join(ENGINES)}, or module:Class")
    parser.add_argument("--engine-version", default=None, help="the version the engine must be")
    parser.add_argument("--trt-python", action="append", default=[], metavar="PYTHON",
                        help="an interpreter a TensorRT-family worker runs under, its version as it says (repeatable)")
    parser.add_argument("--trt-isolate", action="store_true", help="one TensorRT process per cell")
    parser.add_argument("--version", action="append", default=[], metavar="V[=PYTHON]",
                        help="every column again for this version (with its TensorRT-family interpreter); repeatable")
    parser.add_argument("--column", action="append", default=[], metavar="JSON",
                        help="a column, as a JSON object of its fields (engine, version, python, results, options, "
                             "only_cases, plugins_only, per_target) over the flags' values; repeatable; {} is the "
                             "flags' own")
    seen = set()
    for engine in ENGINES.values():
        for o in engine.options:
            if o.flag not in seen:
                seen.add(o.flag)
                parser.add_argument(o.flag, dest=_dest(o.flag), default=None, choices=o.choices or None,
                                    help=f"{engine.title}: {o.help}")
    parser.add_argument("--no-timing-cache", action="store_true", dest="trt_timing_cache_off",
                        help="TensorRT: build without the shared timing cache (as --trt-timing-cache off)")
    parser.add_argument("--only-case", action="append", default=[], metavar="CASE", help="only this case's bundles")
    parser.add_argument("--plugin-bundles-only", action="store_true", help="only the bundles that need a plugin")
    parser.add_argument("--per-target-bundles", action="store_true",
                        help="also the bundles built once per TensorRT-RTX target (their case.json's trt.per_target); "
                             "alone: only those")
    parser.add_argument("--bundles", type=Path, default=None, help="bundle folder (default $QDQ_BUNDLES or .bundles)")
    parser.add_argument("--results", default=None, help="the results file (one column only)")
    parser.add_argument("--results-dir", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fresh", action="store_true", help="run every cell again")
    parser.add_argument("--batch", type=int, default=BATCH, metavar="N",
                        help=f"one-node bundles per test, and on the CPU engines and TensorRT-RTX every reproducer "
                             f"(default {BATCH}; 0: one bundle per test); a batch that ends early (its process died) "
                             "runs again one bundle per test")
    parser.add_argument("-n", "--workers", type=int, default=2,
                        help="pytest-xdist workers (default 2; 0: the cells run in the pytest controller itself)")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args, extra = _parser().parse_known_args(list(sys.argv[1:] if argv is None else argv))
    extra = [a for a in extra if a != "--"]
    try:
        columns = columns_from(args)
        if args.results and len(columns) > 1:
            raise UsageError("--results names one file: give each column its own (\"results\" in --column)")
        return run(columns, args.bundles or bundles_root(), args.workers, args.fresh, extra, args.results_dir,
                   batch=args.batch)
    except UsageError as e:
        print(f"engines.run: {e}", file=sys.stderr)
        return 2
    except ResultsUnwritable as e:
        print(f"engines.run: {e}", file=sys.stderr)
        return EXIT_UNWRITABLE


if __name__ == "__main__":
    lifeline.keep()  # nox, or whoever named itself in $QDQ_PARENT_PID: this run ends with it
    sys.exit(main())
