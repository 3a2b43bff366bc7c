"""Conformance bundles: the installed onnx package's node tests for the quantization operators, at every opset.

    python -m generators.onnx_node_tests [--out DIR]     # write them (cached), then list what each opset became

Each node test of onnx.backend.test.case.node for the operators in cases.onnx_node_tests.OPS (the test's model, its
inputs and ONNX's expected outputs, as the installed onnx makes them at import time; nothing is committed) becomes a
bundle (generators/bundle.py layout) at its own opset and at each opset of cases.onnx_node_tests.OPSETS that
`onnx.version_converter` converts it to and that `onnx.checker` (full check) accepts; a conversion either refuses is
listed with its reason in `<root>/onnx_node_tests/conformance.json`, and never becomes a bundle. A converted model
keeps the source's IR version, which an engine may refuse outright (ONNX Runtime 1.31 refuses IR 14), so each model
carries the oldest IR version its opset needs (`onnx.helper.find_min_ir_version_for`).

Float8, int4, int2 and float4 values come through ml_dtypes. No engine's Python API takes an array of those types
(numpy has none), so a graph input of such a type is supplied as a constant (an initializer of the same name) in
every engine, and case.json's `conformance.constants` says which. An output of such a type is kept as numpy can
hold it: the values of an integer type (int8/uint8), the bit codes (uint8) of a float type; `outputs.<name>.codes`
names the type, and the judge (core.numerics.as_codes) reads an engine's output the same way.

How outputs are judged (tolerance 0.5 steps): an integer output, and an output kept as codes, must be exact (any
difference is at least one step); a float output of DequantizeLinear is counted in steps of its own quantization
step, the smallest scale of the node; any other float output (DynamicQuantizeLinear's y_scale) in steps of its peak
magnitude / 127, the suite's default.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import shutil
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from cases.onnx_node_tests import ID, OPS, OPSETS, PER_TARGET_TYPES
from core.cli import ArgumentParser
from generators.bundle import bundles_root, digest, meta_digest, read_json_object

WRITER_VERSION = "1"  # bump when the bundles change shape; this module's source and the libraries are keyed anyway
MANIFEST = "conformance.json"  # <root>/onnx_node_tests/conformance.json: every node test and opset, written or why not
TOLERANCE_STEPS = 0.5  # integer and code outputs exact; float outputs within half a step
TRT = {"strongly_typed": True, "int8": True, "fp16": True}  # explicit quantization; 8.x's weak typing needs the flags
LIBRARIES = ("onnx", "numpy", "ml_dtypes")


@dataclass(frozen=True)
class Form:
    """An operator form as fields: the operator, per-tensor / per-axis / blocked, the quantized type and the scale's."""

    op: str
    granularity: str  # "per-tensor", "per-axis", "blocked" or "dynamic" (DynamicQuantizeLinear computes its own)
    quantized: str  # the quantized tensor's type: uint8, int4, float8_e4m3fn, ... (the ml_dtypes / numpy name)
    scale: str = ""  # the scale's type where it is not float32 ("" for float32 or none)
    expanded: bool = False  # the test runs the operator's function body (onnx's "_expanded" tests), not the node

    @property
    def label(self) -> str:
        """"per-axis uint8", "per-tensor float8_e4m3fn, float16 scale", "dynamic uint8 (expanded function)"."""
        words = f"{self.granularity} {self.quantized}" + (f", {self.scale} scale" if self.scale else "")
        return words + (" (expanded function)" if self.expanded else "")


@dataclass(frozen=True)
class Entry:
    """One node test at one opset: its bundle id, or why there is none (the converter or the checker refused)."""

    test: str  # onnx's test name without "test_"
    op: str
    form: str
    opset: int
    source_opset: int
    bundle: str = ""
    refused: str = ""  # "converter: ..." or "checker: ...", "" where the bundle was written
    constants: Tuple[str, ...] = ()  # graph inputs supplied as constants (no numpy type to feed them)


