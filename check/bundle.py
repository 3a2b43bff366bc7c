"""A user's model as a bundle in the catalogue's format (layout: generators/bundle.py), so cells run unchanged.

The bundle's model.onnx is the user's model with unnamed nodes given stable names (`node_of_<first
output>`), and, where it has external data, the data files beside it and their sha256 in the model's
metadata, so the bundle digest (model bytes, inputs, expected outputs) covers the weights too.
Reference outputs come from ONNX Runtime on CPU with every graph optimization off.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from cases.user_model import CASE, COMPUTE_OPS, model_id
from check import CheckError, progress
from check import budget as sizes
from check import inputs as generated
from check.budget import Budget
from check.forms import like_params, quantized_op
from check.forms import record as quantization_record
from check.reference import needs_independent
from check.rewrite import offer as offer_rewrite
from check.shapes import AssumedDim, InputShape, NotApplied, as_shape, check_fits, fit, profile, resolve, show_dims
from core.numerics import DEFAULT_MIN_COSINE, DEFAULT_MIN_SQNR_DB, comparison_step, output_stats
from generators.bundle import FLOAT_FILE, Bundle, load_bundle, meta_digest

# Part of the cache key: bump when what a user bundle holds changes (2: lint, meta_digest; 3: profile, assumed
# dims, input generation, checker warning, reference error, the model's file name only, compute/other target
# kinds, graph counts, the network measure, the float model; 4: a weight Constant and an elementwise op with a
# quantized constant operand are no compute node; 5: the quantization form and the seed case it matches (params
# like_case, like_<axis>), integer and QLinear ops as target nodes, the --shape dimensions a model kept; 6: the float
# twin's outputs where no float model is given; 7: floats over the range their QuantizeLinear represents, masks with a
# padded tail, a reference that is no engine under test for integer and com.microsoft quantized ops; 8: onnx.checker
# full_check and empty weights refuse a model, a declared 0 dimension is kept; 9: seed 032's merged-Conv rewrite).
FORMAT_VERSION = "user-9"
DEFAULT_TOLERANCE_STEPS = 2.0
EXTERNAL_DIGEST_KEY = "qdq_matrix.external_data_sha256"
QUANTIZE = "QuantizeLinear"
DEQUANTIZE = "DequantizeLinear"
ALLOCATION_FAILED = ("bad_alloc", "bad allocation", "Failed to allocate memory")  # ONNX Runtime's words for it
PathLike = Union[str, Path]
Shapes = Mapping[str, Union[InputShape, Sequence[int]]]
Declared = Dict[str, Tuple[np.dtype, List[Union[int, str]]]]


def bundle_from_model(
    model_path: PathLike,
    out_root: PathLike,
    inputs_npz: Optional[PathLike] = None,
    shapes: Optional[Shapes] = None,
    seed: int = 0,
    name: Optional[str] = None,
    tolerance_steps: float = DEFAULT_TOLERANCE_STEPS,
    strict_shape_names: bool = True,
    taken: Collection[str] = (),
    float_model: Optional[PathLike] = None,
    min_sqnr_db: float = DEFAULT_MIN_SQNR_DB,
    min_cosine: float = DEFAULT_MIN_COSINE,
    fit_shapes: bool = False,
    budget: Optional[Budget] = None,
) -> Bundle:
    """Read a user's model, make or load its inputs, compute the reference, write the bundle.

    CheckError where the model cannot be used at all (unreadable, unsafe external data, a shape or inputs that
    do not fit), or an invalid model: one whose weights hold 0 bytes, or that onnx.checker (full_check) refuses. A
    reference that cannot run it is recorded (case.json `reference_error`): the engines still run it, and their cells
    blame nobody ("no reference"). `taken`: bundle slugs already
    used in this run, so that two models never share one. Outputs are judged by the network measure (SQNR and
    cosine against the reference, core.numerics); with a float model, the same inputs also run through it,
    so a report separates quantization loss from engine fidelity. `fit_shapes` (one of several models): a shape
    fixes only the dimensions this model leaves open (check.shapes.fit), and the bundle says what it kept. `budget`
    (check.budget, default: the environment's or the defaults): a model whose weights, inputs or largest computed
    tensor are over it is refused before any of them is read or allocated.
    """
    onnx = _onnx()
    model_path = Path(model_path)
    if not model_path.is_file():
        raise CheckError(f"{model_path}: no such model file")
    progress.step("reading the model")
    model = _load(onnx, model_path)
    budget = budget or Budget.from_env()
    sizes.check_weights(model, budget)  # from the tensors' dims: nothing read, external data neither
    slug = _free(name or model_id(model_path), taken)
    target = Path(out_root) / CASE.id / slug
    renamed = name_nodes(model)
    external = external_files(model, model_path.parent)
    if external:
        progress.step("hashing its external data")
        entry = model.metadata_props.add()
        entry.key, entry.value = EXTERNAL_DIGEST_KEY, _files_sha256(model_path.parent, external)
    model_bytes = model.SerializeToString()
    declared = graph_inputs(onnx, model)
    given = {k: as_shape(v) for k, v in (shapes or {}).items()}
    if strict_shape_names:
        _known_names(given, declared)
    kept: List[NotApplied] = []
    if fit_shapes:
        given, kept = fit({n: dims for n, (_, dims) in declared.items()}, given)
    given = {k: v for k, v in given.items() if k in declared}
    progress.step("sizing its inputs (shape inference)")
    _within(model, declared, inputs_npz, given, budget)
    progress.step("making its inputs")
    made = _inputs(model, declared, inputs_npz, given, seed)
    not_applied = [k.to_json() for k in kept]
    judge = {"measure": "network", "min_sqnr_db": float(min_sqnr_db), "min_cosine": float(min_cosine)}
    floats = Path(float_model) if float_model is not None else None
    if floats is not None and not floats.is_file():
        raise CheckError(f"--float-model {floats}: no such model file")
    key = _cache_key(model_bytes, made.arrays, tolerance_steps, {"profile": made.profile, "not_applied": not_applied},
                     judge, floats)
    cached = _cached(target, key)
    if cached is not None:
        return cached
    holding = target.parent / ".staging"
    holding.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{slug}.", dir=holding))
    try:
        (staging / "model.onnx").write_bytes(model_bytes)
        for rel in external:
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile((model_path.parent / rel).resolve(), staging / rel)
        progress.step("running onnx.checker")
        invalid = empty_weights(model, staging) or checker_refusal(onnx, staging / "model.onnx", model,
                                                                   model_path.name)
        if invalid:  # the model's own fault: no engine is asked to judge it
            raise CheckError(f"invalid model: {invalid}")
        independent = needs_independent(model)
        reference_of = independent_outputs if independent else reference_outputs
        progress.step("computing the reference")
        expected, reference, failed = reference_of(staging / "model.onnx", made.arrays)
        if not independent and not any(n.op_type in (QUANTIZE, DEQUANTIZE) for n in model.graph.node):
            reference["words"] = float_reference_words(reference)
        failed = empty_dims(declared, expected, failed)
        if failed:
            failed = _ask_for_inputs(failed, made)
            expected = {}
        meta = _meta(model, model_path, slug, seed, made.arrays, expected, reference, model_bytes, tolerance_steps,
                     staging)
        if failed:
            meta["outputs"] = declared_outputs(onnx, model)
        meta.update(checker="passed", checker_warning="", reference_error=failed,
                    cache_key=key, renamed_nodes=renamed, external_data=external, profile=made.profile,
                    assumed_dims=[a.to_json() for a in made.assumed], input_generation=made.generation,
                    inputs_file=made.source, judge=judge, shape_not_applied=not_applied)
        if floats is not None and not failed:  # no reference: nothing to set the float model's outputs against
            progress.step("running the float model")
            float_outputs = float_reference(floats, made.arrays, expected)
            np.savez(staging / FLOAT_FILE, **float_outputs)
            meta["float_reference"] = float_record(floats, float_outputs, expected)
        elif not failed:  # no float model given: the quantized model's float twin (check.twin) stands in for it
            progress.step("building the float twin")
            float_outputs, meta["float_twin"] = twin_reference(staging / "model.onnx", made.arrays, expected,
                                                               qdq_first=independent)
            if float_outputs:
                np.savez(staging / FLOAT_FILE, **float_outputs)
                meta["float_reference"] = float_record(None, float_outputs, expected, model_path.name)
        progress.step("linting it for TensorRT")
        meta["lint"] = lint_record(onnx, staging / "model.onnx")
        if not failed:  # seed 032's way around, where its pattern matches (check.rewrite)
            progress.step("trying seed 032's merged-Conv rewrite")
            meta["rewrite"] = offer_rewrite(staging / "model.onnx", made.arrays, expected,
                                            output_steps(model, staging), reference_of, staging)
        meta["meta_digest"] = meta_digest(meta)  # last: it covers every other field, the lint included
        progress.step("writing the bundle")
        np.savez(staging / "inputs.npz", **made.arrays)
        np.savez(staging / "expected.npz", **expected)
        (staging / "case.json").write_text(json.dumps(meta, indent=2) + "\n")
        _swap_in(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return load_bundle(target)


def _free(slug: str, taken: Collection[str]) -> str:
    """slug, or slug-2, slug-3 ... where an earlier model of this run has it."""
    name, n = slug, 1
    while name in taken:
        n += 1
        name = f"{slug}-{n}"
    return name


def _known_names(given: Mapping[str, InputShape], declared: Declared) -> None:
    unknown = [n for n in given if n not in declared]
    if unknown:
        raise CheckError(f"--shape names no input {unknown[0]!r}; the model's inputs: {', '.join(declared) or 'none'}")


def lint_record(onnx: Any, staged: Path) -> Dict[str, Any]:
    """The TensorRT lint's findings for the bundle's model, as `python -m check.lint --json` prints them.

    Predictions, not observations: they travel with the bundle so a GPU box's report can put them next to
    what TensorRT did. A lint that cannot read the model is recorded as an error, never a failed bundle.
    """
    from check.lint import lint_model, to_json

    try:
        model = onnx.load(str(staged))  # with its external data: the rules read weights and zero points
        return json.loads(to_json(lint_model(model)))
    except Exception as e:  # a rule meeting a graph shape it was not written for
        return {"schema": "qdq-matrix/lint/1", "findings": [], "error": f"{type(e).__name__}: {_first(e)}"}


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as e:
        raise CheckError(f"making a bundle needs the onnx package ({e}); install the 'generate' group") from e
    return onnx


def _load(onnx: Any, path: Path) -> Any:
    """The model proto without external data; CheckError for a file that is not ONNX (an empty one said so)."""
    if path.is_file() and path.stat().st_size == 0:
        raise CheckError(f"{path}: not an ONNX model (an empty file: 0 bytes)")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf raises DecodeError, RuntimeWarning-free garbage gives others
        why = f"{type(e).__name__}: {_first(e)}"
        if _starts_as_onnx(path):  # the model's first fields read, the rest does not: cut short or damaged
            raise CheckError(f"{path}: a damaged or truncated ONNX model: its first fields read as ONNX (IR version, "
                             f"producer), the rest does not ({why}); copy or download it again") from e
        raise CheckError(f"{path}: not an ONNX model ({why})") from e
    if not model.graph.node and not model.graph.output:
        raise CheckError(f"{path}: not an ONNX model (no graph in the file)")
    return model


# The tags of ModelProto's fields 2 to 8 (producer_name, producer_version, domain, model_version, doc_string, graph,
# opset_import): one of them follows ir_version in a serialized model.
MODEL_FIELD_TAGS = (0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42)


def _starts_as_onnx(path: Path) -> bool:
    """Whether a file opens as an ONNX ModelProto does: field 1 (ir_version) as a varint of 3 to 12, then field 2
    (producer_name) or another field of ModelProto's as a length-delimited string (what every exporter writes first)."""
    try:
        with open(path, "rb") as f:
            head = f.read(3)
    except OSError:
        return False
    return len(head) == 3 and head[0] == 0x08 and 3 <= head[1] <= 12 and head[2] in MODEL_FIELD_TAGS


def checker_refusal(onnx: Any, staged: Path, model: Any, file_name: str) -> str:
    """onnx.checker with full_check (shape inference too) on the bundle's copy (path form: models over 2 GB with
    external data): "" when it passes, else its first line with the fix where one is known. A model it refuses is
    invalid: no engine verdict is asked of it."""
    try:
        onnx.checker.check_model(str(staged), full_check=True)
    except Exception as e:  # ValidationError, InferenceError and friends
        return f"onnx.checker (full_check) refuses it: {_first(e)}" + checker_fix(model, file_name)
    return ""


def empty_weights(model: Any, base: Path) -> str:
    """ "" for a model whose weights hold data, else the first tensor that declares elements and holds 0 bytes (an
    initializer whose raw_data is empty, an external data file or range of 0 bytes): the model's weights are not
    in it."""
    for tensor in _tensors(model.graph):
        count = _count(tensor.dims)
        if count and not _held_bytes(tensor, base):
            return (f"tensor {tensor.name!r} declares {count} element{'s' if count != 1 else ''} and holds 0 bytes of "
                    "data: the model was saved without its weights")
    return ""


def _held_bytes(tensor: Any, base: Path) -> int:
    """The bytes of data a tensor holds: its raw_data or typed fields, or its external range or file."""
    if tensor.data_location == 1:  # TensorProto.EXTERNAL
        said = {e.key: e.value for e in tensor.external_data}
        path = base / said.get("location", "")
        held = max(0, path.stat().st_size - int(said.get("offset") or 0)) if path.is_file() else 0
        return min(held, int(said["length"])) if "length" in said else held  # a file of 0 bytes holds none
    typed = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
    return len(tensor.raw_data) or sum(len(getattr(tensor, f)) for f in typed)


def empty_dims(declared: Declared, expected: Mapping[str, np.ndarray], failed: str) -> str:
    """The reference's error, or where the model declares an input dimension of 0 (a size, kept 0, never an open
    dimension), that dimension as the model's reason: for a reference that failed, or whose outputs are all empty."""
    zeros = [f"{name}[{axis}]" for name, (_, dims) in declared.items() for axis, d in enumerate(dims) if d == 0]
    if not zeros:
        return failed
    said = (f"the model declares input dimension{'s' if len(zeros) > 1 else ''} {', '.join(zeros)} = 0 (a size: "
            "the input is empty)")
    if failed:
        return f"{said}; {failed}"
    if expected and all(np.asarray(a).size == 0 for a in expected.values()):
        return f"{said}, so every output is empty and there is nothing to compare"
    return ""


def checker_fix(model: Any, file_name: str) -> str:
    """The known fix for a checker failure, as text to append ("" where none is known)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    per_axis = any(n.op_type in (QUANTIZE, DEQUANTIZE) and any(a.name == "axis" for a in n.attribute)
                   for n in model.graph.node)
    if opset is not None and opset < 13 and per_axis:
        stem = file_name[: -len(".onnx")] if file_name.lower().endswith(".onnx") else file_name
        return (f". Fix: QuantizeLinear/DequantizeLinear take `axis` (per-channel) from opset 13, and this model "
                f"declares opset {opset}; convert it first: python -c \"import onnx, onnx.version_converter as vc; "
                f"onnx.save(vc.convert_version(onnx.load('{file_name}'), 13), '{stem}-opset13.onnx')\"")
    return ""


def name_nodes(model: Any) -> Dict[str, str]:
    """Give every unnamed top-level node a stable name, node_of_<first output>; returns {first output: name}."""
    taken = {n.name for n in model.graph.node if n.name}
    renamed: Dict[str, str] = {}
    for i, node in enumerate(model.graph.node):
        if node.name:
            continue
        base = f"node_of_{node.output[0]}" if node.output and node.output[0] else f"node_{i}_{node.op_type}"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        node.name = candidate
        taken.add(candidate)
        renamed[node.output[0] if node.output else str(i)] = candidate
    return renamed


def target_nodes(model: Any) -> List[str]:
    """Quantized nodes, in graph order: every node fed by a DequantizeLinear output or feeding a QuantizeLinear, every
    compute node whose integer weights are widened by Cast -> Mul (check.lint.widened_source), and every integer op
    (ConvInteger, MatMulInteger: quantize_dynamic; QLinearConv, QLinearMatMul and the com.microsoft QLinear* ops:
    the QOperator format).

    Engines report precision evidence for each; target_details says which of them are compute nodes."""
    nodes = list(model.graph.node)
    dq_outputs = {o for n in nodes if n.op_type == DEQUANTIZE for o in n.output}
    q_inputs = {n.input[0] for n in nodes if n.op_type == QUANTIZE and n.input}
    widened = widened_nodes(model)
    found = []
    for n in nodes:
        if n.op_type in (QUANTIZE, DEQUANTIZE, "Constant"):  # a Constant feeding a Q is a weight, not a computation
            continue
        if dq_outputs & set(n.input) or q_inputs & set(n.output) or n.name in widened or integer_op(n.op_type):
            found.append(n.name)
    return found


def integer_op(op_type: str) -> bool:
    """An op that computes on quantized integers itself: ConvInteger, MatMulInteger, QLinear*, and onnxruntime's
    com.microsoft quantized ops (check.forms.quantized_op)."""
    return quantized_op(op_type)


def widened_nodes(model: Any) -> Dict[str, str]:
    """Compute nodes whose weights are an integer initializer widened to float without a DequantizeLinear: name ->
    that initializer."""
    from check.lint import widened_source

    onnx = _onnx()
    dtypes = {t.name: np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type)).name for t in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    found = {}
    for n in model.graph.node:
        source = widened_source(producer, dtypes, n)
        if source:
            found[n.name] = source[0]
    return found


def target_details(model: Any) -> Dict[str, Dict[str, Any]]:
    """Per target node: its op type, its kind ("compute": a convolution or matrix product, or a node that carries
    weights through a DequantizeLinear of an initializer or a Cast -> Mul; else "other") and the Q/DQ nodes around
    it."""
    nodes = list(model.graph.node)
    producer = {o: n for n in nodes for o in n.output}
    consumers: Dict[str, List[Any]] = {}
    for n in nodes:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    sizes_of = quantized_weights(model)
    widened = widened_nodes(model)
    details = {}
    by_name = {n.name: n for n in nodes}
    for name in target_nodes(model):
        node = by_name[name]
        dq = [producer[i] for i in node.input if i in producer and producer[i].op_type == DEQUANTIZE]
        q = [c.name for o in node.output for c in consumers.get(o, []) if c.op_type == QUANTIZE]
        kind = "compute" if node.op_type in COMPUTE_OPS else "other"
        details[name] = {"op": node.op_type, "kind": kind, "dequantize": list(dict.fromkeys(d.name for d in dq)),
                         "quantize": list(dict.fromkeys(q))}
        held = held_weights(node, producer, sizes_of)
        if held:
            details[name]["weights"] = held
        if name in widened:
            details[name]["widened_weights"] = widened[name]
    return details


def quantization_summary(model: Any) -> Dict[str, Any]:
    """What the graph holds: Q/DQ node counts, its compute nodes (quantized or not) and how many quantized weight
    values it stores, for the report's first line."""
    nodes = list(model.graph.node)
    compute = [n.name for n in nodes if n.op_type in COMPUTE_OPS]
    return {"quantize": sum(n.op_type == QUANTIZE for n in nodes),
            "dequantize": sum(n.op_type == DEQUANTIZE for n in nodes), "compute": len(compute), "nodes": len(nodes),
            "quantized_weights": sum(quantized_weights(model).values())}


# TensorProto element types of quantized weights: INT8, UINT8, UINT4, INT4, the float8s and FLOAT4E2M1 (int32 biases
# are not counted: they are the weights' products, not weights).
QUANTIZED_TYPES = frozenset({2, 3, 17, 18, 19, 20, 21, 22, 23})


# The inputs that are zero points, by op (onnx and com.microsoft schemas): a quantized constant there is no weight.
ZERO_POINTS = {"DequantizeLinear": (2,), "QuantizeLinear": (2,), "QLinearConv": (2, 5, 7), "QLinearMatMul": (2, 5, 7),
               "ConvInteger": (2, 3), "MatMulInteger": (2, 3), "DynamicQuantizeLSTM": (9, 11),
               "DynamicQuantizeMatMul": (3,), "MatMulIntegerToFloat": (4, 5), "QGemm": (2, 5, 8), "QAttention": (6, 7)}


def quantized_weights(model: Any) -> Dict[str, int]:
    """Initializers and Constants of a quantized element type that are no zero point (of one value, or at a zero
    point's place): name -> how many values it holds."""
    found = {t.name: _count(t.dims) for t in model.graph.initializer if t.data_type in QUANTIZED_TYPES}
    for n in model.graph.node:
        value = next((a.t for a in n.attribute if a.name == "value" and a.HasField("t")), None) \
            if n.op_type == "Constant" and n.output else None
        if value is not None and value.data_type in QUANTIZED_TYPES:
            found[n.output[0]] = _count(value.dims)
    zero_points = {n.input[k] for n in model.graph.node for k in ZERO_POINTS.get(n.op_type, ()) if k < len(n.input)}
    return {name: size for name, size in found.items() if size > 1 and name not in zero_points}


def _count(dims: Sequence[int]) -> int:
    total = 1
    for d in dims:
        total *= int(d)
    return total


def held_weights(node: Any, producer: Mapping[str, Any], sizes: Mapping[str, int]) -> int:
    """How many quantized weight values a node reads: its quantized constants, directly or through a DequantizeLinear
    or a Cast, each once."""
    held: Dict[str, int] = {}
    for name in node.input:
        source = producer.get(name)
        if source is not None and source.op_type in (DEQUANTIZE, "Cast", "Identity") and source.input:
            name = source.input[0]
        if name in sizes:
            held[name] = sizes[name]
    return sum(held.values())


def external_files(model: Any, base: Path) -> List[str]:
    """Relative paths of the external data files the model's initializers name; CheckError for one that is missing,
    or that is not a regular file inside the model's folder once links are resolved (a link to /etc/passwd)."""
    found: List[str] = []
    folder = base.resolve()
    for tensor in _tensors(model.graph):
        if tensor.data_location != 1:  # TensorProto.EXTERNAL
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        rel = Path(location)
        if not location or rel.is_absolute() or ".." in rel.parts:
            raise CheckError(f"tensor {tensor.name!r}: external data location {location!r} is not beside the model")
        path = base / rel
        if not path.exists():
            raise CheckError(f"tensor {tensor.name!r}: external data file {location!r} is missing")
        real = path.resolve()
        if folder not in real.parents:
            raise CheckError(f"tensor {tensor.name!r}: external data file {location!r} is a link to a file outside "
                             "the model's folder; refused (copy the data file beside the model)")
        if not stat.S_ISREG(os.stat(real).st_mode):
            raise CheckError(f"tensor {tensor.name!r}: external data file {location!r} is not a regular file; refused")
        if location not in found:
            found.append(location)
    return sorted(found)


def _tensors(graph: Any) -> List[Any]:
    found = list(graph.initializer)
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                found.append(attr.t)
            if attr.HasField("g"):
                found.extend(_tensors(attr.g))
            for g in attr.graphs:
                found.extend(_tensors(g))
    return found


def _files_sha256(base: Path, files: Sequence[str]) -> str:
    h = hashlib.sha256()
    for rel in files:
        h.update(f"\0{rel}\0".encode("utf-8"))
        with open((base / rel).resolve(), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def graph_inputs(onnx: Any, model: Any) -> Dict[str, Tuple[np.dtype, List[Union[int, str]]]]:
    """Real graph inputs (not initializers): name -> (numpy dtype, dims, a str for a dynamic one)."""
    initializers = {i.name for i in model.graph.initializer}
    found = {}
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        ttype = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise CheckError(f"input {vi.name!r} is not a tensor; only tensor inputs are supported")
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(ttype.elem_type))
        dims: List[Union[int, str]] = []
        for i, d in enumerate(ttype.shape.dim):  # a 0 is a size; a negative one (Paddle2ONNX writes -1) is dynamic
            fixed = d.HasField("dim_value") and d.dim_value >= 0
            dims.append(d.dim_value if fixed else (d.dim_param or f"dim{i}"))
        if not ttype.HasField("shape"):
            dims = ["?"]
        found[vi.name] = (dtype, dims)
    return found


def declared_dims(model_path: PathLike) -> Dict[str, List[Union[int, str]]]:
    """A model file's real inputs and their declared dims (graph_inputs), read without its external data; CheckError
    for a file that is not ONNX."""
    onnx = _onnx()
    return {name: dims for name, (_, dims) in graph_inputs(onnx, _load(onnx, Path(model_path))).items()}


@dataclass(frozen=True)
class MadeInputs:
    """A model's inputs and how they came about: the arrays (at the opt shape), the optimization profile of its
    dynamic inputs, the dimensions that took a default, each input's generation rule, the file they came from."""

    arrays: Dict[str, np.ndarray]
    profile: Dict[str, Dict[str, List[int]]]
    assumed: Tuple[AssumedDim, ...] = ()
    generation: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    source: str = ""  # the .npz file name they came from ("" when generated)


def _inputs(model: Any, declared: Declared, npz: Optional[PathLike], given: Mapping[str, InputShape],
            seed: int) -> MadeInputs:
    dims = {name: d for name, (_, d) in declared.items()}
    if npz is not None:
        arrays = _given_inputs(Path(npz), declared, given)
        shapes = {n: given.get(n) or InputShape.fixed(a.shape) for n, a in arrays.items()}
        return MadeInputs(arrays, profile(dims, shapes), source=Path(npz).name)
    shapes, assumed = resolve(dims, given)
    rules = generated.rules(model, {n: dtype for n, (dtype, _) in declared.items()})
    rng = np.random.default_rng(seed)
    arrays = {n: generated.generate(rng, dtype, shapes[n].opt, rules[n]) for n, (dtype, _) in declared.items()}
    generation = {n: r.to_json() for n, r in rules.items()}
    return MadeInputs(arrays, profile(dims, shapes), tuple(assumed), generation)


def _within(model: Any, declared: Declared, npz: Optional[PathLike], given: Mapping[str, InputShape],
            budget: Budget) -> None:
    """CheckError where the inputs (generated at their opt shape, or an .npz file's arrays as its headers declare them)
    or the largest tensor computed from them would be over the budget: counted before any is allocated."""
    if npz is not None:
        found = [s for s in sizes.npz_inputs(Path(npz)) if s.name in declared]
        sizes.check_inputs(found, budget, f"the inputs in {Path(npz).name}")
        shapes = {s.name: InputShape.fixed(s.shape) for s in found}
    else:
        shapes, _ = resolve({name: dims for name, (_, dims) in declared.items()}, given)
        sizes.check_inputs(sizes.inputs_at(declared, shapes), budget)
    open_dims = any(isinstance(d, str) for _, dims in declared.values() for d in dims)  # graph_inputs' dynamic dims
    sizes.check_computed(model, shapes, budget, settable=open_dims)


def _ask_for_inputs(error: str, made: MadeInputs) -> str:
    """The reference's error, naming the inputs whose valid range was a guess and asking for --inputs."""
    guesses = generated.guessed(made.generation)
    if not guesses:
        return error
    return (f"{error} (input{'s' if len(guesses) > 1 else ''} {', '.join(guesses)} had no range to infer: "
            f"give valid data with --inputs, an .npz by input name)")


def _given_inputs(path: Path, declared: Declared, shapes: Mapping[str, InputShape]) -> Dict[str, np.ndarray]:
    """Inputs from an npz file, checked against the declared names, types and shapes (and --shape's range)."""
    if not path.is_file():
        raise CheckError(f"--inputs {path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except Exception as e:
        raise CheckError(f"--inputs {path}: not a numpy .npz file ({_first(e)})") from e
    missing = [n for n in declared if n not in arrays]
    extra = [n for n in arrays if n not in declared]
    if missing or extra:
        raise CheckError(f"--inputs {path}: " + "; ".join(
            ([f"missing inputs {', '.join(missing)}"] if missing else []) +
            ([f"no model input named {', '.join(extra)}"] if extra else [])) +
            f" (the model's inputs: {', '.join(declared)})")
    for name, (dtype, dims) in declared.items():
        a = arrays[name] = generated.as_declared(arrays[name], dtype)
        if a.dtype != dtype:
            raise CheckError(f"--inputs {path}: input {name!r} is {a.dtype}, the model declares {dtype}")
        if dims != ["?"] and (a.ndim != len(dims) or any(isinstance(d, int) and d != s for d, s in zip(dims, a.shape))):
            raise CheckError(f"--inputs {path}: input {name!r} has shape {list(a.shape)}, the model declares "
                             f"{show_dims(dims)}")
        shape = shapes.get(name)
        if shape is not None and (a.ndim != len(shape.opt) or any(
                not lo <= s <= hi for lo, s, hi in zip(shape.min, a.shape, shape.max))):
            raise CheckError(f"--inputs {path}: input {name!r} has shape {list(a.shape)}, outside --shape "
                             f"{name}:{shape.text()}")
    for name, shape in shapes.items():
        check_fits(name, declared[name][1], shape)
    return arrays


def declared_outputs(onnx: Any, model: Any) -> Dict[str, Dict[str, Any]]:
    """case.json `outputs` where no reference ran: each graph output's declared type, no step, nothing compared."""
    found = {}
    for vi in model.graph.output:
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        try:
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem)).name
        except Exception:  # an undefined or exotic element type
            dtype = ""
        found[vi.name] = {"dtype": dtype, "shape": None, "step": None, "step_kind": "not compared", "peak": None}
    return found


