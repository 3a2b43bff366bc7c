"""Fixtures every test folder shares: the catalogue's bundles, written once per test run; the suite's cache in the
run's own folder."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Iterator

import pytest

from core.schema import CACHE_ENV


@pytest.fixture(scope="session", autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The schema checks the suite remembers (core.schema's cache) go to this run's folder, never the user's
    $XDG_CACHE_HOME or ~/.cache: a test neither writes there nor finds a file checked by an earlier run."""
    folder = tmp_path_factory.mktemp("qdq-cache")
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    yield folder
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before


@pytest.fixture(scope="session", autouse=True)
def gpu_engines_run_here() -> Iterator[None]:
    """In-process merges take the local TensorRT cells the tests write as this machine's own (as on a GPU machine):
    the merge refuses a local cell of an engine this machine cannot run (core.engines.runs_here), and the tests that
    are about that refusal say "no GPU here" themselves. A test's subprocess sees the machine as it is."""
    import core.engines

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core.engines, "nvidia_gpu_present", lambda *args: True)
        yield


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
