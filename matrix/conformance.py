"""The conformance table: which Q/DQ operator forms each engine version accepts, and whether it computes them right.

Its cells are the conformance bundles' (cases.onnx_node_tests: the onnx package's node tests for the quantization
operators, each at its own opset and converted to every opset the engines read; and cases.qdq_companion: the int8
forms the TensorRT family takes, with zero points 0, at every operator version), run by the cell runner like every
other bundle; the merge keeps them apart from the catalogue's views (`MergeResult.conformance`), and this module
says each one in its own words:

    right        it ran, and every output matches ONNX's expected output (integers exactly, floats within half a step)
    wrong        it ran, and an output differs: by N steps (the worst element), or in its shape
    refused      the engine refused it at load, build or run: its own reason, said once under the table
    built only   TensorRT-RTX built a plan ahead of time; no GPU here runs it, so its numerics are not known
    crashed      the engine's process died on it
    not run      the engine could not run here (no NVIDIA GPU): nothing is said about the form
    harness error  the suite's own code failed on it: nothing is said about the engine

A node test the converter (or the checker) could not bring to an opset is "not converted" there, for every engine,
with the converter's reason (the bundles' manifest, generators/onnx_node_tests.py). Reports and the version diff
(`python -m matrix diff`) read this module; it imports no engine and not onnx.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from cases.onnx_node_tests import ID, OPS
from cases.qdq_companion import FORMS
from cases.qdq_companion import ID as COMPANION
from core.cell import Cell
from core.engines import ENGINES, family
from core.outcome import outcome
from core.words import CONFORMANCE, CONFORMANCE_WORDS, first_line, many
from matrix.merge import CONFORMANCE as CASES  # the node tests and the int8 companion: the page's cases, kept apart
from matrix.merge import Column, column_key, never_run, variant_order, version_key

RIGHT, WRONG, REFUSED, BUILT, CRASHED, NOT_RUN, NOT_APPLICABLE, HARNESS = WORDS = CONFORMANCE
# How the companion's headline says each word of a form, per TensorRT version (_companion_forms).
# A crash counts with the refusals.
FORM_WORDS = {RIGHT: "builds and computes right", WRONG: "builds and computes wrong",
              BUILT: "builds (a plan only: no GPU here runs it)", REFUSED: "refuses", NOT_RUN: "not run"}
TENSORRT = family("tensorrt")  # TensorRT and TensorRT-RTX: the engines the headline answers for
GPU_RUN = f"a GPU run: ONLY_CASES={COMPANION} tools/gpu-round.sh observe LABEL, docs/gpu-recipe.md"
MANIFEST = Path(ID) / "conformance.json"  # under a bundles root: generators.onnx_node_tests.MANIFEST


def is_conformance(cell: Cell) -> bool:
    return cell.case in CASES


def read_manifest(bundles: Optional[Path]) -> Dict[str, Any]:
    """The conformance bundles' manifest under a bundles root ({} where there is none: a report of results alone)."""
    from generators.bundle import read_json_object

    return {} if bundles is None else read_json_object(Path(bundles) / MANIFEST)


@dataclass(frozen=True)
class Entry:
    """One node test at one opset on one column, in its word."""

    test: str
    op: str
    form: str
    opset: int
    word: str
    steps: Optional[float] = None  # wrong: the worst element's error in steps (None: a shape or a missing output)
    reason: str = ""  # refused, crashed, not run, harness error: the engine's own reason; wrong: the mismatch
    stage: str = ""  # refused, crashed: the stage that failed (load, build, run)

    @property
    def text(self) -> str:
        """The entry as a table says it, without its reason: "right", "wrong by 3 steps", "refused at load"."""
        if self.word == WRONG:
            return f"wrong by {_steps(self.steps)}" if self.steps is not None else WRONG  # its reason says how
        if self.word in (REFUSED, CRASHED) and self.stage:
            return f"{self.word} at {self.stage}"
        return self.word


