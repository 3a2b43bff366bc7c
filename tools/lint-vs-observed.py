"""The lint's predictions against observed cells, scored on models whose cells it did not learn from, as one page.

    python tools/lint-vs-observed.py --engine tensorrt --archs \
        --cells reports/observed/nvidia-h100/trt-8.6.0.jsonl ... --out reports/observed/lint-vs-tensorrt.md
    python tools/lint-vs-observed.py --engine tensorrt --case bias_add_after_qdq --cells ...

Every finding says its basis (check.lint.Finding.basis, .case): "documented" (an upstream source) or "observed" (read
from cells this project ran, or from an expectation whose source is such cells), and the catalogue case it came from.
The held-out split leaves out, for each model, the observed findings of the cases made from that model's cells:

- a catalogue case's reproducers (every case with cells in the files, or those --case names), met with the cells of
  their own bundle ids, are predicted without that case's observed findings: leave one case out;
- the producer models (`python -m check.producers`, built here unless --models names a folder) and, with --archs, the
  architecture models (check.arch_models), without the cases MADE_FROM names for them;
- with --third-party DIR, third-party models quantized as users do (never committed: each observation folder's README
  says which wheel and recipe), without the cases MADE_FROM names for them.

A documented finding is never left out: no cell of ours made it. A network that failed to parse or build where no
held-out finding foresaw a failure is one miss (matrix.predict.unforeseen_failures). The whole lint's figure on the
same cells, which it learned from, is one line under the headline and says so. Exit status 1 where a held-out
prediction missed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from check.lint import Finding, basis_words, lint_model, lint_path  # noqa: E402
from check.observations import ResultsFileError, engine_cells  # noqa: E402
from core.cli import ArgumentParser  # noqa: E402
from core.engines import LINT_ENGINES  # noqa: E402
from core.engines import title as engine_title  # noqa: E402
from matrix.merge import version_key  # noqa: E402
from matrix.predict import BUILDS, SHOWN_NODES, Comparison, applies, compare, network_failure  # noqa: E402

# The cases made from a model's own cells, by the model's file-name prefix, and where the catalogue says so: what the
# held-out split leaves out for that model.
MADE_FROM: Dict[str, Tuple[Tuple[str, ...], str]] = {
    "ort_transformer": (("bias_add_after_qdq", "scalar_quantized_constant"),
                        "seed 018 was made from its bias Adds on an H100 (cases/bias_add_after_qdq.py); seed 025's "
                        "TensorRT-RTX expectation is its 1/sqrt(d) refused (cases/scalar_quantized_constant.py)"),
    "yolo_csp": (("silu_qdq",), "seed 024 was made from the YOLO-style model's build failures, whose cells are two of "
                 "its expectations' sources (cases/silu_qdq.py)"),
    "bert_encoder": (("scalar_quantized_constant",), "seed 025 was made from the BERT layer's 0-d GELU constants "
                     "(cases/scalar_quantized_constant.py)"),
    "ddddocr_det": (("two_conv_fanout_qdq",), "seed 032 was reduced from the ddddocr detector's build failure "
                    "(cases/two_conv_fanout_qdq.py)"),
}
VERDICT = {True: "agrees", False: "misses", None: "cannot say"}


@dataclass(frozen=True)
class Target:
    """One model the page scores: a catalogue reproducer or a user model, with the cells of its bundle ids."""

    title: str  # a reproducer's bundle id, or a model's file name
    kind: str  # "catalogue", "producer" or "architecture"
    # the whole lint, this engine's findings, before matrix.predict.reached: compare leaves out what an earlier
    # predicted failure keeps the engine from after the split, so a left-out failure masks nothing
    findings: Tuple[Finding, ...]
    cells: Tuple[Mapping[str, Any], ...]
    left_out: Tuple[str, ...]  # the cases whose observed findings the held-out split leaves out

    @property
    def held_out(self) -> List[Finding]:
        """The findings without what was learned from this model's cells: its cases' observed findings, and for a user
        model a source rule's observations too (the TensorRT-RTX INT32 bias refusal was read from the producer
        models' cells)."""
        return [f for f in self.findings if not f.learned_from(self.left_out)
                and not (self.kind != "catalogue" and f.basis == "observed" and not f.case)]


