"""Engine adapters behind one small interface; each imports its engine only when used.

Importing this package imports no engine and not numpy either (`python -m engines.pins` runs on a bare Python): the
interface (engines.base) loads on first use of Engine, EngineInfo or Observation.
"""

from __future__ import annotations

import importlib
from typing import Any

from core.engines import ENGINES

ADAPTERS = {name: spec.adapter for name, spec in ENGINES.items()}
_INTERFACE = ("Engine", "EngineInfo", "Observation")

__all__ = ["ADAPTERS", "Engine", "EngineInfo", "Observation", "get_engine"]


def __getattr__(name: str) -> Any:
    if name in _INTERFACE:
        return getattr(importlib.import_module("engines.base"), name)
    raise AttributeError(f"module 'engines' has no attribute {name!r}")


def get_engine(name: str, **options: Any) -> Any:
    """The adapter for one engine name; options go to its constructor."""
    if name not in ADAPTERS:
        raise KeyError(f"unknown engine {name!r}; known engines: {', '.join(ADAPTERS)}")
    module, cls = ADAPTERS[name].split(":")
    return getattr(importlib.import_module(module), cls)(**options)
