"""The upgrade answer per engine: matrix.diff between every pair of versions, adjacent pairs first."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from core.cell import Cell
from core.outcome import outcome
from core.words import STATUS_WORDS, clip, many, say_list
from matrix.causes import say_settings
from matrix.cellfiles import safe_name
from matrix.diff import (
    BAD,
    CHANGES,
    GOOD,
    REGRESSIONS,
    REWORDED,
    UNSTABLE,
    Change,
    DiffReport,
    by_cause,
    change_noun,
    diff,
    disagreeing,
    rows_words,
)
from matrix.merge import Variant, never_run, variant_of, version_key

HEADLINE_LIMIT = 140  # a pair's headline is one line: what did not fit goes under it
SHOWN = 160  # characters of a before or after text in the page's lists (the pair's file under diff/ has them whole)
FOLD = 5  # more changes than this on one hardware: said by cause, every reproducer in the pair's file under diff/
DIFFS = "diff"  # reports/diff/: each adjacent pair's full `matrix diff`, every reproducer in a table


def upgrade_view(cells: Sequence[Cell]) -> List[Dict[str, Any]]:
    """Per engine: its versions, every (older, newer) pair's diff as a view, adjacent pairs marked."""
    engines = []
    never = never_run(cells)
    for engine in sorted({c.engine for c in cells}):
        mine = [c for c in cells if c.engine == engine]
        unrun = {v: why for (e, v), why in never.items() if e == engine}
        every = sorted({c.engine_version for c in mine} | set(unrun), key=version_key)
        versions = [v for v in every if any(not outcome(c).idle for c in mine if c.engine_version == v)]
        idle = idle_lines([v for v in every if v not in versions], mine, unrun)
        pairs = []
        disagree = disagreeing(mine)  # the engine's, whichever pair reads it
        for i, old in enumerate(versions):
            for j in range(i + 1, len(versions)):
                pair = dict(pair_view(mine, engine, old, versions[j], disagree), i=i, j=j, adjacent=j == i + 1)
                pair["file"] = f"{DIFFS}/{diff_file(engine, old, versions[j])}" if pair["adjacent"] and \
                    pair["report"] is not None else ""
                pairs.append(pair)
        engines.append({"engine": engine, "index": len(engines), "versions": versions, "pairs": pairs,
                        "idle": idle})
    return engines


def idle_lines(idle: Sequence[str], cells: Sequence[Cell], never: Optional[Dict[str, str]] = None) -> List[str]:
    """Why versions take no part in the comparison (nothing ran there): versions idle alike share one line; a version
    that never ran on any machine here (never: version -> why, matrix.merge.never_run) says so, whatever its stand-in
    cells say."""
    never = never or {}
    unrun: Dict[str, List[str]] = {}
    for version in (v for v in idle if v in never):
        unrun.setdefault(never[version], []).append(version)
    lines = [f"{versions[0]} is not compared: never run: {why}" if len(versions) == 1 else
             f"{say_list(versions)} are not compared, each never run: {why}" for why, versions in unrun.items()]
    groups: Dict[Tuple[int, str], List[str]] = {}
    for version in (v for v in idle if v not in never):
        mine = [c for c in cells if c.engine_version == version]
        reasons = sorted({f"{STATUS_WORDS[c.status]}: {c.reason}" if c.reason else STATUS_WORDS[c.status]
                          for c in mine})
        why = reasons[0] if len(reasons) == 1 else f"{len(reasons)} reasons, see the grid"
        groups.setdefault((len(mine), why), []).append(version)
    return lines + [f"{version} is not compared: none of its {many(n, 'cell')} ran ({why})" if len(versions) == 1 else
                    f"{say_list(versions)} are not compared: none of the {many(n, 'cell')} of each ran ({why})"
                    for (n, why), versions in groups.items() for version in versions[:1]]


