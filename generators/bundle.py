"""The on-disk reproducer bundle, readable with numpy alone.

A bundle is a folder `<root>/<case id>/<param slug>/` holding:
  model.onnx     the reproducer
  inputs.npz     graph inputs by name
  expected.npz   reference outputs by name (onnx.reference or the case's numpy reference,
                 cross-checked against ONNX Runtime with optimizations off; never an engine under test)
  case.json      bundle, case, seed, params, rng_seed, digest, generator_version, opset, ir_version,
                 target_nodes, inputs/outputs (dtype, shape, step), tolerance_steps, trt,
                 intentionally_invalid, checker, reference, cross_check
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / ".bundles"


def bundles_root() -> Path:
    """Where bundles live: $QDQ_BUNDLES, or .bundles/ in the repository (git-ignored)."""
    return Path(os.environ.get("QDQ_BUNDLES", DEFAULT_ROOT))


@dataclass(frozen=True)
class Bundle:
    """A written reproducer, loaded back."""

    path: Path
    meta: Dict[str, Any]

    @property
    def id(self) -> str:
        return self.meta["bundle"]

    @property
    def model_path(self) -> Path:
        return self.path / "model.onnx"

    def inputs(self) -> Dict[str, np.ndarray]:
        with np.load(self.path / "inputs.npz") as f:
            return {k: f[k] for k in f.files}

    def expected(self) -> Dict[str, np.ndarray]:
        with np.load(self.path / "expected.npz") as f:
            return {k: f[k] for k in f.files}

    def output_step(self, name: str) -> Optional[float]:
        return self.meta["outputs"].get(name, {}).get("step")


def load_bundle(path: Path) -> Bundle:
    """Load one bundle folder; raise FileNotFoundError naming what is missing."""
    path = Path(path)
    for name in ("model.onnx", "inputs.npz", "expected.npz", "case.json"):
        if not (path / name).is_file():
            raise FileNotFoundError(f"bundle {path} has no {name}; regenerate it with `python -m generators write`")
    return Bundle(path=path, meta=json.loads((path / "case.json").read_text()))


def iter_bundles(root: Optional[Path] = None) -> Iterator[Bundle]:
    """Every complete bundle under root, in id order."""
    root = bundles_root() if root is None else Path(root)
    for meta in sorted(root.glob("*/*/case.json")):
        yield load_bundle(meta.parent)


def bundle_ids(root: Optional[Path] = None) -> List[str]:
    return [b.id for b in iter_bundles(root)]
