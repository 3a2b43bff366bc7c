"""Seed 032's way around TensorRT 8.5-8.6.0's chooseHigherPrecision, offered for a user's model that has its pattern.

Where the lint's seed-032 pattern (cases/two_conv_fanout_qdq.py, `match_fanout`) matches sibling INT8 Convs on one
Q/DQ activation, `offer` writes the model with each group of siblings merged into one Conv (their INT8 weights
concatenated on the output channels, a per-tensor weight scale turned per-channel, the per-channel scales, zero points
and biases concatenated), followed by a Split into the original Conv outputs, so that each half keeps its own tail. It
runs the rewritten model on check's reference (the runner that computed the bundle's expected outputs, on the same
inputs) and compares each output with the original's: "bit for bit", or "within N steps" of the output's quantization
step (check's comparison step: else max|reference|/127); past one step it offers nothing and says why. It names the
committed cells that prove the merged form builds in INT8: the observed cells of the case's `rewrite=merged`
reproducers of the user's form (reports/observed/, listed in its MANIFEST.json), a file and a reproducer per version.
A model with a non-zero zero point on a Q/DQ is offered nothing: TensorRT's parser refuses it first (parser_refusal),
and those symmetric cells prove nothing for it.

The record (case.json `rewrite`) is data; `notes` and the node report's templates say it in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from cases.pattern import onnx_opset
from core.words import first_few

MERGED_FILE = "merged-siblings.onnx"  # the rewritten model, in the bundle's folder
SHOWN_NAMES = 4  # Convs or Q/DQ nodes named in a sentence before "and N more"
MAX_STEPS = 1.0  # the most an output may move, in its comparison steps, for the rewrite to be offered
CONV_DEFAULTS = {"auto_pad": "NOTSET", "group": 1}
Runner = Callable[[Path, Mapping[str, np.ndarray]], Tuple[Dict[str, np.ndarray], Dict[str, Any], str]]


@dataclass(frozen=True)
class Siblings:
    """One group of sibling Convs to merge: the Convs in graph order, the activation they read, the Conv attributes."""

    convs: Tuple[Any, ...]
    source: str
    attrs: Tuple[Tuple[str, Any], ...]
    params: Mapping[str, str]  # the case's axes the pattern says the group decides


def offer(model_path: Path, inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
          steps: Mapping[str, Optional[float]], run: Runner, folder: Path) -> Dict[str, Any]:
    """case.json's `rewrite`: {} where the model has no seed-032 pattern; else the groups merged, the rewritten model's
    file (in `folder`), how its outputs compare with the original's and the cells that prove the merged form builds."""
    import onnx

    model = onnx.load(str(model_path))
    groups, declined = sibling_groups(model)
    if not groups and not declined:
        return {}
    record: Dict[str, Any] = {"case": "two_conv_fanout_qdq", "seed": "032", "offered": False, "model": "",
                              "groups": [_group_record(s) for s in groups], "declined": declined,
                              "matched": _matched_words(groups, declined), "comparison": {}, "cells": [],
                              "why_not": ""}
    refused = parser_refusal(model)
    if refused:  # the merged reproducers' cells are symmetric INT8: they prove nothing for a model the parser refuses
        record["why_not"] = refused
        return record
    if not groups:
        record["why_not"] = "no group of sibling Convs can be merged: " + _declined_words(declined)
        return record
    merged = merge(model, groups)
    path = folder / MERGED_FILE
    try:
        onnx.save_model(merged, str(path))
    except ValueError as e:  # protobuf's 2 GiB limit: a model whose weights are external data
        record["why_not"] = f"the rewritten model could not be written: {e}"
        return record
    got, _, failed = run(path, inputs)
    if failed:
        record["why_not"] = f"the reference cannot run the rewritten model: {failed}"
        path.unlink()
        return record
    comparison = compare(expected, got, steps)
    record.update(comparison=comparison, cells=proving_cells([s.params for s in groups]))
    if comparison["steps"] is None or comparison["steps"] > MAX_STEPS:
        moved = "differ in shape" if comparison["steps"] is None else f"move by {comparison['steps']:.3g} steps"
        record["why_not"] = f"the rewritten model's outputs {moved} on the reference (past {MAX_STEPS:g} step)"
        path.unlink()
        return record
    record.update(offered=True, model=MERGED_FILE)
    return record