@dataclass(frozen=True)
class Written:
    """What one write left: the bundle folders and every entry, and whether they came from the cache."""

    paths: Tuple[Path, ...]
    entries: Tuple[Entry, ...]
    cached: bool
    libraries: Dict[str, str] = field(default_factory=dict)


# ---- the node tests -----------------------------------------------------------------------------------------------


def node_tests(ops: Sequence[str] = OPS) -> List[Tuple[str, Any]]:
    """(operator, onnx TestCase) for every node test of these operators in the installed onnx, in onnx's order.

    Only each operator's module is imported (onnx's metaclass runs a module's tests as it imports it): the same
    tests collect_testcases() gives for them, in a tenth of its time. An expanded test (the function body) belongs to
    the operator of the test it expands."""
    import warnings

    node = importlib.import_module("onnx.backend.test.case.node")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some generators warn about casts that overflow on purpose
        for op in ops:
            try:
                importlib.import_module(f"{node.__name__}.{op.lower()}")
            except ImportError:  # an onnx that names the module otherwise: the slow way, every module
                node.collect_testcases()
    tests = [c for c in node._NodeTestCases if c.kind == "node"]
    single = {c.name: c.model.graph.node[0].op_type for c in tests if len(c.model.graph.node) == 1}
    found = []
    for c in tests:
        op = single.get(c.name) or single.get(_unexpanded(c.name), "")
        if op in ops and all(c.name != seen.name for _, seen in found):
            found.append((op, c))
    return found


def _unexpanded(name: str) -> str:
    """The test an "_expanded" test expands (onnx names it `<test>_expanded`)."""
    return name[: -len("_expanded")] if name.endswith("_expanded") else ""


def arrays(case: Any) -> Tuple[List[np.ndarray], List[np.ndarray]]:
    """A test's inputs and expected outputs (data set 0) as numpy arrays; float8, int4, int2 and float4 as ml_dtypes."""
    from onnx import TensorProto, numpy_helper

    def array(value: Any) -> np.ndarray:
        return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)

    inputs, outputs = case.data_sets[0]
    return [array(a) for a in inputs], [array(a) for a in outputs]


