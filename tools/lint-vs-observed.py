"""The lint's predictions against observed cells of the producer models, as one Markdown page.

    python tools/lint-vs-observed.py --engine tensorrt \
        --cells reports/observed/nvidia-h100/check/tensorrt-8.6.0.jsonl ... --out reports/observed/lint-vs-tensorrt.md

Builds the producer models (`python -m check.producers`) in a temporary folder unless --models names one, lints
each, and puts each finding next to what the engine did with that node (`python -m check.lint MODEL --cells`).
A model with no cells in the files is left out; the page says so. Exit status 1 where a prediction missed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from check.lint import LintInputError, comparison_markdown, compare, lint_path, model_cells  # noqa: E402

NAMES = {"tensorrt": "TensorRT", "tensorrt-rtx": "TensorRT-RTX"}


def page(models: Path, cells: List[Path], engine: str) -> "tuple[str, Counter]":
    shown = ", ".join(f"`{p}`" for p in cells)
    lines = [f"# The lint's predictions against real {NAMES[engine]}", "",
             f"Made by `python tools/lint-vs-observed.py --engine {engine}` from the producer models "
             f"(`python -m check.producers`) and the cells in {shown}. \"not observable\": the parser stopped at "
             "another node first; \"cannot say\": the cell gives no evidence for that node.", ""]
    body: List[str] = []
    counts: Counter = Counter()
    left_out = []
    for model in sorted(models.glob("*.onnx")):
        found = [c for c in model_cells(cells, model) if c.get("engine") == engine]
        if not found:
            left_out.append(model.name)
            continue
        rows = [r for r in compare([f for f in lint_path(model) if f.engine == engine], found)]
        counts.update({True: "agrees", False: "misses", None: "cannot say"}[r.agrees] for r in rows)
        body += [f"## {model.name}", "", comparison_markdown(rows) if rows else "No findings for this engine.\n"]
    lines += [f"**{counts['misses']} misses**, {counts['agrees']} agree, {counts['cannot say']} cannot say, over "
              f"{sum(counts.values())} predictions.", ""]
    if left_out:
        lines += [f"No cells for: {', '.join(left_out)}.", ""]
    return "\n".join(lines + body).rstrip("\n") + "\n", counts


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/lint-vs-observed.py", description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(NAMES), default="tensorrt")
    parser.add_argument("--cells", type=Path, nargs="+", required=True, help="results JSONL of the producer models")
    parser.add_argument("--models", type=Path, help="producer models folder (default: built here, temporarily)")
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
            text, counts = page(models, args.cells, args.engine)
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
