"""Per-node fusion report for one model: which engine layer ran each quantized node, and in which precision.

Reads cells (and the bundle's case.json where it is at hand: op types, Q/DQ neighbours, and the TensorRT lint's
predictions, set against what each TensorRT version did by matrix.predict); never imports an engine. The layer and
the precision come from the evidence each adapter wrote: TensorRT's inspector layer, ONNX Runtime's optimized-graph
node, OpenVINO's runtime layer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from cases.common import BUILT_IS_NOT_RUNNING, RTX_ISSUE_35
from cases.user_model import COMPUTE_OPS
from core.cell import QUANTIZED_PRECISIONS, Cell
from core.engines import variant_label
from core.judge import ran_inputs, reference_fault
from core.numerics import FRAGILE_MARGIN_DB, float_source
from core.outcome import outcome
from core.words import AGREES, FAILED, NO_REFERENCE, OTHER_NODE_WORDS, UNEXPECTED, file_name
from matrix.merge import version_key
from matrix.predict import predictions_view

NODES_SCHEMA = "qdq-matrix/nodes/2"  # 2: a column says its failed stage (`failed_stage`), not the last one reached
LISTED_NODES = 40  # up to this many quantized nodes, the Markdown lists each node; above, it groups them only
LISTED_EVIDENCE = 60  # up to this many node-by-engine evidence sentences, the Markdown has them too (else HTML, JSON)
SHOWN_NAMES = 4  # node names a grouped row shows before "and N more"
FLOAT_WIDTHS = ("fp32", "fp16", "bf16")


def precision_of(entry: Mapping[str, Any]) -> str:
    """int8, int4, fp8, fp4, fp16, bf16, fp32, float (width not stated) or unknown, from a cell's precision entry: a
    float node's width is its layer's first float input type, else its first float output type, as the evidence lists
    them."""
    precision = entry.get("precision", "unknown")
    if precision != "float":
        return precision if precision in (*QUANTIZED_PRECISIONS, "unknown") else "unknown"
    widths = [d for d in [*(entry.get("inputs") or []), *(entry.get("outputs") or [])] if d in FLOAT_WIDTHS]
    return widths[0] if widths else "float"


def layer_of(entry: Mapping[str, Any]) -> str:
    """The engine layer, kernel or optimized node that the evidence names, "" when it names none."""
    if not entry.get("layer"):
        return ""
    return f"{entry['layer']} ({entry['layer_type']})" if entry.get("layer_type") else str(entry["layer"])


def read_meta(bundles: Union[None, Path, Sequence[Path]], bundle: str) -> Dict[str, Any]:
    """A bundle's case.json from the first bundle folder that has it, {} where none is at hand."""
    roots = [] if bundles is None else [bundles] if isinstance(bundles, (str, Path)) else list(bundles)
    for root in roots:
        for folder in [Path(root) / bundle, *renamed_user_bundle(Path(root), bundle)]:
            try:
                return json.loads((folder / "case.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
    return {}


def renamed_user_bundle(root: Path, bundle: str) -> List[Path]:
    """For a cell recorded under a user model's old id (user_model/<slug>), its bundle under today's id
    (user_model/<slug>-<10 hex digits>, cases.user_model.model_id) where exactly one is there."""
    from cases.user_model import ID, ID_DIGITS

    case, _, slug = bundle.partition("/")
    if case != ID or not slug or not (root / case).is_dir():
        return []
    found = [p for p in (root / case).iterdir() if p.name.startswith(slug + "-")
             and re.fullmatch(r"[0-9a-f]{%d}" % ID_DIGITS, p.name[len(slug) + 1:])]
    return found if len(found) == 1 else []


def node_report(cells: Sequence[Cell], meta: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The per-node report of one bundle over every engine version that has a cell for it."""
    meta = dict(meta or {})
    cells = sorted(cells, key=lambda c: (c.engine, version_key(c.engine_version), c.setting))
    bundle = cells[0].bundle if cells else meta.get("bundle", "")
    targets = list(meta.get("target_nodes") or dict.fromkeys(t for c in cells for t in c.precision))
    details = meta.get("target_details") or {}
    columns = [_column(c, targets, details, meta) for c in cells]
    nodes = []
    for t in targets:
        d = details.get(t, {})
        nodes.append({"name": t, "op": d.get("op", ""), "kind": kind_of(d), "dequantize": list(d.get("dequantize", [])),
                      "quantize": list(d.get("quantize", [])),
                      "results": [col["nodes"].get(t) for col in columns]})
    graph = dict(meta.get("graph") or {})
    compute = sum(n["kind"] == "compute" for n in nodes)
    form = main_form(meta)
    return {
        "schema": NODES_SCHEMA, "bundle": bundle,
        "model": (meta.get("params") or (cells[0].params if cells else {})).get("model", bundle),
        "digest": meta.get("digest", cells[0].digest if cells else ""), "reference": meta.get("reference_engine", {}),
        "no_reference": str(meta.get("reference_error") or ""),  # said first, with whose fault it is
        "no_reference_fault": reference_fault(str(meta.get("reference_error") or "")),
        "before_output": before_output(cells) if meta.get("reference_error") else [],
        "unreferenced": any(c.verdict == NO_REFERENCE for c in cells),
        "targets": len(targets), "compute": compute, "other": len(targets) - compute, "graph": graph,
        "float_model": form == "float", "form": form, "forms": forms_view(meta), "shape_notes": shape_notes(meta),
        "weights": weight_shares(nodes, details, graph), "inputs": inputs_view(meta),
        "judge": dict(meta.get("judge") or {}), "float_reference": _loss(meta.get("float_reference")),
        "float_twin": dict(meta.get("float_twin") or {}), "float_name": float_source(meta),
        "fidelity": fidelity(cells, meta), "fragile_margin_db": FRAGILE_MARGIN_DB,
        "columns": [{k: v for k, v in col.items() if k != "nodes"} for col in columns],
        "nodes": nodes, "node_groups": node_groups(nodes, columns), "listed": len(nodes) <= LISTED_NODES,
        "evidence_listed": len(nodes) <= LISTED_NODES and len(nodes) * len(columns) <= LISTED_EVIDENCE,
        "predictions": predictions_view(meta.get("lint"), cells), "advice": advice(meta.get("lint")),
        "rewrite": dict(meta.get("rewrite") or {}),  # seed 032's way around, where check offers it (check.rewrite)
        "localize": [],  # check --localize fills it (check.localize: it runs engines, which matrix never does)
        "not_run": "",  # check fills it: the engines a check did not run at all (TensorRT without --trt-python)
        # Said once under the engine table where a column only built (TensorRT-RTX ahead of time), never per cell.
        "built_note": {"text": BUILT_IS_NOT_RUNNING, "source": RTX_ISSUE_35}
        if any(c.status == "built" for c in cells) else {},
    }


def before_output(cells: Sequence[Cell]) -> List[Dict[str, str]]:
    """The cells that failed before any output (parse or build), which a missing reference leaves judged: each with
    its column, failed stage, verdict and the engine's error line."""
    return [{"heading": f"{c.engine}@{c.engine_version}" + (f" · {c.setting}" if c.setting else ""),
             "stage": outcome(c).failed_stage, "verdict": c.verdict,
             "error": c.error_line or _first(c.error)}
            for c in cells if c.status in FAILED and not ran_inputs(c.status, c.last_stage)]


def weight_shares(nodes: Sequence[Mapping[str, Any]], details: Mapping[str, Any],
                  graph: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Per op of the quantized compute nodes: how many nodes, the quantized weight values they hold and their share of
    the model's (case.json `target_details[...].weights`, `graph.quantized_weights`); [] where the bundle has none."""
    total = int(graph.get("quantized_weights") or 0)
    rows: Dict[str, Dict[str, Any]] = {}
    for n in nodes:
        if n["kind"] != "compute":
            continue
        row = rows.setdefault(n["op"], {"op": n["op"], "nodes": 0, "weights": 0})
        row["nodes"] += 1
        row["weights"] += int(details.get(n["name"], {}).get("weights") or 0)
    if not total:
        return []
    return [dict(r, share=r["weights"] / total, total=total)
            for r in sorted(rows.values(), key=lambda r: (-r["weights"], r["op"]))]


def inputs_view(meta: Mapping[str, Any]) -> List[str]:
    """Which inputs the engines were given: the file they came from, else each input's generation rule."""
    if meta.get("inputs_file"):
        return [f"all inputs from {meta['inputs_file']}"]
    return [f"{name}: {g.get('why', '')}" for name, g in (meta.get("input_generation") or {}).items()]


def main_form(meta: Mapping[str, Any]) -> str:
    """The model's quantization form as its bundle recorded it (check.forms: "qdq", "dynamic", "qoperator", "float");
    for a bundle made before bundles recorded it, "float" where the graph has no Q/DQ and no target node, else ""."""
    said = (meta.get("quantization") or {}).get("form")
    if said:
        return str(said)
    graph = meta.get("graph") or {}
    return "float" if graph and not graph.get("quantize") and not graph.get("dequantize") and \
        not meta.get("target_nodes") else ""


def forms_view(meta: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Each quantization form of the model other than Q/DQ, as the report's first lines name it: its words and ops,
    the catalogue case that documents what TensorRT does with it (seed, title, sources, the variant the model matches
    and whether the case documents TensorRT-RTX) or the source that says so where no case does, and the fix."""
    from cases import get_case

    found = []
    for f in (meta.get("quantization") or {}).get("forms") or []:
        if f.get("form") == "qdq":
            continue
        entry = {"form": f.get("form", ""), "words": f.get("words", ""),
                 "ops": ", ".join(f"{n} {op}" for op, n in (f.get("ops") or {}).items()), "detail": f.get("detail", ""),
                 "source": f.get("source", ""), "fix": f.get("fix", ""), "case": ""}
        try:
            case = get_case(f["case"]) if f.get("case") else None
        except KeyError:  # a case this checkout does not have
            case = None
        if case is not None:
            entry.update(case=case.id, seed=case.seed, title=case.title, sources=list(case.links),
                         like=", ".join(f"{k}={v}" for k, v in (f.get("like") or {}).items()),
                         rtx=any(e.engine == "tensorrt-rtx" and e.basis == "documented" for e in case.expectations),
                         rtx_baseline=", ".join(e.versions.lstrip("=") or "every version" for e in case.expectations
                                                if e.engine == "tensorrt-rtx" and e.basis == "baseline"))
        found.append(entry)
    return found


def shape_notes(meta: Mapping[str, Any]) -> List[str]:
    """What a --shape given for several models left as the model declares it (case.json `shape_not_applied`)."""
    notes = []
    for kept in meta.get("shape_not_applied") or []:
        declared, axes, name = list(kept.get("declared") or []), list(kept.get("axes") or []), kept.get("input", "")
        given = f"(--shape {name}:{kept.get('given', '')})"
        if len(axes) == len(declared):
            notes.append(f"shape not applied: {name} is declared {'x'.join(map(str, declared))} {given}; the model's "
                         "own shape is used")
        else:
            where = ", ".join(f"{name}[{a}] = {declared[a]}" for a in axes)
            notes.append(f"shape not applied to the dimensions {name} declares: {where} {given}; its open dimensions "
                         "take the shape")
    return notes


# Lint rules about the whole model's quantization, said once above the tables: their detail says why, their fix how.
MODEL_RULES = {"float_model": "This model has no Q/DQ", "widened_weights": "Integer weights without a DequantizeLinear"}


def advice(lint: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """One paragraph per model-level lint rule that fired: its title, node count, why (detail), fix and source."""
    found: Dict[str, Dict[str, Any]] = {}
    for f in (lint or {}).get("findings") or []:
        if f.get("rule") in MODEL_RULES:
            entry = found.setdefault(f["rule"], {"title": MODEL_RULES[f["rule"]], "nodes": {}, "detail": f.get(
                "detail", ""), "fix": f.get("fix", ""), "source": f.get("source", "")})
            entry["nodes"][f["node"]] = True  # each node once, in the order first found
    return [dict(entry, nodes=list(entry["nodes"])) for entry in found.values()]


def kind_of(detail: Mapping[str, Any]) -> str:
    """"compute" or "other" as the bundle says; a bundle made before it said: by op type."""
    op = detail.get("op")
    return str(detail.get("kind") or ("compute" if op in COMPUTE_OPS or not op else "other"))


def _loss(record: Any) -> Dict[str, Any]:
    """The float model's record in case.json, with the quantization loss per output (reference against float)."""
    return dict(record) if isinstance(record, Mapping) else {}


def fidelity(cells: Sequence[Cell], meta: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Per output of a network-measured bundle: the quantization loss (the reference against the float outputs) beside
    each column's fidelity (its engine against the reference, and against the float outputs), and whether the fragile
    floor passed it; [] for a bundle judged in steps or with no output measured."""
    measured = [c.output_stats for c in cells]
    if not any((s or {}).get("measure") == "network" and (s or {}).get("outputs") for s in measured):
        return []
    names = list(meta.get("outputs") or dict.fromkeys(n for s in measured for n in (s or {}).get("outputs") or {}))
    loss = ((meta.get("float_reference") or {}).get("loss")) or {}
    rows = []
    for name in names:
        said = [((s or {}).get("outputs") or {}).get(name) for s in measured]
        lost = loss.get(name) or next((o["loss"] for o in said if o and isinstance(o.get("loss"), Mapping)), None)
        rows.append({"output": name, "loss": _stat_words(lost, max_abs=False) if lost else "",
                     "cells": [{"reference": _stat_words(o, max_abs=False),
                                "float": _stat_words(o["float"], cosine=False, max_abs=False) if o.get("float") else "",
                                "fragile": bool(o.get("fragile"))} if o else None for o in said]})
    return rows


def _column(cell: Cell, targets: List[str], details: Mapping[str, Any], meta: Mapping[str, Any]) -> Dict[str, Any]:
    ran = any(p.get("precision") in (*QUANTIZED_PRECISIONS, "float") for p in cell.precision.values())  # evidence
    nodes = {}
    for t in targets:
        entry = cell.precision.get(t, {"precision": "unknown", "evidence": "not reported"})
        nodes[t] = {"precision": precision_of(entry) if ran else "unknown", "layer": layer_of(entry),
                    "evidence": entry.get("evidence", ""), "generated": bool(entry.get("generated"))}
        nodes[t]["shown"] = _outcome(nodes[t])
    compute = [t for t in targets if kind_of(details.get(t, {})) == "compute"]
    int8 = sum(nodes[t]["precision"] == "int8" for t in compute)
    computing = set(compute)
    # Shape and Size read dimensions, never values: no fallback, no node without evidence, counted apart so that the
    # parts add up to the other quantized nodes
    shape_reads = {t for t in targets if details.get(t, {}).get("op") in SHAPE_ONLY}
    others = _others([t for t in targets if t not in computing and t not in shape_reads], nodes) if ran else {}
    if ran and shape_reads:
        others = dict(others, shape_reads=len(shape_reads))
    fallbacks = [_fallback(t, nodes[t], details.get(t, {})) for t in targets
                 if nodes[t]["precision"] not in (*QUANTIZED_PRECISIONS, "unknown") and t not in shape_reads]
    unknown = [t for t in targets if nodes[t]["precision"] == "unknown" and not nodes[t]["generated"]
               and t not in shape_reads]
    said = outcome(cell)
    fragile = fragile_outputs(cell)
    column = {
        "engine": cell.engine, "version": cell.engine_version, "hardware": cell.setting,
        "column": [cell.engine, cell.engine_version, cell.hardware, variant_label(cell.variant)],
        "heading": f"{cell.engine}@{cell.engine_version}", "status": cell.status, "verdict": cell.verdict,
        # a fragile pass's reason is the fidelity table's numbers, which the report gives per output
        "failed_stage": said.failed_stage,
        "error": cell.engine_reason or _first(cell.error) or ("" if fragile else _first(cell.reason)),
        "signature": cell.signature, "signature_short": signature_short(cell),
        "int8": int8, "total": len(compute), "others": others, "ran": ran,
        "summary": _summary(cell, ran, int8, len(compute), others, meta),
        "failing_node": cell.failing_node if said.failed else "", "says": cell.engine_reason if said.failed else "",
        "reason": _first(cell.reason), "max_error_steps": cell.max_error_steps,
        "numerics": numerics(cell, meta), "output_stats": dict(cell.output_stats), "fallbacks": fallbacks,
        "fragile": fragile,
        "fallback_ops": _ops([f["node"] for f in fallbacks], details),
        "unknown": unknown, "unknown_ops": _ops(unknown, details), "time": build_time(cell),
        "source": cell.run.get("source", ""), "date": cell.run.get("date", ""), "nodes": nodes,
        # what an expectation's verdict rests on: the document, or the earlier run's file and hardware
        "why": cell.explanation if cell.verdict in (*AGREES.values(), *UNEXPECTED) else "",
    }
    return column


def signature_short(cell: Cell) -> str:
    """The few words of the catalogue signature a cell matched (cases: Signature.short), "" for none."""
    from cases.common import cell_signature

    found = cell_signature(cell.case, cell.engine, cell.signature)
    return found.short if found is not None else ""


def _others(names: Sequence[str], nodes: Mapping[str, Mapping[str, Any]]) -> Dict[str, int]:
    """The quantized nodes that are not compute nodes, by what the evidence says of each."""
    counts = dict.fromkeys(OTHER_NODE_WORDS, 0)
    for t in names:
        precision = nodes[t]["precision"]
        kind = ("int8" if precision in QUANTIZED_PRECISIONS else "fused" if nodes[t]["generated"]
                else "unknown" if precision == "unknown" else "float")
        counts[kind] += 1
    return counts


def _summary(cell: Cell, ran: bool, int8: int, total: int, others: Mapping[str, int], meta: Mapping[str, Any]) -> str:
    """The column's INT8 answer in one line: compute nodes first, the other quantized nodes counted apart."""
    if main_form(meta) == "float":
        return "no Q/DQ in the model: a float model (TensorRT builds it in float)"
    head = _form_head(meta) + _count_head(cell, ran, int8, total)
    if not ran:
        return head
    rest = [f"{others[k]} {words}" for k, words in OTHER_NODE_WORDS.items() if others.get(k)]
    if others.get("shape_reads"):
        rest.append(f"{others['shape_reads']} Shape or Size (it reads dimensions, not values)")
    return head + (f"; other quantized nodes: {', '.join(rest)}" if rest else "")


def _form_head(meta: Mapping[str, Any]) -> str:
    """"dynamic quantization (quantize_dynamic): " where the model is in a form other than Q/DQ, else ""."""
    shorts = [f.get("short", "") for f in (meta.get("quantization") or {}).get("forms") or []
              if f.get("form") != "qdq" and f.get("short")]
    return f"{' and '.join(shorts)}: " if shorts else ""


def _count_head(cell: Cell, ran: bool, int8: int, total: int) -> str:
    """The INT8 count of the compute nodes, or why there is none."""
    if cell.status == "built":  # TensorRT-RTX ahead of time: the plan's layers, no run on this machine
        return f"{int8} of {total} quantized compute nodes INT8 (ahead-of-time plan)"
    if ran:
        return f"{int8} of {total} quantized compute nodes ran in INT8"
    if cell.status in FAILED:  # the result column says why
        return f"no per-node evidence: {cell.status}"
    why = f" ({_first(cell.reason)})" if cell.reason else ""
    return f"no per-node evidence: {cell.status.replace('_', ' ')}{why}"


def _ops(names: Sequence[str], details: Mapping[str, Any]) -> Dict[str, int]:
    """How many of the nodes have each op type, most first."""
    counts: Dict[str, int] = {}
    for t in names:
        op = details.get(t, {}).get("op") or "?"
        counts[op] = counts.get(op, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def build_time(cell: Cell) -> str:
    """How long the engine took to build, as the report says it: "build 12.3 s" (TensorRT's build stage, ONNX
    Runtime's session, OpenVINO's compile), with the cell's whole time; "" where the cell has no timings."""
    t = cell.timings
    build = t.get("build", t.get("load") if cell.engine in ("onnxruntime",) else None)
    parts = [f"build {build:.3g} s"] if isinstance(build, (int, float)) else []
    if isinstance(t.get("cell"), (int, float)):
        parts.append(f"cell {t['cell']:.3g} s")
    return ", ".join(parts)


def node_groups(nodes: Sequence[Mapping[str, Any]], columns: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The node table grouped: one row per op, kind and outcome in every column, with its count and first names."""
    groups: Dict[tuple, Dict[str, Any]] = {}
    for n in nodes:
        outcome = tuple(_outcome(r) for r in n["results"])
        key = (n["kind"], n["op"], outcome)
        if key not in groups:
            groups[key] = {"kind": n["kind"], "op": n["op"], "results": list(outcome), "names": []}
        groups[key]["names"].append(n["name"])
    rows = sorted(groups.values(), key=lambda g: (g["kind"] != "compute", -len(g["names"]), g["op"], g["results"]))
    for g in rows:
        g["count"], g["shown"] = len(g["names"]), g["names"][:SHOWN_NAMES]
        g["more"] = max(0, g["count"] - SHOWN_NAMES)
    return rows


def _outcome(result: Optional[Mapping[str, Any]]) -> str:
    """A node's outcome in one column, as a grouped row shows it: its precision, or "fused" (generated kernel)."""
    if not result:
        return ""
    if result.get("generated") and result.get("precision") == "unknown":
        return "fused"
    return str(result.get("precision", "unknown"))


# Ops that read only their input's shape, never its values: fed by a DequantizeLinear, they are target nodes, but no
# precision of theirs can "fall back to float".
SHAPE_ONLY = frozenset({"Shape", "Size"})


def _fallback(name: str, node: Mapping[str, str], detail: Mapping[str, Any]) -> Dict[str, Any]:
    """A target node that ran in float: the Q/DQ pair around it that was not fused, and the layer it fell back in."""
    dq, q = list(detail.get("dequantize", [])), list(detail.get("quantize", []))
    pairs = " → ".join(x for x in (", ".join(dq), f"{name} ({detail.get('op', '?')})", ", ".join(q)) if x)
    where = f"layer {node['layer']}" if node["layer"] else "a layer the evidence does not name"
    return {"node": name, "op": detail.get("op", ""), "qdq": pairs, "precision": node["precision"],
            "layer": node["layer"], "text": f"{pairs}: not fused; float fallback ({node['precision']}) in {where}"}


def fragile_outputs(cell: Cell) -> List[Dict[str, Any]]:
    """The outputs that passed by the fragile floor (core.numerics.fragile), each with its quantization loss."""
    outputs = (cell.output_stats or {}).get("outputs") or {}
    return [{"output": name, "loss_db": o["loss"]["sqnr_db"], "sqnr_db": o["sqnr_db"]}
            for name, o in outputs.items() if o.get("fragile")]


def numerics(cell: Cell, meta: Mapping[str, Any]) -> str:
    """The output error as the bundle is judged: SQNR, cosine and max abs error for a whole network, else quantization
    steps where the outputs are quantized, else abs/rel error."""
    stats = cell.output_stats or {}
    if stats.get("measure") == "network" and stats.get("outputs"):
        return network_words(stats, float_source(meta))
    if cell.max_error_steps is None:
        return ""
    err, tol = cell.max_error_steps, cell.tolerance_steps
    outputs = list((meta.get("outputs") or {}).values())
    tolerance = f" (tolerance {tol:g})" if tol is not None else ""
    if outputs and all(o.get("step_kind") in ("quantization", "integer") for o in outputs):
        return f"{err:.3g} output quantization steps{tolerance}"
    if len(outputs) == 1 and outputs[0].get("step"):
        step, peak = float(outputs[0]["step"]), float(outputs[0].get("peak") or 0.0)
        abs_err = err * step
        rel = f", rel {abs_err / peak:.3g}" if peak else ""
        tol_text = ""
        if tol is not None:
            tol_text = f" (tolerance abs {tol * step:.3g}" + (f", rel {tol * step / peak:.3g}" if peak else "") + ")"
        return f"abs {abs_err:.3g}{rel} of peak {peak:.3g}{tol_text}"
    return f"{err:.3g} steps{tolerance} (each output's step is in case.json)"


def network_words(stats: Mapping[str, Any], floats: str = "the float model") -> str:
    """The worst output by SQNR, in words: "SQNR 31.2 dB, cosine 0.9996, max abs 0.012" (the report's header says the
    line once); with float outputs, the same against them (`floats` names where they come from)."""
    outputs = stats.get("outputs") or {}
    name = min(outputs, key=lambda n: _sqnr_rank(outputs[n]))
    o = outputs[name]
    which = f"{name}: " if len(outputs) > 1 else ""
    said = f"{which}{_stat_words(o)}"
    if isinstance(o.get("float"), Mapping):
        said += f"; against {floats} {_stat_words(o['float'])}"
    return said


def _stat_words(o: Mapping[str, Any], cosine: bool = True, max_abs: bool = True) -> str:
    if o.get("non_finite"):
        return f"{o['non_finite']} values NaN or inf"
    if o.get("expected_non_finite"):
        return f"{o['expected_non_finite']} values NaN or inf on the other side (the reference or the float outputs)"
    sqnr = "SQNR exact" if o.get("sqnr_db") is None else f"SQNR {o['sqnr_db']:.1f} dB"
    angle = f", cosine {o['cosine']:.4f}" if cosine and o.get("cosine") is not None else ""
    peak = f", max abs {float(o.get('max_abs') or 0):.3g}" if max_abs else ""
    return f"{sqnr}{angle}{peak}"


def _sqnr_rank(o: Mapping[str, Any]) -> float:
    if o.get("non_finite") or o.get("expected_non_finite"):
        return float("-inf")
    return float("inf") if o.get("sqnr_db") is None else float(o["sqnr_db"])


def write_node_reports(report: Mapping[str, Any], out: Path, stem: str) -> List[Path]:
    """Write <stem>.md, <stem>.html and <stem>.json into out."""
    from matrix.render import render_template

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    view = dict(report)
    written = {
        f"{stem}.md": render_template("nodes.md.j2", view, html=False),
        f"{stem}.html": render_template("nodes.html.j2", view, html=True),
        f"{stem}.json": json.dumps(report, indent=1, sort_keys=True) + "\n",
    }
    for name, text in written.items():
        (out / name).write_text(text, encoding="utf-8")
    return [out / name for name in written]


def write_all(cells: Sequence[Cell], out: Path, bundles: Union[None, Path, Sequence[Path]] = None,
              cases: Sequence[str] = ("user_model",)) -> List[Dict[str, Any]]:
    """A per-node report for every bundle of the given cases with cells; returns [{bundle, report, md, html, json}]."""
    by_model: Dict[Tuple[str, str], List[Cell]] = {}
    for c in cells:
        if c.case in cases:
            by_model.setdefault((c.bundle, c.digest), []).append(c)
    # Two models under one bundle id (reductions name theirs "reduced"): a report, a row and a file stem each, told
    # apart by their digest; a bundle id with one model keeps its plain name.
    digests: Dict[str, int] = {}
    for bundle, _ in by_model:
        digests[bundle] = digests.get(bundle, 0) + 1
    written = []
    stems: Dict[str, int] = {}
    recorded: Optional[Dict[Tuple[str, str], Dict[str, Any]]] = None
    for (bundle, digest), mine in sorted(by_model.items()):
        shared = digests[bundle] > 1
        stem = file_stem(bundle) + (f"-{digest[:10]}" if shared else "")
        stems[stem] = stems.get(stem, 0) + 1
        stem += f"-{stems[stem]}" if stems[stem] > 1 else ""
        meta = read_meta(bundles, bundle)
        report = node_report(mine, meta)
        if not meta:  # no bundle here (a fresh clone has no .bundles-user): the model as its observation recorded it
            recorded = observed_node_reports() if recorded is None else recorded
            report.update(recorded_form(recorded.get((bundle, digest), {})))
        if shared:
            report["model"] = f"{report.get('model') or bundle} ({digest[:10]})"
        paths = write_node_reports(report, out, stem)
        written.append({"bundle": bundle, "report": report, "md": paths[0], "html": paths[1], "json": paths[2]})
    return written


def observed_node_reports(root: Optional[Path] = None) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """The per-node reports committed with GPU observations (reports/observed/**/nodes/*.json), by (bundle, digest):
    only those the manifest lists at their exact content, as every observed file."""
    from matrix import observed

    root = observed.OBSERVED if root is None else root
    try:
        manifest = observed.load(root)
    except Exception:  # no manifest, or one that does not parse: nothing recorded is trusted
        return {}
    found: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for path in sorted(root.rglob("nodes/*.json")):
        try:
            data = path.read_bytes()
            report = json.loads(data) if not manifest.observed(path, data) else None
        except (OSError, ValueError):
            continue
        if isinstance(report, dict) and report.get("schema") == NODES_SCHEMA and report.get("bundle"):
            found.setdefault((str(report["bundle"]), str(report.get("digest", ""))), report)
    return found


def recorded_form(report: Mapping[str, Any]) -> Dict[str, Any]:
    """What a committed node report says of the model's quantization form (its form, the forms other than Q/DQ with
    the catalogue case that documents each, whether it is a float model): {} where none was recorded."""
    if not report.get("form"):
        return {}
    return {"form": report["form"], "forms": list(report.get("forms") or []),
            "float_model": bool(report.get("float_model"))}


def file_stem(bundle: str) -> str:
    """A bundle id (text from a results file) as one plain file name: "user_model/net" -> "user_model__net"."""
    return file_name(bundle.replace("/", "__"))


def _first(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:300] if lines else ""