def pair_view(cells: Sequence[Cell], engine: str, old: str, new: str,
              disagree: Optional[Dict[str, Dict[str, str]]] = None) -> Dict[str, Any]:
    """One pair as the templates show it: headline, changes, rewordings, and what was not compared, grouped
    (disagree: matrix.diff.disagreeing of the engine's cells, where the caller has it)."""
    try:
        report = diff(cells, engine, old, new, disagree=disagree)
    except ValueError as e:  # no shared hardware and several on each side: say so, as `matrix diff` does
        return {"engine": engine, "from": old, "to": new, "tone": "idle", "counts": [], "notes": [str(e)],
                "headline": "nothing compared: no hardware setting ran both versions (matrix diff takes --hardware)",
                "under": [], "groups": [], "changes": [], "reworded": 0, "not_compared": [], "not_compared_words": "",
                "compared": 0,
                "report": None}
    mine = [c for c in cells if c.engine == engine]
    settings = {c.setting: (c.hardware, variant_of(c.variant)) for c in mine}
    several = len(report.hardware) > 1
    groups = []
    for labels, changes in report.by_hardware():
        changes = sorted(changes, key=lambda c: (CHANGES.index(c.kind), c.bundle))
        main = [c for c in changes if c.kind not in (REWORDED, UNSTABLE)]
        groups.append({"where": "on " + say_settings([settings.get(h, (h, ())) for h in labels]) if several else "",
                       "changes": [_change(c) for c in main], "by_cause": cause_view(main) if len(main) > FOLD else [],
                       "by_kind": by_kind(main),
                       "reworded": reworded_summary([c for c in changes if c.kind == REWORDED]),
                       "unstable": [dict(_change(c), detail=c.detail) for c in changes if c.kind == UNSTABLE]})
    return {
        "engine": engine, "from": old, "to": new, "headline": headline(report), "under": under(report, settings),
        "tone": tone(report),
        "counts": [{"kind": k, "n": report.count(k)} for k in CHANGES if report.count(k)],
        "notes": pair_notes(mine, report, settings), "compared": report.compared, "groups": groups,
        "changes": [dict(c, where=g["where"]) for g in groups for c in g["changes"]],
        "reworded": report.count(REWORDED),
        "not_compared": group_not_compared(report.not_compared),
        "not_compared_words": rows_words(report.not_compared_bundles),
        "report": report,
    }


def say_where(report: DiffReport, settings: Dict[str, Tuple[str, Variant]]) -> str:
    """The hardware a diff compared on, each hardware named once: "no GPU: ahead-of-time build · target=SM75 and
    target=SM80" rather than the full label per target."""
    same = [a for a, b in report.hardware if a == b]
    crossed = [f"{a} → {b}" for a, b in report.hardware if a != b]
    said = say_settings([settings.get(h, (h, ())) for h in same]) if same else ""
    return "; ".join(x for x in [said] + crossed if x) or "no shared hardware"


def pair_notes(cells: Sequence[Cell], report: DiffReport, settings: Dict[str, Tuple[str, Variant]]) -> List[str]:
    """What a reader of one pair must know, each hardware named once: settings that ran on one side only, a comparison
    across hardware, and an observation compared with a local run."""
    sources: Dict[Tuple[str, str], Set[str]] = {}  # (version, setting) -> the sources of its cells, in one pass
    for c in cells:
        if c.engine_version in (report.from_version, report.to_version):
            sources.setdefault((c.engine_version, c.setting), set()).add(c.run.get("source", "local"))
    old = [s for s in settings if (report.from_version, s) in sources]
    new = [s for s in settings if (report.to_version, s) in sources]
    notes = []
    only = [f"{say_settings([settings[s] for s in side if s not in other])} (only {version})"
            for side, other, version in ((old, new, report.from_version), (new, old, report.to_version))
            if any(s not in other for s in side)]
    shared = any(a == b for a, b in report.hardware)
    if only and shared:
        notes.append("not compared, ran on one version only: " + "; ".join(only))
    mixed: Dict[str, List[str]] = {}
    for a, b in report.hardware:
        if a != b:
            notes.append(f"compared across hardware: {report.from_version} ran on {a}, {report.to_version} on {b}")
        sides = [sorted(sources.get((v, s), ())) for v, s in ((report.from_version, a), (report.to_version, b))]
        if sides[0] != sides[1] and all(sides):
            said = (f"{report.from_version}: {' and '.join(sides[0])}; "
                    f"{report.to_version}: {' and '.join(sides[1])}")
            mixed.setdefault(said, []).append(a if a == b else f"{a} → {b}")
    for said, where in mixed.items():
        notes.append(f"on {say_settings([settings.get(h, (h, ())) for h in where])}, an observation is compared "
                     f"with a local run ({said}); a local run is listed in no observations manifest")
    return notes


