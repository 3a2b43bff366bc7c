"""Merge JSONL results files (cells and session headers) into one matrix: rows are bundles, columns engines."""

from __future__ import annotations

import functools
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from cases.onnx_node_tests import ID as NODE_TESTS
from cases.qdq_companion import ID as COMPANION
from cases.user_model import CASE as USER_MODEL
from core.cell import SOURCES, Cell
from core.engines import ENGINES, pinned_build, runs_here, unreachable_versions, variant_label
from core.portable import portable_path, portable_text, scrub
from core.results import read_results
from core.words import IDLE, NOT_TRIED
from matrix import observed
from matrix.observed import Manifest

CONFORMANCE = (NODE_TESTS, COMPANION)  # the conformance page's cases (matrix.conformance): kept apart from the start

# A column's option variant as a field: its (option, value) pairs sorted by option, () for the engine's defaults; said
# as a label ("target=SM75", core.engines.variant_label) only where a report or a command line shows it.
Variant = Tuple[Tuple[str, str], ...]
ColumnKey = Tuple[str, str, str, Variant, str]  # engine, engine_version, hardware, variant, source
PathLike = Union[str, Path]


def variant_of(variant: Mapping[str, Any]) -> Variant:
    """A cell's variant (Cell.variant, a mapping) as a column's field: its (option, value) pairs in option order."""
    if not variant:  # the engine's defaults: most cells
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in variant.items()))


def variant_order(variant: Variant) -> Tuple[Any, ...]:
    """Sort key of a variant by its fields: option by option, each value in natural order (a number in it by value:
    target=SM75 before target=SM120), whatever its value holds ("=", ",", digits)."""
    return tuple((option, natural_order(value)) for option, value in variant)


def natural_order(text: str) -> Tuple[Tuple[int, Any], ...]:
    """Sort key of a text with numbers in it: its runs of digits by value, the rest as text ("SM75" before "SM120")."""
    runs = ("".join(run) for _, run in itertools.groupby(text, key=str.isdecimal))
    return tuple((1, int(run)) if run.isdecimal() else (0, run) for run in runs)


@dataclass(frozen=True)
class Duplicate:
    """Two cells of one reproducer in one column: which was kept and which dropped, by file, line and run date."""

    bundle: str
    column: str
    kept: str
    kept_line: int
    kept_date: str
    dropped: str
    dropped_line: int
    dropped_date: str

    @property
    def message(self) -> str:
        return (f"duplicate cell {self.bundle} in {self.column}: kept {self.kept}:{self.kept_line} "
                f"({self.kept_date or 'no date'}), dropped {self.dropped}:{self.dropped_line} "
                f"({self.dropped_date or 'no date'})")


@dataclass(frozen=True)
class Problem:
    """Something wrong in a results file, named by file and line (line 0: the whole file)."""

    file: str
    line: int
    message: str
    level: str = "error"  # error: file (or one cell) refused; warning: part of a file dropped; note: nothing lost
    duplicate: Optional[Duplicate] = None  # a note about a duplicate cell: the record, for a report to group
    whole_file: bool = True  # an error that refuses its line's cell only: the file's other cells stand
    refuses_file: bool = False  # the file gave no cell at all: every answer is without it (_file_refused)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.level}: {self.message}"


