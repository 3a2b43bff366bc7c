"""One test per cell: every reproducer bundle on the engine named by --engine."""

from __future__ import annotations

import pytest

from cases import get_case
from cases.verdict import UNEXPECTED
from engines.cells import run_cell
from generators.bundle import bundle_ids, bundles_root, load_bundle


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "bundle_id" in metafunc.fixturenames:
        ids = bundle_ids()
        if not ids:
            raise pytest.UsageError(f"no bundles under {bundles_root()}: run `python -m generators write` first")
        metafunc.parametrize("bundle_id", ids, ids=ids)


def test_cell(bundle_id: str, request: pytest.FixtureRequest, cell_engine) -> None:
    """Run the bundle, hand the cell to the controller, fail on an unexpected verdict."""
    config = request.config
    bundle = load_bundle(bundles_root() / bundle_id)
    case = get_case(bundle.meta["case"])
    cell = run_cell(case, bundle, cell_engine, config._qdq_info, config._qdq_run)
    request.node.user_properties.append(("qdq_cell", cell.to_json()))
    if cell.status in ("skipped", "not_run"):
        pytest.skip(f"{cell.status}: {cell.reason}")
    if cell.verdict in UNEXPECTED:
        detail = f"\n  error: {cell.error.splitlines()[0]}" if cell.error else ""
        pytest.fail(f"{cell.verdict}: {cell.explanation} [{cell.status} at stage '{cell.stage}']{detail}", pytrace=False)