def cause_view(changes: Sequence[Change]) -> List[Dict[str, Any]]:
    """Many changes on one hardware as a few lines: matrix.diff.by_cause's groups, each with its reproducers."""
    out = []
    for g in by_cause(changes):
        cases: Dict[str, List[str]] = {}
        for m in g.changes:
            cases.setdefault(m.case, []).append(m.slug)
        before, after = shown(g.before, g.after)
        out.append({"kind": g.kind, "before": before, "after": after, "cause": g.cause, "n": len(g.changes),
                    "tone": _change(g.changes[0])["tone"],
                    "cases": [{"case": k, "n": len(v), "slugs": v} for k, v in
                              sorted(cases.items(), key=lambda x: (-len(x[1]), x[0]))]})
    return out


def by_kind(changes: Sequence[Change]) -> List[Dict[str, Any]]:
    """Changes counted per kind, with the cases they touch: the any-pair picker's summary."""
    kinds: Dict[str, List[Change]] = {}
    for c in changes:
        kinds.setdefault(c.kind, []).append(c)
    out = []
    for kind, members in sorted(kinds.items(), key=lambda k: CHANGES.index(k[0])):
        cases: Dict[str, int] = {}
        for m in members:
            cases[m.case] = cases.get(m.case, 0) + 1
        out.append({"kind": kind, "n": len(members), "tone": _change(members[0])["tone"],
                    "cases": [{"case": k, "n": n} for k, n in sorted(cases.items(), key=lambda x: (-x[1], x[0]))]})
    return out


def diff_file(engine: str, old: str, new: str) -> str:
    """The name of one pair's full diff under reports/diff/: safe on any file system, whatever the names hold."""
    return safe_name(f"{engine}_{old}_to_{new}") + ".md"


def reworded_summary(changes: Sequence[Change]) -> List[Dict[str, Any]]:
    """Rewordings counted per catalogue signature, with one example each: the detail is `matrix diff`'s."""
    groups: Dict[str, List[Change]] = {}
    for c in changes:
        groups.setdefault(c.signature, []).append(c)
    return [{"signature": sig, "n": len(items), "example": _change(items[0])}
            for sig, items in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))]


COUNTED = BAD + GOOD + ("error changed", "numeric drift")  # the headline's kinds; rewordings and runs that disagree
# are not changes, and go under it


def headline_parts(report: DiffReport) -> Tuple[List[str], List[str]]:
    """(what the headline says, what did not fit in HEADLINE_LIMIT characters): the counted kinds, most important
    first, then how many reproducers were compared."""
    if not report.compared:
        return [f"nothing compared: {report.why_nothing}"], []
    counted = [f"{report.count(k)} {change_noun(k, report.count(k))}" for k in COUNTED if report.count(k)]
    tail = f" ({report.said_compared})"
    said: List[str] = []
    for part in counted:
        if len(", ".join(said + [part]) + tail) > HEADLINE_LIMIT and said:
            break
        said.append(part)
    return said or ["no changes"], counted[len(said):]


def headline(report: DiffReport) -> str:
    """The pair's one line, at most HEADLINE_LIMIT characters: regressions, fixes, INT8 fusion lost or gained, error
    changes and drift, and how many reproducers were compared; hardware, rewordings and runs that disagree go under."""
    said, _ = headline_parts(report)
    if not report.compared:
        return clip(said[0], HEADLINE_LIMIT - 2)
    return f"{', '.join(said)} ({report.said_compared})"