def left_out_for(model_name: str) -> Tuple[str, ...]:
    """The cases made from a user model's cells (MADE_FROM, by file-name prefix)."""
    return tuple(c for prefix, (cases, _) in MADE_FROM.items() if model_name.startswith(prefix) for c in cases)


def user_targets(models: Optional[Path], kind: str, by_bundle: Mapping[str, List[Mapping[str, Any]]],
                 engine: str) -> Tuple[List[Target], List[str]]:
    """The user models of a folder that have cells of this engine, and the names of those that have none."""
    from cases.user_model import bundle_ids_for

    targets, none = [], []
    for model in sorted(models.glob("*.onnx")) if models else []:
        cells = [c for b in bundle_ids_for(model) for c in by_bundle.get(b, []) if c.get("engine") == engine]
        if not cells:
            none.append(model.name)
            continue
        findings = tuple(f for f in lint_path(model, reach=False) if f.engine == engine)  # compare says reached
        targets.append(Target(model.name, kind, findings, tuple(cells), left_out_for(model.name)))
    return targets, none


def catalogue_targets(by_bundle: Mapping[str, List[Mapping[str, Any]]], engine: str,
                      cases: Sequence[str] = ()) -> Tuple[List[Target], List[str]]:
    """Every catalogue reproducer with cells of this engine (of these cases, where named), built from its case and
    parameters, each leaving its own case out; and the bundle ids whose reproducer cannot be built today."""
    from cases import get_case
    from generators.write import build

    targets, unbuilt = [], []
    for bundle in sorted(by_bundle):
        cells = [c for c in by_bundle[bundle] if c.get("engine") == engine]
        case_id = str(cells[0].get("case", "")) if cells else ""
        if not cells or case_id == "user_model" or (cases and case_id not in cases):
            continue
        try:
            model = build(get_case(case_id), cells[0].get("params") or {}).model
        except (KeyError, ValueError) as e:  # a case or a parameter the catalogue no longer has
            unbuilt.append(f"{bundle} ({type(e).__name__}: {e})")
            continue
        findings = tuple(f for f in lint_model(model, reach=False) if f.engine == engine)  # compare says reached
        targets.append(Target(bundle, "catalogue", findings, tuple(cells), (case_id,)))
    return targets, unbuilt


def network_verdict(findings: Sequence[Finding], cell: Mapping[str, Any]) -> str:
    """One network on one engine version: "right" or "wrong" where the findings say whether it parses and builds,
    "silent" where none speaks about a cell that built, "cannot say" where the cell neither failed nor built. Where none
    speaks and the network failed, the lint said "no known problem matched": that is "wrong", a miss."""
    from core.outcome import outcome

    speaking = [f.predicted for f in findings if applies(vars(f), cell)]
    predicted = next((w for w in ("parse fails", "build fails") if w in speaking), BUILDS if speaking else "")
    said = outcome(cell)
    observed = network_failure(cell) or (BUILDS if said.worked or said.failed_stage in ("run", "compare") else "")
    if not predicted:
        return "wrong" if network_failure(cell) else "silent"
    if not observed:
        return "cannot say"
    return "right" if predicted == observed else "wrong"


def model_level(targets: Sequence[Target]) -> Tuple[Counter, List[str]]:
    """The user models (producer, architecture, third-party), each as one verdict: covered (at least one held-out
    finding for this engine) or not, and "right" where every cell's network verdict is right or silent on a network
    that built, "wrong" where any is wrong (a failure no held-out finding foresaw counts), "cannot say" otherwise;
    with the names of the models it got wrong."""
    found: Counter = Counter()
    wrong = []
    for t in targets:
        if t.kind == "catalogue":
            continue
        found["models"] += 1
        found["covered"] += bool(t.held_out)
        found["covered (whole lint)"] += bool(t.findings)
        verdicts = {network_verdict(t.held_out, cell) for cell in t.cells}
        verdict = "wrong" if "wrong" in verdicts else "right" if verdicts <= {"right", "silent"} else "cannot say"
        found[verdict] += 1
        if verdict == "wrong":
            wrong.append(t.title)
    return found, wrong


