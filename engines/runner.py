"""The cell runner: one test per cell of a plan's columns (or per batch of one-node bundles), each a bundle run (or
its stored cell reused) on one engine version, its cell handed to the controller that records it
(engines.pytest_cells).

    python -m engines.run --engine onnxruntime     # writes the plan and starts, per interpreter:
    python -m pytest -p engines.pytest_cells engines/runner.py --cells-plan PLAN.json -n 2

Every matrix cell comes from here: this is product code that pytest executes, for what pytest-xdist and
pytest-timeout give a run (a crash costs one cell, a hang is stopped, one controller writes each results file).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Tuple

import pytest

from cases import get_case
from cases.verdict import rejudge
from core.cell import Cell
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
    """Run the bundle (or reuse its stored cell), hand the cell to the controller, fail on an unexpected verdict; a
    batch runs its bundles one after the other, handing each cell back as it ends."""
    done = []
    for bundle in cell.bundles:
        one, reused = one_cell(request.config, cell.column, bundle, cell_engine)
        if reused:  # the results file holds it already
            request.node.user_properties.append((REUSED_KEY, bundle if cell.batch else True))
        if not (reused and cell.batch):
            request.node.user_properties.append((CELL_KEY, one.to_json()))  # one string: xdist passes it whole
        done.append(one)
    unexpected = [c for c in done if c.verdict in UNEXPECTED]
    if unexpected:
        pytest.fail("\n".join(_failure(c) for c in unexpected), pytrace=False)
    if all(c.status in NOT_TRIED for c in done):
        pytest.skip("; ".join(f"{c.status}: {c.reason}" for c in done))


def one_cell(config: pytest.Config, column: int, bundle_id: str,
             cell_engine: Callable[[int], Any]) -> Tuple[Cell, bool]:
    """One bundle's cell on a column, and whether it is the stored one (reused): run, or reused where it stands."""
    run = config._qdq_columns[column]
    try:
        bundle = verify_bundle(bundles_root() / bundle_id)
    except BundleCorrupt as e:
        return corrupt_cell(bundle_id, str(e), run.info, run.run), False
    case = get_case(bundle.meta["case"])
    engine = cell_engine(column)
    stored = stored_cell(config, column, bundle.id, bundle.meta["digest"])
    static = run.info.available and getattr(engine, "static_not_run", False)
    if stored is not None and reusable(stored, bundle.meta, case, static):
        return rejudge(stored, case), True
    done = run_cell(case, bundle, engine, run.info, run.run)
    return done, same_not_run(done, stored)


def _failure(cell: Cell) -> str:
    """An unexpected verdict as the failing test says it."""
    detail = f"\n  error: {cell.error.splitlines()[0]}" if cell.error else ""
    return f"{cell.verdict}: {cell.explanation} [{cell.status} at stage '{cell.last_stage}']{detail}"