def entry_of(cell: Cell) -> Entry:
    """A conformance cell in its word (module docstring), with the engine's reason where there is one."""
    p = cell.params
    said = outcome(cell)
    word = CONFORMANCE_WORDS[said.kind]  # a failed cell is wrong where its outputs were compared, else refused
    if cell.status == "fail":
        compared = word == WRONG
        said_why = cell.engine_reason or cell.error_line or first_line(cell.error) or cell.reason
        reason = first_line(cell.error) if compared else said_why
        steps = cell.max_error_steps if compared and cell.max_error_steps not in (None, float("inf")) else None
        return Entry(str(p.get("test", "")), str(p.get("op", "")), str(p.get("form", "")), int(p.get("opset", 0)),
                     word, steps, reason, "" if compared else said.failed_stage)
    reason = cell.reason if word in (NOT_RUN, NOT_APPLICABLE, CRASHED, HARNESS) else ""
    return Entry(str(p.get("test", "")), str(p.get("op", "")), str(p.get("form", "")), int(p.get("opset", 0)),
                 word, None, reason, said.failed_stage if word == CRASHED else "")


def _steps(steps: Optional[float]) -> str:
    if steps is None:
        return "?"
    value = f"{steps:.0f}" if float(steps).is_integer() else f"{steps:.3g}"
    return f"{value} step" + ("" if value == "1" else "s")


# ---- the view ---------------------------------------------------------------------------------------------------


def column_title(col: Column) -> str:
    """"ONNX Runtime 1.31.1", "TensorRT for RTX 1.7.1.116 · target=SM89", "TensorRT 8.6.0 · observed on NVIDIA H100
    80GB HBM3 (sm_90)": an engine version as the table heads it, and where it ran when not on this machine."""
    title = ENGINES[col.engine].title if col.engine in ENGINES else col.engine
    observed = f" · observed on {col.hardware}" if col.source == "observed" else ""  # a committed GPU run, not here
    return f"{title} {col.engine_version}" + (f" · {col.variant_label}" if col.variant else "") + observed


def _engine_order(col: Column) -> Tuple[Any, ...]:
    cpu_first = {"cpu": 0, "aot": 1, "nvidia-gpu": 2}
    device = ENGINES[col.engine].device if col.engine in ENGINES else "~"
    return (cpu_first.get(device, 3), col.engine, version_key(col.engine_version), variant_order(col.variant),
            col.hardware, col.source)