def model_lines(targets: Sequence[Target]) -> List[str]:
    """The page's model-level figures: coverage and held-out accuracy over the user models, with the split named."""
    found, wrong = model_level(targets)
    if not found["models"]:
        return []
    scored = found["right"] + found["wrong"]
    share = f"{found['right'] / scored:.0%}" if scored else "n/a"
    kinds = sorted({t.kind for t in targets if t.kind != "catalogue"})
    return ["## Per model (held out)", "",
            f"Over the {found['models']} {', '.join(kinds)} models with cells here. **Coverage:** "
            f"{found['covered']} of {found['models']} have at least one held-out finding for this engine "
            f"({found['covered (whole lint)']} with the whole lint). **Model-level accuracy, held out:** "
            f"{found['right']} of {scored} right ({share}), {found['cannot say']} cannot say. A model is right where, "
            "on every engine version it ran, a held-out finding foresaw its parse or build failure, or it built where "
            "none foresaw one; a model that failed where the lint said 'no known problem matched' is wrong."
            + (f" Wrong: {', '.join(wrong)}." if wrong else ""), "",
            "The split: the matchers are the catalogue cases' patterns, written from the cases' reproducers and the "
            "models MADE_FROM names (whose own cases are left out when they are scored, as under Held out); every "
            "other model is scored on findings written without it.", ""]


def counts(rows: Iterable[Comparison]) -> Counter:
    found: Counter = Counter()
    for r in rows:
        found[VERDICT[r.agrees]] += 1
        found["network misses"] += r.level == "model" and r.agrees is False
    return found


def say(c: Counter) -> str:
    return (f"**{c['misses']} misses** ({c['network misses']} of them a network that failed to parse or build where "
            f"no failure was foreseen), {c['agrees']} agree, {c['cannot say']} cannot say, over "
            f"{c['misses'] + c['agrees'] + c['cannot say']} predictions")