def reference_outputs(model: Path, inputs: Mapping[str, np.ndarray]
                      ) -> Tuple[Dict[str, np.ndarray], Dict[str, Any], str]:
    """Outputs from ONNX Runtime on CPU with graph optimizations off, what computed them, and "" or the one-line
    reason it could not run the model (then no outputs: the engines still run, their numerics are not compared)."""
    try:
        import onnxruntime as ort
    except ImportError as e:  # a GPU box's bare controller: the engines still decide, numerics are not compared
        return {}, {"engine": "onnxruntime", "version": ""}, (
            f"no reference here: it needs onnxruntime ({e}); install the 'generate' group")
    reference = {"engine": "onnxruntime", "version": ort.__version__, "providers": ["CPUExecutionProvider"],
                 "graph_optimization_level": "ORT_DISABLE_ALL"}
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.enable_cpu_mem_arena = False  # each activation freed once read, not kept in an arena: same numbers
    # Each node as late as its inputs allow: by default every DequantizeLinear of a weight runs first and all the
    # float weights are alive at once (4x the int8 weights); the same kernels on the same inputs, the same outputs.
    options.execution_order = ort.ExecutionOrder.PRIORITY_BASED
    try:
        session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        outputs = dict(zip(names, session.run(names, dict(inputs))))
    except MemoryError:
        raise
    except Exception as e:
        said = _first(e).replace(str(model), model.name)  # the bundle's staging path is no one's business
        if any(word in said for word in ALLOCATION_FAILED):  # the machine's memory, not the model's fault
            raise MemoryError(f"ONNX Runtime {ort.__version__}: {said}") from e
        why = f"the reference (ONNX Runtime {ort.__version__}, CPU, optimizations off) cannot run it: {said}"
        return {}, reference, why
    return {n: np.asarray(a) for n, a in outputs.items()}, reference, ""