def conformance_view(cells: Sequence[Cell], manifest: Mapping[str, Any]) -> Dict[str, Any]:
    """Everything the conformance page, its section in the matrix report and conformance.json show: the node tests'
    tables and, beside them on the same engine version columns, the int8 companion's (cases.qdq_companion)."""
    by_set: Dict[str, Dict[Any, Dict[Tuple[str, int], Entry]]] = {ID: {}, COMPANION: {}}
    columns: Dict[Any, Column] = {}
    for cell in cells:
        key = column_key(cell)
        columns.setdefault(key, Column(*key))
        entry = entry_of(cell)
        by_set[COMPANION if cell.case == COMPANION else ID].setdefault(key, {})[(entry.test, entry.opset)] = entry
    not_converted = {(e["test"], int(e["opset"])): str(e.get("refused") or "")
                     for e in manifest.get("entries") or [] if not e.get("bundle")}
    ordered = sorted(columns.values(), key=_engine_order)
    reasons = _Reasons()
    idle, shown = [], []
    for col in ordered:
        entries = [e for s in by_set.values() for e in s.get(col.key, {}).values()]
        if {e.word for e in entries} <= {NOT_RUN} and len({e.reason for e in entries}) == 1:
            idle.append(col)
        else:
            shown.append(col)
    per_target = [c for c in shown if _target(c)]
    main = [c for c in shown if c not in per_target]
    node = _set_view(by_set[ID], _tests([c for c in cells if c.case != COMPANION], manifest), not_converted, main,
                     per_target, reasons)
    companion = _set_view(by_set[COMPANION], _tests([c for c in cells if c.case == COMPANION], {}), {}, main,
                          per_target, reasons)
    companion["forms"] = _companion_forms(main, by_set[COMPANION])
    companion["headline"] = _companion_headline(companion, sum(bool(by_set[COMPANION].get(c.key)) for c in main))
    idle_groups: Dict[str, List[str]] = {}
    never = never_run(cells)  # a version no machine of this project could install says so, not "no NVIDIA GPU"
    for col in idle:
        why = never.get((col.engine, col.engine_version))
        first = next(e for s in by_set.values() for e in s.get(col.key, {}).values())
        idle_groups.setdefault(f"never run: {why}" if why else first.reason, []).append(column_title(col))
    records = [dict(_entry_record(e), column=column_title(col), set=name) for col in ordered
               for name, s in by_set.items()
               for e in sorted(s.get(col.key, {}).values(), key=lambda e: (e.op, e.test, e.opset))]
    side = [{"column": column_title(c), "node_tests": _counts(list(by_set[ID].get(c.key, {}).values())),
             "companion": _counts(list(by_set[COMPANION].get(c.key, {}).values()))} for c in main]
    return {
        **node, "columns": [column_title(c) for c in main], "companion": companion, "side_by_side": side,
        "idle": [{"reason": r, "columns": cs} for r, cs in idle_groups.items()],
        "not_converted": len(not_converted), "reasons": reasons.listing(),
        "onnx": str((manifest.get("libraries") or {}).get("onnx", "")), "entries": records,
    }


def _set_view(by_column: Mapping[Any, Mapping[Tuple[str, int], Entry]], tests: Mapping[str, Dict[str, Any]],
              not_converted: Mapping[Tuple[str, int], str], main: Sequence[Column], per_target: Sequence[Column],
              reasons: _Reasons) -> Dict[str, Any]:
    """One set's tables (the node tests', or the companion's) over the page's columns: per-opset counts, a table per
    operator, the per-target table, and its totals."""
    opsets = sorted({o for t in tests.values() for o in t["opsets"]} | {o for _, o in not_converted})
    ops = []
    for op in OPS:
        rows = []
        for name, t in tests.items():
            if t["op"] != op:
                continue
            rows.append({"test": name, "form": t["form"], "opsets": t["opsets"],
                         "not_converted": [{"opset": o, "reason": not_converted[(name, o)],
                                            "ref": reasons.ref(not_converted[(name, o)])}
                                           for o in opsets if (name, o) in not_converted],
                         "entries": [_phrase(by_column.get(c.key, {}), name, t["opsets"], reasons) for c in main]})
        if rows:
            ops.append({"op": op, "rows": rows})
    have = [c for c in main if by_column.get(c.key)]
    return {"tests": len(tests), "bundles": sum(len(t["opsets"]) for t in tests.values()), "opsets": opsets,
            "ops": ops, "summary": [_summary_row(c, by_column[c.key], opsets) for c in have],
            "targets": _target_table([c for c in per_target if by_column.get(c.key)], by_column, tests, reasons),
            "totals": {w: sum(1 for c in [*main, *per_target] for e in by_column.get(c.key, {}).values()
                              if e.word == w) for w in WORDS}}


def _companion_headline(companion: Mapping[str, Any], columns: int) -> str:
    """One line: how many companion tests and bundles, how many entries of each word."""
    said = ", ".join(f"{n} {w}" for w, n in companion["totals"].items() if n)
    return (f"{many(companion['tests'], 'test')} of {many(len(FORMS), 'form')} at "
            f"{many(len(companion['opsets']), 'opset')} ({many(companion['bundles'], 'bundle')}), over the "
            f"{many(columns, 'engine version')} below that ran them: {said or 'no entries yet'}")


