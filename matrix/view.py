"""The report's view: everything the reports, the JSON index and the console summary show, computed once from one
merge (its conformance cells apart from the start, matrix.merge.MergeResult.conformance)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from cases import all_cases
from cases.user_model import CASE as USER_MODEL
from cases.verdict import cites_itself
from core.cell import VERDICTS, Cell
from core.words import UNEXPECTED, reproducers_and_models
from matrix.causes import root_causes
from matrix.cellfiles import DETAILS, FOLDER, GRID_MD, column_file
from matrix.conformance import conformance_view
from matrix.conformance import headline as conformance_headline
from matrix.diff import regressions
from matrix.grid import collapsed_columns, grid_view
from matrix.merge import MergeResult, Problem
from matrix.models import models_view
from matrix.plots import plots_view
from matrix.targets import documented_view, target_view
from matrix.upgrade import upgrade_view


def build_view(result: MergeResult, generated: Optional[str] = None, out: Optional[Path] = None,
               node_reports: Sequence[Dict[str, Any]] = (),
               conformance_manifest: Optional[Dict[str, Any]] = None,
               elsewhere: Optional[Callable[[], Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Everything the templates show, computed once: the catalogue's views from result's cells, "Your models" from
    the per-node reports given (matrix.nodes.write_all's records, linked from out), the conformance page from
    result's conformance cells and the bundles' manifest. elsewhere gives side_views where another process computed
    them (matrix.beside), asked for once everything else is built."""
    regressed = regressions(result.cells)
    causes = root_causes(result.cells, regressed)
    view = {
        "generated": generated or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "upgrade": None,  # side_views'
        "targets": target_view(result.cells),
        "documented_targets": documented_view(all_cases()),
        "grid": grid_view(result, regressed),
        "plots": plots_view(result, idle=collapsed_columns(result)),
        "summary": [dict(s, index=i + 1) for i, s in enumerate(summary(result, regressed))],
        "causes": causes,
        "regressed": regressed,  # matrix.diff.regressions: the grid's, the columns' and the causes' one answer
        "verdicts": [v for v in VERDICTS if any(c.verdict == v for c in result.cells)],  # the columns table's
        "builds": builds_view(result),
        "problems": [_problem_view(p) for p in result.problems if p.level != "note"],
        # the results files that gave no cell at all (a digest mismatch, a schema break): every answer is without them
        "refused_files": sorted({p.file for p in result.problems if p.refuses_file}),
        "notes": group_notes([p for p in result.problems if p.level == "note"]),
        "files": list(result.files),
        "totals": dict(_totals(result), causes=len(causes)),
        "models": models_view([_node_model(n, Path(out or ".")) for n in node_reports]),
        "conformance": None,  # side_views'
        "side": {"folder": FOLDER, "details": DETAILS, "grid": GRID_MD},
    }
    view.update(elsewhere() if elsewhere else side_views(result, conformance_manifest))
    return view


def side_views(result: MergeResult, conformance_manifest: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The view's parts that need nothing else of it, by key: the upgrade answer and the conformance page (the
    report computes them in its side process)."""
    return {"upgrade": upgrade_view(result.cells),
            "conformance": conformance_page(result.conformance, conformance_manifest or {})}


def conformance_page(cells: Sequence[Cell], manifest: Dict[str, Any]) -> Dict[str, Any]:
    """The conformance view (matrix.conformance) with its headline."""
    view = conformance_view(cells, manifest)
    return dict(view, headline=conformance_headline(view))


def summary(result: MergeResult, regressed: Any) -> List[Dict[str, Any]]:
    """Counts per verdict and per status for each column, and its regressions (matrix.diff.regressions)."""
    out = []
    by_column = result.by_column()
    for col in result.columns:
        cells = by_column[col.key]
        out.append({
            "column": col.id, "heading": col.heading, "provenance": col.provenance,
            "regressions": sum(key == col.key for key, _ in regressed),
            "baseline_itself": sum(cites_itself(c) for c in cells),
            # a version that never ran has no hardware: its cells stand in for it where it could not be installed
            "hardware": "—" if col.never_run else col.setting, "build": col.build,
            "verdicts": {v: sum(c.verdict == v for c in cells) for v in VERDICTS},
            "statuses": _count(c.status for c in cells),
            "unexpected": sum(c.verdict in UNEXPECTED for c in cells),
            "cells": len(cells),
            "file": column_file(col),
        })
    return out


def builds_view(result: MergeResult) -> List[Dict[str, str]]:
    """Each version whose build its cells do not record, once: its build and the pin table's source for it."""
    found = {(c.engine, c.engine_version): {"heading": c.heading, "build": c.build, "source": c.build_source}
             for c in result.columns if c.build and c.build_source != "its cells"}
    return list(found.values())


