"""Fixtures of the TensorRT adapter tests: the stand-in tensorrt on an H200, and the worker module."""

from __future__ import annotations

import os

import pytest

from engines.tensorrt import gpu
from tests.engines.trt_stand_in import FAKE_TRT, H200, load_worker


@pytest.fixture
def fake_trt(monkeypatch):
    """Interpreters started from here import the stand-in tensorrt; the adapter sees an H200."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_TRT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(gpu, "detect", lambda: H200)


@pytest.fixture(scope="module")
def worker():
    return load_worker()
