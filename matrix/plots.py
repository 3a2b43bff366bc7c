"""Two small plots as SVG geometry for the HTML template: fused and failing cells per version, outcome per seed."""

from __future__ import annotations

from collections import Counter
from itertools import takewhile
from typing import Any, Collection, Dict, List, Mapping, Tuple

from core.cell import Cell
from core.engines import ENGINES
from core.outcome import outcome
from core.words import PLOT_CLASSES, PLOT_WORDS, many
from matrix.merge import Column, MergeResult, column_key

BAR, GAP, PLOT_H, LEFT, TOP, PANEL_MIN = 14, 10, 120, 34, 18, 80


def plot_class(cell: Cell) -> str:
    """The outcome class of one cell, as the plots count it (core.words.PLOT_CLASSES)."""
    return PLOT_WORDS[outcome(cell).kind]


def plots_view(result: MergeResult, idle: Collection[Any] = ()) -> Dict[str, Any]:
    """Both plots' geometry; the seed plot leaves out the idle columns (keys), which the grid states in one line."""
    return {"versions": versions_plot(result), "seeds": seeds_plot(result, idle), "outcomes": _legend()}


def versions_plot(result: MergeResult) -> Dict[str, Any]:
    """Per engine, per column: bars for INT8-fused cells and for failing (fail or crashed) cells; a version that never
    ran has none (the grid says why in one line)."""
    by_col = _by_column(result)
    top = max([1] + [len(v) for v in by_col.values()])
    bars: List[Dict[str, Any]] = []
    labels: List[Dict[str, Any]] = []
    panels: List[Dict[str, Any]] = []
    x = LEFT
    ran = [c for c in result.columns if not c.never_run]
    for engine in dict.fromkeys(c.engine for c in ran):
        start = x
        for col in (c for c in ran if c.engine == engine):
            cells = by_col.get(col.key, [])
            fused = sum(plot_class(c) in ("INT8 fused", "built, INT8") for c in cells)
            failed = sum(outcome(c).failed for c in cells)
            for offset, (n, css, what) in enumerate(((fused, "k8", "INT8 fused"), (failed, "kx", "failing"))):
                h = round(PLOT_H * n / top, 1)
                title = f"{col.heading} [{col.setting}]: {n} {what} of {many(len(cells), 'cell')}"
                bars.append({"x": x + offset * BAR, "y": TOP + PLOT_H - h, "w": BAR - 1, "h": h, "css": css,
                             "n": n, "title": title})
            labels.append({"x": x + BAR, "y": TOP + PLOT_H + 6, "text": col.engine_version})
            x += 2 * BAR + GAP
        x = max(x, start + PANEL_MIN)  # room for the engine's name over a panel of one version
        panels.append({"x": start, "w": x - start - GAP, "name": engine})
        x += GAP * 2
    return {"width": x, "height": TOP + PLOT_H + 80, "bars": bars, "labels": labels, "panels": panels,
            "top": top, "base": TOP + PLOT_H, "ticks": _ticks(top)}


def seeds_plot(result: MergeResult, idle: Collection[Any] = ()) -> Dict[str, Any]:
    """Per seed (case) and column: one bar split by outcome share, so a version's change shows as a colour shift."""
    cols = [c for c in result.columns if c.key not in idle]
    cases = list(dict.fromkeys(r.case for r in result.rows))
    width, row_h, left, cell_w = 0, 16, 190, 44
    bars: List[Dict[str, Any]] = []
    by_place: Dict[Tuple[str, Any], List[Any]] = {}
    for c in result.cells:
        by_place.setdefault((c.case, column_key(c)), []).append(c)
    grid = [(i, case, j, col, by_place.get((case, col.key), [])) for i, case in enumerate(cases)
            for j, col in enumerate(cols)]
    for i, case, j, col, cells in grid:
        x, y = left + j * cell_w, TOP + 84 + i * row_h
        total = len(cells)
        parts, said = [], []
        classes = Counter(plot_class(c) for c in cells)  # each cell's class once, not once per class
        for name, css in PLOT_CLASSES:
            n = classes[name]
            if n:
                w = round((cell_w - 4) * n / total, 1)
                parts.append({"x": x, "y": y, "w": w, "h": row_h - 3, "css": css})
                said.append(f"{n} {name}")
                x += w
        if parts:  # one tooltip per seed and column, not one per coloured part
            source = col.provenance.split(" ")[0]  # local or observed
            bars.append({"title": f"{case} on {col.heading} [{col.setting}] ({source}), {many(total, 'cell')}: "
                                  + ", ".join(said), "parts": parts})
        width = max(width, left + (j + 1) * cell_w)
    seeds = [{"y": TOP + 84 + i * row_h + row_h - 5, "text": _case_label(result, case)} for i, case in enumerate(cases)]
    details = {column_key(c): c.hardware_detail for c in result.cells}
    heads = [{"x": left + j * cell_w + cell_w / 2 - 4, "y": TOP + 80, "text": _short(col, details.get(col.key, {}))}
             for j, col in enumerate(cols)]
    return {"width": max(width, left) + 10, "height": TOP + 90 + len(cases) * row_h, "bars": bars,
            "seeds": seeds, "heads": heads, "left": left - 6}


def _by_column(result: MergeResult) -> Dict[Any, List[Cell]]:
    out: Dict[Any, List[Cell]] = {}
    for c in result.cells:
        out.setdefault(column_key(c), []).append(c)
    return out


def _ticks(top: int) -> List[Dict[str, Any]]:
    step = max(1, round(top / 4, -1) if top > 20 else round(top / 4) or 1)
    return [{"y": TOP + PLOT_H - round(PLOT_H * v / top, 1), "text": str(int(v))}
            for v in range(0, top + 1, int(step))]


def _case_label(result: MergeResult, case: str) -> str:
    info = result.cases.get(case)
    return f"{info.seed} {case}" if info and info.seed else case


def _short(col: Column, detail: Mapping[str, str]) -> str:
    """A column head that fits a rotated label: "trt 8.6.0 H200", "ov 2024.6.0 AMD EPYC 7B13 (avx2)"."""
    extra = f" {col.variant_label}" if col.variant else ""
    name = ENGINES[col.engine].short if col.engine in ENGINES else col.engine
    return f"{name} {col.engine_version} {short_hardware(detail)}{extra}"


def short_hardware(detail: Mapping[str, str]) -> str:
    """A machine in the few words a rotated head has room for, rendered from its recorded facts (hardware_detail),
    never read back out of its label: the GPU's model without its maker and memory ("H100"), else the CPU's model
    and INT8 level, else "no GPU"."""
    if detail.get("name"):
        words = [w for w in detail["name"].split() if w != "NVIDIA"]
        model = takewhile(lambda w: not (w.endswith("GB") and w[:-2].isdigit()), words)
        return " ".join(model) or detail["name"]
    if detail.get("cpu"):
        return f"{detail['cpu']} ({detail['isa_level']})" if detail.get("isa_level") else detail["cpu"]
    return "no GPU"


def _legend() -> List[Dict[str, str]]:
    return [{"name": n, "css": c} for n, c in PLOT_CLASSES]