def sibling_groups(model: Any) -> Tuple[List[Siblings], List[str]]:
    """The groups of sibling Convs the seed-032 pattern matches that can be merged, and why others cannot."""
    from cases.two_conv_fanout_qdq import PATTERN
    from check.lint import index

    g = index(model)
    found: Dict[Tuple[Any, ...], List[Any]] = {}
    params: Dict[Tuple[Any, ...], Mapping[str, str]] = {}
    declined: List[str] = []
    for conv in (n for n in g.nodes if n.op_type == "Conv"):
        matches = PATTERN.find(g, conv)
        if not matches:
            continue
        why = _unmergeable(g, conv, model)
        if why:
            declined.append(f"{_name(conv)}: {why}")
            continue
        key = (_activation_key(g, conv.input[0]), _conv_attrs(g, conv), _dtypes(g, conv))
        found.setdefault(key, []).append(conv)
        params.setdefault(key, dict(matches[0].params))
    groups = [Siblings(tuple(convs), convs[0].input[0], key[1], params[key])
              for key, convs in found.items() if len(convs) > 1]
    return groups, declined


def _matched_words(groups: Sequence[Siblings], declined: Sequence[str]) -> str:
    """What the pattern matched, in words: the groups ("a + b; c + d"), else how many Convs and the first few."""
    if groups:
        return "; ".join(" + ".join(_name(c) for c in s.convs) for s in groups)
    names = [d.split(": ", 1)[0] for d in declined]
    return f"{len(names)} Conv{'' if len(names) == 1 else 's'} ({first_few(names, SHOWN_NAMES)})"


def _declined_words(declined: Sequence[str]) -> str:
    """Why the matched Convs cannot merge, each reason once with the Convs it holds for ("a, b and 15 more: its
    bias is ...")."""
    by_why: Dict[str, List[str]] = {}
    for d in declined:
        name, _, why = d.partition(": ")
        by_why.setdefault(why, []).append(name)
    return "; ".join(f"{first_few(names, SHOWN_NAMES)}: {why}" for why, names in by_why.items())


def parser_refusal(model: Any) -> str:
    """Why TensorRT's parser refuses the model before its builder could meet chooseHigherPrecision (a Q/DQ with a
    non-zero zero point: the lint's zero-point rule), in words; "" where that rule does not fire."""
    from check.lint import index, zero_point_rule

    g = index(model)
    refused = [f for n in g.nodes for f in zero_point_rule(g, n, []) if f.engine == "tensorrt"]
    if not refused:
        return ""
    nodes = list(dict.fromkeys(f.node for f in refused))
    shown = first_few(nodes, SHOWN_NAMES)
    first = refused[0]
    return (f"TensorRT {first.versions} refuses this model at parse, before the build where chooseHigherPrecision "
            f"fails: {len(nodes)} Q/DQ node{'' if len(nodes) == 1 else 's'} with a non-zero zero point ({shown}; "
            f"the lint's {first.rule} rule, {first.source}); the merged reproducers' cells are symmetric INT8 and "
            f"prove nothing for it. Quantize it symmetric first ({first.fix}), then check it again")


def _name(node: Any) -> str:
    """The node's name as TensorRT's parser gives it."""
    from cases.pattern import node_name

    return node_name(node)


def _activation_key(g: Any, tensor: str) -> Tuple[Any, ...]:
    """What an activation DequantizeLinear computes: the tensor its QuantizeLinear reads and both nodes' constants (its
    copies, and copies of its Q/DQ pair, compute the same)."""
    dq = g.producer[tensor]
    q = g.producer[dq.input[0]]
    values = tuple(repr(g.const[i].tolist()) if i in g.const else i for n in (q, dq) for i in n.input[1:])
    return (q.input[0],) + values


def _dtypes(g: Any, conv: Any) -> Tuple[str, ...]:
    """The types of a Conv's weights, weight scale and bias (a dequantized bias by its stored type and its scale's):
    siblings merge where these are equal."""
    dq = g.producer[conv.input[1]]
    bias = conv.input[2] if len(conv.input) > 2 else ""
    stored = _bias_dq(g, conv)
    said = ("dequantized", g.dtype(stored.input[0]), g.dtype(stored.input[1])) if stored is not None else \
        (g.dtype(bias) if bias else g.dtype(dq.input[1]),)
    return (g.dtype(dq.input[0]), g.dtype(dq.input[1])) + said


