"""Build reproducers from the catalogue and write them as bundles (layout: generators/bundle.py)."""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import io
import json
import os
import shutil
import tempfile
import zlib
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple

import numpy as np

from cases import Case, all_cases, bundle_id, get_case
from generators.bundle import bundles_root, digest, meta_digest
from generators.reproducer import Reproducer

GENERATORS = Path(__file__).resolve().parent

# Bump when the bundle format changes (the source of every generators/ module is part of the cache key anyway).
GENERATOR_VERSION = "3"  # 2: case.json carries meta_digest; 3: its ORT cross-check names the CPU INT8 level

# Modules of generators/ that no catalogue builder imports and that key their own bundles: an edit to one rebuilds
# only its own (the conformance bundles, generators/onnx_node_tests.py and generators/qdq_companion.py).
OWN_KEYS = ("onnx_node_tests", "qdq_companion")

# progress(done, total, bundle id, "written" or "cached")
Progress = Callable[[int, int, str, str], None]
# axis -> values kept; a variant is kept when every filtered axis holds one of its values
ParamsFilter = Mapping[str, Iterable[Any]]


def rng_seed(bundle: str) -> int:
    """The seed of a bundle's random generator: CRC-32 of its id."""
    return zlib.crc32(bundle.encode("utf-8"))


def build(case: Case, params: Mapping[str, Any]) -> Reproducer:
    """Build one variant of a case with its seeded generator; the builder is imported here. An added axis the
    parameters leave out (a cell written before it existed) is at its default (Case.defaults)."""
    params = case.with_defaults(params)
    case.check_params(params)
    module, function = case.builder.split(":")
    builder = getattr(importlib.import_module(module), function)
    rng = np.random.default_rng(rng_seed(bundle_id(case, dict(params))))
    return builder(dict(params), rng)


