"""The lint's predictions against observed cells of the producer models, as one Markdown page.

    python tools/lint-vs-observed.py --engine tensorrt \
        --cells reports/observed/nvidia-h100/check/tensorrt-8.6.0.jsonl ... --out reports/observed/lint-vs-tensorrt.md
    python tools/lint-vs-observed.py --engine tensorrt --case bias_add_after_qdq \
        --cells reports/observed/nvidia-h100/check/tensorrt-8.6.0.jsonl reports/observed/nvidia-h100/trt-8.6.0.jsonl ...

Builds the producer models (`python -m check.producers`) in a temporary folder unless --models names one, lints
each, and puts each finding next to what the engine did with that node (`python -m check.lint MODEL --cells`).
`--case` adds a catalogue case's reproducers (written with `python -m generators write`), each met with the cells
of its own bundle id. A model with no cells in the files is left out; the page says so. Exit status 1 where a
prediction missed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cases.engines import LINT_ENGINES  # noqa: E402
from cases.engines import title as engine_title  # noqa: E402
from check.lint import LintInputError, comparison_markdown, compare, engine_cells, lint_path  # noqa: E402



def page(models: Path, cells: List[Path], engine: str,
         catalogue: Sequence[Tuple[str, Path]] = ()) -> "tuple[str, Counter]":
    """The page: producer models (their user_model bundles) and catalogue reproducers given as (bundle id, model)."""
    shown = ", ".join(f"`{p}`" for p in cells)
    cases = sorted({bundle.split("/", 1)[0] for bundle, _ in catalogue})
    also = f", the reproducers of catalogue case {', '.join(f'`{c}`' for c in cases)}" if cases else ""
    lines = [f"# The lint's predictions against real {engine_title(engine)}", "",
             f"Made by `python tools/lint-vs-observed.py --engine {engine}"
             + "".join(f" --case {c}" for c in cases) + f"` from the producer models "
             f"(`python -m check.producers`){also} and the cells in {shown}. \"not observable\": the parser stopped "
             "at another node first; \"cannot say\": the cell gives no evidence for that node.", ""]
    body: List[str] = []
    counts: Counter = Counter()
    left_out = []
    from cases.user_model import bundle_ids_for

    by_bundle = engine_cells(cells)
    targets = [(model.name, model, bundle_ids_for(model)) for model in sorted(models.glob("*.onnx"))]
    targets += [(bundle, model, [bundle]) for bundle, model in catalogue]
    for title, model, bundles in targets:
        found = [c for b in bundles for c in by_bundle.get(b, []) if c.get("engine") == engine]
        if not found:
            left_out.append(title)
            continue
        rows = [r for r in compare([f for f in lint_path(model) if f.engine == engine], found)]
        counts.update({True: "agrees", False: "misses", None: "cannot say"}[r.agrees] for r in rows)
        body += [f"## {title}", "", comparison_markdown(rows) if rows else "No findings for this engine.\n"]
    lines += [f"**{counts['misses']} misses**, {counts['agrees']} agree, {counts['cannot say']} cannot say, over "
              f"{sum(counts.values())} predictions.", ""]
    if left_out:
        lines += [f"No cells for: {', '.join(left_out)}.", ""]
    return "\n".join(lines + body).rstrip("\n") + "\n", counts


def catalogue_models(root: Path, cases: Sequence[str]) -> List[Tuple[str, Path]]:
    """(bundle id, model) for every reproducer of these cases, written under root."""
    if not cases:
        return []
    args = [a for c in cases for a in ("--case", c)]
    subprocess.run([sys.executable, "-m", "generators", "write", "--out", str(root), *args], check=True, cwd=REPO,
                   stdout=subprocess.DEVNULL)
    return [(f"{c}/{m.parent.name}", m) for c in cases for m in sorted((root / c).glob("*/model.onnx"))]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/lint-vs-observed.py", description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(LINT_ENGINES), default="tensorrt")
    parser.add_argument("--cells", type=Path, nargs="+", required=True, help="results JSONL of the producer models")
    parser.add_argument("--models", type=Path, help="producer models folder (default: built here, temporarily)")
    parser.add_argument("--case", action="append", default=[], metavar="ID",
                        help="also a catalogue case's reproducers, against the cells of their bundle ids (repeatable)")
    parser.add_argument("--out", type=Path, help="write the page here (default: print it)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        models = args.models
        if models is None:
            models = Path(tmp)
            subprocess.run([sys.executable, "-m", "check.producers", "--out", str(models)], check=True, cwd=REPO,
                           stdout=subprocess.DEVNULL)
        if not models.is_dir():
            print(f"error: no such models folder: {models}", file=sys.stderr)
            return 2
        try:
            catalogue = catalogue_models(Path(tmp) / "bundles", args.case)
        except subprocess.CalledProcessError:
            print(f"error: could not write the reproducers of {', '.join(args.case)} (is each a case id?)",
                  file=sys.stderr)
            return 2
        try:
            text, counts = page(models, args.cells, args.engine, catalogue)
        except LintInputError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if args.out:
        args.out.write_text(text)
        print(f"{args.out}: {counts['misses']} misses, {counts['agrees']} agree, {counts['cannot say']} cannot say")
    else:
        print(text, end="")
    return 1 if counts["misses"] else 0


if __name__ == "__main__":
    sys.exit(main())
