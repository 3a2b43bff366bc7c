"""Conformance companion bundles: int8 Q/DQ forms per operator version, expected outputs from onnx.reference.

    python -m generators.qdq_companion [--out DIR]     # write them (cached), then count them per form and opset

For each form of cases.qdq_companion.FORMS, each opset of cases.qdq_companion.OPSETS from the form's first, and each
operator shape (QuantizeLinear alone, QuantizeLinear then DequantizeLinear, DequantizeLinear alone): one bundle
(generators/bundle.py layout) `qdq_companion/<test>-opset<N>`, test `<operator>_<form>[_pair]`. Scales and zero points
are initializers (zero points all 0, scales powers of two, so x / scale is exact in float32 and a tie is a tie in
every engine); the data cover the whole quantized range, exact ties (round half to even) and values past it
(saturation). A quantized input numpy has no type for (float8, int4) is a constant too, as the node tests do it.

Expected outputs are `onnx.reference.ReferenceEvaluator`'s on the bundle's own model. Where the reference has no
implementation of an operator version (onnx 1.23.2 runs DequantizeLinear from 19 only: not 10 or 13), the same model
is evaluated at the first later opset it runs, whose DequantizeLinear computes the same for these inputs
(per-tensor and per-axis, int8 and uint8); case.json's `reference` says which opset computed the outputs.
Judged as the node tests are (generators.onnx_node_tests): integer and code outputs exact, float outputs within half
of the node's smallest scale.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from cases.qdq_companion import FORMS, ID, OPSETS, PER_TARGET_TYPES, SHAPES, Form
from core.cli import ArgumentParser
from generators.bundle import bundles_root, digest, read_json_object
from generators.onnx_node_tests import TOLERANCE_STEPS, TRT, _codes, _describe, _numpy_lacks, _publish_all, _version

WRITER_VERSION = "1"  # bump when the bundles change shape; this module's source and the libraries are keyed anyway
MANIFEST = "companion.json"  # <root>/qdq_companion/companion.json: every bundle written, with its test, form and opset
LIBRARIES = ("onnx", "numpy", "ml_dtypes")
SHAPE = (4, 8)  # x: 4 rows of 8 channels; per-axis along axis 1, blocked along axis 1 in blocks of BLOCK
AXIS = 1
BLOCK = 4
VALUES = SHAPE[0] * SHAPE[1]
# Scales: powers of two, so that x / scale and x * (1 / scale) are exact and a tie stays a tie.
SCALE = {"per-tensor": 2.0 ** -4, "per-axis": 2.0 ** -np.array([3, 4, 5, 6, 3, 4, 5, 6], dtype=np.float64)}
RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int4": (-8, 7), "float8_e4m3fn": (-448, 448)}


@dataclass(frozen=True)
class Entry:
    """One bundle of the companion: its test, operator, form and opset, and the opset whose reference computed it."""

    test: str
    op: str
    form: str
    opset: int
    bundle: str
    reference_opset: int
    constants: Tuple[str, ...] = ()


# ---- the forms ----------------------------------------------------------------------------------------------------


def tests() -> List[Tuple[str, str, str, int]]:
    """(test, operator, form, opset) for every bundle of the companion, in operator, form and opset order."""
    found = []
    for op, shapes in SHAPES.items():
        for name, form in FORMS.items():
            for shape in shapes:
                test = f"{op.lower()}_{name}" + (f"_{shape}" if shape else "")
                found += [(test, op, name, opset) for opset in OPSETS if opset >= form.first_opset]
    return found


def scale_of(form: Form) -> np.ndarray:
    """The form's scale as ONNX takes it: a scalar, one per channel, or one per block of each row."""
    if form.granularity == "per-tensor":
        return np.array(SCALE["per-tensor"], dtype=np.float32)
    channels = SCALE["per-axis"].astype(np.float32)
    if form.granularity == "per-axis":
        return channels
    rows = np.stack([np.roll(channels[: SHAPE[AXIS] // BLOCK], r) for r in range(SHAPE[0])])
    return rows.astype(np.float32)  # (4, 2): a scale per row and block of 4 channels


def _broadcast(scale: np.ndarray) -> np.ndarray:
    """The scale at each element of x."""
    if scale.ndim == 0:
        return np.full(SHAPE, float(scale))
    if scale.ndim == 1:
        return np.broadcast_to(scale.reshape(1, -1), SHAPE).astype(np.float64)
    return np.repeat(scale, BLOCK, axis=AXIS).astype(np.float64)


def float_input(form: Form) -> np.ndarray:
    """QuantizeLinear's x: multiples of half the scale from past the bottom of the range to past its top (ties and
    saturation), each exact in float32."""
    lo, hi = RANGE[form.quantized]
    margin = 3 if form.quantized != "float8_e4m3fn" else 64
    steps = np.round(np.linspace(lo - margin, hi + margin, VALUES) * 2) / 2
    return (steps.reshape(SHAPE) * _broadcast(scale_of(form))).astype(np.float32)


def quantized_input(form: Form) -> np.ndarray:
    """DequantizeLinear's x: values over the whole quantized range, both ends included, of the form's type."""
    import ml_dtypes  # noqa: F401  (registers float8 and int4 with numpy)

    lo, hi = RANGE[form.quantized]
    values = np.linspace(lo, hi, VALUES)
    if form.quantized == "float8_e4m3fn":
        return values.reshape(SHAPE).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    return np.round(values).reshape(SHAPE).astype(np.dtype(getattr(ml_dtypes, form.quantized, form.quantized)))


def zero_point_of(form: Form, scale: np.ndarray) -> np.ndarray:
    """Zeros of the quantized type, in the scale's shape: the zero point that names the output type."""
    import ml_dtypes

    dtype = np.dtype(getattr(ml_dtypes, form.quantized)) if _numpy_lacks_name(form.quantized) else form.quantized
    return np.zeros(scale.shape, dtype=np.float32).astype(dtype)


def _numpy_lacks_name(name: str) -> bool:
    return not hasattr(np, name)


# ---- one bundle ---------------------------------------------------------------------------------------------------


def model_of(test: str, op: str, form: Form, opset: int) -> Tuple[Any, Dict[str, np.ndarray], Dict[str, str]]:
    """The form's model at an opset, the inputs it is fed, and the graph inputs made constants (numpy lacks the
    type)."""
    from onnx import TensorProto, helper, numpy_helper

    scale = scale_of(form)
    zero = zero_point_of(form, scale)
    x = float_input(form) if op == "QuantizeLinear" else quantized_input(form)
    attrs: Dict[str, Any] = {}
    if form.granularity != "per-tensor":
        attrs["axis"] = AXIS
    if form.granularity == "blocked":
        attrs["block_size"] = BLOCK
    initializers = [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(zero, "zero_point")]
    constants: Dict[str, str] = {}
    fed: Dict[str, np.ndarray] = {}
    inputs = []
    if _numpy_lacks(x.dtype):
        initializers.append(numpy_helper.from_array(x, "x"))
        constants["x"] = x.dtype.name
    else:
        fed["x"] = x
        inputs.append(helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(SHAPE)))
    nodes = [helper.make_node(op, ["x", "scale", "zero_point"], ["y"], name=f"{op}_0", **attrs)]
    if test.endswith("_pair"):
        nodes[0].output[0] = "q"
        nodes.append(helper.make_node("DequantizeLinear", ["q", "scale", "zero_point"], ["y"],
                                      name="DequantizeLinear_1", **attrs))
    out_type = TensorProto.FLOAT if op == "DequantizeLinear" or test.endswith("_pair") \
        else helper.np_dtype_to_tensor_dtype(zero.dtype)
    graph = helper.make_graph(nodes, test, inputs, [helper.make_tensor_value_info("y", out_type, list(SHAPE))],
                              initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="qdq-matrix generators.qdq_companion")
    model.ir_version = helper.find_min_ir_version_for(opsets)
    return model, fed, constants


def reference_outputs(model: Any, fed: Dict[str, np.ndarray]) -> Tuple[np.ndarray, int]:
    """y by onnx.reference at the model's opset, else at the first later opset of OPSETS whose implementation runs;
    and that opset."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    own = model.opset_import[0].version
    for opset in [own] + [o for o in OPSETS if o > own]:
        at = type(model)()
        at.CopyFrom(model)
        at.opset_import[0].version = opset
        at.ir_version = helper.find_min_ir_version_for(list(at.opset_import))
        try:
            evaluator = ReferenceEvaluator(at)
        except RuntimeError:  # "No implementation for operator ... version N": a later version of the same operator
            continue
        return np.asarray(evaluator.run(None, fed)[0]), opset
    raise RuntimeError(f"onnx.reference runs no version of {model.graph.node[0].op_type} from opset {own}")


def bundle_files(test: str, op: str, name: str, opset: int, per_target: bool = False) -> Dict[str, Any]:
    """Everything one bundle holds: model.onnx, inputs.npz, expected.npz (codes where numpy has no type), case.json."""
    import onnx

    from core.numerics import comparison_step

    form = FORMS[name]
    model, fed, constants = model_of(test, op, form, opset)
    onnx.checker.check_model(model, full_check=True)
    y, computed_at = reference_outputs(model, fed)
    if _numpy_lacks(y.dtype):
        kept = _codes(y)
        kind = "integer" if y.dtype.name.startswith(("int", "uint")) else "code"
        described = {**_describe(kept), "codes": y.dtype.name, "step": 1.0, "step_kind": kind}
    else:
        kept = y
        step, kind = comparison_step(y, float(scale_of(form).min()) if y.dtype.kind == "f" else None)
        described = {**_describe(y), "step": step, "step_kind": kind}
    model_bytes = model.SerializeToString()
    reference = f"onnx {_version('onnx')} onnx.reference at opset {computed_at}"
    if computed_at != opset:
        reference += (f" (it has no implementation of opset {opset}'s DequantizeLinear; the operator computes the same "
                      "for these inputs at both)")
    pair = " then DequantizeLinear" if test.endswith("_pair") else ""
    meta = {
        "bundle": f"{ID}/{test}-opset{opset}",
        "case": ID,
        "seed": "",
        "title": f"{op}{pair} {name} ({form.granularity} {form.quantized}, zero point 0) at opset {opset}",
        "links": [],
        "params": {"op": op, "form": name, "test": test, "opset": opset},
        "rng_seed": 0,
        "digest": digest(model_bytes, fed, {"y": kept}),
        "generator_version": WRITER_VERSION,
        "opset": opset,
        "ir_version": model.ir_version,
        "target_nodes": [n.name for n in model.graph.node],
        "inputs": {n: _describe(a) for n, a in fed.items()},
        "outputs": {"y": described},
        "tolerance_steps": TOLERANCE_STEPS,
        "trt": dict(TRT, per_target=True) if per_target else dict(TRT),
        "intentionally_invalid": "",
        "checker": "passed",
        "reference": reference,
        "notes": ("constants (no numpy type to feed them): "
                  + ", ".join(f"{k} ({v})" for k, v in constants.items())) if constants else "",
        "conformance": {"test": test, "op": op, "form": {"name": name, **form._asdict()}, "opset": opset,
                        "source_opset": opset, "reference_opset": computed_at, "constants": constants},
    }
    return {"model.onnx": model_bytes, "inputs.npz": fed, "expected.npz": {"y": kept}, "case.json": meta}


# ---- writing, cached ----------------------------------------------------------------------------------------------


def cache_key() -> str:
    """What the bundles are made from: this module, the case's and the node tests' writer (whose helpers it uses), the
    writer version and the installed onnx, numpy and ml_dtypes. Read without importing onnx."""
    import cases.qdq_companion as case
    import generators.onnx_node_tests as node_tests

    return node_tests.sources_key(WRITER_VERSION, (Path(__file__), Path(case.__file__), Path(node_tests.__file__)))


def folder(root: Optional[Path] = None) -> Path:
    return (bundles_root() if root is None else Path(root)) / ID


def read_manifest(root: Optional[Path] = None) -> Dict[str, Any]:
    """<root>/qdq_companion/companion.json, {} where it is missing or unreadable."""
    return read_json_object(folder(root) / MANIFEST)


def write_all(root: Optional[Path] = None) -> Tuple[List[Path], List[Entry], bool]:
    """Every companion bundle under <root>/qdq_companion/ and the manifest; nothing is rebuilt (and onnx not imported)
    while the cache key, the manifest and every bundle are as written. (paths, entries, whether cached)."""
    out = folder(root)
    key = cache_key()
    manifest = read_manifest(root)
    entries = [Entry(**dict(e, constants=tuple(e.get("constants") or ()))) for e in manifest.get("entries") or []]
    paths = [out / e.bundle.split("/", 1)[1] for e in entries]
    if manifest.get("cache_key") == key and entries and all((p / "case.json").is_file() for p in paths):
        return paths, entries, True
    files, entries = {}, []
    for test, op, name, opset in tests():
        per_target = FORMS[name].quantized in PER_TARGET_TYPES and opset == FORMS[name].first_opset
        bundle = bundle_files(test, op, name, opset, per_target)
        meta = bundle["case.json"]
        files[meta["bundle"]] = bundle
        entries.append(Entry(test, op, name, opset, meta["bundle"], meta["conformance"]["reference_opset"],
                             tuple(meta["conformance"]["constants"])))
    paths = _publish_all(out, files, key)
    manifest = {"schema": "qdq-matrix/companion-manifest/1", "cache_key": key,
                "libraries": {n: _version(n) for n in LIBRARIES}, "entries": [asdict(e) for e in entries]}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return paths, entries, False


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = ArgumentParser(prog="python -m generators.qdq_companion", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="bundle root (default: $QDQ_BUNDLES or .bundles)")
    args = parser.parse_args(argv)
    try:
        paths, entries, cached = write_all(args.out)
    except OSError as e:
        print(f"error: cannot write bundles in {folder(args.out)}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"{len(paths)} companion bundles ({len({e.test for e in entries})} tests of {len(FORMS)} forms) in "
          f"{folder(args.out)} ({'cached' if cached else 'written'})")
    for name in FORMS:
        opsets = sorted({e.opset for e in entries if e.form == name})
        print(f"  {name}: {sum(e.form == name for e in entries)} bundles, opsets {' '.join(map(str, opsets))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