def float_reference_words(reference: Mapping[str, Any]) -> str:
    """The reference of a model with no Q/DQ and no integer operator, in words: no simulated quantization is in it."""
    return (f"ONNX Runtime {reference.get('version', '')} on CPU, graph optimizations off, on the model as it is: it "
            "holds no QuantizeLinear or DequantizeLinear, so this is its float arithmetic (the ONNX Runtime column "
            "runs the same model with its optimizations on)")


def independent_outputs(model: Path, inputs: Mapping[str, np.ndarray]
                        ) -> Tuple[Dict[str, np.ndarray], Dict[str, Any], str]:
    """reference_outputs for a model whose quantized operators ONNX Runtime runs as its own integer kernels:
    onnx.reference on its standard form, else ONNX Runtime on that form where no integer operator is left in it
    (check.reference)."""
    from check import reference as independent

    onnx = _onnx()
    standard, rewritten = independent.standard_form(onnx.load(str(model)))
    record: Dict[str, Any] = {"engine": "onnx.reference", "version": onnx.__version__, "rewritten": rewritten}
    try:
        outputs = independent.onnx_reference_run(standard, inputs)
    except Exception as e:  # an op onnx.reference does not define, or one it cannot run on these inputs
        said = f"onnx.reference {onnx.__version__} cannot run it: {type(e).__name__}: {_first(e)}"
        left = independent.left_integer_ops(standard)
        if left:
            return {}, dict(record, words=independent.words(record)), (
                f"no reference that is not an engine under test: {said}; ONNX Runtime would run {', '.join(left)} as "
                "the integer kernels its own column is judged on")
        with tempfile.TemporaryDirectory(prefix="qdq-standard-") as tmp:
            path = Path(tmp) / "standard.onnx"
            onnx.save_model(standard, str(path))
            outputs, runner, failed = reference_outputs(path, inputs)
        record = dict(runner, rewritten=rewritten, instead_of=said)
        if failed:
            return {}, dict(record, words=independent.words(record)), failed.replace(path.name, model.name)
    return outputs, dict(record, words=independent.words(record)), ""


