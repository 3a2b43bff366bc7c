"""Loads the cell-running plugin, so `pytest tests/cells --engine NAME` works from the repository root."""

pytest_plugins = ["engines.pytest_cells"]