def _bias_dq(g: Any, conv: Any) -> Optional[Any]:
    """The DequantizeLinear of constants that computes a Conv's bias (onnxruntime's quantize_static writes an INT32
    bias so, by default), with a scale per tensor or per output channel; None for a float bias, or none."""
    bias = conv.input[2] if len(conv.input) > 2 else ""
    dq = g.producer.get(bias) if bias and bias not in g.const else None
    if dq is None or dq.op_type != "DequantizeLinear" or any(i and i not in g.const for i in dq.input):
        return None
    scale = g.const[dq.input[1]]
    return dq if scale.ndim <= 1 and g.const[dq.input[0]].ndim == 1 else None


def _conv_attrs(g: Any, conv: Any) -> Tuple[Tuple[str, Any], ...]:
    """The Conv's attributes with ONNX's defaults filled in: siblings merge where these are equal."""
    from cases.pattern import attr

    w = g.const[g.producer[conv.input[1]].input[0]]
    kernel = attr(conv, "kernel_shape") or list(w.shape[2:])
    spatial = len(kernel)
    said = {"kernel_shape": kernel, "strides": attr(conv, "strides") or [1] * spatial,
            "dilations": attr(conv, "dilations") or [1] * spatial, "pads": attr(conv, "pads") or [0] * 2 * spatial,
            "group": attr(conv, "group", CONV_DEFAULTS["group"]), "auto_pad": attr(conv, "auto_pad",
                                                                                     CONV_DEFAULTS["auto_pad"])}
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(said.items()))


def _unmergeable(g: Any, conv: Any, model: Any) -> str:
    """Why a matched Conv cannot join a merged Conv ("" where it can)."""
    from cases.pattern import attr

    dq = g.producer[conv.input[1]]
    scale = g.const.get(dq.input[1])
    if attr(conv, "group", 1) != 1:
        return "a grouped Conv"
    if scale is None or scale.ndim > 1 or (scale.size > 1 and attr(dq, "axis", 1) != 0):
        return "its weight scale is neither per tensor nor per output channel"
    if len(dq.input) > 2 and dq.input[2] and dq.input[2] not in g.const:
        return "its weight zero point is not a constant"
    if len(conv.input) > 2 and conv.input[2] and conv.input[2] not in g.const and _bias_dq(g, conv) is None:
        return "its bias is neither a constant nor a DequantizeLinear of constants"
    opset = onnx_opset(model)
    if opset < 13:
        return f"opset {opset}: DequantizeLinear has no per-channel axis before opset 13"
    return ""


def _group_record(s: Siblings) -> Dict[str, Any]:
    """A group as case.json says it: its Convs, the activation they read and the case's axes the graph decides."""
    return {"convs": [_name(c) for c in s.convs], "source": s.source, "merged": _merged_name(s),
            "params": dict(s.params)}


def _merged_name(s: Siblings) -> str:
    return f"{_name(s.convs[0])}__merged"


def merge(model: Any, groups: Sequence[Siblings]) -> Any:
    """The model with each group merged into one Conv and a Split into the original outputs; nodes that only fed the
    old Convs (their weight DequantizeLinears, copies of the activation's) are gone with their constants."""
    from onnx import ModelProto

    from check.lint import index

    out = ModelProto()
    out.CopyFrom(model)
    g = index(model)
    made: Dict[str, List[Any]] = {}  # by the first output of the Conv whose place the merged nodes take
    removed: set = set()
    for s in groups:
        nodes, inits = _merged_nodes(g, s, _merged_name(s))
        out.graph.initializer.extend(inits)
        made[s.convs[0].output[0]] = nodes
        removed.update(c.output[0] for c in s.convs)
    kept: List[Any] = []
    for n in model.graph.node:
        kept.extend(made.get(n.output[0], []) if n.output else [])
        if not n.output or n.output[0] not in removed:
            kept.append(n)
    kept = _live(kept, {o.name for o in model.graph.output})
    del out.graph.node[:]
    out.graph.node.extend(kept)
    used = {i for n in kept for i in n.input}
    inits = [t for t in out.graph.initializer if t.name in used]
    del out.graph.initializer[:]
    out.graph.initializer.extend(inits)
    return out


def _live(nodes: List[Any], outputs: set) -> List[Any]:
    """The nodes whose outputs someone reads (another node or the graph), dropping dead ones until none is left."""
    while True:
        read = {i for n in nodes for i in n.input} | outputs
        alive = [n for n in nodes if any(o in read for o in n.output)]
        if len(alive) == len(nodes):
            return alive
        nodes = alive


