"""Across GPU architectures: where one engine version's cells differ by the target they were built for.

TensorRT-RTX builds ahead of time for one chosen compute capability (a cell's variant `target=SM86`), so one
machine sweeps architectures. This view says, per engine version, which reproducers build for some targets and
not for others, in sentences: "built, FP8 for SM89 and SM120; fails at build for SM75, SM80 and SM86". Before it,
where a report has such cells, what the catalogue's sources document per architecture (an expectation's `when` on a
TensorRT-RTX target or a GPU architecture), run here or not: "fails at build for SM87 (Jetson Orin, ...); passes for
SM110 (Jetson Thor, ...)".
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from cases.base import Case, Expectation
from core.cell import Cell
from core.engines import title
from core.outcome import outcome
from core.words import EXPECTATION_WORDS, TARGET_WORDS, say_list
from matrix.merge import natural_order, version_key


def target_words(cell: Cell) -> str:
    """A cell's outcome in the few words an architecture sentence needs (core.words.TARGET_WORDS)."""
    said = outcome(cell)
    return TARGET_WORDS[said.kind].format(quantized=said.quantized or "INT8")


def target_view(cells: Sequence[Cell]) -> List[Dict[str, Any]]:
    """One entry per engine version built for two or more targets: the reproducers whose outcome depends on the
    target, grouped by case and by the same outcome per target, and how many are the same on every target."""
    by_version: Dict[Tuple[str, str], Dict[str, Dict[str, Cell]]] = {}
    for c in cells:
        target = (c.variant or {}).get("target", "")
        if target and target != "default":
            by_version.setdefault((c.engine, c.engine_version), {}).setdefault(c.bundle, {})[target] = c
    out = []
    for (engine, version), bundles in sorted(by_version.items(), key=lambda kv: (kv[0][0], version_key(kv[0][1]))):
        targets = sorted({t for per in bundles.values() for t in per}, key=natural_order)
        if len(targets) < 2:
            continue
        groups: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], List[Cell]] = {}
        same = 0
        for _, per in sorted(bundles.items()):
            pattern = tuple((t, target_words(per[t])) for t in targets if t in per)
            if len({o for _, o in pattern}) < 2:
                same += 1
                continue
            groups.setdefault((next(iter(per.values())).case, pattern), []).append(next(iter(per.values())))
        rows = [{"case": case, "n": len(group), "params": _params(group), "text": _sentence(pattern)}
                for (case, pattern), group in groups.items()]
        out.append({"engine": engine, "version": version, "targets": targets, "rows": rows, "same": same,
                    "bundles": len(bundles)})
    return out


def _sentence(pattern: Sequence[Tuple[str, str]]) -> str:
    by_outcome: Dict[str, List[str]] = {}
    for target, said in pattern:
        by_outcome.setdefault(said, []).append(target)
    return "; ".join(f"{said} for {say_list(targets)}" for said, targets in by_outcome.items())


def _params(group: Sequence[Cell]) -> str:
    """The parameters of a group of reproducers: each axis with the values the group holds ("op=matmul|gemm")."""
    values: Dict[str, List[str]] = {}
    for c in group:
        for k, v in c.params.items():
            shown = "yes" if v is True else "no" if v is False else str(v)
            if shown not in values.setdefault(k, []):
                values[k].append(shown)
    return ", ".join(f"{k}={'|'.join(v)}" for k, v in values.items())


ARCHITECTURE_KEYS = ("target", "gpu")  # `when` keys that name a GPU architecture: TensorRT-RTX's target, a GPU's


def documented_view(cases: Sequence[Case]) -> List[Dict[str, Any]]:
    """One row per case, engine, version range and parameter filter whose expectations name GPU architectures: what
    each architecture is documented to do, with the sources. An expectation for the default target set alone (a set,
    not an architecture) is left out."""
    groups: Dict[Tuple[str, str, str, str], List[Tuple[str, Expectation]]] = {}
    for case in cases:
        for e in case.expectations:
            key = next((k for k in ARCHITECTURE_KEYS if k in e.when), "")
            arches = [a for a in e.when.get(key, ()) if a != "default"]
            if not arches:
                continue
            row = (case.id, e.engine, e.versions, _where(e))
            groups.setdefault(row, []).extend((a, e) for a in arches)
    out = []
    for (case_id, engine, versions, where), said in groups.items():
        by_outcome: Dict[Tuple[str, str], List[str]] = {}
        for arch, e in sorted(said, key=lambda ae: natural_order(ae[0])):
            by_outcome.setdefault((_expected(e), e.hardware or ""), []).append(arch)
        text = "; ".join(f"{words} for {say_list(arches)}" + (f" ({hardware})" if hardware else "")
                         for (words, hardware), arches in by_outcome.items())
        out.append({"case": case_id, "engine": title(engine), "versions": versions,
                    "params": where, "text": text, "sources": sorted({e.source for _, e in said})})
    return out


def _expected(e: Expectation) -> str:
    """What an expectation says a cell does, in the words of the observed rows."""
    if e.outcome == "fail" and e.stage:
        return TARGET_WORDS[f"fails-at-{e.stage}"]
    return EXPECTATION_WORDS[e.outcome]


def _where(e: Expectation) -> str:
    """An expectation's parameter filter as the rows write parameters ("op=matmul|gemm"), "every reproducer" if none."""
    return ", ".join(f"{k}={'|'.join(str(v) for v in vals)}" for k, vals in e.where.items()) or "every reproducer"
