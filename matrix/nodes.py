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
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from cases.cell import Cell
from matrix.merge import version_key
from matrix.predict import engine_words, failing_node, predictions_view

NODES_SCHEMA = "qdq-matrix/nodes/1"
# What a float precision was, where the evidence says: TensorRT formats, OpenVINO runtimePrecision, ORT profile types.
_WIDTHS = (
    ("fp16", re.compile(r"\b(?:FP16|Half|f16|float16)\b")),
    ("bf16", re.compile(r"\b(?:BF16|bf16|bfloat16)\b")),
    ("fp32", re.compile(r"\b(?:FP32|Float|f32|float)\b")),
)
_LAYER = re.compile(r"layer '([^']*)'")
_ORT_NODE = re.compile(r"(?:kernel|into|float) ([A-Za-z0-9_.]+) '([^']*)'")
_OUTPUT = re.compile(r"output (\w+) \(|outputPrecisions \[?'?(\w+)|runtimePrecision (\w+)|first input (\w+)")


def precision_of(entry: Mapping[str, Any]) -> str:
    """int8, int4, fp8, fp16, bf16, fp32, float (width not stated) or unknown, from a cell's precision entry."""
    precision = entry.get("precision", "unknown")
    if precision != "float":
        return precision if precision in ("int8", "int4", "fp8", "unknown") else "unknown"
    inputs = [d for d in entry.get("inputs") or [] if d in ("fp32", "fp16", "bf16")]  # structured evidence
    if inputs:
        return inputs[0]
    stated = _stated_width(entry.get("evidence", ""))
    return stated or "float"


def _stated_width(evidence: str) -> str:
    """The float width the evidence names for the layer's output (or runtime precision), "" when none."""
    m = _OUTPUT.search(evidence)
    words = [w for w in (m.groups() if m else ()) if w]
    for text in words:
        for name, pattern in _WIDTHS:
            if pattern.search(text):
                return name
    return ""


def layer_of(entry: Mapping[str, Any]) -> str:
    """The engine layer, kernel or optimized node that the evidence names, "" when it names none."""
    if entry.get("layer"):  # structured evidence
        return f"{entry['layer']} ({entry['layer_type']})" if entry.get("layer_type") else str(entry["layer"])
    evidence = entry.get("evidence", "")
    m = _LAYER.search(evidence)
    if m:
        return m.group(1)
    m = _ORT_NODE.search(evidence)
    return f"{m.group(2)} ({m.group(1)})" if m else ""


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
        nodes.append({"name": t, "op": d.get("op", ""), "dequantize": list(d.get("dequantize", [])),
                      "quantize": list(d.get("quantize", [])),
                      "results": [col["nodes"].get(t) for col in columns]})
    return {
        "schema": NODES_SCHEMA, "bundle": bundle,
        "model": (meta.get("params") or (cells[0].params if cells else {})).get("model", bundle),
        "digest": meta.get("digest", cells[0].digest if cells else ""), "reference": meta.get("reference_engine", {}),
        "targets": len(targets), "columns": [{k: v for k, v in col.items() if k != "nodes"} for col in columns],
        "nodes": nodes, "predictions": predictions_view(meta.get("lint"), cells),
    }


def _column(cell: Cell, targets: List[str], details: Mapping[str, Any], meta: Mapping[str, Any]) -> Dict[str, Any]:
    ran = any(p.get("precision") in ("int8", "int4", "fp8", "float") for p in cell.precision.values())  # evidence
    nodes = {}
    for t in targets:
        entry = cell.precision.get(t, {"precision": "unknown", "evidence": "not reported"})
        nodes[t] = {"precision": precision_of(entry) if ran else "unknown", "layer": layer_of(entry),
                    "evidence": entry.get("evidence", "")}
    int8 = sum(n["precision"] == "int8" for n in nodes.values())
    fallbacks = [_fallback(t, nodes[t], details.get(t, {})) for t in targets
                 if nodes[t]["precision"] not in ("int8", "int4", "fp8", "unknown")]
    if cell.status == "built":  # TensorRT-RTX ahead of time: the plan's layers, no run on this machine
        summary = f"{int8} of {len(targets)} quantized nodes INT8 (ahead-of-time plan)"
    elif ran:
        summary = f"{int8} of {len(targets)} quantized nodes ran in INT8"
    else:
        summary = f"no per-node evidence: {cell.status}" + (f" ({_first(cell.error or cell.reason)})"
                                                           if cell.error or cell.reason else "")
    unknown = [t for t in targets if nodes[t]["precision"] == "unknown"]
    failed = cell.status in ("fail", "crashed")
    node = failing_node(cell.error) if failed else ""
    column = {
        "engine": cell.engine, "version": cell.engine_version, "hardware": cell.setting,
        "heading": f"{cell.engine}@{cell.engine_version}", "status": cell.status, "verdict": cell.verdict,
        "stage": cell.stage, "error": _first(cell.error) or _first(cell.reason), "signature": cell.signature,
        "int8": int8, "total": len(targets), "ran": ran,
        "summary": summary, "failing_node": node, "says": engine_words(cell.error, node)[:300] if failed else "",
        "reason": _first(cell.reason), "max_error_steps": cell.max_error_steps,
        "numerics": numerics(cell, meta), "fallbacks": fallbacks, "unknown": unknown,
        "source": cell.run.get("source", ""), "date": cell.run.get("date", ""), "nodes": nodes,
    }
    return column


def _fallback(name: str, node: Mapping[str, str], detail: Mapping[str, Any]) -> Dict[str, Any]:
    """A target node that ran in float: the Q/DQ pair around it that was not fused, and the layer it fell back in."""
    dq, q = list(detail.get("dequantize", [])), list(detail.get("quantize", []))
    pairs = " → ".join(x for x in (", ".join(dq), f"{name} ({detail.get('op', '?')})", ", ".join(q)) if x)
    where = f"layer {node['layer']}" if node["layer"] else "a layer the evidence does not name"
    return {"node": name, "op": detail.get("op", ""), "qdq": pairs, "precision": node["precision"],
            "layer": node["layer"], "text": f"{pairs}: not fused; float fallback ({node['precision']}) in {where}"}


def numerics(cell: Cell, meta: Mapping[str, Any]) -> str:
    """The output error in quantization steps where the outputs are quantized, else as abs/rel error."""
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
    by_bundle: Dict[str, List[Cell]] = {}
    for c in cells:
        if c.case in cases:
            by_bundle.setdefault(c.bundle, []).append(c)
    written = []
    stems: Dict[str, int] = {}
    for bundle, mine in sorted(by_bundle.items()):
        stem = file_stem(bundle)
        stems[stem] = stems.get(stem, 0) + 1
        stem += f"-{stems[stem]}" if stems[stem] > 1 else ""
        report = node_report(mine, read_meta(bundles, bundle))
        paths = write_node_reports(report, out, stem)
        written.append({"bundle": bundle, "report": report, "md": paths[0], "html": paths[1], "json": paths[2]})
    return written


def file_stem(bundle: str) -> str:
    """A bundle id (text from a results file) as one plain file name: "user_model/net" -> "user_model__net"."""
    return re.sub(r"[^A-Za-z0-9._=+,-]+", "_", bundle.replace("/", "__")).strip(".") or "_"


def _first(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:300] if lines else ""