def _merged_nodes(g: Any, s: Siblings, name: str) -> Tuple[List[Any], List[Any]]:
    """One Conv on the group's activation with the siblings' weights, scales, zero points and biases concatenated on
    the output channels, then a Split (axis 1) into the siblings' own output tensors."""
    from onnx import helper, numpy_helper

    weights, scales, zeros, biases = [], [], [], []
    bias_scales, bias_zeros = [], []  # a dequantized bias's (the siblings' biases are all dequantized, or none is)
    for conv in s.convs:
        dq = g.producer[conv.input[1]]
        w = g.const[dq.input[0]]
        channels = w.shape[0]
        scale, zero = _per_channel(g, dq, channels, w.dtype)
        weights.append(w)
        scales.append(scale)
        zeros.append(zero)
        stored = _bias_dq(g, conv)
        if stored is not None:
            biases.append(g.const[stored.input[0]])
            bias_scale, bias_zero = _per_channel(g, stored, channels, g.const[stored.input[0]].dtype)
            bias_scales.append(bias_scale)
            bias_zeros.append(bias_zero)
            continue
        bias = g.const[conv.input[2]] if len(conv.input) > 2 and conv.input[2] else None
        biases.append(bias if bias is not None else np.zeros((channels,), scale.dtype))
    arrays = {"w": np.concatenate(weights), "w_scale": np.concatenate(scales), "w_zero_point": np.concatenate(zeros),
              "b": np.concatenate(biases).astype(biases[0].dtype),
              "split": np.array([w.shape[0] for w in weights], np.int64)}
    if bias_scales:
        arrays.update(b_scale=np.concatenate(bias_scales), b_zero_point=np.concatenate(bias_zeros))
    inits = [numpy_helper.from_array(a, f"{name}_{k}") for k, a in arrays.items()]
    # The first sibling's own attributes (the others' are equal), kernel_shape always: TensorRT 8.6.0 needs it on a
    # Conv whose weights come from a DequantizeLinear.
    attrs = {a.name: helper.get_attribute_value(a) for a in s.convs[0].attribute}
    attrs["kernel_shape"] = list(dict(s.attrs)["kernel_shape"])
    bias = f"{name}_b_dq" if bias_scales else f"{name}_b"
    nodes = [
        helper.make_node("DequantizeLinear", [f"{name}_w", f"{name}_w_scale", f"{name}_w_zero_point"],
                         [f"{name}_w_dq"], name=f"{name}_w_dq", axis=0),
        *([helper.make_node("DequantizeLinear", [f"{name}_b", f"{name}_b_scale", f"{name}_b_zero_point"], [bias],
                            name=f"{name}_b_dq", axis=0)] if bias_scales else []),
        helper.make_node("Conv", [s.source, f"{name}_w_dq", bias], [f"{name}_out"], name=name, **attrs),
        helper.make_node("Split", [f"{name}_out", f"{name}_split"], [c.output[0] for c in s.convs],
                         name=f"{name}_split", axis=1),
    ]
    return nodes, inits


def _per_channel(g: Any, dq: Any, channels: int, stored: Any) -> Tuple[np.ndarray, np.ndarray]:
    """A DequantizeLinear's scale and zero point (0 where it has none) repeated per output channel."""
    scale = g.const[dq.input[1]]
    zero = g.const[dq.input[2]] if len(dq.input) > 2 and dq.input[2] else np.zeros((), stored)
    return (np.broadcast_to(scale.reshape(-1), (channels,)).astype(scale.dtype),
            np.broadcast_to(zero.reshape(-1), (channels,)).astype(zero.dtype))


def compare(expected: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray],
            steps: Mapping[str, Optional[float]]) -> Dict[str, Any]:
    """Each output of the rewritten model against the original's on the reference: bit for bit, else the largest
    difference in the output's comparison step (core.numerics.comparison_step); steps None where a shape differs."""
    from core.numerics import comparison_step

    outputs: Dict[str, Any] = {}
    for name, want in expected.items():
        have = np.asarray(got.get(name))
        if have.shape != want.shape:
            outputs[name] = {"equal": False, "steps": None, "step": None, "unit": "shape differs"}
            continue
        step, unit = comparison_step(want, steps.get(name))
        diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
        outputs[name] = {"equal": bool(np.array_equal(have, want)), "steps": float(diff.max() / step) if diff.size
                         else 0.0, "step": step, "unit": unit}
    moved = [o["steps"] for o in outputs.values()]
    worst = None if None in moved else max(moved, default=0.0)  # None: an output of another shape
    return {"bit_for_bit": all(o["equal"] for o in outputs.values()), "steps": worst, "outputs": outputs}


