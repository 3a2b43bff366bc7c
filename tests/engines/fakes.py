"""Test doubles for the cell plumbing: they never produce a matrix cell (their results go to tmp_path)."""

from __future__ import annotations

import ctypes
import time

from engines.base import EngineInfo, Observation
from generators.bundle import Bundle


class PlumbingEngine:
    """Echoes the reference for most bundles; segfaults on '...crash', hangs on '...hang'."""

    name = "fake"

    def probe(self) -> EngineInfo:
        return EngineInfo(name=self.name, version="0.0", hardware="test double", available=True)

    def run(self, bundle: Bundle) -> Observation:
        if bundle.id.endswith("crash"):
            ctypes.string_at(0)  # SIGSEGV: takes the worker process down
        if bundle.id.endswith("hang"):
            time.sleep(60)
        return Observation(stage="run", outputs=bundle.expected())