@dataclass(frozen=True)
class Column:
    """One matrix column: an engine version on one piece of hardware, from one source."""

    engine: str
    engine_version: str
    hardware: str
    variant: Variant  # () for the engine's defaults, else its options' (name, value) pairs: (("target", "SM75"),)
    source: str
    date: str = ""  # the newest run date among its cells
    never_run: str = ""  # why its version never ran on any machine of this project (never_run), "" where it ran
    build: str = ""  # the build its version is where the number is not ("8.6.0.12" for 8.6.0): recorded, else pinned
    build_source: str = ""  # where the build comes from: "its cells" or the pin table's source

    @property
    def key(self) -> ColumnKey:
        return (self.engine, self.engine_version, self.hardware, self.variant, self.source)

    @property
    def variant_label(self) -> str:
        """The variant as a report says it: "x64quantprecision=1", "" for the engine's defaults."""
        return variant_label(dict(self.variant))

    @property
    def setting(self) -> str:
        """Hardware and option variant, as Cell.setting says it."""
        return self.hardware + (f" · {self.variant_label}" if self.variant else "")

    @property
    def id(self) -> str:
        return f"{self.engine}@{self.engine_version} [{self.setting}] ({self.source})"

    @property
    def heading(self) -> str:
        return f"{self.engine}@{self.engine_version}"

    @property
    def provenance(self) -> str:
        """Where the column came from: "observed on NVIDIA H200 (sm_90), 2026-11-22", "local run, ..." or "never run:
        why" (no date: its cells only stand in for a version no machine here could install)."""
        if self.never_run:
            return f"never run: {self.never_run}"
        day = self.date[:10]
        if self.source == "observed":
            return f"observed on {self.setting}" + (f", {day}" if day else "")
        return f"{self.source} run" + (f", {day}" if day else "")


@dataclass(frozen=True)
class Row:
    """One matrix row: a bundle (case and params)."""

    bundle: str
    case: str
    params: Dict[str, Any] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return self.bundle.split("/", 1)[1] if "/" in self.bundle else self.bundle


@dataclass(frozen=True)
class CaseInfo:
    """What the catalogue says about a case, where the catalogue can be read."""

    id: str
    seed: str = ""
    title: str = ""
    links: Tuple[str, ...] = ()


@dataclass(frozen=True)
class MergeResult:
    """The merged matrix: kept cells, columns, rows, and every problem met on the way. The conformance cells (the onnx
    node tests and the int8 companion, matrix.conformance) are kept apart from the start: no column, row or case of
    the catalogue's views holds them."""

    cells: Tuple[Cell, ...]
    problems: Tuple[Problem, ...]
    columns: Tuple[Column, ...] = ()
    rows: Tuple[Row, ...] = ()
    files: Tuple[str, ...] = ()
    cases: Dict[str, CaseInfo] = field(default_factory=dict)
    conformance: Tuple[Cell, ...] = ()  # the conformance page's cells, in merge order

    @property
    def all_cells(self) -> Tuple[Cell, ...]:
        """The catalogue's cells and the conformance cells: every cell the merge kept."""
        return self.cells + self.conformance

    def grid(self) -> Dict[Tuple[str, ColumnKey], Cell]:
        """(bundle, column key) -> cell."""
        return {(c.bundle, column_key(c)): c for c in self.cells}

    def by_column(self) -> Dict[ColumnKey, List[Cell]]:
        """column key -> its cells in merge order, every column present (one pass over the cells, not one per
        column)."""
        out: Dict[ColumnKey, List[Cell]] = {c.key: [] for c in self.columns}
        for cell in self.cells:
            out.setdefault(column_key(cell), []).append(cell)
        return out

    @property
    def errors(self) -> Tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.level == "error")


@dataclass(frozen=True)
class _Located:
    cell: Cell
    file: str
    line: int


def column_key(cell: Cell) -> ColumnKey:
    """The column a cell belongs in: engine, version, hardware, option variant and source."""
    source = cell.run.get("source", "local")
    return (cell.engine, cell.engine_version, cell.hardware, variant_of(cell.variant), source)


def load_results(
    paths: Iterable[PathLike],
    catalogue: Optional[Iterable[str]] = None,
    cases: Optional[Dict[str, CaseInfo]] = None,
    manifest: Optional[Manifest] = None,
) -> MergeResult:
    """Read every JSONL file in paths (files or folders) and merge them into one matrix; a file is observed only
    where the manifest (default: reports/observed/MANIFEST.json) lists it with its digest."""
    problems: List[Problem] = []
    located: List[_Located] = []
    files = results_files(paths, problems)
    if manifest is None:
        manifest, trouble = _repository_manifest()
        problems.extend(trouble)
    for path in files:
        found, file_problems = read_file(path, manifest)
        located.extend(found)
        problems.extend(file_problems)
    kept, notes = _dedupe(located)
    kept, hidden = _drop_idle_columns(kept)
    notes += _levelless_cpu_columns(kept) + _local_beside_observed(kept)
    return build(rejudge_all(kept), problems + notes + hidden, catalogue, cases, files=[_show(f) for f in files])