def proving_cells(decided: Sequence[Mapping[str, str]], root: Optional[Path] = None) -> List[Dict[str, Any]]:
    """The observed TensorRT cells (reports/observed/, listed in its MANIFEST.json at their digest) of the case's
    rewrite=merged reproducers nearest each group's form (every axis the graph decides, else as many as some
    reproducer has): per cell its version, hardware, file, reproducer id and whether the merged Conv ran in INT8."""
    from dataclasses import asdict

    from check.lint import OBSERVED, observed_outcome
    from core.results import read_results
    from matrix import observed
    from matrix.merge import version_key

    root = Path(root or OBSERVED)
    wanted = _nearest(decided)
    try:
        manifest = observed.load(root)
    except observed.ManifestError:
        return []
    found = []
    for rel in sorted(manifest.entries):
        path = root / rel
        if not path.name.startswith("trt-") or not path.name.endswith(".jsonl") or not path.is_file():
            continue
        data = path.read_bytes()
        if b"rewrite=merged" not in data or manifest.observed(path, data):
            continue
        for c in (asdict(s.cell) for s in read_results(path).cells):
            if c["bundle"] in wanted and c["engine"] == "tensorrt":
                found.append({"version": c["engine_version"], "hardware": c["hardware"],
                              "file": f"reports/observed/{rel}", "reproducer": c["bundle"], "status": c["status"],
                              "int8": observed_outcome(c, "node_of_m") == "int8"})
    return sorted(found, key=lambda c: (version_key(c["version"]), c["reproducer"], c["file"]))


def _nearest(decided: Sequence[Mapping[str, str]]) -> set:
    """The ids of the case's rewrite=merged reproducers that agree with each group's decided axes on the most axes."""
    from cases import bundle_id
    from cases.two_conv_fanout_qdq import CASE

    merged = [p for p in CASE.variants() if p["rewrite"] == "merged"]
    wanted: set = set()
    for params in decided:
        asked = {k: v for k, v in params.items() if k != "rewrite"}
        agree = {bundle_id(CASE, p): sum(p.get(k) == v for k, v in asked.items()) for p in merged}
        best = max(agree.values(), default=0)
        wanted |= {b for b, n in agree.items() if n == best}
    return wanted


def notes(record: Mapping[str, Any], folder: Path) -> List[str]:
    """What check says of the rewrite before the engines run: one line, then the cells that prove it builds."""
    if not record:
        return []
    groups = "; ".join(" + ".join(g["convs"]) for g in record.get("groups") or [])
    if not record.get("offered"):
        return [f"seed 032's merged-Conv rewrite not offered (its pattern matched {record.get('matched') or groups}): "
                f"{record.get('why_not', '')}"]
    comparison = record["comparison"]
    equal = "outputs equal bit for bit" if comparison["bit_for_bit"] else (
        f"outputs within {comparison['steps']:.3g} steps")
    lines = [f"way around TensorRT 8.5-8.6.0's chooseHigherPrecision (seed 032): sibling Convs merged ({groups}), "
             f"then Split; {equal} on the reference; written to {folder / record['model']}"]
    cells = record.get("cells") or []
    lines += [f"  builds in INT8 on TensorRT {version}: {where}" for version, where in _proof(cells, True).items()]
    lines += [f"  NOT in INT8 on TensorRT {version}: {where}" for version, where in _proof(cells, False).items()]
    if not cells:
        lines.append("  no committed cell of a merged reproducer says whether it builds")
    return lines


def _proof(cells: Sequence[Mapping[str, Any]], int8: bool) -> Dict[str, str]:
    """Per TensorRT version, "<file>: <reproducer>, ..." of the cells where the merged Conv ran in INT8 (or not)."""
    found: Dict[str, Dict[str, List[str]]] = {}
    for c in cells:
        if bool(c.get("int8")) == int8:
            found.setdefault(c["version"], {}).setdefault(c["file"], []).append(c["reproducer"])
    return {v: "; ".join(f"{f}: {', '.join(r)}" for f, r in files.items()) for v, files in found.items()}