def cache_key(case: Case, params: Mapping[str, Any]) -> str:
    """What a bundle was built from: case, parameters, seed, generator version, the source code of the case and of
    every generators/ module, and the versions of the libraries that build and compute it."""
    seed = rng_seed(bundle_id(case, dict(params)))
    blob = json.dumps(
        {"case": case.id, "params": dict(params), "rng_seed": seed, "generator_version": GENERATOR_VERSION,
         "source": _source_digest(case.id, case.builder), "libraries": builder_libraries()},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def source_files(case_id: str, builder: str) -> List[Path]:
    """The files a bundle is built from: its case module, its builder's module and every module of generators/
    (the builders share qdq_parts, onnx_util, typed_qdq and reference: an edit to any of them must rebuild)."""
    found = []
    for name in (f"cases.{case_id}", builder.split(":")[0]):
        try:
            source = inspect.getsourcefile(importlib.import_module(name))
        except ImportError:  # a case declared outside cases/ (tests do this)
            source = None
        if source and Path(source).resolve().parent != GENERATORS:
            found.append(Path(source))
    return found + sorted(p for p in GENERATORS.glob("*.py") if p.stem not in OWN_KEYS)


@functools.lru_cache(maxsize=None)
def _source_digest(case_id: str, builder: str) -> str:
    """sha256 over the names and bytes of source_files()."""
    h = hashlib.sha256(case_id.encode())
    for path in source_files(case_id, builder):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def builder_libraries() -> Dict[str, str]:
    """The versions of the libraries that build a model and compute its reference: onnx, numpy, ml_dtypes."""
    found = {}
    for name in ("onnx", "numpy", "ml_dtypes"):
        try:
            found[name] = str(importlib.import_module(name).__version__)
        except ImportError:
            found[name] = "absent"
    return found




def preload(todo: List[Tuple[Case, dict]], root: Optional[Path] = None) -> None:
    """Import what rendering the bundles of `todo` needs (their builders, numpy's random generators, onnx's reference
    evaluator with every operator's implementation, ONNX Runtime) where the first one is not in the cache (a fresh
    write): before `python -m generators write` forks its second writer, both processes then have them for one import.
    """
    if not todo or _cached(_target(*todo[0], root), cache_key(*todo[0])):
        return
    import numpy.random  # noqa: F401
    import onnx.reference.ops  # noqa: F401  (the first evaluator would import every operator's implementation)

    import generators.reference  # noqa: F401

    for module in dict.fromkeys(case.builder.split(":")[0] for case, _ in todo):
        importlib.import_module(module)
    try:
        import onnxruntime  # noqa: F401
    except ImportError:  # the cross-check says so, per bundle
        pass


def write_all(
    case_ids: Optional[Iterable[str]] = None,
    params_filter: Optional[ParamsFilter] = None,
    root: Optional[Path] = None,
    progress: Optional[Progress] = None,
) -> List[Path]:
    """Write every selected bundle, in seed and sweep order."""
    todo = select(case_ids, params_filter)
    paths = []
    for done, (case, params) in enumerate(todo, start=1):
        path, status = write_bundle(case, params, root)
        if progress is not None:
            progress(done, len(todo), bundle_id(case, params), status)
        paths.append(path)
    if not case_ids and not params_filter:
        prune(paths, root)
    return paths


def prune(keep: List[Path], root: Optional[Path] = None) -> List[Path]:
    """Remove bundle folders the catalogue no longer has (a changed sweep), so no stale model runs; an external case's
    folder (the conformance bundles, generators.onnx_node_tests) is its own writer's to keep."""
    root = bundles_root() if root is None else Path(root)
    wanted = {p.resolve() for p in keep}
    external = {c.id for c in all_cases(external=True) if c.external}
    stale = [m.parent for m in root.glob("*/*/case.json")
             if m.parent.resolve() not in wanted and m.parent.parent.name not in external]
    for path in stale:
        shutil.rmtree(path)
    return stale


def select(
    case_ids: Optional[Iterable[str]] = None, params_filter: Optional[ParamsFilter] = None
) -> List[Tuple[Case, dict]]:
    """(case, params) for every variant of the chosen cases that passes the filter."""
    cases = all_cases() if not case_ids else [get_case(c) for c in case_ids]
    wanted = {k: list(v) for k, v in (params_filter or {}).items()}
    return [(c, p) for c in cases for p in c.variants() if _keeps(c, p, wanted)]


def _keeps(case: Case, params: Mapping[str, Any], wanted: Mapping[str, List[Any]]) -> bool:
    return all(k in case.axes and params[k] in vals for k, vals in wanted.items())


class Written(NamedTuple):
    """One bundle written, or found in the cache: its folder, and "written" or "cached"."""

    path: Path
    status: str


def write_bundle(case: Case, params: Mapping[str, Any], root: Optional[Path] = None) -> Written:
    """Write one bundle (or reuse it when its cache key matches)."""
    params = dict(params)
    target = _target(case, params, root)
    key = cache_key(case, params)
    if _cached(target, key):
        return Written(target, "cached")
    files = render(case, params)
    files["case.json"]["cache_key"] = key
    files["case.json"]["meta_digest"] = meta_digest(files["case.json"])
    _publish(target, files)
    return Written(target, "written")


def _target(case: Case, params: Mapping[str, Any], root: Optional[Path] = None) -> Path:
    """A bundle's folder; ValueError where its id would put it outside the bundle root."""
    base = bundles_root() if root is None else Path(root)
    target = base / case.id / bundle_id(case, dict(params)).split("/", 1)[1]
    if base.resolve() not in target.resolve().parents:  # a case id or parameter value like "../x" or "/x"
        raise ValueError(f"bundle {bundle_id(case, dict(params))!r} would be written outside {base}; refused")
    return target


def _cached(target: Path, key: str) -> bool:
    names = ("model.onnx", "inputs.npz", "expected.npz", "case.json")
    if not all((target / n).is_file() for n in names):
        return False
    try:
        return json.loads((target / "case.json").read_text()).get("cache_key") == key
    except ValueError:
        return False


def render(case: Case, params: Mapping[str, Any]) -> Dict[str, Any]:
    """Build one variant and everything its bundle holds: model bytes, arrays and case.json."""
    from core.numerics import comparison_step
    from generators.reference import cross_check, expected_outputs

    params = dict(params)
    rep = build(case, params)
    checker = _check_model(case, params, rep)
    model_bytes = rep.model.SerializeToString()
    expected, reference = expected_outputs(rep)
    steps = {n: comparison_step(a, rep.output_steps.get(n)) for n, a in expected.items()}
    meta = {
        "bundle": bundle_id(case, params),
        "case": case.id,
        "seed": case.seed,
        "title": case.title,
        "links": list(case.links),
        "params": params,
        "rng_seed": rng_seed(bundle_id(case, params)),
        "digest": digest(model_bytes, rep.inputs, expected),
        "generator_version": GENERATOR_VERSION,
        "opset": next((o.version for o in rep.model.opset_import if o.domain in ("", "ai.onnx")), None),
        "ir_version": rep.model.ir_version,
        "target_nodes": list(rep.target_nodes),
        "inputs": {n: _describe(a) for n, a in rep.inputs.items()},
        # step: the unit errors are counted in (the feeding Q's scale, 1 for integers, max|expected|/127)
        "outputs": {n: {**_describe(a), "step": steps[n][0], "step_kind": steps[n][1]} for n, a in expected.items()},
        "tolerance_steps": rep.tolerance_steps,
        "trt": _jsonable(dict(rep.trt)),
        "intentionally_invalid": rep.intentionally_invalid or case.intentionally_invalid,
        "checker": checker,
        "reference": reference,
        "cross_check": cross_check(rep, expected, {n: s[0] for n, s in steps.items()}),
        "notes": rep.notes,
    }
    return {"model.onnx": model_bytes, "inputs.npz": rep.inputs, "expected.npz": expected, "case.json": meta}


def _check_model(case: Case, params: Mapping[str, Any], rep: Reproducer) -> str:
    """'passed' or 'refused: why'; a refused model must be marked intentionally invalid."""
    import onnx

    try:
        onnx.checker.check_model(rep.model, full_check=True)
    except Exception as e:  # checker and shape-inference errors have several types
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if not (rep.intentionally_invalid or case.intentionally_invalid):
            raise ValueError(
                f"{bundle_id(case, dict(params))}: onnx.checker refused the model and the case does not mark it "
                f"intentionally invalid: {reason}"
            ) from e
        return f"refused: {reason}"
    return "passed"


def _describe(a: np.ndarray) -> Dict[str, Any]:
    a = np.asarray(a)
    return {"dtype": a.dtype.name, "shape": list(a.shape)}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


def _publish(target: Path, files: Mapping[str, Any]) -> None:
    """Write into a hidden staging folder beside the target, then swap it in with renames."""
    # <root>/<case>/.staging/<tmp>/ is one level too deep for iter_bundles, even after a crash. The
    # (empty) .staging folder stays: removing it could race with another writer about to use it.
    holding = target.parent / ".staging"
    holding.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=holding))
    try:
        (staging / "model.onnx").write_bytes(files["model.onnx"])
        (staging / "inputs.npz").write_bytes(_npz(files["inputs.npz"]))
        (staging / "expected.npz").write_bytes(_npz(files["expected.npz"]))
        (staging / "case.json").write_text(json.dumps(files["case.json"], indent=2) + "\n")
        try:
            _swap_in(staging, target)
        except OSError:
            # Another process (pytest-xdist worker) published the same bundle first: keep theirs.
            if not _cached(target, files["case.json"]["cache_key"]):
                raise
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _npz(arrays: Mapping[str, np.ndarray]) -> bytes:
    """np.savez's bytes, made in memory: one write of the file, not the thousands of seeks and small writes of a zip
    written in place (strace)."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _swap_in(staging: Path, target: Path) -> None:
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f"{target.name}.old.", dir=staging.parent))
        os.replace(target, old / "bundle")
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
