"""One test per cell: every reproducer bundle on the engine named by --engine."""

from __future__ import annotations

import json

import pytest

from cases import get_case
from cases.verdict import UNEXPECTED, rejudge
from engines.cells import corrupt_cell, judged_alike, run_cell
from engines.pytest_cells import CELL_KEY, REUSED_KEY, REUSABLE, same_not_run, stored_cell
from generators.bundle import BundleCorrupt, bundle_ids, bundles_root, verify_bundle


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "bundle_id" in metafunc.fixturenames:
        ids = bundle_ids()
        if not ids:
            raise pytest.UsageError(f"no bundles under {bundles_root()}: run `python -m generators write` first")
        if metafunc.config.getoption("--plugin-bundles-only"):
            ids = [i for i in ids if _needs_plugin(i)]
        cases = metafunc.config.getoption("--only-case")
        if cases:
            ids = [i for i in ids if i.split("/", 1)[0] in cases]
        metafunc.parametrize("bundle_id", ids, ids=ids)


def _needs_plugin(bundle_id: str) -> bool:
    try:
        meta = json.loads((bundles_root() / bundle_id / "case.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool((meta.get("trt") or {}).get("plugins"))


def test_cell(bundle_id: str, request: pytest.FixtureRequest, cell_engine) -> None:
    """Run the bundle (or reuse its stored cell), hand the cell to the controller, fail on an unexpected verdict."""
    config = request.config
    try:
        bundle = verify_bundle(bundles_root() / bundle_id)
    except BundleCorrupt as e:
        cell = corrupt_cell(bundle_id, str(e), config._qdq_info, config._qdq_run)
        request.node.user_properties.append((CELL_KEY, cell.to_json()))
        pytest.skip(f"not run: {e}")
    case = get_case(bundle.meta["case"])
    stored = stored_cell(config, bundle.id, bundle.meta["digest"])
    if stored is not None and stored.status in REUSABLE and judged_alike(stored, bundle):
        cell, reused = rejudge(stored, case), True
    else:
        cell = run_cell(case, bundle, cell_engine, config._qdq_info, config._qdq_run)
        reused = same_not_run(cell, stored)
    if reused:  # the results file holds it already
        request.node.user_properties.append((REUSED_KEY, "1"))
    request.node.user_properties.append((CELL_KEY, cell.to_json()))
    if cell.status in ("skipped", "not_run"):
        pytest.skip(f"{cell.status}: {cell.reason}")
    if cell.verdict in UNEXPECTED:
        detail = f"\n  error: {cell.error.splitlines()[0]}" if cell.error else ""
        pytest.fail(f"{cell.verdict}: {cell.explanation} [{cell.status} at stage '{cell.last_stage}']{detail}", pytrace=False)
