"""Fixtures for the cell tests."""

from __future__ import annotations

from typing import Any, Callable, Dict

import pytest

from engines.pytest_cells import make_engine_for


@pytest.fixture(scope="session")
def cell_engine(request: pytest.FixtureRequest) -> Callable[[int], Any]:
    """The adapter of a column (by its index), made once per worker when its first cell comes."""
    made: Dict[int, Any] = {}
    columns = request.config._qdq_columns

    def engine(column: int) -> Any:
        if column not in made:
            made[column] = make_engine_for(columns[column].column)
        return made[column]

    yield engine
    for adapter in made.values():
        getattr(adapter, "close", lambda: None)()
