"""Fixtures for the cell tests."""

from __future__ import annotations

import pytest

from engines.pytest_cells import make_engine


@pytest.fixture(scope="session")
def cell_engine(request: pytest.FixtureRequest):
    """The adapter named by --engine, made once per worker."""
    return make_engine(request.config)
