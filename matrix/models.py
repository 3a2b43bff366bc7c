"""Your models as one table: a row per user model, a column per engine version and setting, a sentence per cell.

Read from the per-node reports (matrix.nodes): "5/5 INT8", "4 of 5 INT8 (ahead-of-time plan)", or the failure and
its reason, "parse fails: INT32 bias DQ (b_dw_DequantizeLinear)". The failing node is the one the engine's error
names (the cell's `failing_node`), never a guess. The reason is the TensorRT lint's rule where the lint predicted
this failure at that node in that column, else the catalogue signature the cell matched, else the engine's own
words; a rule and a signature are said in their own few words (check.lint's rule registry, Signature.short); a long
reason is a numbered note under the table, said once. Every cell links to its model's per-node report.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from core.engines import ENGINES
from core.words import STATUS_WORDS, clip, fails_at, say_list
from matrix.merge import version_key

NOTE_AFTER = 48  # characters: a longer reason is a numbered note under the table
Key = Tuple[str, str, str]


def models_view(models: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The table: models ({bundle, report, html, md}, report being a matrix.nodes report) by (engine, version,
    setting), each cell's text, shade and note number."""
    keys: Dict[Key, Dict[str, Any]] = {}
    for m in models:
        for col in m["report"].get("columns") or []:
            keys.setdefault(_key(col), col)
    order = sorted(keys, key=lambda k: (_engine_rank(k[0]), k[0], version_key(k[1]), k[2]))
    notes: List[str] = []
    rows = []
    for m in sorted(models, key=lambda m: _model(m).lower()):
        report = m["report"]
        found = {_key(col): col for col in report.get("columns") or []}
        rows.append({"model": _model(m), "form": form_words(report), "bundle": m["bundle"], "html": m["html"],
                     "md": m["md"], "cells": [_cell(found[k], report, notes) if k in found else None for k in order]})
    columns = [{"engine": e, "title": ENGINES[e].title if e in ENGINES else e, "version": v, "setting": s}
               for e, v, s in order]
    summary = summarise(rows, columns, notes)
    return {"columns": columns, "rows": rows, "notes": [{"n": i + 1, "text": t} for i, t in enumerate(notes)],
            "summary": summary[:SHOWN], "left_out": len(summary[SHOWN:]), "counts": _counts(summary)}


SHOWN = 40  # models on the main page, worst first; every model, by every column, is on models.md and models.html
# a cell's tone from worst to best: crashed, failed, no INT8, some INT8, all INT8, nothing ran
TONES = ("crash", "fail", "none", "some", "all", "idle")
WORST_WORDS = {"crash": "crashing", "fail": "failing", "none": "without INT8", "some": "partly INT8",
               "all": "all INT8", "idle": "not run anywhere"}
WHERE_SHOWN = 3  # engine versions named beside a model's worst outcome before "and N more"


