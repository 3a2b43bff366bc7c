"""One test per cell: every reproducer bundle on each column the run names (--engine, or a --cells-plan)."""

from __future__ import annotations

import json
from typing import List, Tuple

import pytest

from cases import get_case
from cases.verdict import UNEXPECTED, rejudge
from engines.cells import corrupt_cell, run_cell
from engines.plan import Column
from engines.pytest_cells import CELL_KEY, COLUMN_MARK, REUSED_KEY, same_not_run, stored_cell
from engines.reuse import reusable
from generators.bundle import BundleCorrupt, bundle_ids, bundles_root, verify_bundle


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "bundle_id" in metafunc.fixturenames:
        ids = bundle_ids()
        if not ids:
            raise pytest.UsageError(f"no bundles under {bundles_root()}: run `python -m generators write` first")
        cells: List[Tuple[int, str]] = []
        names: List[str] = []
        for index, run in enumerate(metafunc.config._qdq_columns):
            for bundle in selected(run.column, ids):
                cells.append((index, bundle))
                names.append(f"{run.column.label}{COLUMN_MARK}{bundle}" if run.column.label else bundle)
        metafunc.parametrize(("column", "bundle_id"), cells, ids=names)


def selected(column: Column, ids: List[str]) -> List[str]:
    """The bundles a column runs: those it names, else every bundle its filters keep."""
    if column.bundles:
        return [i for i in column.bundles if i in set(ids)]
    if column.plugins_only:
        ids = [i for i in ids if _needs_plugin(i)]
    if column.only_cases:
        ids = [i for i in ids if i.split("/", 1)[0] in column.only_cases]
    return ids


def _needs_plugin(bundle_id: str) -> bool:
    try:
        meta = json.loads((bundles_root() / bundle_id / "case.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool((meta.get("trt") or {}).get("plugins"))


def test_cell(column: int, bundle_id: str, request: pytest.FixtureRequest, cell_engine) -> None:
    """Run the bundle (or reuse its stored cell), hand the cell to the controller, fail on an unexpected verdict."""
    config = request.config
    run = config._qdq_columns[column]
    try:
        bundle = verify_bundle(bundles_root() / bundle_id)
    except BundleCorrupt as e:
        cell = corrupt_cell(bundle_id, str(e), run.info, run.run)
        request.node.user_properties.append((CELL_KEY, cell.to_json()))
        pytest.skip(f"not run: {e}")
    case = get_case(bundle.meta["case"])
    engine = cell_engine(column)
    stored = stored_cell(config, column, bundle.id, bundle.meta["digest"])
    static = run.info.available and getattr(engine, "static_not_run", False)
    if stored is not None and reusable(stored, bundle.meta, case, static):
        cell, reused = rejudge(stored, case), True
    else:
        cell = run_cell(case, bundle, engine, run.info, run.run)
        reused = same_not_run(cell, stored)
    if reused:  # the results file holds it already
        request.node.user_properties.append((REUSED_KEY, "1"))
    request.node.user_properties.append((CELL_KEY, cell.to_json()))
    if cell.status in ("skipped", "not_run"):
        pytest.skip(f"{cell.status}: {cell.reason}")
    if cell.verdict in UNEXPECTED:
        detail = f"\n  error: {cell.error.splitlines()[0]}" if cell.error else ""
        pytest.fail(f"{cell.verdict}: {cell.explanation} [{cell.status} at stage '{cell.last_stage}']{detail}", pytrace=False)
