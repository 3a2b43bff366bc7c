"""What changed between two versions of one engine: fixed, regressed, fusion, error text, numeric drift."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Set, Tuple
from urllib.parse import quote

from cases.user_model import CASE as USER_MODEL
from core.cell import Cell
from core.outcome import outcome
from core.words import (
    DIFF_STATES,
    DOES,
    HARNESS,
    IDLE,
    RAN,
    STATUS_WORDS,
    error_words,
    first_line,
    reproducers_and_models,
    say_list,
)
from matrix.merge import Variant, column_key, never_run, variant_of, version_key
from matrix.safe import md_cell, md_code

DRIFT_STEPS = 0.5  # a change in max_error_steps larger than this is numeric drift
BAD = ("regressed", "fusion lost", "now crashes")
GOOD = ("fixed", "fusion gained", "no longer crashes")
# A regression: passes (or builds and fuses) on the older version, fails (or loses fusion) on the newer, whatever the
# expectation; a failure that now crashes is bad news, but it failed before
REGRESSIONS = ("regressed", "fusion lost")
# same stage and catalogue signature, other words, or the same words once source lines and folders, function names in
# brackets and "TRT" for "TensorRT" are normalised (core.words.error_words): listed apart, never counted as a change
REWORDED = "error reworded"
REWORDED_WHY = ("same stage and catalogue signature, other words, or the same words but for source lines, function "
                "names in brackets and 'TRT' for 'TensorRT'; not counted as changes")
# an error change where the version on one side fails the reproducer at different stages in two runs (on GPUs of one
# architecture, an H100 and an H200, say): the two cells differ as that version's own runs do, which no upgrade caused
UNSTABLE = "runs disagree"
CHANGES = BAD + GOOD + ("error changed", "numeric drift", UNSTABLE, REWORDED)  # a Change's kinds, in reading order
ERROR_DETAIL = ("regressed", "fixed", "now crashes", "no longer crashes")  # the detail is an engine's error text


@dataclass(frozen=True)
class Change:
    """One change of one reproducer between the two versions."""

    bundle: str
    hardware: str
    kind: str  # one of CHANGES
    before: str
    after: str
    detail: str = ""
    cause: str = ""  # what the failing side shows: its catalogue signature, else its symptom (a cell field)
    signature: str = ""  # an error change: the newer side's catalogue signature ("" none)
    # before and after as every reproducer of one cause says them, from fields: a state, a count left out, an error as
    # its cell's symptom ("" where they are `before` and `after` themselves)
    gist: Tuple[str, str] = ("", "")
    # a regression: what it rests on, "documented (source)" where an upstream source documents the newer version's
    # failure, else "" (this suite's own runs only, runs naming them)
    basis: str = ""
    runs: Tuple[str, ...] = ()  # a regression's two cells: "version on hardware (results file)", older first
    case: str = ""  # the reproducer's case: its cells' field (Cell.case)

    @property
    def slug(self) -> str:
        return self.bundle.split("/", 1)[-1]


@dataclass(frozen=True)
class DiffReport:
    """Every change between two versions of one engine, per hardware label."""

    engine: str
    from_version: str
    to_version: str
    hardware: Tuple[Tuple[str, str], ...]  # (from hardware, to hardware) pairs compared
    changes: Tuple[Change, ...]
    compared: int  # distinct reproducers and user models run on both sides, on at least one hardware setting
    not_compared: Tuple[str, ...]  # "bundle [hardware]: why"
    notes: Tuple[str, ...] = ()
    compared_runs: int = 0  # (reproducer, hardware setting) pairs run on both sides
    compared_models: int = 0  # of `compared`, the users' models (cases.user_model): not the catalogue's reproducers

    @property
    def said_compared(self) -> str:
        """How many reproducers were compared, on how many hardware settings: "285 reproducers on 3 settings"."""
        if not self.compared:
            return "nothing compared: " + self.why_nothing
        settings = f" on {len(self.hardware)} hardware settings" if len(self.hardware) > 1 else ""
        rows = reproducers_and_models(self.compared - self.compared_models, self.compared_models)
        return f"{rows} compared{settings}"

    @property
    def why_nothing(self) -> str:
        """Why no reproducer was compared: no hardware shared, or every reproducer ran on one side only."""
        if not self.hardware:
            return "no hardware setting has cells of both versions"
        if not self.not_compared_bundles:
            return "neither version has a cell on the hardware compared"
        return f"none of {rows_words(self.not_compared_bundles)} ran on both versions on {_where(self.hardware)}"

    @property
    def not_compared_bundles(self) -> Set[str]:
        """The bundles not compared on some hardware (each `not_compared` line is "<bundle> [<hardware>]: why")."""
        return {n.split(" [", 1)[0] for n in self.not_compared}

    def merged(self) -> List[Tuple[Change, Tuple[str, ...]]]:
        """Each change once, with every hardware label that gives the same change (H100 and H200 often agree)."""
        where: Dict[Tuple[str, str, str, str, str], List[str]] = {}
        first: Dict[Tuple[str, str, str, str, str], Change] = {}
        for c in self.changes:
            key = (c.bundle, c.kind, c.before, c.after, c.detail)
            first.setdefault(key, c)
            where.setdefault(key, []).append(c.hardware)
        return [(first[k], tuple(where[k])) for k in first]

    def count(self, kind: str) -> int:
        """Distinct changes of one kind: the same change on several hardware labels counts once."""
        return sum(c.kind == kind for c, _ in self.merged())

    @property
    def regressions(self) -> int:
        return sum(self.count(k) for k in BAD)

    @property
    def verdict(self) -> str:
        """One line for the top of a PR comment."""
        where = _where(self.hardware)
        span = f"{self.engine} {self.from_version} and {self.to_version} on {where}"
        if not self.compared:
            return f"{span}: {self.said_compared}"
        if not self.changes:
            return f"no changes between {span}: {self.said_compared}"
        parts = [f"{self.count(k)} {change_noun(k, self.count(k))}" for k in CHANGES if self.count(k)]
        mark = "❌" if self.regressions else "✅" if any(c.kind in GOOD for c in self.changes) else "ℹ️"
        return f"{mark} {', '.join(parts)} between {span} ({self.said_compared})"

    def markdown(self, tables: str = "") -> str:
        """The report as Markdown for a PR comment or a CI job summary; with `tables` (a file name), the long tables
        (every reproducer of a folded group, every rewording) are left to that file, which tables_markdown() writes,
        and linked."""
        # Every text here comes from results files anyone can edit: escaped (md_cell) or a code span (md_code).
        heading = f"## {md_cell(self.engine)} {md_cell(self.from_version)} → {md_cell(self.to_version)}"
        lines = [heading, "", f"**{md_cell(self.verdict)}**", ""]
        lines += [f"> {md_cell(n)}" for n in self.notes] + ([""] if self.notes else [])
        if tables:
            lines += [f"Every reproducer's row and every rewording: [{md_cell(tables)}]({quote(tables)}).", ""]
        for labels, changes in self.by_hardware():
            if len(self.hardware) > 1:
                lines += [f"### on {md_cell(say_list(labels))}", ""]
            main = [c for c in changes if c.kind != REWORDED]
            minor = [c for c in changes if c.kind == REWORDED]
            if len(main) > FOLD:  # many reproducers, few causes: the causes first, every reproducer one click away
                lines += _cause_lines(main)
                if not tables:
                    lines += [f"<details><summary>every reproducer ({len(main)})</summary>", ""]
                    lines += _table(main) + ["</details>", ""]
            else:
                lines += _table(main) if main else ["No changes." if not minor else "No changes but rewording.", ""]
            if minor and tables:
                lines += [f"{len(minor)} {change_noun(REWORDED, len(minor))}, listed in the tables' file.", ""]
            elif minor:
                said = f"{len(minor)} {change_noun(REWORDED, len(minor))}: {REWORDED_WHY}"
                lines += [f"<details><summary>{said}</summary>", ""] + _table(minor) + ["</details>", ""]
        if self.not_compared:
            lines += ["<details><summary>" + f"{len(self.not_compared)} (reproducer, hardware) pairs not compared"
                      "</summary>", ""]
            lines += [f"- {md_cell(n)}" for n in self.not_compared] + ["", "</details>", ""]
        return "\n".join(lines)

    def tables_markdown(self) -> str:
        """The tables markdown(tables=...) leaves out: every reproducer of each folded group, every rewording."""
        heading = f"## {md_cell(self.engine)} {md_cell(self.from_version)} → {md_cell(self.to_version)}: every row"
        lines = [heading, ""]
        for labels, changes in self.by_hardware():
            main = [c for c in changes if c.kind != REWORDED]
            minor = [c for c in changes if c.kind == REWORDED]
            if len(main) <= FOLD and not minor:
                continue
            lines += [f"### on {md_cell(say_list(labels))}", ""]
            if len(main) > FOLD:
                lines += [f"Every reproducer ({len(main)}):", ""] + _table(main)
            if minor:
                lines += [f"{len(minor)} {change_noun(REWORDED, len(minor))}: {REWORDED_WHY}", ""] + _table(minor)
        return "\n".join(lines)

    def by_hardware(self) -> List[Tuple[Tuple[str, ...], List[Change]]]:
        """The merged changes grouped by the hardware labels they hold on, widest group first."""
        groups: Dict[Tuple[str, ...], List[Change]] = {}
        for change, labels in self.merged():
            groups.setdefault(labels, []).append(change)
        if not groups:  # no change anywhere: one group over every pair compared, to say so once
            return [(tuple(_pair_label(p) for p in self.hardware), [])]
        order = [_pair_label(p) for p in self.hardware]
        out = sorted(groups.items(), key=lambda g: (-len(g[0]), [order.index(h) for h in g[0]]))
        quiet = tuple(h for h in order if not any(h in labels for labels in groups))
        return out + ([(quiet, [])] if quiet else [])


def diff(
    cells: Sequence[Cell],
    engine: str,
    from_version: str,
    to_version: str,
    hardware: Optional[str] = None,
    drift: float = DRIFT_STEPS,
    disagree: Optional[Dict[str, Dict[str, str]]] = None,
) -> DiffReport:
    """Compare one engine's cells at two versions, per hardware label; ValueError names what exists, NeverRun a
    version that never ran on any machine of this project, and why. disagree: disagreeing(the engine's cells), where
    the caller has it (the report compares every pair of versions: it is the engine's, not the pair's)."""
    _check_ran(cells, engine, (from_version, to_version))
    mine = [c for c in cells if c.engine == engine]
    if not mine:
        present = sorted({c.engine for c in cells})
        raise ValueError(f"no cells for engine {engine!r}; engines present: {', '.join(present) or 'none'}")
    _check_version(mine, engine, from_version)
    _check_version(mine, engine, to_version)
    pairs, notes = _hardware_pairs(mine, engine, from_version, to_version, hardware)
    changes: List[Change] = []
    not_compared: List[str] = []
    compared: List[str] = []
    models: Set[str] = set()  # the compared bundles that are users' models
    disagree = disagreeing(mine) if disagree is None else disagree
    sides: Dict[Tuple[str, str], List[Cell]] = {}  # (version, setting) -> its cells, in one pass
    for c in mine:
        if c.engine_version in (from_version, to_version):
            sides.setdefault((c.engine_version, c.setting), []).append(c)
    for pair in pairs:
        before = _newest(sides.get((from_version, pair[0]), ()))
        after = _newest(sides.get((to_version, pair[1]), ()))
        label = _pair_label(pair)
        notes += _mixed_sources(before, after, from_version, to_version, label)
        for bundle in sorted(set(before) | set(after)):
            a, b = before.get(bundle), after.get(bundle)
            why = _not_comparable(a, b, from_version, to_version)
            if why:
                not_compared.append(f"{bundle} [{label}]: {why}")
                continue
            compared.append(bundle)
            if a.case == USER_MODEL.id:
                models.add(bundle)
            moved = outcome(a).failed_stage != outcome(b).failed_stage
            changes.extend(_unstable(c, disagree, (from_version, to_version)) if moved else c
                           for c in compare_cells(a, b, label, drift))
    return DiffReport(engine, from_version, to_version, tuple(pairs), tuple(changes), len(set(compared)),
                      tuple(not_compared), tuple(notes), len(compared), len(models))


def rows_words(bundles: Set[str]) -> str:
    """Bundle ids counted by what they are: "332 reproducers and 9 user models" (core.words.reproducers_and_models)."""
    models = sum(b.split("/", 1)[0] == USER_MODEL.id for b in bundles)
    return reproducers_and_models(len(bundles) - models, models)


def compare_cells(a: Cell, b: Cell, hardware: str, drift: float = DRIFT_STEPS) -> List[Change]:
    """The changes from cell a (older version) to cell b (newer version) of one reproducer."""
    out: List[Change] = []

    def add(kind: str, before: str, after: str, detail: str = "", cause: str = "", signature: str = "",
            gist: Tuple[str, str] = ("", "")) -> None:
        basis, runs = (regression_basis(b), (_run(a), _run(b))) if kind in REGRESSIONS else ("", ())
        out.append(Change(a.bundle, hardware, kind, before, after, detail, cause, signature, gist, basis, runs, a.case))

    was, now = outcome(a), outcome(b)  # an unknown status is an error here, never a cell without changes
    if was.worked and now.failed:
        add("regressed", _state(a), _state(b), first_line(b.error) or b.reason, _cause(b))
    elif was.failed and now.worked:
        add("fixed", _state(a), _state(b), first_line(a.error) or a.reason, _cause(a))
    elif a.status == "fail" and b.status == "crashed":
        add("now crashes", _state(a), _state(b), b.reason, _cause(b))
    elif a.status == "crashed" and b.status == "fail":
        add("no longer crashes", _state(a), _state(b), first_line(b.error), _cause(a))
    if a.fused is True and b.fused is False:
        add("fusion lost", "fused", "not fused", _float_nodes(b))
    elif a.fused is False and b.fused is True:
        add("fusion gained", "not fused", "fused", _float_nodes(a))
    else:  # a model with many target nodes: INT8 lost or gained node by node
        lost, gained = _moved(a, b, "int8", "float"), _moved(a, b, "float", "int8")
        if lost:
            add("fusion lost", f"{_int8_count(a)} INT8 nodes", f"{_int8_count(b)} INT8 nodes",
                "float: " + ", ".join(lost), gist=(MORE_INT8, FEWER_INT8))
        if gained:
            add("fusion gained", f"{_int8_count(a)} INT8 nodes", f"{_int8_count(b)} INT8 nodes",
                "INT8: " + ", ".join(gained), gist=(FEWER_INT8, MORE_INT8))
    if a.status == "fail" and b.status == "fail":
        stage = was.failed_stage == now.failed_stage
        same_symptom = stage and ((a.signature != "" and a.signature == b.signature) or
                                  error_words(a.error) == error_words(b.error))
        if stage and first_line(a.error) == first_line(b.error):
            pass  # the engine said the same: a signature matched on one side only is the catalogue's doing, not its
        elif same_symptom:
            add(REWORDED, _error_text(a), _error_text(b), signature=b.signature, gist=(_error_gist(a), _error_gist(b)))
        elif first_line(a.error) != first_line(b.error) or a.signature != b.signature or not stage:
            add("error changed", _error_text(a), _error_text(b), signature=b.signature,
                gist=(_error_gist(a), _error_gist(b)))
    if a.max_error_steps is not None and b.max_error_steps is not None:
        if abs(b.max_error_steps - a.max_error_steps) > drift:
            add("numeric drift", f"{a.max_error_steps:.3g} steps", f"{b.max_error_steps:.3g} steps",
                f"changed by more than {drift:g} steps", gist=(DRIFT_GIST, DRIFT_GIST))
    return out


def regression_basis(cell: Cell) -> str:
    """What a regression's newer cell rests on: "documented (source)" where an upstream source documents its failure
    (the cell agrees with a documented expectation), else "" (this suite's own runs only)."""
    e = cell.expectation
    if cell.verdict == "as documented" and (e.get("basis") or "documented") == "documented" and e.get("source"):
        return f"documented ({e['source']})"
    return ""


def regression_words(old: str, change: Change) -> str:
    """A regressed cell's line in the grid and the root causes: "regression from 8.5.3.1 (pass (fused) there, fail at
    build here); observed by this suite only" or "...; documented (source)"."""
    basis = change.basis or "observed by this suite only: " + "; ".join(change.runs)
    lost = "; INT8 fusion lost" if change.kind == "fusion lost" else ""
    return f"regression from {old} ({change.before} there, {change.after} here{lost}); {basis}"


def _run(c: Cell) -> str:
    """One run in words: "8.6.0 on NVIDIA H200 (sm_90) (reports/observed/nvidia-h200/trt-8.6.0.jsonl)"."""
    where = c.run.get("file") or c.run.get("source") or "local"
    return f"{c.engine_version} on {c.setting} ({where})"


def regressions(cells: Sequence[Cell]) -> Dict[Tuple[Tuple[str, ...], str], Tuple[str, Change]]:
    """Every cell that regressed, by (its column's key, bundle), with the older version it regressed from: it fails
    (or crashes) or lost INT8 fusion where the engine's latest earlier version that ran the reproducer on the same
    hardware setting passed, built or fused (the diff's REGRESSIONS), whatever either cell's expectation says."""
    groups: Dict[Tuple[str, str, str], List[Cell]] = {}
    for c in cells:
        if outcome(c).status in RAN:  # outcome: a status it does not know is an error, never left out
            groups.setdefault((c.engine, c.setting, c.engine_version), []).append(c)
    runs: Dict[Tuple[str, str, str], Dict[str, Cell]] = {}
    for (engine, setting, version), mine in groups.items():
        for bundle, c in _newest(mine).items():
            runs.setdefault((engine, setting, bundle), {})[version] = c
    out: Dict[Tuple[Tuple[str, ...], str], Tuple[str, Change]] = {}
    for (_, setting, bundle), by_version in runs.items():
        order = sorted(by_version, key=version_key)
        for old, new in zip(order, order[1:]):
            bad = [c for c in compare_cells(by_version[old], by_version[new], setting) if c.kind in REGRESSIONS]
            if bad:
                out[(column_key(by_version[new]), bundle)] = (old, bad[0])
    return out


def runs_key(c: Cell) -> Tuple[str, str, str, Variant, str]:
    """What makes two cells runs of one reproducer on one engine version and option variant, on GPUs of one
    architecture: the last field is the compute capability ("" for a cell without a GPU, which has no such twin)."""
    return (c.engine, c.engine_version, c.bundle, variant_of(c.variant),
            str((c.hardware_detail or {}).get("compute_capability") or ""))


def disagreeing(cells: Sequence[Cell]) -> Dict[str, Dict[str, str]]:
    """Per engine version, the reproducers it fails at different stages (or fails and passes) in its runs on GPUs of
    one architecture with one option variant (runs_key), each with the words that say so: "8.6.0 fails it at load on
    NVIDIA H200 (sm_90) and fails it at build on NVIDIA H100 80GB HBM3 (sm_90)". CPU cells are left out (their ISA is
    their architecture)."""
    groups: Dict[Tuple[str, str, str, Variant, str], Dict[str, Cell]] = {}
    for c in cells:
        key = runs_key(c)
        if key[-1] and c.status in RAN:
            groups.setdefault(key, {})[c.hardware] = c
    found: Dict[str, Dict[str, str]] = {}
    for (_, version, bundle, _, _), by_hardware in groups.items():
        seen: Dict[Tuple[str, str], List[str]] = {}
        for hardware, c in sorted(by_hardware.items()):
            seen.setdefault((c.status, outcome(c).failed_stage), []).append(hardware)
        if len(seen) > 1:
            said = [f"{DOES[status]}{' at ' + stage if status == 'fail' else ''} on {say_list(where)}"
                    for (status, stage), where in seen.items()]
            found.setdefault(version, {})[bundle] = f"{version} {' and '.join(said)}"
    return found


def _unstable(change: Change, disagree: Dict[str, Dict[str, str]], versions: Tuple[str, str]) -> Change:
    """An error change from one stage to another of a reproducer whose stage is not stable: either side's version, or
    else another version of the engine (the oldest such), failed it at different stages in two runs on GPUs of one
    architecture. Said as that, naming those runs (an error text that changed at one stage is still the versions'
    difference)."""
    if change.kind != "error changed":
        return change
    said = [disagree[v][change.bundle] for v in versions if change.bundle in disagree.get(v, {})]
    if not said:
        said = [disagree[v][change.bundle] for v in sorted(disagree, key=version_key)
                if change.bundle in disagree[v]][:1]
    if not said:
        return change
    return replace(change, kind=UNSTABLE, detail="; ".join(said))


class NeverRun(ValueError):
    """A version asked for never ran on any machine of this project (matrix.merge.never_run): nothing to compare."""


def _check_ran(cells: Sequence[Cell], engine: str, versions: Tuple[str, str]) -> None:
    """NeverRun, in one line, where either version never ran: which, and why."""
    never = never_run(cells)
    unrun = [v for v in dict.fromkeys(versions) if (engine, v) in never]
    if unrun:
        whys = list(dict.fromkeys(never[(engine, v)] for v in unrun))
        raise NeverRun(f"{engine} {say_list(unrun)} never ran on any machine of this project: {'; '.join(whys)}; "
                       "there is nothing to compare")


def _check_version(cells: List[Cell], engine: str, version: str) -> None:
    present = sorted({c.engine_version for c in cells}, key=version_key)
    if version not in present:
        listing = "; ".join(f"{v} ({', '.join(sorted({c.setting for c in cells if c.engine_version == v}))})"
                            for v in present)
        raise ValueError(f"no {engine} cells for version {version!r}; versions present: {listing}")


def _hardware_pairs(cells: List[Cell], engine: str, old: str, new: str,
                    hardware: Optional[str]) -> Tuple[List[Tuple[str, str]], List[str]]:
    """Which hardware labels to compare: the one asked for, every shared one, or the only one on each side."""
    have_old = sorted({c.setting for c in cells if c.engine_version == old})
    have_new = sorted({c.setting for c in cells if c.engine_version == new})
    if hardware is not None:
        missing = [v for v, have in ((old, have_old), (new, have_new)) if hardware not in have]
        if missing:
            raise ValueError(f"{engine} has no cells on hardware {hardware!r} for {', '.join(missing)}; "
                             f"{old} ran on: {', '.join(have_old)}; {new} ran on: {', '.join(have_new)}")
        return [(hardware, hardware)], []
    shared = [h for h in have_old if h in have_new]
    notes: List[str] = []
    if shared:
        if len(shared) > 1:
            notes.append(f"both versions ran on {len(shared)} hardware labels; compared per hardware: "
                         + "; ".join(shared))
        only = [f"{h} (only {old})" for h in have_old if h not in shared]
        only += [f"{h} (only {new})" for h in have_new if h not in shared]
        if only:
            notes.append("not compared, ran on one version only: " + "; ".join(only))
        return [(h, h) for h in shared], notes
    if len(have_old) == 1 and len(have_new) == 1:
        notes.append(f"compared across hardware: {old} ran on {have_old[0]}, {new} on {have_new[0]}")
        return [(have_old[0], have_new[0])], notes
    raise ValueError(f"{engine} {old} and {new} share no hardware; {old} ran on: {', '.join(have_old)}; "
                     f"{new} ran on: {', '.join(have_new)}; pick one pair with --hardware")


def _newest(cells) -> Dict[str, Cell]:
    """One cell per bundle: an observed cell before a local one (a local run never replaces an observation), then
    the newest run."""
    out: Dict[str, Cell] = {}
    for c in cells:
        old = out.get(c.bundle)
        if old is None or _rank(c) >= _rank(old):
            out[c.bundle] = c
    return out


def _mixed_sources(before: Dict[str, Cell], after: Dict[str, Cell], old: str, new: str, label: str) -> List[str]:
    """A note where one side is observed and the other a local run: the reader must know what is compared."""
    sides = {v: {c.run.get("source", "local") for c in cells.values()} for v, cells in ((old, before), (new, after))}
    if sides[old] == sides[new] or not all(sides.values()):
        return []
    said = "; ".join(f"{v}: {' and '.join(sorted(s))}" for v, s in sides.items())
    return [f"on {label}, an observation is compared with a local run ({said}); a local run is listed in no "
            "observations manifest"]


def _rank(c: Cell) -> Tuple[bool, str]:
    return c.run.get("source") == "observed", c.run.get("date", "")


def _not_comparable(a: Optional[Cell], b: Optional[Cell], old: str, new: str) -> str:
    if a is None or b is None:
        return f"no cell for {old if a is None else new}"
    if a.digest and b.digest and a.digest != b.digest:  # one bundle id, two models (a user's `reduced`, remade)
        return f"not the same model: {old}'s cell ran digest {a.digest[:12]}, {new}'s {b.digest[:12]}"
    idle = [f"{v} {STATUS_WORDS[c.status]}" + (f" ({c.reason})" if c.reason else "")
            for v, c in ((old, a), (new, b)) if c.status in IDLE + HARNESS]  # not applicable: never a change
    return "; ".join(idle)


def _pair_label(pair: Tuple[str, str]) -> str:
    return pair[0] if pair[0] == pair[1] else f"{pair[0]} → {pair[1]}"


def _where(pairs: Tuple[Tuple[str, str], ...]) -> str:
    return "; ".join(_pair_label(p) for p in pairs) or "no shared hardware"


def _state(c: Cell) -> str:
    """A cell's outcome in the diff's words (core.words.DIFF_STATES)."""
    return DIFF_STATES[outcome(c).kind]


def _error_text(c: Cell) -> str:
    sig = f" [sig: {c.signature}]" if c.signature else ""
    return f"{_state(c)}: {first_line(c.error)}{sig}"


def _error_gist(c: Cell) -> str:
    """A failure as every reproducer of one cause says it: its state and its symptom (a field), with its signature."""
    sig = f" [sig: {c.signature}]" if c.signature else ""
    return f"{_state(c)}: {c.symptom}{sig}"


def _float_nodes(c: Cell) -> str:
    nodes = [n for n, p in sorted(c.precision.items()) if p.get("precision") == "float"]
    return ("float: " + ", ".join(nodes)) if nodes else ""


def _moved(a: Cell, b: Cell, was: str, now: str) -> List[str]:
    """Target nodes whose precision went from `was` in cell a to `now` in cell b."""
    return [n for n, p in sorted(a.precision.items())
            if p.get("precision") == was and b.precision.get(n, {}).get("precision") == now]


def _int8_count(c: Cell) -> str:
    return f"{sum(p.get('precision') == 'int8' for p in c.precision.values())} of {len(c.precision)}"


# Each change kind counted: (one, more), total over CHANGES.
CHANGE_NOUNS = {
    "regressed": ("regression", "regressions"), "fixed": ("fix", "fixes"),
    "now crashes": ("new crash", "new crashes"), "no longer crashes": ("crash gone", "crashes gone"),
    "fusion lost": ("fusion lost", "fusion lost"), "fusion gained": ("fusion gained", "fusion gained"),
    "error changed": ("error text changed", "error texts changed"), "numeric drift": ("numeric drift", "numeric drift"),
    UNSTABLE: ("stage change not counted (runs disagree)", "stage changes not counted (runs disagree)"),
    REWORDED: ("error reworded", "errors reworded"),
}


def change_noun(kind: str, n: int) -> str:
    """A change kind as a count says it: "1 regression", "2 regressions" (CHANGE_NOUNS)."""
    one, many = CHANGE_NOUNS[kind]
    return one if n == 1 else many


FOLD = 12  # more changes than this on one hardware label: say them by cause, fold the full table
CAUSE_LIMIT = 160  # characters of a cause's symptom in a change
# A fusion change counted node by node, said for a group without its counts (they differ per model; each reproducer's
# row in the pair's diff file has them): "INT8 on more nodes -> INT8 on fewer nodes", not "N INT8 nodes -> N ...".
MORE_INT8, FEWER_INT8 = "INT8 on more nodes", "INT8 on fewer nodes"
DRIFT_GIST = "N steps"  # a numeric drift, its sizes left out


def _cause(c: Cell) -> str:
    """The failing side's catalogue signature, else its symptom (the field its root cause is grouped by)."""
    if c.signature:
        return f"sig: {c.signature}"
    return (c.symptom or c.status)[:CAUSE_LIMIT]


@dataclass(frozen=True)
class CauseGroup:
    """Changes of one kind, from one state to another, for one cause: the reproducers that show one upgrade's effect
    alike. Before and after are said as every member says them (Change.gist), never one member's own text."""

    kind: str
    before: str
    after: str
    cause: str
    changes: Tuple[Change, ...]


def by_cause(changes: Sequence[Change]) -> List[CauseGroup]:
    """Changes grouped by kind, before, after and cause, from fields (the states, or the cells' symptoms and
    signatures, never the texts): the kinds in reading order, the largest group of a kind first. The diff's Markdown
    and the report's upgrade answer both say their groups from this."""
    groups: Dict[Tuple[str, str, str, str], List[Change]] = {}
    for c in changes:
        groups.setdefault((c.kind, c.gist[0] or c.before, c.gist[1] or c.after, c.cause), []).append(c)
    ordered = sorted(groups.items(), key=lambda g: (CHANGES.index(g[0][0]), -len(g[1])))
    return [CauseGroup(*key, tuple(members)) for key, members in ordered]


def _cause_lines(changes: List[Change]) -> List[str]:
    """One line per kind of change and cause (by_cause), with how many reproducers of which cases show it."""
    lines = []
    for g in by_cause(changes):
        cases: Dict[str, int] = {}
        for m in g.changes:
            cases[m.case] = cases.get(m.case, 0) + 1
        where = ", ".join(f"{md_cell(k)} ×{n}" for k, n in sorted(cases.items(), key=lambda x: -x[1]))
        why = f" — {_code_cell(g.cause)}" if g.cause else ""
        lines.append(f"- **{len(g.changes)} {md_cell(change_noun(g.kind, len(g.changes)))}**: {md_cell(g.before)} → "
                     f"{md_cell(g.after)}{why}; {where}")
    return lines + [""]


def _table(changes: List[Change]) -> List[str]:
    lines = ["| case | params | change | before | after | detail |", "| --- | --- | --- | --- | --- | --- |"]
    for c in sorted(changes, key=lambda c: (CHANGES.index(c.kind), c.bundle)):
        cells = [md_cell(x) for x in (c.case, c.slug, c.kind, c.before, c.after)]
        detail = _code_cell(c.detail) if c.kind in ERROR_DETAIL and c.detail else md_cell(c.detail)
        lines.append("| " + " | ".join(cells + [detail]) + " |")
    return lines + [""]


def _code_cell(text: str) -> str:
    """A code span inside a table cell: GFM splits cells on | before it reads code spans, so | is escaped."""
    return md_code(text).replace("|", "\\|")
