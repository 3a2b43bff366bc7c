#!/usr/bin/env python3
"""Check the conformance table's ONNX Runtime entries against ONNX Runtime run directly, with no cell runner.

    python tools/conformance-ort.py [--bundles .bundles] [--results results]   # under a Python that has onnxruntime

Every conformance bundle (generators/onnx_node_tests.py and generators/qdq_companion.py) is loaded into a bare
`onnxruntime.InferenceSession` (CPU, its default options), run on the bundle's inputs, and its outputs compared with
ONNX's expected outputs by this script's own few lines of numpy (integer and code outputs equal, float outputs within
half of case.json's step): no adapter, no pytest, no core.numerics. Each bundle's word (right, wrong, refused; not
applicable where ONNX Runtime says the model's IR version is newer than it reads) is then
set beside the table's entry for the same ONNX Runtime version (matrix.conformance, over the results files), and
every disagreement is listed.
Exit 0 when they all agree, 1 when any differs, 2 when there is nothing to compare.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from core.cli import ArgumentParser  # noqa: E402 (the one-line usage parser of every command line)

HALF = 0.5  # a float output is right within half of its step (generators/onnx_node_tests.py: TOLERANCE_STEPS)


def direct(bundle: Path, ort: Any) -> Tuple[str, Optional[float], str]:
    """(word, worst steps where wrong, ONNX Runtime's error or the mismatch) of one bundle run directly."""
    meta = json.loads((bundle / "case.json").read_text(encoding="utf-8"))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(bundle / "model.onnx"), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # the engine refused the model; one whose ONNX IR version it cannot read is not for it
        said = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return ("not applicable" if "Unsupported model IR version" in said else "refused"), None, said
    with np.load(bundle / "inputs.npz") as f:
        feeds = {k: f[k] for k in f.files}
    try:
        got = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    except Exception as e:  # refused at run (a kernel's check, an output its Python API cannot hand back)
        return "refused", None, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    with np.load(bundle / "expected.npz") as f:
        expected = {k: f[k] for k in f.files}
    worst, why = 0.0, ""
    for name, want in expected.items():
        have = np.asarray(got.get(name))
        if name not in got or have.shape != want.shape:
            return "wrong", None, f"output {name}: shape {list(have.shape)}, expected {list(want.shape)}"
        if want.dtype.kind in "iub":  # integers, and the bit codes of float8 (ONNX Runtime hands those back as uint8)
            steps = float(np.max(np.abs(have.astype(np.int64) - want.astype(np.int64)))) if want.size else 0.0
            if steps > 0:
                worst, why = max(worst, steps), f"output {name}: {steps:g} integer steps off"
            continue
        step = float(meta["outputs"][name]["step"])
        diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
        diff = np.where(np.isnan(have) & np.isnan(want), 0.0, diff)
        steps = float(np.max(diff)) / step if diff.size else 0.0
        if not steps <= HALF:
            worst = max(worst, steps if np.isfinite(steps) else float("inf"))
            why = f"output {name}: {steps:.3g} steps off"
    return ("wrong", worst, why) if why else ("right", None, "")


def table(results: Sequence[Path], version: str) -> Dict[str, Tuple[str, Optional[float]]]:
    """The table's ONNX Runtime entries of one version (its default column), by bundle id: (word, steps)."""
    from matrix.conformance import entry_of
    from matrix.merge import load_results

    cells = load_results([str(p) for p in results]).conformance
    return {c.bundle: (entry_of(c).word, entry_of(c).steps) for c in cells
            if c.engine == "onnxruntime" and c.engine_version == version and not c.variant}


def compare(bundles: Path, entries: Dict[str, Tuple[str, Optional[float]]], ort: Any) -> Tuple[int, List[str]]:
    """How many bundles agree, and a line per disagreement (or per bundle the table has no entry for)."""
    from matrix.conformance import CASES  # the node tests' and the int8 companion's folders

    agree, differ = 0, []
    for case_json in sorted(p for case in CASES for p in (bundles / case).glob("*/case.json")):
        bundle_id = f"{case_json.parent.parent.name}/{case_json.parent.name}"
        word, steps, why = direct(case_json.parent, ort)
        said = entries.get(bundle_id)
        if said is None:
            differ.append(f"{bundle_id}: no table entry (directly: {word})")
        elif said[0] != word or (word == "wrong" and said[1] != steps):
            differ.append(f"{bundle_id}: table says {said[0]}{_by(said[1])}, directly {word}{_by(steps)}"
                          + (f" ({why})" if why else ""))
        else:
            agree += 1
    return agree, differ


def _by(steps: Optional[float]) -> str:
    return f" by {steps:g} steps" if steps is not None else ""


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = ArgumentParser(prog="tools/conformance-ort.py", description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=Path, default=REPO / ".bundles", help="bundle root (default: .bundles)")
    parser.add_argument("--results", type=Path, action="append",
                        help="results files or folders (repeatable; default: results/)")
    args = parser.parse_args(argv)
    try:
        import onnxruntime as ort
    except ImportError:
        print("tools/conformance-ort.py: run it under an interpreter that has onnxruntime", file=sys.stderr)
        return 2
    entries = table(args.results or [REPO / "results"], ort.__version__)
    if not entries:
        print(f"tools/conformance-ort.py: no conformance cells of ONNX Runtime {ort.__version__} in the results",
              file=sys.stderr)
        return 2
    agree, differ = compare(args.bundles, entries, ort)
    for line in differ:
        print(line)
    print(f"ONNX Runtime {ort.__version__}: {agree} of {agree + len(differ)} conformance bundles agree with the table "
          f"run directly ({len(differ)} differ)")
    return 1 if differ or not agree else 0


if __name__ == "__main__":
    sys.exit(main())
