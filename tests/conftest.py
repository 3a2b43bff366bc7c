"""Fixtures every test folder shares: the catalogue's bundles, written once per test run."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def catalogue_bundles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every reproducer of the catalogue as a bundle (generators.write.write_all), in a tmp folder written once per test
    run: pytest-xdist's workers share it, the first writes and the others find every bundle cached. Read it only."""
    from generators import write

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    root = base / "catalogue-bundles"
    with open(base / "catalogue-bundles.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        write.write_all(root=root)
    return root