def output_steps(model: Any, base: Path = Path(".")) -> Dict[str, Optional[float]]:
    """Per graph output: the scale of the DequantizeLinear that writes it (a quantized output), else None."""
    producers = {o: n for n in model.graph.node for o in n.output}
    scalars = {i.name: i for i in model.graph.initializer}
    constants = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant" and n.output}
    steps: Dict[str, Optional[float]] = {}
    for out in model.graph.output:
        node = producers.get(out.name)
        steps[out.name] = None
        if node is not None and node.op_type == DEQUANTIZE and len(node.input) > 1:
            steps[out.name] = _scalar(node.input[1], scalars, constants, base)
    return steps


def _scalar(name: str, initializers: Mapping[str, Any], constants: Mapping[str, Any], base: Path) -> Optional[float]:
    from onnx import numpy_helper

    tensor = initializers.get(name)
    if tensor is None and name in constants:
        tensor = next((a.t for a in constants[name].attribute if a.name == "value"), None)
    if tensor is None:
        return None
    value = numpy_helper.to_array(tensor, base_dir=str(base))
    return float(value.reshape(-1)[0]) if value.size == 1 else None  # per-channel: no single step


def _meta(model: Any, path: Path, slug: str, seed: int, inputs: Mapping[str, np.ndarray],
          expected: Mapping[str, np.ndarray], reference: Dict[str, Any], model_bytes: bytes,
          tolerance: float, data_dir: Path) -> Dict[str, Any]:
    try:
        from generators.bundle import digest
    except ImportError:  # before generators.bundle took the digest over from generators.write
        from generators.write import digest

    steps = output_steps(model, data_dir)  # the bundle's copies of external data: regular files
    outputs = {}
    for name, a in expected.items():
        step, kind = comparison_step(a, steps.get(name))
        peak = float(np.max(np.abs(a.astype(np.float64)))) if a.size and a.dtype.kind in "fiub" else 0.0
        entry = {"dtype": a.dtype.name, "shape": list(a.shape), "step": step, "step_kind": kind, "peak": peak}
        if kind != "quantization":  # no quantization step of its own: state the tolerance as abs/rel error
            entry["tolerance_abs"] = tolerance * step
            entry["tolerance_rel"] = tolerance * step / peak if peak else None
        outputs[name] = entry
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    quantization = quantization_record(model)
    return {
        "bundle": f"{CASE.id}/{slug}", "case": CASE.id, "seed": CASE.seed, "title": f"{CASE.title}: {path.name}",
        "links": [], "params": {"model": path.name, **like_params(quantization)}, "rng_seed": seed,
        "digest": digest(model_bytes, inputs, expected), "generator_version": FORMAT_VERSION,
        "opset": opset, "ir_version": model.ir_version, "target_nodes": target_nodes(model),
        "target_details": target_details(model), "graph": quantization_summary(model), "quantization": quantization,
        "inputs": {n: {"dtype": a.dtype.name, "shape": list(a.shape)} for n, a in inputs.items()},
        "outputs": outputs, "tolerance_steps": tolerance, "trt": {"int8": True},
        "intentionally_invalid": "", "reference": f"{reference['engine']} {reference['version']}",
        "reference_engine": reference, "cross_check": {},
        "source_model": {"name": path.name, "producer": f"{model.producer_name} {model.producer_version}".strip()},
        "notes": "a user's model: bundle made by `python -m check`",
    }