def summarise(rows: Sequence[Mapping[str, Any]], columns: Sequence[Mapping[str, Any]],
              notes: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """One line per model, worst first: its worst cell's words (a long reason clipped: the side page has it whole) and
    the engine versions that give them, and how many of its columns ran every quantized node in INT8."""
    out = []
    for row in rows:
        cells = [(c, col) for c, col in zip(row["cells"], columns) if c]
        if not cells:
            continue
        tone = min((c["tone"] for c, _ in cells), key=TONES.index)
        worst = [(c, col) for c, col in cells if c["tone"] == tone]
        words = _with_note(worst[0][0], notes)
        # the versions that say these very words; those as bad in other words are named apart (a user trial read an
        # OpenVINO version beside TensorRT for RTX's zero-point assertion, which OpenVINO never gave)
        where = list(dict.fromkeys(f"{col['title']} {col['version']}" for c, col in worst
                                   if _with_note(c, notes) == words))
        other = [v for v in dict.fromkeys(f"{col['title']} {col['version']}" for _, col in worst) if v not in where]
        said = _some(where) + (f"; {WORST_WORDS[tone]} otherwise on {_some(other)}" if other else "")
        out.append({"model": row["model"], "form": row["form"], "html": row["html"], "md": row["md"], "tone": tone,
                    "worst": words, "where": said, "columns": len(cells),
                    "all_int8": sum(c["tone"] == "all" for c, _ in cells)})
    return sorted(out, key=lambda r: (TONES.index(r["tone"]), r["model"].lower()))


def _some(versions: Sequence[str]) -> str:
    return say_list(list(versions[:WHERE_SHOWN]) + ([f"{len(versions) - WHERE_SHOWN} more"]
                                                    if len(versions) > WHERE_SHOWN else []))


def _with_note(cell: Mapping[str, Any], notes: Sequence[str]) -> str:
    """A cell's words with its note's reason, clipped to NOTE_AFTER characters."""
    if not cell["note"]:
        return str(cell["text"])
    return f"{cell['text']}: {clip(notes[cell['note'] - 1], NOTE_AFTER)}"


def _counts(summary: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """How many models have each worst outcome, worst first: "3 failing, 27 all INT8"."""
    return [{"tone": t, "words": WORST_WORDS[t], "n": sum(r["tone"] == t for r in summary)}
            for t in TONES if any(r["tone"] == t for r in summary)]


def form_words(report: Mapping[str, Any]) -> str:
    """A model's quantization form other than Q/DQ, and the catalogue case that documents it: "dynamic quantization
    (quantize_dynamic), seed 002"; "" for a Q/DQ or float model."""
    said = []
    for f in report.get("forms") or []:
        words = str(f.get("words") or f.get("form") or "")
        said.append(f"{words}, seed {f['seed']}" if f.get("seed") else words)
    return "; ".join(w for w in said if w)


def column_words(col: Mapping[str, Any], predictions: Optional[Mapping[str, Any]] = None) -> Dict[str, str]:
    """One column of a node report in a few words: {text, reason (said after text), node, tone}."""
    status, failed = col.get("status", ""), col.get("failed_stage", "")
    int8, total = col.get("int8", 0), col.get("total", 0)
    tone = "all" if total and int8 == total else "some" if int8 else "none"
    if status == "built":
        return {"text": f"{int8} of {total} INT8 (ahead-of-time plan)", "reason": "", "node": "", "tone": tone}
    if status == "pass":
        text = f"{int8}/{total} INT8" if col.get("ran") else "passes, no per-node evidence"
        return {"text": text, "reason": "", "node": "", "tone": tone if col.get("ran") else "idle"}
    if status == "fail" and failed == "compare":
        worst = col.get("max_error_steps")
        if (col.get("output_stats") or {}).get("measure") == "network":  # the statistics: said after, or a note
            return {"text": f"{int8}/{total} INT8; outputs differ", "reason": col.get("numerics", ""), "node": "",
                    "tone": "fail"}
        off = f"outputs off by {worst:.3g} steps" if isinstance(worst, (int, float)) else "outputs differ"
        return {"text": f"{int8}/{total} INT8; {off}", "reason": "", "node": "", "tone": "fail"}
    if status == "fail":
        node = col.get("failing_node", "")
        return {"text": fails_at(failed or "load", str(col.get("engine", ""))), "node": node, "tone": "fail",
                "reason": reason(col, node, predictions)}
    if status == "crashed":
        return {"text": "crashed", "node": "", "tone": "crash",
                "reason": col.get("says") or col.get("reason") or col.get("error", "")}
    return {"text": STATUS_WORDS[status], "node": "", "tone": "idle",
            "reason": col.get("reason") or col.get("error", "")}


def reason(col: Mapping[str, Any], node: str, predictions: Optional[Mapping[str, Any]]) -> str:
    """Why a column failed: the lint rule that predicted it at that node in this very column (engine, version,
    hardware, variant), the catalogue signature it matched, or the engine's own words."""
    failed = col.get("failed_stage") or "load"
    observed = fails_at(failed, str(col.get("engine", "")))
    for row in (predictions or {}).get("rows") or []:
        if (node and row.get("node") == node and row.get("ran") and row.get("column") == col.get("column")
                and row.get("predicted") == observed):
            return row.get("words") or row["rule"].replace("_", " ")
    if col.get("signature"):
        return col.get("signature_short") or col["signature"].replace("_", " ")
    return col.get("says") or col.get("error", "")


def _cell(col: Mapping[str, Any], report: Mapping[str, Any], notes: List[str]) -> Dict[str, Any]:
    said = column_words(col, report.get("predictions"))
    why, note = said["reason"], 0
    if len(why) > NOTE_AFTER:
        if why not in notes:
            notes.append(why)
        note, why = notes.index(why) + 1, ""
    text = said["text"] + (f": {why}" if why else "") + (f" ({said['node']})" if said["node"] else "")
    title = " · ".join(x for x in (col.get("verdict", ""), col.get("error", "")) if x)
    return {"text": text, "note": note, "tone": said["tone"], "title": title}


def _key(col: Mapping[str, Any]) -> Key:
    return (str(col.get("engine", "")), str(col.get("version", "")), str(col.get("hardware", "")))


def _model(m: Mapping[str, Any]) -> str:
    return str(m["report"].get("model") or m["bundle"])


def _engine_rank(engine: str) -> int:
    names = list(ENGINES)
    return names.index(engine) if engine in names else len(names)