def under(report: DiffReport, settings: Dict[str, Tuple[str, Variant]]) -> List[str]:
    """The lines under a pair's headline: where it compared, what did not fit the headline, what is not counted, and
    what each regression rests on."""
    out = [f"Compared on {say_where(report, settings)}."] if report.hardware else []
    _, rest = headline_parts(report)
    if rest:
        out.append(f"Also: {', '.join(rest)}.")
    quiet = [f"{many(report.count(REWORDED), 'error text')} reworded (the same failure in other words)"] \
        if report.count(REWORDED) else []
    if report.count(UNSTABLE):
        quiet.append(f"{many(report.count(UNSTABLE), 'stage change')} where runs of one version disagree")
    if quiet:
        out.append(f"Not counted as changes: {' and '.join(quiet)}.")
    return out + regression_basis_lines(report)


def regression_basis_lines(report: DiffReport) -> List[str]:
    """What the pair's regressions rest on: the upstream sources that document the newer version's failures, and the
    runs of this suite that alone show the others (each version, hardware and results file)."""
    bad = [c for c in report.changes if c.kind in REGRESSIONS]  # every hardware's, for the runs and sources named
    counted = [c for c, _ in report.merged() if c.kind in REGRESSIONS]  # each change once, as the headline counts
    own, cited = [c for c in counted if not c.basis], [c for c in counted if c.basis]
    out = []
    if own:
        runs = sorted({r for c in bad if not c.basis for r in c.runs})
        out.append(f"{_by_kind(own)} observed by this suite only (no upstream source documents "
                   f"{'it' if len(own) == 1 else 'them'}), in these runs: {'; '.join(runs)}.")
    if cited:
        documented = sorted({c.basis for c in bad if c.basis})
        out.append(f"{_by_kind(cited)} documented upstream: {'; '.join(documented)}.")
    return out


def _by_kind(changes: Sequence[Change]) -> str:
    """Changes counted as the headline counts them (DiffReport.count: each change once, however many hardware labels
    give it), one kind at a time ("1 regression and 2 fusion lost"): a line under a headline of "2 regressions,
    3 fusion lost" never calls all five regressions."""
    counts = {k: sum(c.kind == k for c in changes) for k in REGRESSIONS}
    said = [f"{n} {change_noun(k, n)}" for k, n in counts.items() if n]
    return " and ".join(said)


def shown(before: str, after: str, limit: int = SHOWN) -> Tuple[str, str]:
    """Before and after as a list shows them: clipped at limit, or whole where clipping would make them read the same
    (two texts that differ only past the limit)."""
    cut = clip(before, limit), clip(after, limit)
    return (before, after) if cut[0] == cut[1] and before != after else cut


def tone(report: DiffReport) -> str:
    """bad (something regressed), good (only fixes and gains), info (other changes), none (no change)."""
    if not report.changes:
        return "none" if report.compared else "idle"
    if any(c.kind in BAD for c in report.changes):
        return "bad"
    return "good" if any(c.kind in GOOD for c in report.changes) else "info"


def group_not_compared(lines: Sequence[str]) -> List[Dict[str, Any]]:
    """ "bundle [hardware]: why" lines grouped by why: one line per reason with its count."""
    groups: Dict[str, List[str]] = {}
    for line in lines:
        head, _, why = line.partition("]: ")
        groups.setdefault(why or line, []).append(head + ("]" if why else ""))
    return [{"why": why, "n": len(items), "bundles": items,
             "reproducers": len({item.split(" [", 1)[0] for item in items})} for why, items in groups.items()]


def _change(c: Any) -> Dict[str, str]:
    shade = "bad" if c.kind in BAD else "good" if c.kind in GOOD else ""
    before, after = shown(c.before, c.after)
    return {"case": c.case, "slug": c.slug, "kind": c.kind, "before": before, "after": after,
            "detail": c.detail, "hardware": c.hardware, "tone": shade}
