"""Reading a bundle's npz files: the arrays np.load reads, without np.load where the file holds plain arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from generators import bundle
from generators.bundle import read_npz

ARRAYS = {
    "x": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
    "fortran": np.asfortranarray(np.arange(12, dtype=np.int8).reshape(3, 4)),
    "big_endian": np.arange(5, dtype=">i4"),
    "scalar": np.array(3.5, np.float16),
    "empty": np.zeros((0, 4), np.uint8),
    "flags": np.array([True, False]),
    "record": np.zeros(2, dtype=[("a", "<i2"), ("b", "<f8")]),
}


def _same(read: dict, loaded: dict) -> None:
    assert list(read) == list(loaded)
    for name, array in loaded.items():
        assert (read[name].dtype, read[name].shape) == (array.dtype, array.shape), name
        assert read[name].tobytes() == array.tobytes() and np.array_equal(read[name], array), name


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed], ids=["stored", "compressed"])
def test_plain_arrays_are_read_as_np_load_reads_them_without_it(tmp_path: Path, monkeypatch, save) -> None:
    path = tmp_path / "a.npz"
    save(path, **ARRAYS)
    with np.load(path) as f:
        loaded = {k: f[k] for k in f.files}

    def refused(*args, **kwargs):
        raise AssertionError("np.load was asked for a file of plain arrays")

    monkeypatch.setattr(bundle.np, "load", refused)
    _same(read_npz(path), loaded)


def test_what_it_does_not_read_np_load_reads_or_refuses_as_it_always_did(tmp_path: Path) -> None:
    objects, cut = tmp_path / "objects.npz", tmp_path / "cut.npz"
    np.savez(objects, x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="allow_pickle"):
        read_npz(objects)
    np.savez(cut, **ARRAYS)
    cut.write_bytes(cut.read_bytes()[:300])
    with pytest.raises(Exception) as read_error:
        read_npz(cut)
    with pytest.raises(Exception) as load_error:
        with np.load(cut) as f:
            {k: f[k] for k in f.files}
    assert (type(read_error.value), str(read_error.value)) == (type(load_error.value), str(load_error.value))