def form_of(op: str, case: Any, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> Form:
    """The operator form a test exercises, from its node, inputs and outputs."""
    graph = case.model.graph
    node = graph.node[0] if len(graph.node) == 1 else None
    attrs = {a.name: a for a in node.attribute} if node is not None else {}
    expanded = node is None
    if op == "DynamicQuantizeLinear":
        return Form(op, "dynamic", outputs[0].dtype.name, expanded=expanded)
    if op in ("QuantizeLinear", "DequantizeLinear"):
        data, scale = (outputs[0], inputs[1]) if op == "QuantizeLinear" else (inputs[0], inputs[1])
        blocked = "block_size" in attrs and attrs["block_size"].i > 0
        granularity = "blocked" if blocked else "per-axis" if scale.size > 1 else "per-tensor"
        return Form(op, granularity, data.dtype.name, _scale_type(scale), expanded)
    # QLinearConv, QLinearMatMul: (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp): per-axis where w_scale has a
    # value per output channel; ConvInteger, MatMulInteger: (x, w, x_zp, w_zp): per-axis where w_zp has
    weight = 4 if op.startswith("QLinear") else 3
    param = inputs[weight] if len(inputs) > weight else None
    granularity = "per-axis" if param is not None and param.size > 1 else "per-tensor"
    scale = _scale_type(inputs[1]) if op.startswith("QLinear") else ""
    return Form(op, granularity, inputs[0].dtype.name, scale, expanded)


def _scale_type(scale: np.ndarray) -> str:
    return "" if scale.dtype == np.float32 else scale.dtype.name


# ---- one node test at one opset -----------------------------------------------------------------------------------


def at_opset(model: Any, opset: int) -> Tuple[Optional[Any], str]:
    """The model at an opset (itself at its own), with the oldest IR version that opset needs, and checked in full;
    (None, "converter: ..." or "checker: ...") where the converter or the checker refuses."""
    import onnx
    from onnx import helper, version_converter

    own = _opset(model)
    if opset == own:
        converted = onnx.ModelProto()
        converted.CopyFrom(model)
    else:
        try:
            converted = version_converter.convert_version(model, opset)
        except Exception as e:  # RuntimeError from the C++ adapters, ValidationError
            return None, "converter: " + _reason(e)
    converted.ir_version = helper.find_min_ir_version_for(list(converted.opset_import))
    try:
        onnx.checker.check_model(converted, full_check=True)
    except Exception as e:  # ValidationError, InferenceError
        return None, "checker: " + _reason(e)
    return converted, ""


def _opset(model: Any) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _reason(error: BaseException) -> str:
    """An exception's first line, without the C++ assertion that precedes the converter's own reason, and with a
    type's number named ("DataType (17)" is FLOAT8E4M3FN)."""
    import re

    from onnx import TensorProto

    line = (str(error).strip().splitlines() or [type(error).__name__])[0]
    _, said, reason = line.partition(" failed: ")

    def name(m: "re.Match[str]") -> str:
        try:
            return f"{m.group(0)} {TensorProto.DataType.Name(int(m.group(1)))}"
        except ValueError:
            return m.group(0)

    return re.sub(r"DataType \((\d+)\)", name, (reason if said else line).strip())[:300]


def bundle_files(op: str, case: Any, form: Form, opset: int, model: Any, per_target: bool = False) -> Dict[str, Any]:
    """Everything one bundle holds: the model (named nodes, inputs numpy cannot hold made constants), inputs.npz,
    expected.npz (codes where numpy has no type) and case.json (trt.per_target: built once per TensorRT-RTX
    target)."""
    import onnx
    from onnx import numpy_helper

    from core.numerics import comparison_step

    inputs, outputs = arrays(case)
    graph = model.graph
    for node in graph.node:
        if not node.name:
            node.name = f"node_of_{node.output[0]}"  # engines name layers after nodes; node tests leave names empty
    fed: Dict[str, np.ndarray] = {}
    constants: Dict[str, str] = {}
    keep = []
    for vi, a in zip(list(graph.input), inputs):
        if _numpy_lacks(a.dtype):
            graph.initializer.append(numpy_helper.from_array(a, vi.name))
            constants[vi.name] = a.dtype.name
        else:
            fed[vi.name] = a
            keep.append(vi)
    del graph.input[:]
    graph.input.extend(keep)
    onnx.checker.check_model(model, full_check=True)
    expected: Dict[str, np.ndarray] = {}
    described: Dict[str, Dict[str, Any]] = {}
    dq_step = _dequantize_step(op, inputs)
    for vi, a in zip(graph.output, outputs):
        if _numpy_lacks(a.dtype):
            kept = _codes(a)
            kind = "integer" if a.dtype.name.startswith(("int", "uint")) else "code"
            described[vi.name] = {**_describe(kept), "codes": a.dtype.name, "step": 1.0, "step_kind": kind}
        else:
            kept = a
            step, kind = comparison_step(a, dq_step if a.dtype.kind == "f" else None)
            described[vi.name] = {**_describe(a), "step": step, "step_kind": kind}
        expected[vi.name] = kept
    model_bytes = model.SerializeToString()
    test = case.name[len("test_"):] if case.name.startswith("test_") else case.name
    targets = [n.name for n in graph.node if n.op_type in OPS] or [n.name for n in graph.node]
    meta = {
        "bundle": f"{ID}/{test}-opset{opset}",
        "case": ID,
        "seed": "",
        "title": f"{op} {form.label}: onnx node test {case.name} at opset {opset}",
        "links": [],
        "params": {"op": op, "form": form.label, "test": test, "opset": opset},
        "rng_seed": 0,
        "digest": digest(model_bytes, fed, expected),
        "generator_version": WRITER_VERSION,
        "opset": opset,
        "ir_version": model.ir_version,
        "target_nodes": targets,
        "inputs": {n: _describe(a) for n, a in fed.items()},
        "outputs": described,
        "tolerance_steps": TOLERANCE_STEPS,
        "trt": dict(TRT, per_target=True) if per_target else dict(TRT),
        "intentionally_invalid": "",
        "checker": "passed",
        "reference": f"onnx {_version('onnx')} node test {case.name}",
        "notes": ("constants (no numpy type to feed them): "
                  + ", ".join(f"{k} ({v})" for k, v in constants.items())) if constants else "",
        "conformance": {"test": case.name, "op": op, "form": asdict(form), "opset": opset,
                        "source_opset": _opset(case.model), "constants": constants},
    }
    return {"model.onnx": model_bytes, "inputs.npz": fed, "expected.npz": expected, "case.json": meta}


def _numpy_lacks(dtype: np.dtype) -> bool:
    """A type numpy has no type of its own for (ml_dtypes' float8, int4, int2, float4): no engine API feeds it."""
    return np.dtype(dtype).type.__module__.partition(".")[0] != "numpy"


def _codes(a: np.ndarray) -> np.ndarray:
    """An ml_dtypes array as numpy holds it: an integer type's values (int8, uint8), a float type's bit codes."""
    name = a.dtype.name
    if name.startswith("int"):
        return a.astype(np.int8)
    if name.startswith("uint"):
        return a.astype(np.uint8)
    return a.view(np.uint8)


def _dequantize_step(op: str, inputs: Sequence[np.ndarray]) -> Optional[float]:
    """A DequantizeLinear output's own step: the smallest scale of the node (its x_scale, input 1)."""
    if op != "DequantizeLinear" or len(inputs) < 2:
        return None
    scales = np.abs(np.asarray(inputs[1], dtype=np.float64)).reshape(-1)
    scales = scales[scales > 0]
    return float(scales.min()) if scales.size else None


def _describe(a: np.ndarray) -> Dict[str, Any]:
    return {"dtype": a.dtype.name, "shape": list(a.shape)}


# ---- writing, cached ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _version(name: str) -> str:
    """An installed distribution's version, "absent" where none is; read once per process (each read parses its
    METADATA file, and every bundle names onnx's)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def cache_key() -> str:
    """What the bundles are made from: this module and the case's source, the writer version and the installed onnx,
    numpy and ml_dtypes (onnx's node tests are whatever the installed onnx ships). Read without importing onnx."""
    import cases.onnx_node_tests as case

    return sources_key(WRITER_VERSION, (Path(__file__), Path(case.__file__)))


def sources_key(writer_version: str, sources: Sequence[Path]) -> str:
    """A bundle set's cache key: its writer version, the bytes of its source files, and the installed LIBRARIES."""
    h = hashlib.sha256(writer_version.encode())
    for path in sources:
        h.update(path.read_bytes())
    h.update(json.dumps({n: _version(n) for n in LIBRARIES}, sort_keys=True).encode())
    return h.hexdigest()


def folder(root: Optional[Path] = None) -> Path:
    return (bundles_root() if root is None else Path(root)) / ID


def read_manifest(root: Optional[Path] = None) -> Dict[str, Any]:
    """<root>/onnx_node_tests/conformance.json, {} where it is missing or unreadable."""
    return read_json_object(folder(root) / MANIFEST)


def entries_of(manifest: Dict[str, Any]) -> List[Entry]:
    """The manifest's entries as records."""
    return [Entry(**dict(e, constants=tuple(e.get("constants") or ()))) for e in manifest.get("entries") or []]


def write_all(root: Optional[Path] = None, opsets: Sequence[int] = OPSETS) -> Written:
    """Every node test at its own opset and each of `opsets` as a bundle under <root>/onnx_node_tests/, and the
    manifest; nothing is rebuilt (and onnx not imported) while the cache key, the manifest and every bundle are as
    written."""
    out = folder(root)
    key = cache_key()
    manifest = read_manifest(root)
    entries = entries_of(manifest)
    paths = tuple(out / e.bundle.split("/", 1)[1] for e in entries if e.bundle)
    if manifest.get("cache_key") == key and manifest.get("opsets") == list(opsets) \
            and all((p / "case.json").is_file() for p in paths):
        return Written(paths, tuple(entries), True, dict(manifest.get("libraries") or {}))
    entries, files = [], {}
    for op, case in node_tests():
        inputs, outputs = arrays(case)
        form = form_of(op, case, inputs, outputs)
        source = _opset(case.model)
        test = case.name[len("test_"):]
        converted = {opset: at_opset(case.model, opset) for opset in dict.fromkeys([source, *opsets])}
        # a form whose support the GPU architecture decides is built per target once, at the first opset that has it
        per_target = min((o for o, (m, _) in converted.items() if m is not None), default=None) \
            if form.quantized in PER_TARGET_TYPES else None
        for opset, (model, refused) in converted.items():
            if model is None:
                entries.append(Entry(test, op, form.label, opset, source, refused=refused))
                continue
            bundle = bundle_files(op, case, form, opset, model, per_target=opset == per_target)
            meta = bundle["case.json"]
            files[meta["bundle"]] = bundle
            entries.append(Entry(test, op, form.label, opset, source, bundle=meta["bundle"],
                                 constants=tuple(meta["conformance"]["constants"])))
    written = _publish_all(out, files, key)
    libraries = {n: _version(n) for n in LIBRARIES}
    manifest = {"schema": "qdq-matrix/conformance-manifest/1", "cache_key": key, "opsets": list(opsets),
                "libraries": libraries, "entries": [asdict(e) for e in entries]}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return Written(tuple(written), tuple(entries), False, libraries)


def _publish_all(out: Path, files: Dict[str, Dict[str, Any]], key: str) -> List[Path]:
    """Each bundle into its folder (left as it is where its case.json holds the same digest), and every other bundle
    folder under out removed: no stale model runs."""
    from generators.write import _publish

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for bundle_id, bundle in files.items():
        target = out / bundle_id.split("/", 1)[1]
        meta = bundle["case.json"]
        meta["cache_key"] = key
        meta["meta_digest"] = meta_digest(meta)
        try:
            same = json.loads((target / "case.json").read_text(encoding="utf-8")).get("meta_digest") \
                == meta["meta_digest"]
        except (OSError, ValueError):
            same = False
        if not same:
            _publish(target, bundle)
        paths.append(target)
    keep = {p.name for p in paths}
    for stale in [m.parent for m in out.glob("*/case.json") if m.parent.name not in keep]:
        shutil.rmtree(stale)
    return paths


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = ArgumentParser(prog="python -m generators.onnx_node_tests", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="bundle root (default: $QDQ_BUNDLES or .bundles)")
    args = parser.parse_args(argv)
    try:
        done = write_all(args.out)
    except OSError as e:
        print(f"error: cannot write bundles in {folder(args.out)}: {e.strerror or e}", file=sys.stderr)
        return 2
    tests = len({e.test for e in done.entries})
    bundles = sum(bool(e.bundle) for e in done.entries)
    print(f"{tests} onnx {done.libraries.get('onnx', '')} node tests of {', '.join(OPS)}: {bundles} bundles in "
          f"{folder(args.out)} ({'cached' if done.cached else 'written'}), "
          f"{len(done.entries) - bundles} conversions refused")
    for opset in sorted({e.opset for e in done.entries}, reverse=True):
        at = [e for e in done.entries if e.opset == opset]
        print(f"  opset {opset}: {sum(bool(e.bundle) for e in at)} of {len(at)} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