def _cache_key(model_bytes: bytes, inputs: Mapping[str, np.ndarray], tolerance: float,
               shapes: Mapping[str, Any], judge: Optional[Mapping[str, Any]] = None,
               float_model: Optional[Path] = None) -> str:
    """What a user bundle is made from: model bytes (with external data's sha256), inputs, profile, tolerance,
    the measure, the float model's bytes, format."""
    h = hashlib.sha256(model_bytes)
    for name in sorted(inputs):
        a = np.ascontiguousarray(inputs[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode("utf-8"))
        h.update(a.tobytes())
    floats = hashlib.sha256(float_model.read_bytes()).hexdigest() if float_model is not None else ""
    h.update(json.dumps({"tolerance": tolerance, "format": FORMAT_VERSION, "profile": shapes,
                         "judge": dict(judge or {}), "float_model": floats}, sort_keys=True).encode("utf-8"))
    return h.hexdigest()


def float_reference(path: Path, inputs: Mapping[str, np.ndarray],
                    expected: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The float model's outputs for the bundle's inputs, under the quantized model's output names (matched by name,
    else by position); CheckError where its inputs or outputs do not line up."""
    onnx = _onnx()
    declared = graph_inputs(onnx, _load(onnx, path))
    if set(declared) != set(inputs):
        raise CheckError(f"--float-model {path}: its inputs ({', '.join(declared) or 'none'}) are not the quantized "
                         f"model's ({', '.join(inputs)})")
    got, _, failed = reference_outputs(path, inputs)
    if failed:
        raise CheckError(f"--float-model {path}: {failed}")
    names = list(expected)
    if set(names) <= set(got):
        mapped = {n: got[n] for n in names}
    elif len(got) == len(names):
        mapped = dict(zip(names, got.values()))
    else:
        raise CheckError(f"--float-model {path}: its outputs ({', '.join(got)}) do not match the quantized model's "
                         f"({', '.join(names)})")
    wrong = [n for n in names if mapped[n].shape != expected[n].shape]
    if wrong:
        raise CheckError(f"--float-model {path}: output {wrong[0]!r} has shape {list(mapped[wrong[0]].shape)}, the "
                         f"quantized model's has {list(expected[wrong[0]].shape)}")
    return mapped


def float_record(path: Optional[Path], outputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                 twin_of: str = "") -> Dict[str, Any]:
    """case.json's `float_reference`: the float model (`path`, or the float twin of the model named `twin_of`), its
    outputs' digest, and the quantization loss per output (the simulated Q/DQ reference against the float model)."""
    from generators.bundle import digest

    said: Dict[str, Any] = {"model": path.name, "path": str(path.resolve())} if path is not None else \
        {"model": f"the float twin of {twin_of}", "derived": True}
    return dict(said, digest=digest(b"", {}, outputs),
                loss={n: output_stats(outputs[n], expected[n]) for n in expected})


def twin_reference(model: Path, inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                   qdq_first: bool = False) -> Tuple[Dict[str, np.ndarray], Dict[str, Any]]:
    """The float twin's outputs (check.twin: the model with its Q/DQ pairs removed and its quantized constants folded)
    from the reference's runner, and case.json's `float_twin`: what was removed, folded and kept, or why there are no
    outputs ({} then). A model without Q/DQ has no twin. `qdq_first`: its QLinear and com.microsoft quantized ops are
    written as Q/DQ and standard operators first (check.reference.qdq_form), and `float_twin.rewritten` says which."""
    from check.reference import qdq_form
    from check.twin import float_twin

    onnx = _onnx()
    try:
        if qdq_first:  # the rewrite reads QLinear weights and biases: with their data
            loaded, rewritten = qdq_form(onnx.load(str(model)))
        else:  # the weights stay in their files: the twin names the same ones (check.twin reads only what it folds)
            loaded, rewritten = onnx.load(str(model), load_external_data=False), {}
        twin, done = float_twin(loaded, base_dir=model.parent)
        del loaded
        if rewritten:
            done = dict(done, rewritten=rewritten)
    except MemoryError:
        raise
    except Exception as e:  # a graph the derivation was not written for: the bundle goes on without a twin
        return {}, {"error": f"the float twin could not be derived: {type(e).__name__}: {_first(e)}"}
    if not done["pairs"] and not done["folded"] and not done["dequantized_at_run"]:
        return {}, dict(done, error="no QuantizeLinear -> DequantizeLinear pair and no quantized constant to undo")
    path = model.parent / f".qdq-twin-{os.getpid()}.onnx"  # beside the model: its data files hold
    try:
        large = twin.ByteSize() > 1_800_000_000  # protobuf's 2 GB limit: the weights go beside it
        onnx.save_model(twin, str(path), save_as_external_data=large, location=f"{path.stem}.data")
        del twin
        got, _, failed = reference_outputs(path, inputs)
    finally:
        path.unlink(missing_ok=True)
        path.with_suffix(".data").unlink(missing_ok=True)
    if failed:
        return {}, dict(done, error=failed.replace("cannot run it", "cannot run the float twin"))
    wrong = [n for n in expected if n not in got or got[n].shape != expected[n].shape]
    if wrong:
        return {}, dict(done, error=f"the float twin's output {wrong[0]!r} is not the model's")
    return {n: got[n] for n in expected}, dict(done, error="")


def _cached(target: Path, key: str) -> Optional[Bundle]:
    try:
        bundle = load_bundle(target)
    except (FileNotFoundError, ValueError):
        return None
    return bundle if bundle.meta.get("cache_key") == key else None


def _swap_in(staging: Path, target: Path) -> None:
    """Replace target by the staged folder with renames, so no reader sees half a bundle."""
    from generators.write import _swap_in as swap

    swap(staging, target)


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
