"""Re-derive the per-node evidence of stored TensorRT and TensorRT-RTX cells from the layer listing they keep.

    python -m engines.tensorrt.rederive reports/observed/nvidia-h100/trt-8.6.0.jsonl [...] [--bundles DIR] [--write]

Each cell packs the listing its evidence was read from (the engine inspector's JSON, or TensorRT-RTX's build
log); a fix to the attribution (engines/tensorrt/layers.py) is applied to committed data without a GPU. The op
type of each target node comes from the bundle's model (regenerate the bundles first). Prints one line per
cell whose precision or evidence changes, and a summary; --write rewrites each file in place (through a
temporary file and a rename), keeping every other line as it was. A cell without a listing is counted and
left alone: it needs a run on its engine.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from core import numerics
from core.cell import Cell
from core.cli import ArgumentParser
from core.engines import NAMES, family
from core.results import read_results
from core.words import STAGES, WORKED
from engines.tensorrt import layers as tlayers
from engines.tensorrt import target_ops, unpack_listing
from generators.bundle import Bundle, bundles_root

FAMILY = tuple(n for n in NAMES if family(n) == "tensorrt")  # TensorRT and TensorRT-RTX


def listing_layers(cell: Cell) -> Optional[List[tlayers.Layer]]:
    """The cell's stored listing as layers, None where it has none."""
    text = unpack_listing(cell.listing)
    if not text:
        return None
    if cell.listing.get("kind", "").startswith("build log"):
        return tlayers.from_build_log(text)
    return tlayers.from_inspector(text)


def rederive(cell: Cell, ops: Dict[str, str]) -> Tuple[Dict[str, Any], Optional[bool]]:
    """(precision, fused) of a cell from its listing, with today's attribution; the network dtypes note kept."""
    found = listing_layers(cell)
    if found is None:
        return cell.precision, cell.fused
    targets = {t: ops.get(t, "") for t in cell.precision}
    new = tlayers.attribute(found, targets)
    for node, entry in new.items():
        dtype = cell.precision.get(node, {}).get("network_dtype")
        if dtype:
            entry["network_dtype"] = dtype
            entry["evidence"] += f"; network definition types its output {dtype}"
    return new, numerics.fused(new, list(new)) if cell.status in WORKED else cell.fused


def _ops(bundle_id: str, root: Path) -> Dict[str, str]:
    path = root / bundle_id
    try:
        meta = json.loads((path / "case.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return target_ops(Bundle(path=path, meta=meta))


def process(path: Path, root: Path, write: bool) -> Dict[str, int]:
    """Re-derive one results file; returns counts (cells, with listing, changed precision, changed evidence).
    A file core.results refuses is left alone (ValueError says why)."""
    counts = {"cells": 0, "listed": 0, "precision": 0, "evidence": 0, "unlisted": 0}
    found = read_results(path)
    if found.refused:
        raise ValueError(f"{path}: refused ({found.why_refused}); nothing re-derived")
    out_lines = found.data.decode("utf-8").splitlines()
    for stored in found.cells:
        cell = stored.cell
        if cell.engine not in FAMILY:
            continue
        counts["cells"] += 1
        if not cell.listing:
            counts["unlisted"] += (cell.status in WORKED or cell.status == "fail") and \
                cell.last_stage in STAGES[1:]
            continue
        record = json.loads(out_lines[stored.line - 1])
        counts["listed"] += 1
        precision, fused = rederive(cell, _ops(cell.bundle, root))
        for node, entry in precision.items():
            old = cell.precision.get(node, {})
            if old.get("precision") != entry["precision"]:
                counts["precision"] += 1
                print(f"{path.name}: {cell.bundle} {node}: {old.get('precision')} -> {entry['precision']} "
                      f"({entry.get('layer', '') or entry['evidence'][:80]})")
            elif old.get("evidence") != entry["evidence"]:
                counts["evidence"] += 1
        record.update(precision=precision, fused=fused)
        out_lines[stored.line - 1] = json.dumps(record, sort_keys=True)
    if write:
        tmp = path.with_name(path.name + ".rederive.tmp")
        tmp.write_text("".join(x + "\n" for x in out_lines), encoding="utf-8")
        os.replace(tmp, path)
    return counts


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = ArgumentParser(prog="python -m engines.tensorrt.rederive", description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="results files (JSONL)")
    parser.add_argument("--bundles", type=Path, default=None, help="bundle folder (default $QDQ_BUNDLES or .bundles)")
    parser.add_argument("--write", action="store_true", help="rewrite the files in place")
    args = parser.parse_args(argv)
    root = args.bundles or bundles_root()
    total = {"cells": 0, "listed": 0, "precision": 0, "evidence": 0, "unlisted": 0}
    for path in args.files:
        if not path.is_file():
            print(f"rederive: {path}: no such file", file=sys.stderr)
            return 2
        try:
            counts = process(path, root, args.write)
        except ValueError as e:
            print(f"rederive: {e}", file=sys.stderr)
            return 2
        for k, v in counts.items():
            total[k] += v
    print(f"rederive: {total['cells']} TensorRT-family cells, {total['listed']} with a listing; "
          f"{total['precision']} node precisions changed, {total['evidence']} evidence texts changed; "
          f"{total['unlisted']} built or ran without a stored listing: only a new run on their engine re-derives them"
          + ("" if args.write else " (dry run: --write rewrites the files)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