def group_notes(notes: Sequence[Problem]) -> List[Dict[str, Any]]:
    """Merge notes as the reports list them: duplicate cells counted per (kept file, dropped file), one example."""
    out: List[Dict[str, Any]] = []
    groups: Dict[Tuple[str, ...], Dict[str, Any]] = {}
    for p in notes:
        d = p.duplicate
        if d is None:
            out.append(_problem_view(p))
            continue
        key = (d.column, d.kept, d.kept_date, d.dropped, d.dropped_date)
        if key not in groups:
            groups[key] = {"file": d.dropped, "line": 0, "level": "note", "where": d.dropped, "n": 0,
                           "bundle": d.bundle}
            out.append(groups[key])
        groups[key]["n"] += 1
    for (column, kept, new, dropped, old), g in groups.items():
        many = f"{g['n']} duplicate cells" if g["n"] > 1 else "a duplicate cell"
        g["message"] = (f"{many} in {column} (e.g. {g.pop('bundle')}): kept {kept} ({new or 'no date'}), "
                        f"dropped {dropped} ({old or 'no date'})")
    return out


def _problem_view(p: Problem) -> Dict[str, Any]:
    return {"file": p.file, "line": p.line, "level": p.level, "message": p.message,
            "where": f"{p.file}:{p.line}" if p.line else p.file}


def _totals(result: MergeResult) -> Dict[str, int]:
    model_rows = sum(r.case == USER_MODEL.id for r in result.rows)
    # models, not rows: two models under one bundle id (reductions name theirs "reduced") are two models, each with its
    # per-node report and its row under "Your models" (matrix.nodes), told apart by their digest
    models = len({(c.bundle, c.digest) for c in result.cells if c.case == USER_MODEL.id and c.digest}) or model_rows
    return {"cells": len(result.cells), "rows": len(result.rows), "columns": len(result.columns),
            "rows_said": reproducers_and_models(len(result.rows) - model_rows, models),
            "unexpected": sum(c.verdict in UNEXPECTED for c in result.cells),
            "baseline": sum(c.verdict == "as observed before" and not cites_itself(c) for c in result.cells),
            "baseline_itself": sum(cites_itself(c) for c in result.cells),
            "harness_errors": sum(c.status == "harness_error" for c in result.cells),
            "errors": len(result.errors), "conformance": len(result.conformance)}


def _count(values: Any) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _node_model(node: Dict[str, Any], out: Path) -> Dict[str, Any]:
    """A user model's per-node report (given, or read from its JSON; {} where neither is at hand) and its links."""
    report = node.get("report")
    if report is None:
        try:
            report = json.loads(Path(node["json"]).read_text(encoding="utf-8")) if node.get("json") else {}
        except (OSError, ValueError):
            report = {}
    return {"bundle": node["bundle"], "report": report if isinstance(report, dict) else {},
            "md": _relative(node["md"], out), "html": _relative(node["html"], out)}


def _relative(path: Any, base: Path) -> str:
    """A link from a report in base to path, percent-encoded (a bundle id is text from a results file)."""
    import os
    from urllib.parse import quote

    return quote(Path(os.path.relpath(Path(path), base)).as_posix())
