"""A TensorRT timing cache shared by every build of one TensorRT version on one GPU with one tactic setting.

Runs inside the TensorRT interpreter (standard library and tensorrt). Tactic timing is what makes builds
slow, and builds of the catalogue time the same layers again and again; TensorRT's ITimingCache keeps
those timings. One worker process holds one cache object for all its builds; after each build its new
entries are merged into the cache file under an exclusive lock (fcntl) and the file is replaced by a
rename, so concurrent workers (pytest-xdist, two runs at once) never corrupt it and never lose entries:
each writer first combines what the file holds, then writes the union. A file TensorRT cannot read gives
an empty cache (TensorRT logs that it returned one), and the next merge replaces it.

TensorRT-RTX keeps it off: its documentation says a timing cache forces a GPU query during the
ahead-of-time build, which prevents CPU-only builds (timing-cache-migration page).
"""

from __future__ import annotations

import fcntl
import os
from typing import Any, Dict, Optional


class SharedCache:
    """One process's timing cache, tied to a file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.cache: Any = None  # the ITimingCache every build of this process uses

    def attach(self, config: Any, result: Any) -> bool:
        """Give the builder config the shared cache (made from the file the first time); False where it cannot."""
        if not (hasattr(config, "create_timing_cache") and hasattr(config, "set_timing_cache")):
            result.note("timing cache: this TensorRT has no ITimingCache API; built without one")
            return False
        if self.cache is None:
            self.cache = config.create_timing_cache(self._read(result))
        if self.cache is None or not config.set_timing_cache(self.cache, False):
            result.note("timing cache: set_timing_cache refused it; built without one")
            return False
        return True

    def save(self, config: Any, result: Any) -> None:
        """Merge this process's entries into the file: lock, combine with what is there, replace by rename."""
        if self.cache is None:
            return
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        with open(self.path + ".lock", "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                there = config.create_timing_cache(self._read(result))
                if there is not None and there.combine(self.cache, False):
                    self.cache.combine(there, False)  # and take what other workers found
                    merged = bytes(memoryview(there.serialize()))
                else:
                    merged = bytes(memoryview(self.cache.serialize()))
                tmp = f"{self.path}.{os.getpid()}.tmp"
                with open(tmp, "wb") as f:
                    f.write(merged)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
                result.data["options"]["timing_cache_bytes"] = len(merged)
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _read(self, result: Any) -> bytes:
        try:
            with open(self.path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""
        except OSError as e:
            result.note(f"timing cache: cannot read {self.path} ({e}); started empty")
            return b""


_CACHES: Dict[str, SharedCache] = {}


def shared(path: Optional[str]) -> Optional[SharedCache]:
    """The process's cache object for a file (None: no timing cache)."""
    if not path:
        return None
    if path not in _CACHES:
        _CACHES[path] = SharedCache(path)
    return _CACHES[path]
