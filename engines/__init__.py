"""Engine adapters behind one small interface; each imports its engine only when used."""

from __future__ import annotations

import importlib
from typing import Any

from cases.engines import ENGINES
from engines.base import Engine, EngineInfo, Observation

ADAPTERS = {name: spec.adapter for name, spec in ENGINES.items()}

__all__ = ["ADAPTERS", "Engine", "EngineInfo", "Observation", "get_engine"]


def get_engine(name: str, **options: Any) -> Engine:
    """The adapter for one engine name; options go to its constructor."""
    if name not in ADAPTERS:
        raise KeyError(f"unknown engine {name!r}; known engines: {', '.join(ADAPTERS)}")
    module, cls = ADAPTERS[name].split(":")
    return getattr(importlib.import_module(module), cls)(**options)