def _repository_manifest() -> Tuple[Manifest, List[Problem]]:
    """reports/observed/MANIFEST.json, or an empty manifest and the problem that stopped it (nothing is observed)."""
    try:
        return observed.load(), []
    except observed.ManifestError as e:
        return observed.Manifest(observed.OBSERVED), [Problem(_show(observed.OBSERVED / observed.MANIFEST_NAME), 0,
                                                                str(e), "warning")]


def _local_beside_observed(cells: List[Cell]) -> List[Problem]:
    """A warning per local column that holds cells an observed column of the same engine, version and setting
    also holds: both are shown, and the upgrade answer compares the observed ones."""
    by_column: Dict[ColumnKey, Dict[str, Cell]] = {}
    for c in cells:
        by_column.setdefault(column_key(c), {})[c.bundle] = c
    out = []
    for key in sorted(k for k in by_column if k[4] == "local"):
        twin = by_column.get((*key[:4], "observed"), {})
        both = sorted(set(by_column[key]) & set(twin))
        if both:
            cell = by_column[key][both[0]]
            files = ", ".join(sorted({twin[b].run.get("file", "") for b in both}))
            out.append(Problem(cell.run.get("file", "") or "(no file)", 0, (
                f"{cell.column}: {len(both)} local cells of reproducers that the observed column also holds ({files}); "
                "a local cell never replaces an observed one: both columns are shown, and the upgrade answer compares "
                "the observed cells"), "warning"))
    return out


def _levelless_cpu_columns(cells: List[Cell]) -> List[Problem]:
    """A note per CPU column written before CPU cells named their INT8 level (its hardware_detail records the CPU, and
    no isa_level): its label is kept as it was."""
    from core.engines import CPU_ENGINES

    found: Dict[ColumnKey, Cell] = {}
    for c in cells:
        if c.engine in CPU_ENGINES and c.hardware_detail and not c.hardware_detail.get("isa_level"):
            found.setdefault(column_key(c), c)
    return [Problem(c.run.get("file", "") or "(no file)", 0, (
        f"{c.engine}@{c.engine_version} [{c.hardware}]: written before CPU cells named their INT8 instruction-set "
        "level; its label is kept as it was, so cells of CPUs with and without VNNI may share this column (its "
        f"recorded flags: {c.hardware_detail.get('isa') or 'none'}); INT8 numerics of ONNX Runtime and OpenVINO "
        "depend on that level"), "note") for c in found.values()]


def _drop_idle_columns(cells: List[Cell]) -> Tuple[List[Cell], List[Problem]]:
    """Leave out a column where nothing ran (say, a GPU engine on a machine without one) when another
    column of the same engine@version has cells that did: it adds no evidence, only width."""
    by_column: Dict[ColumnKey, List[Cell]] = {}
    for c in cells:
        by_column.setdefault(column_key(c), []).append(c)
    ran = {(k[0], k[1]) for k, cs in by_column.items() if any(c.status not in NOT_TRIED for c in cs)}
    idle = {k for k, cs in by_column.items()
            if (k[0], k[1]) in ran and all(c.status in NOT_TRIED for c in cs)}
    notes = [Problem(", ".join(dict.fromkeys(c.run.get("file", "") for c in by_column[k])) or "(no file)", 0,
                     f"{k[0]}@{k[1]} [{by_column[k][0].setting}] ({k[4]}): not run here ({by_column[k][0].reason}); "
                     "its column is left out because another column of that version ran", "note")
             for k in sorted(idle)]
    return [c for c in cells if column_key(c) not in idle], notes


def rejudge_all(cells: Sequence[Cell]) -> List[Cell]:
    """Every cell judged against today's catalogue (expectations and signatures). A case module that does not import
    stops the merge (cases.CaseModuleError, naming it): the verdicts its cells were written with may be stale."""
    import cases as registry
    from cases.verdict import rejudge

    known = {c.id: c for c in registry.all_cases(external=True)}
    return [rejudge(c, known[c.case]) if c.case in known else c for c in cells]


