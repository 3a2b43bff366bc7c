"""The on-disk reproducer bundle, readable with numpy alone.

A bundle is a folder `<root>/<case id>/<param slug>/` holding:
  model.onnx     the reproducer
  inputs.npz     graph inputs by name
  expected.npz   reference outputs by name (onnx.reference or the case's numpy reference,
                 cross-checked against ONNX Runtime with optimizations off; never an engine under test)
  case.json      bundle, case, seed, params, rng_seed, digest, generator_version, opset, ir_version,
                 target_nodes, inputs/outputs (dtype, shape, step), tolerance_steps, trt,
                 intentionally_invalid, checker, reference, cross_check
  float.npz      (user bundles only) the float model's outputs for the same inputs: --float-model's, else the
                 float twin's (check/twin.py); case.json's `float_reference` names it and holds their digest
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

import numpy as np

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / ".bundles"
FILES = ("model.onnx", "inputs.npz", "expected.npz", "case.json")
FLOAT_FILE = "float.npz"


class BundleCorrupt(Exception):
    """A bundle's files are missing, unreadable, or differ from the digest they were written with."""


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
        return _arrays(self.path / "inputs.npz")

    def expected(self) -> Dict[str, np.ndarray]:
        return _arrays(self.path / "expected.npz")

    def float_outputs(self) -> Dict[str, np.ndarray]:
        """The float model's outputs for the same inputs (float.npz), {} where the bundle has none."""
        path = self.path / FLOAT_FILE
        if not path.is_file():
            return {}
        return _arrays(path)

    def target_ops(self) -> Dict[str, str]:
        """Each target node's ONNX op type (TensorRT's attribution picks the layer that performs that op); {} where
        onnx is not installed or the model is unreadable."""
        targets = set(self.meta.get("target_nodes") or [])
        try:
            st = os.stat(self.model_path)
        except OSError:
            return {}
        key = (str(self.model_path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if key not in _OP_TYPES:  # read once per model file and process (a worker meets it once per column)
            try:
                import onnx

                graph = onnx.load(str(self.model_path), load_external_data=False).graph
            except Exception:  # no onnx here, or an unreadable model: attribution without op types
                return {}
            _OP_TYPES[key] = {n.name: n.op_type for n in graph.node}
        return {name: op for name, op in _OP_TYPES[key].items() if name in targets}


_OP_TYPES: Dict[tuple, Dict[str, str]] = {}  # Bundle.target_ops: a model file's node op types by its identity
_ARRAYS: Dict[str, tuple] = {}  # _arrays: an npz file's arrays by its path, with the identity they were read at


def _arrays(path: Path) -> Dict[str, np.ndarray]:
    """An npz file's arrays, each a fresh copy; read once per process while the file's identity (inode, size, times)
    stays the same: a cell run asks for one bundle's inputs and expected outputs once per column, and its checks."""
    st = os.stat(path)
    key, identity = str(path), (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    held = _ARRAYS.get(key)
    if held is None or held[0] != identity:
        held = _ARRAYS[key] = (identity, read_npz(path))
    return {k: v.copy() for k, v in held[1].items()}


def read_npz(path: Path) -> Dict[str, np.ndarray]:
    """An npz file's arrays as np.load reads them, in one pass over its zip (np.load opens the zip again for each array
    and parses each header anew); a file with anything else in it (an object array, an npy version this does not
    know, a damaged member) is read by np.load, so that its error says what is wrong as it always did."""
    try:
        with zipfile.ZipFile(path) as z:
            members = z.infolist()
            if not all(m.filename.endswith(".npy") for m in members):
                raise ValueError("a member that is not an .npy file")
            return {m.filename[: -len(".npy")]: _npy(z.read(m)) for m in members}
    except Exception:
        with np.load(path) as f:
            return {k: f[k] for k in f.files}


_NPY_MAGIC = b"\x93NUMPY"
_NPY_HEADERS: Dict[str, tuple] = {}  # an npy header's text -> (dtype, shape, Fortran order): a few hundred differ


def _npy(data: bytes) -> np.ndarray:
    """One .npy member's array (numpy's format 1.0 to 3.0, no objects), read-only over the member's bytes; ValueError
    for anything np.load would read otherwise or refuse."""
    if data[:6] != _NPY_MAGIC or data[7] != 0 or data[6] not in (1, 2, 3):
        raise ValueError("not an npy header this reads")
    start = 10 if data[6] == 1 else 12  # the header's length: 2 bytes in version 1.0, 4 after
    length = int.from_bytes(data[8:start], "little")
    dtype, shape, fortran = _npy_header(data[start:start + length].decode("latin1" if data[6] < 3 else "utf8"))
    count = 1
    for n in shape:
        count *= n
    if dtype.hasobject or dtype.itemsize == 0 or len(data) != start + length + count * dtype.itemsize:
        raise ValueError("not an array this reads")
    array = np.frombuffer(data, dtype=dtype, count=count, offset=start + length)
    return array.reshape(shape[::-1]).transpose() if fortran else array.reshape(shape)


def _npy_header(text: str) -> tuple:
    """(dtype, shape, Fortran order) of an npy header's dictionary, checked as numpy checks it."""
    found = _NPY_HEADERS.get(text)
    if found is None:
        if len(text) > 10_000:  # np.load's limit on a header it parses without allow_pickle
            raise ValueError("npy header too long")
        d = ast.literal_eval(text)
        if not isinstance(d, dict) or d.keys() != {"descr", "fortran_order", "shape"}:
            raise ValueError("not an npy header dictionary")
        shape, fortran = d["shape"], d["fortran_order"]
        if not isinstance(shape, tuple) or not all(isinstance(n, int) for n in shape) or not isinstance(fortran, bool):
            raise ValueError("not an npy header dictionary")
        found = _NPY_HEADERS[text] = (np.lib.format.descr_to_dtype(d["descr"]), shape, fortran)
    return found


def digest(model_bytes: bytes, inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray]) -> str:
    """sha256 over the model and every array's name, dtype, shape and bytes (not over npz files)."""
    h = hashlib.sha256(model_bytes)
    for kind, arrays in (("input", inputs), ("expected", expected)):
        for name in sorted(arrays):
            a = np.ascontiguousarray(arrays[name])
            h.update(f"\0{kind}\0{name}\0{a.dtype.str}\0{a.shape}\0".encode("utf-8"))
            h.update(a.tobytes())
    return h.hexdigest()


def meta_digest(meta: Mapping[str, Any]) -> str:
    """sha256 of case.json's content without its own `meta_digest` field, so an edited case.json shows."""
    body = {k: v for k, v in meta.items() if k != "meta_digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def float_digest(bundle: Bundle) -> str:
    """sha256 of the float model's outputs (float.npz), "" where they are missing or unreadable."""
    try:
        return digest(b"", {}, bundle.float_outputs())
    except Exception:  # a truncated npz raises one of several types
        return ""


# Bundles this process verified: folder -> (its files' identities when checked, case.json's text). A cell runner's
# worker meets one bundle once per column (a TensorRT-RTX worker up to a dozen times); a file written since, in place
# or replaced, has another inode, size, mtime or ctime, and is hashed again.
_VERIFIED: Dict[str, tuple] = {}


def _identities(path: Path) -> tuple:
    found = []
    folder = str(path)
    for name in (*FILES, FLOAT_FILE):
        try:
            st = os.stat(os.path.join(folder, name))
        except OSError:
            found.append((name,))
            continue
        found.append((name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(found)


def verify_bundle(path: Path) -> Bundle:
    """Load a bundle and check every file against its digests; raise BundleCorrupt saying what is wrong. A bundle this
    process verified before, none of whose files changed since, is not hashed again."""
    path = Path(path)
    key, identities = os.path.realpath(path), _identities(path)
    earlier = _VERIFIED.get(key)
    if earlier is not None and earlier[0] == identities:
        return Bundle(path=path, meta=json.loads(earlier[1]))
    bundle, text = _verified(path)
    _VERIFIED[key] = (identities, text)
    return bundle


def _verified(path: Path) -> Tuple[Bundle, str]:
    """The bundle, checked, and its case.json's text."""
    missing = [n for n in FILES if not (path / n).is_file()]
    if missing:
        raise BundleCorrupt(f"bundle corrupt: {', '.join(missing)} missing in {path}")
    try:
        text = (path / "case.json").read_text(encoding="utf-8")
        meta = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BundleCorrupt(f"bundle corrupt: case.json does not parse ({e})") from e
    if not isinstance(meta, dict) or not meta.get("digest"):
        raise BundleCorrupt("bundle corrupt: case.json has no digest")
    if "meta_digest" in meta and meta["meta_digest"] != meta_digest(meta):
        raise BundleCorrupt("bundle corrupt: case.json was changed after it was written (meta_digest differs)")
    bundle = Bundle(path=path, meta=meta)
    try:
        actual = digest((path / "model.onnx").read_bytes(), bundle.inputs(), bundle.expected())
    except Exception as e:  # a truncated or garbled npz raises one of several types
        raise BundleCorrupt(f"bundle corrupt: cannot read its arrays ({type(e).__name__}: {e})") from e
    if actual != meta["digest"]:
        raise BundleCorrupt(f"bundle corrupt: model.onnx, inputs.npz or expected.npz changed on disk "
                            f"(they hash to {actual[:12]}, case.json says {str(meta['digest'])[:12]})")
    if meta.get("float_reference") and float_digest(bundle) != meta["float_reference"].get("digest"):
        raise BundleCorrupt(f"bundle corrupt: {FLOAT_FILE} is missing or changed on disk")
    return bundle, text


def load_bundle(path: Path) -> Bundle:
    """Load one bundle folder; raise FileNotFoundError naming what is missing."""
    path = Path(path)
    for name in FILES:
        if not (path / name).is_file():
            raise FileNotFoundError(f"bundle {path} has no {name}; regenerate it with `python -m generators write`")
    return Bundle(path=path, meta=json.loads((path / "case.json").read_text()))


def read_json_object(path: Path) -> Dict[str, Any]:
    """A JSON file that holds one object (a bundle set's manifest): its content, {} where it is missing, unreadable or
    not an object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def iter_bundles(root: Optional[Path] = None) -> Iterator[Bundle]:
    """Every complete bundle under root, in id order."""
    root = bundles_root() if root is None else Path(root)
    for meta in sorted(root.glob("*/*/case.json")):
        yield load_bundle(meta.parent)


def bundle_ids(root: Optional[Path] = None) -> List[str]:
    """Every bundle folder's id (`<case>/<slug>`), complete or not: a damaged one still gets its cell."""
    root = bundles_root() if root is None else Path(root)
    return [f"{m.parent.parent.name}/{m.parent.name}" for m in sorted(root.glob("*/*/case.json"))]
