"""Root causes: unexpected cells grouped by what went wrong, so that 600 cells of one engine bug read as one line.

A cause is an engine and a symptom, both the cell's fields: the catalogue signature a failure matched, else its
`symptom` (the parser's errors or the engine's first error line, else its crash or not-run reason, with source lines,
addresses, paths and numbers masked where the cell was recorded, so two builds of one engine or two node names do
not split it); a cell that works where a failure is documented (or was observed before, a baseline) is caused by that
documentation (or that observation). No text is parsed or masked here.
Versions, targets and hardware never split a cause: they are what it spans. A regression (it passed, built or fused on
the engine's version before, on the same hardware: matrix.diff.regressions) is a cause of its own, with its newer
version's error as the example, never folded into an older failure of the same symptom.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from cases.verdict import basis_word, signature_words
from core.cell import Cell
from core.engines import title, variant_label
from core.words import FAILED, UNEXPECTED, WORKED, clip, first_line, say_list
from matrix.details import expectation_words
from matrix.diff import Change, regression_words, regressions
from matrix.merge import Variant, column_key, variant_of, variant_order, version_key
from matrix.targets import target_words

LINE_LIMIT = 200  # a cause's example error line is cut here; the cells keep theirs whole
def cause_key(cell: Cell) -> Tuple[str, str, str]:
    """(engine, what the cell did, symptom): the cells with one key share one root cause."""
    if cell.status in FAILED and cell.signature:
        return cell.engine, target_words(cell), "sig: " + cell.signature
    if cell.status not in WORKED:  # a failure, a crash, or not run, skipped or not applicable: its symptom
        return cell.engine, target_words(cell), cell.symptom
    expected = cell.expectation.get("signature") or cell.expectation.get("outcome", "")
    return cell.engine, "works", f"{basis_word(cell.expectation)}: {expected}" if expected else ""


Regressed = Dict[Tuple[Tuple[str, ...], str], Tuple[str, Change]]  # matrix.diff.regressions


def cause_of(cell: Cell, regressed: Regressed) -> Tuple[str, str, str]:
    """cause_key, with a regression's own symptom: "regression from 8.5.3.1 · sig: no_implementation"."""
    key, found = cause_key(cell), regressed.get((column_key(cell), cell.bundle))
    return (key[0], key[1], f"regression from {found[0]} · {key[2]}") if found else key


def root_causes(cells: Sequence[Cell],
                regressed: Optional[Regressed] = None) -> List[Dict[str, Any]]:
    """The unexpected cells' root causes, most cells first: each with its words, count, span and its cells (a
    regression, matrix.diff.regressions, a cause of its own)."""
    regressed = regressions(cells) if regressed is None else regressed
    versions: Dict[str, List[str]] = {}
    for c in cells:
        versions.setdefault(c.engine, []).append(c.engine_version)
    groups: Dict[Tuple[str, str, str], List[Cell]] = {}
    said: Dict[Tuple[str, str, str], str] = {}
    for c in sorted(cells, key=lambda c: (c.bundle, version_key(c.engine_version), c.setting)):
        if c.verdict in UNEXPECTED:
            key, found = cause_of(c, regressed), regressed.get((column_key(c), c.bundle))
            if found:
                said.setdefault(key, regression_words(*found))
            groups.setdefault(key, []).append(c)
    ordered = sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
    return [dict(_cause_view(i, key, members, versions[key[0]]), regression=said.get(key, ""))
            for i, (key, members) in enumerate(ordered)]


def _cause_view(index: int, key: Tuple[str, str, str], cells: List[Cell], every: List[str]) -> Dict[str, Any]:
    engine, did, symptom = key
    verdicts: Dict[str, int] = {}
    for c in cells:
        verdicts[c.verdict] = verdicts.get(c.verdict, 0) + 1
    example = cells[0]
    line = first_line(example.error) or first_line(example.reason)
    return {
        "index": index, "engine": engine, "title": title(engine), "did": did, "symptom": symptom,
        "signature": example.signature, "n": len(cells), "bundles": len({c.bundle for c in cells}),
        "signature_words": signature_words(example.case, engine, example.signature) if example.signature else "",
        "versions": say_versions([c.engine_version for c in cells], every),
        "where": say_settings(settings_of(cells)),
        "verdicts": [{"verdict": v, "n": n} for v, n in sorted(verdicts.items(), key=lambda x: -x[1])],
        "example": clip(line, LINE_LIMIT) if example.status not in WORKED else "",
        "expected": expectation_words(example.expectation) if did == "works" else "",
        "expected_by": basis_word(example.expectation) if did == "works" else "",
        "groups": cell_groups(cells, every),
    }


def cell_groups(cells: Sequence[Cell], every: List[str]) -> List[Dict[str, Any]]:
    """The cells of one cause, a line per case and span: its reproducers' parameters and the columns they fail on."""
    spans: Dict[str, List[Cell]] = {}
    for c in cells:
        spans.setdefault(c.bundle, []).append(c)
    groups: Dict[Tuple[str, str, str], List[str]] = {}
    for bundle, mine in spans.items():
        span = (mine[0].case, say_versions([c.engine_version for c in mine], every),
                say_settings(settings_of(mine)))
        groups.setdefault(span, []).append(bundle)
    return [{"case": case, "versions": v, "where": where, "bundles": bundles,
             "cells": sum(len(spans[b]) for b in bundles), "slugs": [b[len(case) + 1:] for b in bundles]}
            for (case, v, where), bundles in groups.items()]


def say_versions(versions: Sequence[str], every: Sequence[str]) -> str:
    """Versions in words, a run of consecutive ones as a range: "1.4.0.76 to 1.6.1.120", "8.5.1.7 and 8.6.0"."""
    order = sorted(set(every), key=version_key)
    mine = sorted(set(versions), key=version_key)
    if len(mine) > 2 and order.index(mine[-1]) - order.index(mine[0]) == len(mine) - 1:
        return f"{mine[0]} to {mine[-1]}"
    return say_list(mine)


def say_settings(settings: Sequence[Tuple[str, Variant]]) -> str:
    """(hardware, variant) pairs in words, each hardware named once with its option variants after it:
    "no GPU: ahead-of-time build · target=SM75, SM80 and SM86; NVIDIA H200 (sm_90)"."""
    by: Dict[str, List[Variant]] = {}
    for hardware, variant in settings:
        variants = by.setdefault(hardware, [])
        if variant not in variants:
            variants.append(variant)
    out = []
    for hardware, variants in by.items():
        named = sorted((v for v in variants if v), key=variant_order)
        if not named:
            out.append(hardware)
            continue
        default = ["its default"] if () in variants else []
        out.append(f"{hardware} · {say_list(default + _option_once(named))}")
    return "; ".join(out)


def _option_once(variants: Sequence[Variant]) -> List[str]:
    """Variants in words with a repeated option said once: "target=SM75", "SM80", "SM86" (a variant of one option
    after another of that option is its value alone)."""
    out, last = [], ""
    for v in variants:
        one = len(v) == 1
        out.append(v[0][1] if one and v[0][0] == last else variant_label(dict(v)))
        last = v[0][0] if one else ""
    return out


def settings_of(cells: Sequence[Cell]) -> List[Tuple[str, Variant]]:
    """The (hardware, variant) of each cell, for say_settings."""
    return [(c.hardware, variant_of(c.variant)) for c in cells]