def build(
    cells: Sequence[Cell],
    problems: Sequence[Problem] = (),
    catalogue: Optional[Iterable[str]] = None,
    cases: Optional[Dict[str, CaseInfo]] = None,
    files: Sequence[str] = (),
) -> MergeResult:
    """A matrix from cells already read: columns, rows in seed order, every catalogue bundle shown; the conformance
    cells apart, in none of them."""
    conformance = tuple(c for c in cells if c.case in CONFORMANCE)
    cells = [c for c in cells if c.case not in CONFORMANCE]
    cases = {k: v for k, v in (case_catalogue() if cases is None else cases).items() if k not in CONFORMANCE}
    for c in cells:
        cases.setdefault(c.case, CaseInfo(id=c.case))
    return MergeResult(
        cells=tuple(cells),
        problems=tuple(problems),
        columns=_columns(cells),
        rows=_rows(cells, [b for b in catalogue or () if b.split("/", 1)[0] not in CONFORMANCE], cases),
        files=tuple(files),
        cases=cases,
        conformance=conformance,
    )


def results_files(paths: Iterable[PathLike], problems: List[Problem]) -> List[Path]:
    """Every *.jsonl file named or found (recursively) under the folders named, in a stable order."""
    found: List[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(sorted(p.rglob("*.jsonl")))
        elif p.is_file():
            found.append(p)
        else:
            problems.append(Problem(_show(p), 0, "no such file or folder"))
    unique: List[Path] = []
    seen = set()  # each file's resolved path, resolved once
    for p in found:
        real = p.resolve()
        if real not in seen:
            seen.add(real)
            unique.append(p)
    return unique


def read_file(path: Path, manifest: Manifest) -> Tuple[List[_Located], List[Problem]]:
    """The cells of one file, read by core.results under its one policy: any bad complete line refuses the file,
    a cut-off last line is dropped, a cell unlike its session header is refused by its line. Its cells are observed
    where the manifest lists the file with this content, else local, whatever their lines say; a file the manifest
    lists at another digest is refused whole (changed after it was observed)."""
    name = _show(path)
    found = read_results(path)
    if found.unreadable:
        return [], [_file_refused(name, 0, found.unreadable)]
    changed = manifest.refusal(path, found.data)
    if changed:
        return [], [_file_refused(name, 0, changed)]
    if found.older and found.refused and manifest.observed(path, found.data):  # a local file of an older version
        return [], [Problem(name, 0, f"written by an older version of this suite ({found.older}): not read; running "
                                     "its cells again rewrites it (nox -s matrix, or the command in its header)",
                            "warning")]
    bad = [Problem(name, number, message) for number, message in found.bad]
    why_local = manifest.observed(path, found.data)
    claims = {str(h.get("source") or "") for h in found.headers}
    cells: List[_Located] = []
    for stored in found.cells:
        cell, header = stored.cell, stored.header
        try:
            claims.add(str(cell.run.get("source") or header.get("source") or ""))
            _refuse_stand_in(cell, header)
            if why_local:
                _refuse_unrunnable(cell)
            cells.append(_Located(_with_run(cell, name, "local" if why_local else "observed"), name, stored.line))
        except ValueError as e:
            bad.append(Problem(name, stored.line, str(e)))
    if bad:
        return [], _refused(name, sorted(bad, key=lambda p: p.line))
    tail = [Problem(name, number, f"{message}; cell refused", whole_file=False) for number, message in found.foreign]
    tail += [Problem(name, found.cut_off[0], f"last line is cut off ({found.cut_off[1]}); kept the {len(cells)} "
                    "complete cells before it (was the run interrupted?)", "warning")] if found.cut_off else []
    if why_local and cells and ("observed" in claims or manifest.relative(path)):
        tail.append(Problem(name, 0, f"its cells are local runs, not observations: {why_local}; only "
                                     "`nox -s observe` makes a committed file observed", "warning"))
    return cells, tail


def _refuse_stand_in(cell: Cell, header: Dict[str, Any]) -> None:
    """ValueError for a cell of a test double or of an engine the suite does not know: it never becomes a column."""
    from core.engines import ENGINES

    claimed = str(cell.run.get("source") or header.get("source") or "local")
    if claimed not in SOURCES or cell.versions.get("stand_in"):
        raise ValueError(f"source {claimed!r} is not one of {', '.join(SOURCES)}: cells of a test double or stand-in "
                         "engine never reach a report")
    if cell.engine not in ENGINES:
        raise ValueError(f"engine {cell.engine!r} is not one of {', '.join(ENGINES)}: cells of an engine the suite "
                         "does not know never reach a report")


def _refuse_unrunnable(cell: Cell) -> None:
    """ValueError for a local cell that says an engine ran which this machine cannot run (TensorRT with no NVIDIA
    GPU here): only an observation listed in the manifest speaks for such an engine. A cell that says it did not run
    (not run, skipped, not applicable) is what this machine would write, and stands."""
    if cell.status in IDLE or cell.engine not in ENGINES or runs_here(cell.engine):
        return
    raise ValueError(f"a local cell of {cell.engine} {cell.engine_version} that says it {cell.status}, but this "
                     "machine has no NVIDIA GPU to run it: only an observation listed in "
                     "reports/observed/MANIFEST.json speaks for an engine this machine cannot run; cell refused from "
                     "every answer")


def case_catalogue() -> Dict[str, CaseInfo]:
    """Seed, title and links per case id from the case registry (cases.CaseModuleError where a module does not
    import)."""
    import cases as registry

    return {c.id: CaseInfo(c.id, c.seed, c.title, tuple(c.links)) for c in registry.all_cases(external=True)}


def catalogue_bundles(root: Optional[PathLike] = None) -> List[str]:
    """Bundle ids: every variant in the case registry, plus every bundle written under root."""
    import cases as registry

    ids = [registry.bundle_id(c, p) for c in registry.all_cases() for p in c.variants()]
    if root is not None and Path(root).is_dir():
        for meta in sorted(Path(root).glob("*/*/case.json")):
            ids.append(f"{meta.parent.parent.name}/{meta.parent.name}")
    return list(dict.fromkeys(ids))


def _with_run(cell: Cell, shown: str, source: str) -> Cell:
    """The cell with run.source set (by the manifest, never by the file) and run.file (its file as _show names it);
    its recorded command and texts scrubbed of machine paths once more and any host name dropped, whoever wrote the
    file (a hand-edited file is published without them too)."""
    run = dict(cell.run, source=source, date=str(cell.run.get("date") or ""), file=shown)
    run.pop("host", None)  # a machine's name is never published (cells written before they stopped recording it)
    if run.get("command"):
        run["command"] = _portable_command(run["command"])
    texts = {k: scrub(getattr(cell, k)) for k in ("error", "reason", "log", "explanation", "engine_reason",
                                                   "error_line")}
    return cell.changed(run=run, **texts)


@functools.lru_cache(maxsize=256)  # a file's cells share their run's command: each made portable once, not per cell
def _portable_command(command: str) -> str:
    """core.portable.portable_text of a recorded command."""
    return portable_text(command)


def _refused(name: str, bad: List[Problem], shown: int = 5) -> List[Problem]:
    out = [_file_refused(p.file, p.line, p.message) for p in bad[:shown]]
    if len(bad) > shown:
        out.append(_file_refused(name, 0, f"{len(bad) - shown} more bad lines"))
    return out


def _file_refused(file: str, line: int, why: str) -> Problem:
    """An error that keeps the whole file out of every answer: said so in its words and in its field."""
    return Problem(file, line, f"{why}; file refused", refuses_file=True)




def _dedupe(located: List[_Located]) -> Tuple[List[Cell], List[Problem]]:
    """One cell per (bundle, column): the newest by run date, later files winning ties, where they agree on the
    status; cells that give one reproducer and column different statuses are all refused, naming each line. A user
    model is its bytes: two models under one bundle id (reductions name theirs "reduced") are two models, never
    duplicates; a catalogue reproducer is its id, whichever generator version built it."""
    kept: Dict[Tuple[str, ColumnKey, str], _Located] = {}
    notes: List[Problem] = []
    disputed: Dict[Tuple[str, ColumnKey, str], List[_Located]] = {}
    for item in located:
        key = (item.cell.bundle, column_key(item.cell), item.cell.digest if item.cell.case == USER_MODEL.id else "")
        old = kept.get(key)
        if old is None:
            kept[key] = item
            continue
        if old.cell.status != item.cell.status or key in disputed:
            disputed.setdefault(key, [old]).append(item)
            continue
        new, lost = (item, old) if item.cell.run.get("date", "") >= old.cell.run.get("date", "") else (old, item)
        kept[key] = new
        same = Duplicate(item.cell.bundle, item.cell.column, new.file, new.line, new.cell.run.get("date", ""),
                         lost.file, lost.line, lost.cell.run.get("date", ""))
        notes.append(Problem(item.file, item.line, same.message, "note", same))
    for key, items in disputed.items():
        del kept[key]
        said = "; ".join(f"{i.file}:{i.line} says {i.cell.status}" for i in items)
        notes.extend(Problem(i.file, i.line, f"cell {i.cell.bundle} in {i.cell.column} is given {len(items)} times "
                                             f"with different statuses ({said}): every one refused, none chosen",
                             whole_file=False) for i in items)
    return [k.cell for k in kept.values()], notes


def never_run(cells: Iterable[Cell]) -> Dict[Tuple[str, str], str]:
    """(engine, version) -> why it never ran, for every pinned version whose wheel no machine of this project reaches
    (core.engines.never_run_reason) and that has no cell that ran among these (observed or local): its cells, if any,
    are "not run" stand-ins written where it could not be installed."""
    ran = {(c.engine, c.engine_version) for c in cells if c.status not in IDLE}
    return {key: why for key, why in unreachable_versions().items() if key not in ran}


def recorded_build(cell: Cell) -> str:
    """The engine build a cell records where it says more than its version ("8.6.0.12" for 8.6.0), else ""."""
    module = ENGINES[cell.engine].module if cell.engine in ENGINES else ""
    said = str(cell.versions.get(module) or "")
    return said if said.startswith(cell.engine_version + ".") else ""


def _columns(cells: Sequence[Cell]) -> Tuple[Column, ...]:
    dates: Dict[ColumnKey, str] = {}
    builds: Dict[ColumnKey, str] = {}
    for c in cells:
        key = column_key(c)
        dates[key] = max(dates.get(key, ""), c.run.get("date", ""))
        builds[key] = builds.get(key) or recorded_build(c)
    never = never_run(cells)
    columns = [Column(*key, date=d, never_run=never.get(key[:2], ""),
                      **_build(builds[key], *pinned_build(key[0], key[1]))) for key, d in dates.items()]
    return tuple(sorted(columns, key=lambda col: (col.engine, version_key(col.engine_version), col.hardware,
                                                  col.variant, col.source)))


def _build(recorded: str, pinned: str, source: str) -> Dict[str, str]:
    """A column's build: what its cells record, else what the pin table says and its source."""
    if recorded:
        return {"build": recorded, "build_source": "its cells"}
    return {"build": pinned, "build_source": source} if pinned else {}


def _rows(cells: Sequence[Cell], catalogue: Iterable[str], cases: Dict[str, CaseInfo]) -> Tuple[Row, ...]:
    rows: Dict[str, Row] = {b: Row(b, b.split("/", 1)[0]) for b in catalogue}
    for c in cells:
        if not rows.get(c.bundle) or not rows[c.bundle].params:
            rows[c.bundle] = Row(c.bundle, c.case, dict(c.params))
    for r in rows.values():
        cases.setdefault(r.case, CaseInfo(id=r.case))
    return tuple(sorted(rows.values(), key=lambda r: (cases[r.case].seed or "~", r.case, r.bundle)))


@functools.lru_cache(maxsize=None)  # a report sorts ~10,000 cells by a few dozen versions
def version_key(version: str) -> Tuple[Any, ...]:
    """Sort key for engine versions: PEP 440 order, anything unparseable after, as text."""
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def _show(path: PathLike) -> str:
    """A path as a report prints it: relative to the repository, else "…/<parent>/<name>", never a machine path."""
    return portable_path(os.path.abspath(path))