def _companion_forms(main: Sequence[Column], by_column: Mapping[Any, Mapping[Tuple[str, int], Entry]]) \
        -> List[Dict[str, Any]]:
    """Per TensorRT and TensorRT-RTX version on the page: which of the companion's forms it builds and computes right,
    builds and computes wrong, builds only (no GPU here runs the plan), refuses or did not run, each with how many of
    the form's bundles; a version without companion cells says so."""
    answers = []
    for col in main:
        if family(col.engine) != TENSORRT:
            continue
        entries = list(by_column.get(col.key, {}).values())
        groups: Dict[str, List[str]] = {w: [] for w in FORM_WORDS}
        for form in FORMS:
            of = [e for e in entries if e.form == form]
            for word in FORM_WORDS:
                n = sum(e.word == word or (word == REFUSED and e.word == CRASHED) for e in of)
                if n:
                    groups[word].append(f"{form} ({n} of {len(of)})")
        said = "; ".join(f"{FORM_WORDS[w]}: {', '.join(forms)}" for w, forms in groups.items() if forms)
        answers.append({"column": column_title(col), "groups": groups,
                        "text": said or f"no companion cell yet ({GPU_RUN})"})
    return answers


def _tests(cells: Sequence[Cell], manifest: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Every node test (the manifest's, else the cells'), in operator order, with its form and converted opsets."""
    found: Dict[str, Dict[str, Any]] = {}
    for e in manifest.get("entries") or []:
        t = found.setdefault(e["test"], {"op": e["op"], "form": e["form"], "opsets": []})
        if e.get("bundle"):
            t["opsets"].append(int(e["opset"]))
    for c in cells:
        p = c.params
        t = found.setdefault(str(p.get("test")), {"op": str(p.get("op")), "form": str(p.get("form")), "opsets": []})
        if int(p.get("opset", 0)) not in t["opsets"]:
            t["opsets"].append(int(p.get("opset", 0)))
    for t in found.values():
        t["opsets"].sort()
    order = {op: i for i, op in enumerate(OPS)}
    return dict(sorted(found.items(), key=lambda kv: (order.get(kv[1]["op"], len(OPS)), kv[0])))


class _Reasons:
    """Each distinct reason numbered once, in the order the tables first name it."""

    def __init__(self) -> None:
        self._refs: Dict[str, int] = {}

    def ref(self, text: str) -> int:
        if not text:
            return 0
        return self._refs.setdefault(text, len(self._refs) + 1)

    def listing(self) -> List[Dict[str, Any]]:
        return [{"ref": n, "text": t} for t, n in self._refs.items()]


def _phrase(entries: Mapping[Tuple[str, int], Entry], test: str, opsets: Sequence[int],
            reasons: _Reasons) -> Dict[str, Any]:
    """One table entry: the test's opsets grouped by what happened ("right" alone where every opset agrees)."""
    groups: Dict[Tuple[str, int], List[int]] = {}
    texts: Dict[Tuple[str, int], str] = {}
    words: Dict[Tuple[str, int], str] = {}
    for opset in opsets:
        e = entries.get((test, opset))
        text, word, ref = ("no cell", "", 0) if e is None else (e.text, e.word, reasons.ref(e.reason)
                                                                   if _says_why(e) else 0)
        key = (text, ref)
        groups.setdefault(key, []).append(opset)
        texts[key], words[key] = text, word
    parts = [{"text": texts[k], "word": words[k], "ref": k[1], "opsets": v,
              "all": len(groups) == 1} for k, v in groups.items()]
    return {"parts": parts, "word": parts[0]["word"] if len(parts) == 1 else "mixed"}


def _says_why(e: Entry) -> bool:
    """Whether an entry's reason is worth a note: a refusal, a crash, an idle or harness cell, and a wrong output whose
    steps could not be counted (its shape, a missing output); "wrong by N steps" says it all."""
    return e.word not in (RIGHT, BUILT) and not (e.word == WRONG and e.steps is not None)


def _summary_row(col: Column, entries: Mapping[Tuple[str, int], Entry], opsets: Sequence[int]) -> Dict[str, Any]:
    """Counts per word, per opset and in all, for one column."""
    per = []
    for opset in opsets:
        at = [e for e in entries.values() if e.opset == opset]
        per.append(_counts(at))
    return {"column": column_title(col), "per_opset": per, "all": _counts(list(entries.values())),
            "tests": len({e.test for e in entries.values()})}


def _counts(entries: Sequence[Entry]) -> Dict[str, Any]:
    counts = {w: sum(e.word == w for e in entries) for w in WORDS}
    return {"n": len(entries), "counts": {w: n for w, n in counts.items() if n},
            "text": ", ".join(f"{n} {w}" for w, n in counts.items() if n)}


def _target_table(columns: Sequence[Column], by_column: Mapping[Any, Mapping[Tuple[str, int], Entry]],
                  tests: Mapping[str, Dict[str, Any]], reasons: _Reasons) -> Dict[str, Any]:
    """TensorRT-RTX per target: a row per test and version, a column per target (the forms built once per target)."""
    if not columns:
        return {}
    targets = sorted({c.variant for c in columns}, key=variant_order)
    versions = sorted({(c.engine, c.engine_version) for c in columns}, key=lambda v: version_key(v[1]))
    rows = []
    for name, t in tests.items():
        for engine, version in versions:
            cols = {c.variant: c for c in columns if (c.engine, c.engine_version) == (engine, version)}
            if not any((name, o) in by_column[c.key] for c in cols.values() for o in t["opsets"]):
                continue
            rows.append({"test": name, "form": t["form"], "op": t["op"], "version": f"{version}",
                         "entries": [_phrase(by_column[cols[v].key], name, t["opsets"], reasons) if v in cols
                                     else {"parts": [], "word": ""} for v in targets]})
    opsets = sorted({o for t in tests.values() for o in t["opsets"]})
    summary = [dict(_summary_row(c, by_column[c.key], opsets), target=_target(c), version=c.engine_version)
               for c in sorted(columns, key=lambda c: (version_key(c.engine_version), variant_order(c.variant)))]
    return {"targets": [dict(v)["target"] for v in targets], "rows": rows, "summary": summary,
            "engine": ENGINES["tensorrt-rtx"].title if "tensorrt-rtx" in ENGINES else "tensorrt-rtx"}


def _target(col: Column) -> str:
    """The architecture a column was built for ahead of time (its variant's `target`), "" for none."""
    return dict(col.variant).get("target", "")


def _entry_record(e: Entry) -> Dict[str, Any]:
    return {"test": e.test, "op": e.op, "form": e.form, "opset": e.opset, "word": e.word, "text": e.text,
            "steps": e.steps, "stage": e.stage, "reason": e.reason}


def headline(view: Mapping[str, Any]) -> str:
    """One line: how many node tests and bundles, how many entries of each word."""
    said = ", ".join(f"{n} {w}" for w, n in view["totals"].items() if n)
    return (f"{many(view['tests'], 'node test')} of onnx {view['onnx'] or '(version unknown)'} at "
            f"{many(len(view['opsets']), 'opset')} ({many(view['bundles'], 'bundle')}, "
            f"{view['not_converted']} not converted), over the {many(len(view['columns']), 'engine version')} "
            f"below that ran them: {said or 'no entries yet'}")


# ---- the version diff ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One node test at one opset whose entry differs between two versions of one engine (on one setting)."""

    test: str
    opset: int
    setting: str
    before: str
    after: str
    was: str = ""  # the older side's reason ("" where its word says it all)
    now: str = ""  # the newer side's


def diff_entries(cells: Sequence[Cell], engine: str, from_version: str, to_version: str) -> Tuple[List[Change], int]:
    """Every conformance entry that differs between two versions of one engine, per setting both ran on; and how
    many entries were compared (an entry not run on either side is not)."""
    sides: Dict[str, Dict[Tuple[str, str, int], Entry]] = {from_version: {}, to_version: {}}
    for c in cells:
        if is_conformance(c) and c.engine == engine and c.engine_version in sides:
            e = entry_of(c)
            test = e.test if c.case == ID else f"{COMPANION}/{e.test}"  # a companion test may share a node test's name
            sides[c.engine_version][(c.setting, test, e.opset)] = e
    changes, compared = [], 0
    for key in sorted(set(sides[from_version]) & set(sides[to_version])):
        a, b = sides[from_version][key], sides[to_version][key]
        if {a.word, b.word} & {NOT_RUN, NOT_APPLICABLE}:
            continue  # not run, or a model this version cannot read: never a change
        compared += 1
        was, now = (a.reason if _says_why(a) else ""), (b.reason if _says_why(b) else "")
        if (a.text, was) != (b.text, now):
            changes.append(Change(key[1], key[2], key[0], a.text, b.text, was, now))
    return changes, compared


def diff_markdown(cells: Sequence[Cell], engine: str, from_version: str, to_version: str) -> str:
    """The conformance section of `python -m matrix diff`: the entries that changed, grouped by what they became
    ("refused at load -> right"), each group with the reasons it lost or gained and its tests and opsets; "" where no
    conformance cell of both versions is there to compare."""
    from matrix.safe import md_cell

    changes, compared = diff_entries(cells, engine, from_version, to_version)
    if not compared:
        return ""
    settings = sorted({c.setting for c in changes})
    on = f" on {md_cell(settings[0])}" if len(settings) == 1 else ""
    lines = [f"## Conformance: {md_cell(engine)} {md_cell(from_version)} → {md_cell(to_version)}", ""]
    if not changes:
        return "\n".join(lines + [f"No conformance entry changed ({many(compared, 'entry', 'entries')} compared: "
                                  "the onnx node tests for the quantization operators and the int8 companion, per "
                                  "opset).", ""])
    lines += [f"**{many(len(changes), 'entry', 'entries')} changed of {compared} compared{on}** (the onnx node tests "
              f"for the quantization operators and the int8 companion, {COMPANION}/..., per opset; "
              "docs/conformance.md says what each word means).", ""]
    groups: Dict[Tuple[str, str], List[Change]] = {}
    for c in changes:
        groups.setdefault((c.before, c.after), []).append(c)
    for (before, after), members in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        where = _where(members, len(settings) > 1)
        lines.append(f"- **{len(members)} × {md_cell(before)} → {md_cell(after)}**: {where}")
        for side, word in (("was", "was"), ("now", "now")):
            said: Dict[str, int] = {}
            for m in members:
                if getattr(m, side):
                    said[getattr(m, side)] = said.get(getattr(m, side), 0) + 1
            for text, n in sorted(said.items(), key=lambda kv: -kv[1]):
                lines.append(f"  - {word}: {_code(text)}" + (f" ({n})" if len(said) > 1 else ""))
    return "\n".join(lines + [""])


def _where(members: Sequence[Change], per_setting: bool) -> str:
    """"quantizelinear at 21, 23; matmulinteger at 25": each test once, with its opsets."""
    from matrix.safe import md_cell

    tests: Dict[Tuple[str, str], List[int]] = {}
    for m in members:
        tests.setdefault((m.test, m.setting if per_setting else ""), []).append(m.opset)
    return "; ".join(f"{md_cell(t)} at {', '.join(map(str, sorted(o)))}" + (f" [{md_cell(s)}]" if s else "")
                     for (t, s), o in tests.items())


def _code(text: str) -> str:
    from matrix.safe import md_code

    return md_code(text[:200]).replace("|", "\\|")
