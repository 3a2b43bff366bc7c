"""Test doubles for the cell plumbing: they never produce a matrix cell (their results go to tmp_path)."""

from __future__ import annotations

import ctypes
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, List

import numpy as np

from engines.base import EngineInfo, Observation
from engines.plan import Column, pytest_args, write_plan
from generators.bundle import Bundle, digest, meta_digest


def cells_argv(folder: Path, engine: str, results: Path, **column: Any) -> List[str]:
    """The arguments after `python` that run one column's cells in the cell runner (pytest with the cell plugin), as
    engines.run starts it but without its decision first: a plan of one column, written in folder."""
    folder.mkdir(parents=True, exist_ok=True)
    plan = folder / f"plan-{uuid.uuid4().hex[:12]}.json"
    return pytest_args(write_plan([Column(engine=engine, results=str(results), **column)], plan))


def write_fake_bundle(root: Path, name: str, case: str = "grouped_conv") -> Path:
    """A hand-made bundle with true digests; only the plumbing reads it (the model is not ONNX)."""
    path = root / case / name
    path.mkdir(parents=True)
    model = f"not a model: the test double never reads it ({name})".encode()
    inputs, expected = {"x": np.zeros((1, 4), np.float32)}, {"y": np.arange(4, dtype=np.float32)}
    (path / "model.onnx").write_bytes(model)
    np.savez(path / "inputs.npz", **inputs)
    np.savez(path / "expected.npz", **expected)
    meta = {
        "bundle": f"{case}/{name}", "case": case, "params": {}, "digest": digest(model, inputs, expected),
        "target_nodes": [], "outputs": {"y": {"step": 0.5}}, "tolerance_steps": 1.0,
    }
    meta["meta_digest"] = meta_digest(meta)
    (path / "case.json").write_text(json.dumps(meta))
    return path


class PlumbingEngine:
    """Echoes the reference for most bundles; segfaults on '...crash', hangs on '...hang', and on '...harness' raises
    as a bug of the suite's own adapter code would (an engine's error is an Observation's, never an exception)."""

    name = "fake"

    def probe(self) -> EngineInfo:
        return EngineInfo(name=self.name, version="0.0", hardware="test double", available=True)

    def run(self, bundle: Bundle) -> Observation:
        if bundle.id.endswith("crash"):
            ctypes.string_at(0)  # SIGSEGV: takes the worker process down
        if bundle.id.endswith("hang"):
            time.sleep(60)
        if bundle.id.endswith("harness"):
            raise KeyError("a bug in the harness, not the engine")
        return Observation(stage="run", outputs=bundle.expected())


class SlowEngine(PlumbingEngine):
    """Echoes the reference after $QDQ_FAKE_DELAY seconds, so that a test can kill a run midway; while the file
    $QDQ_FAKE_HOLD exists (at most 120 s), it holds each cell after the first, so that a test can act while a run is
    surely still going, however slow the machine."""

    def run(self, bundle: Bundle) -> Observation:
        time.sleep(float(os.environ.get("QDQ_FAKE_DELAY", "0.2")))
        hold, until = os.environ.get("QDQ_FAKE_HOLD"), time.monotonic() + 120
        if hold and getattr(self, "_ran_one", False):
            while os.path.exists(hold) and time.monotonic() < until:
                time.sleep(0.05)
        self._ran_one = True
        return super().run(bundle)
