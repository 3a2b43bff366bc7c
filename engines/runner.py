"""The cell runner: one test per cell of a plan's columns, each a bundle run (or its stored cell reused) on one engine
version, its cell handed to the controller that records it (engines.pytest_cells).

    python -m engines.run --engine onnxruntime     # writes the plan and starts, per interpreter:
    python -m pytest -p engines.pytest_cells engines/runner.py --cells-plan PLAN.json -n 2

Every matrix cell comes from here: this is product code that pytest executes, for what pytest-xdist and
pytest-timeout give a run (a crash costs one cell, a hang is stopped, one controller writes each results file).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator

import pytest

from cases import get_case
from cases.verdict import rejudge
from core.words import NOT_TRIED, UNEXPECTED
from engines.cells import corrupt_cell, run_cell
from engines.plan import CellRef
from engines.pytest_cells import CELL_KEY, REUSED_KEY, make_engine_for, stored_cell
from engines.results import same_not_run
from engines.reuse import reusable
from generators.bundle import BundleCorrupt, bundles_root, verify_bundle


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test per cell of the plan, in the plan's order: the plugin's table of cells (engines.plan.cell_refs)."""
    if "cell" in metafunc.fixturenames:
        cells: Dict[str, CellRef] = metafunc.config._qdq_cells
        metafunc.parametrize("cell", list(cells.values()), ids=list(cells))


@pytest.fixture(scope="session")
def cell_engine(request: pytest.FixtureRequest) -> Iterator[Callable[[int], Any]]:
    """The adapter of a column (by its index in the plan), made once per worker when its first cell comes."""
    made: Dict[int, Any] = {}
    columns = request.config._qdq_columns

    def engine(column: int) -> Any:
        if column not in made:
            made[column] = make_engine_for(columns[column].column)
        return made[column]

    yield engine
    for adapter in made.values():
        getattr(adapter, "close", lambda: None)()


def test_cell(cell: CellRef, request: pytest.FixtureRequest, cell_engine: Callable[[int], Any]) -> None:
    """Run the bundle (or reuse its stored cell), hand the cell to the controller, fail on an unexpected verdict."""
    config = request.config
    run = config._qdq_columns[cell.column]
    try:
        bundle = verify_bundle(bundles_root() / cell.bundle)
    except BundleCorrupt as e:
        corrupt = corrupt_cell(cell.bundle, str(e), run.info, run.run)
        request.node.user_properties.append((CELL_KEY, corrupt.to_record()))
        pytest.skip(f"not run: {e}")
    case = get_case(bundle.meta["case"])
    engine = cell_engine(cell.column)
    stored = stored_cell(config, cell.column, bundle.id, bundle.meta["digest"])
    static = run.info.available and getattr(engine, "static_not_run", False)
    if stored is not None and reusable(stored, bundle.meta, case, static):
        done, reused = rejudge(stored, case), True
    else:
        done = run_cell(case, bundle, engine, run.info, run.run)
        reused = same_not_run(done, stored)
    if reused:  # the results file holds it already
        request.node.user_properties.append((REUSED_KEY, True))
    request.node.user_properties.append((CELL_KEY, done.to_record()))
    if done.status in NOT_TRIED:
        pytest.skip(f"{done.status}: {done.reason}")
    if done.verdict in UNEXPECTED:
        detail = f"\n  error: {done.error.splitlines()[0]}" if done.error else ""
        pytest.fail(f"{done.verdict}: {done.explanation} [{done.status} at stage '{done.last_stage}']{detail}",
                    pytrace=False)
