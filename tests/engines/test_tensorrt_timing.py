"""The shared TensorRT timing cache: merged under a lock by concurrent workers, never corrupted, never losing entries.

The cache object is a stand-in with ITimingCache's three calls (create from bytes, combine, serialize); what
is tested is the file protocol around it, which is ours.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from types import SimpleNamespace

import pytest

from engines.base import EngineInfo
from engines.tensorrt import Adapter, timing


class _Cache:
    """A timing cache as a set of timed layer keys; serialize() is its JSON."""

    def __init__(self, data: bytes) -> None:
        self.keys = set(json.loads(data)) if data else set()

    def combine(self, other: "_Cache", ignore_mismatch: bool) -> bool:
        self.keys |= other.keys
        return True

    def serialize(self) -> bytes:
        return json.dumps(sorted(self.keys)).encode()


class _Config:
    def __init__(self) -> None:
        self.cache = None

    def create_timing_cache(self, data: bytes) -> _Cache:
        return _Cache(data)

    def set_timing_cache(self, cache: _Cache, ignore_mismatch: bool) -> bool:
        self.cache = cache
        return True


def _result() -> SimpleNamespace:
    data = {"options": {"notes": []}}
    return SimpleNamespace(data=data, note=lambda text: data["options"]["notes"].append(text))


def _worker(path: str, name: str, builds: int) -> None:
    """One worker process: its own cache object, a few builds, each adding timings and saving."""
    cache = timing.SharedCache(path)
    for i in range(builds):
        config = _Config()
        assert cache.attach(config, _result())
        config.cache.keys.add(f"{name}-{i}")
        cache.save(config, _result())


def test_concurrent_workers_merge_every_entry_into_a_valid_file(tmp_path):
    path = str(tmp_path / "cache" / "tensorrt-8.6.0-nvidia-h100-default.cache")
    procs = [multiprocessing.Process(target=_worker, args=(path, f"w{k}", 25)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert all(p.exitcode == 0 for p in procs)
    keys = set(json.loads(Path(path).read_bytes()))  # valid JSON: never a torn write
    assert keys == {f"w{k}-{i}" for k in range(4) for i in range(25)}  # nothing lost
    assert not list(Path(path).parent.glob("*.tmp"))


def test_a_build_without_the_api_says_so_and_goes_on(tmp_path):
    result = _result()
    assert timing.SharedCache(str(tmp_path / "c")).attach(object(), result) is False
    assert "no ITimingCache API" in result.data["options"]["notes"][0]


def test_the_cache_is_one_file_per_version_gpu_and_tactics_and_never_in_the_repository(tmp_path, monkeypatch):
    monkeypatch.setenv("QDQ_TIMING_CACHE_DIR", str(tmp_path))
    adapter = Adapter(tactics="tensorrt-only")
    adapter._info = EngineInfo("tensorrt", "8.6.0", "NVIDIA H100 80GB HBM3 (sm_90)", True)
    expected = tmp_path / "tensorrt-8.6.0-nvidia-h100-80gb-hbm3-sm-90-tensorrt-only.cache"
    assert adapter.timing_cache_path() == str(expected)
    assert Adapter(timing_cache="off").timing_cache_path() == ""
    monkeypatch.delenv("QDQ_TIMING_CACHE_DIR")
    plain = Adapter()
    plain._info = adapter._info
    assert Path(plain.timing_cache_path()).parts[-3:-1] == ("results", "timing-cache")  # results/ is git-ignored


def test_an_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="timing_cache must be one of on, off"):
        Adapter(timing_cache="maybe")
