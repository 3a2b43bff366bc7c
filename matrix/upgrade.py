"""The upgrade answer per engine: matrix.diff between every pair of versions, adjacent pairs first."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from cases.cell import Cell
from matrix.diff import BAD, GOOD, KINDS, REWORDED, Change, DiffReport, diff
from matrix.merge import version_key
from matrix.words import say_list

IDLE = ("skipped", "not_run", "not_applicable")


def upgrade_view(cells: Sequence[Cell]) -> List[Dict[str, Any]]:
    """Per engine: its versions, every (older, newer) pair's diff as a view, adjacent pairs marked."""
    engines = []
    for engine in sorted({c.engine for c in cells}):
        mine = [c for c in cells if c.engine == engine]
        every = sorted({c.engine_version for c in mine}, key=version_key)
        versions = [v for v in every if any(c.status not in IDLE for c in mine if c.engine_version == v)]
        idle = idle_lines([v for v in every if v not in versions], mine)
        pairs = []
        for i, old in enumerate(versions):
            for j in range(i + 1, len(versions)):
                pairs.append(dict(pair_view(cells, engine, old, versions[j]), i=i, j=j, adjacent=j == i + 1))
        engines.append({"engine": engine, "index": len(engines), "versions": versions, "pairs": pairs,
                        "idle": idle})
    return engines


def idle_lines(idle: Sequence[str], cells: Sequence[Cell]) -> List[str]:
    """Why versions take no part in the comparison (nothing ran there): versions idle alike share one line."""
    groups: Dict[Tuple[int, str], List[str]] = {}
    for version in idle:
        mine = [c for c in cells if c.engine_version == version]
        reasons = sorted({f"{c.status.replace('_', ' ')}: {c.reason}" if c.reason else c.status.replace("_", " ")
                          for c in mine})
        why = reasons[0] if len(reasons) == 1 else f"{len(reasons)} reasons, see the grid"
        groups.setdefault((len(mine), why), []).append(version)
    return [f"{version} is not compared: none of its {n} cells ran ({why})" if len(versions) == 1 else
            f"{say_list(versions)} are not compared: none of the {n} cells of each ran ({why})"
            for (n, why), versions in groups.items() for version in versions[:1]]


def pair_view(cells: Sequence[Cell], engine: str, old: str, new: str) -> Dict[str, Any]:
    """One pair as the templates show it: headline, changes, rewordings, and what was not compared, grouped."""
    try:
        report = diff(cells, engine, old, new)
    except ValueError as e:  # no shared hardware and several on each side: say so, as `matrix diff` does
        return {"engine": engine, "from": old, "to": new, "headline": str(e), "tone": "none", "counts": [], "notes": [],
                "groups": [], "changes": [], "reworded": 0, "not_compared": [], "compared": 0}
    several = len(report.hardware) > 1
    groups = []
    for labels, changes in report.by_hardware():
        changes = sorted(changes, key=lambda c: (KINDS.index(c.kind), c.bundle))
        groups.append({"where": f"on {say_list(labels)}" if several else "",
                       "changes": [_change(c) for c in changes if c.kind != REWORDED],
                       "reworded": reworded_summary([c for c in changes if c.kind == REWORDED])})
    return {
        "engine": engine, "from": old, "to": new, "headline": headline(report), "tone": tone(report),
        "counts": [{"kind": k, "n": report.count(k)} for k in KINDS if report.count(k)],
        "notes": list(report.notes), "compared": report.compared, "groups": groups,
        "changes": [dict(c, where=g["where"]) for g in groups for c in g["changes"]],
        "reworded": report.count(REWORDED),
        "not_compared": group_not_compared(report.not_compared),
    }


def reworded_summary(changes: Sequence[Change]) -> List[Dict[str, Any]]:
    """Rewordings counted per documented signature, with one example each: the detail is `matrix diff`'s."""
    groups: Dict[str, List[Change]] = {}
    for c in changes:
        groups.setdefault(c.signature, []).append(c)
    return [{"signature": sig, "n": len(items), "example": _change(items[0])}
            for sig, items in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))]


def headline(report: DiffReport) -> str:
    """The diff's one-line verdict without its emoji mark."""
    text = report.verdict
    return text.split(" ", 1)[1] if report.changes else text


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
    return [{"why": why, "n": len(items), "bundles": items} for why, items in groups.items()]


def _change(c: Any) -> Dict[str, str]:
    shade = "bad" if c.kind in BAD else "good" if c.kind in GOOD else ""
    return {"case": c.case, "slug": c.slug, "kind": c.kind, "before": c.before, "after": c.after,
            "detail": c.detail, "hardware": c.hardware, "tone": shade}