def grouped_rows(rows: Sequence[Tuple[str, Comparison]]) -> List[str]:
    """One line per model, rule, prediction, observation and verdict, with its nodes (the first SHOWN_NODES named)
    and the versions and GPUs that gave it; misses first, a network's row before its nodes'."""
    groups: Dict[tuple, Dict[str, Dict[str, set]]] = {}
    for model, r in rows:
        key = (r.agrees is not False, model, r.level != "model", r.rule, r.label, r.predicted, r.observed,
               VERDICT[r.agrees], basis_words(r.basis, r.case))
        found = groups.setdefault(key, {"nodes": {}, "where": {}})
        found["nodes"].setdefault(r.node, set())
        found["where"].setdefault(r.version, set()).add(short_gpu(r.hardware))
    lines = ["| model | nodes | rule | engine | versions [GPU] | predicted | observed | | basis |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key in sorted(groups):
        _, model, _, rule, label, predicted, observed, verdict, basis = key
        nodes = list(groups[key]["nodes"])
        ran = "; ".join(f"{v} [{', '.join(sorted(g))}]" for v, g in sorted(groups[key]["where"].items(),
                                                                             key=lambda vg: version_key(vg[0])))
        mark = "**miss**" if verdict == "misses" else verdict
        if rule:
            more = f" and {len(nodes) - SHOWN_NODES} more" if len(nodes) > SHOWN_NODES else ""
            shown = f"{len(nodes)}: " + ", ".join(f"`{n}`" for n in nodes[:SHOWN_NODES]) + more
        else:
            shown, rule = "the network", "no failure foreseen"
        lines.append(f"| {model} | {shown} | {rule} | {label} | {ran} | {predicted} | {observed} | {mark} | {basis} |")
    return lines


def section(t: Target) -> str:
    """Where a model is shown: its case for a reproducer, its own name for a user model."""
    return t.title.split("/", 1)[0] if t.kind == "catalogue" else t.title


def model_name(t: Target) -> str:
    """A reproducer by its parameters (its case heads the section), a user model by its file name."""
    return t.title.split("/", 1)[1] if t.kind == "catalogue" else t.title


def short_gpu(hardware: str) -> str:
    """"NVIDIA H100 80GB HBM3 (sm_90)" -> "H100", "no GPU: ahead-of-time build (...)" -> "no GPU": enough to tell the
    committed machines apart in a grouped row."""
    machine = hardware.split(":", 1)[0].replace("NVIDIA ", "")
    return machine if machine.startswith("no ") else (machine.split() or ["?"])[0]


def page(targets: Sequence[Target], cells: Sequence[Path], engine: str, command: str,
         left_out_notes: Sequence[str] = ()) -> Tuple[str, Counter]:
    """The page: the held-out figure first, then misses, a row per model, and every held-out prediction grouped."""
    held: Counter = Counter()
    learned: Counter = Counter()
    networks: Counter = Counter()
    per_model = []
    for t in targets:
        rows = compare(t.held_out, t.cells)
        c = counts(rows)
        held.update(c)
        learned.update(counts(compare(t.findings, t.cells)))
        net = Counter(network_verdict(t.held_out, cell) for cell in t.cells)
        networks.update(net)
        per_model.append((t, rows, c, net))
    shown = ", ".join(f"`{p}`" for p in cells)
    cases = sorted({t.title.split("/", 1)[0] for t in targets if t.kind == "catalogue"})
    made_from = [f"`{prefix}*` without {', '.join(f'`{c}`' for c in cs)} ({why})"
                 for prefix, (cs, why) in MADE_FROM.items()
                 if any(t.kind != "catalogue" and t.title.startswith(prefix) for t in targets)]
    lines = [f"# The lint's predictions against real {engine_title(engine)}", "",
             f"Made by `{command}` from the cells in {shown}.", "",
             "## Held out", "",
             "**The split: leave one case out, by provenance.** A finding is *documented* (an upstream source) or "
             "*observed* (read from cells this project ran, or from an expectation whose source is such cells), and "
             "names its catalogue case. Each catalogue case's reproducers are predicted without that case's observed "
             f"findings ({len(cases)} cases); each producer and architecture model without the cases made from its "
             "own cells" + (": " + "; ".join(made_from) if made_from else "") + ". Documented findings always stay.",
             "",
             f"{say(held)} on the held-out split. Per network and engine version (does it parse and build?): "
             f"{networks['right']} right, {networks['wrong']} wrong, {networks['silent']} with no held-out finding "
             f"for that version, {networks['cannot say']} that neither failed nor built.", "",
             f"Not held out, for comparison only: the whole lint on the same cells, which it learned from, "
             f"{say(learned).replace('**', '')}.", "",
             "\"not observable\": the network failed first, at a node where the lint predicted it would; "
             "a node predicted to run in a network that failed where nothing foresaw it shows the failure and "
             "\"cannot say\", and the network's row is the miss. \"cannot say\": the cell gives no evidence for "
             "that node.", ""]
    lines += [f"- {note}" for note in left_out_notes]
    lines += [""] if left_out_notes else []
    lines += model_lines(targets)
    sections: Dict[str, List[tuple]] = {}
    for entry in per_model:
        sections.setdefault(section(entry[0]), []).append(entry)
    misses = [(model_name(t), r) for t, rows, _, _ in per_model for r in rows if r.agrees is False]
    if misses:
        lines += ["## Misses (held out)", "", *grouped_rows(misses), ""]
    lines += ["## By case and model", "",
              "| case or model | kind | models | left out | misses | agree | cannot say | networks right / wrong / "
              "silent |", "| --- | --- | ---: | --- | ---: | ---: | ---: | --- |"]
    for name, entries in sections.items():
        c, net = sum((e[2] for e in entries), Counter()), sum((e[3] for e in entries), Counter())
        t = entries[0][0]
        lines.append(f"| {name} | {t.kind} | {len(entries)} | {', '.join(t.left_out) or 'nothing'} | {c['misses']} "
                     f"| {c['agrees']} | {c['cannot say']} | {net['right']} / {net['wrong']} / {net['silent']} |")
    lines += ["", "## Every held-out prediction", "",
              "Grouped by case (a reproducer by its parameters) or model; a model with no held-out finding for "
              "this engine has no row.", ""]
    for name, entries in sections.items():
        rows = [(model_name(t), r) for t, found, _, _ in entries for r in found]
        if rows:
            left = f" (left out: {', '.join(entries[0][0].left_out)})" if entries[0][0].left_out else ""
            lines += [f"### {name}{left}", "", *grouped_rows(rows), ""]
    return "\n".join(lines).rstrip("\n") + "\n", held


def main(argv: Optional[List[str]] = None) -> int:
    parser = ArgumentParser(prog="python tools/lint-vs-observed.py", description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(LINT_ENGINES), default="tensorrt")
    parser.add_argument("--cells", type=Path, nargs="+", required=True, help="results JSONL files")
    parser.add_argument("--models", type=Path, help="producer models folder (default: built here, temporarily)")
    parser.add_argument("--archs", action="store_true", help="also the architecture models (check.arch_models)")
    parser.add_argument("--third-party", type=Path, metavar="DIR",
                        help="also the third-party models in DIR (quantized as users do; not committed)")
    parser.add_argument("--case", action="append", default=[], metavar="ID",
                        help="only these catalogue cases' reproducers (repeatable; default: every case with cells)")
    parser.add_argument("--out", type=Path, help="write the page here (default: print it)")
    args = parser.parse_args(argv)
    command = "python tools/lint-vs-observed.py --engine " + args.engine + (" --archs" if args.archs else "") \
        + (" --third-party DIR" if args.third_party else "") + "".join(f" --case {c}" for c in args.case) \
        + " --cells FILES"
    try:
        by_bundle = engine_cells(args.cells)
    except ResultsFileError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        models = args.models
        if models is None:
            models = Path(tmp) / "producers"
            subprocess.run([sys.executable, "-m", "check.producers", "--out", str(models)], check=True, cwd=REPO,
                           stdout=subprocess.DEVNULL)
        if not models.is_dir():
            print(f"error: no such models folder: {models}", file=sys.stderr)
            return 2
        targets, unbuilt = catalogue_targets(by_bundle, args.engine, args.case)
        producers, no_cells = user_targets(models, "producer", by_bundle, args.engine)
        targets += producers
        if args.archs:
            from check.arch_models import write_models

            write_models(Path(tmp) / "archs")
            archs, more = user_targets(Path(tmp) / "archs", "architecture", by_bundle, args.engine)
            targets += archs
            no_cells += more
        if args.third_party:
            if not args.third_party.is_dir():
                print(f"error: no such models folder: {args.third_party}", file=sys.stderr)
                return 2
            third, more = user_targets(args.third_party, "third-party", by_bundle, args.engine)
            targets += third
            no_cells += more
    scored = {c.get("bundle") for t in targets for c in t.cells}
    no_model = sorted({str(c.get("bundle")) for b, cs in by_bundle.items() for c in cs
                       if c.get("engine") == args.engine and c.get("bundle") not in scored
                       and str(c.get("case")) == "user_model"})
    notes = ([f"Cells with no model here (not scored): {', '.join(no_model)}."] if no_model else []) \
        + ([f"Reproducers the catalogue cannot build today (not scored): {', '.join(unbuilt)}."] if unbuilt else []) \
        + ([f"Models with no cells in these files: {', '.join(no_cells)}."] if no_cells else [])
    text, held = page(targets, args.cells, args.engine, command, notes)
    if args.out:
        args.out.write_text(text)
        print(f"{args.out}: {held['misses']} misses ({held['network misses']} networks), {held['agrees']} agree, "
              f"{held['cannot say']} cannot say, held out")
    else:
        print(text, end="")
    return 1 if held["misses"] else 0


if __name__ == "__main__":
    sys.exit(main())
