"""One catalogue reproducer built by this machine's TensorRT-RTX (no GPU: an ahead-of-time plan), as a cell."""

from __future__ import annotations

import sys
from pathlib import Path

from cases import get_case


def rtx_cell_and_info(root: Path, case_id: str, params: dict, **options):
    """Write the reproducer's bundle under root and run it through the TensorRT-RTX adapter with these options:
    (the cell, the adapter's probe)."""
    from engines.cells import run_cell
    from engines.tensorrt import RtxAdapter
    from generators import write
    from generators.bundle import load_bundle

    case = get_case(case_id)
    bundle = load_bundle(write.write_bundle(case, params, root=root).path)
    adapter = RtxAdapter(python=sys.executable, **options)
    try:
        info = adapter.probe()
        return run_cell(case, bundle, adapter, info, {"source": "local"}), info
    finally:
        adapter.close()


def rtx_cell(root: Path, case_id: str, params: dict, **options):
    """rtx_cell_and_info's cell alone."""
    return rtx_cell_and_info(root, case_id, params, **options)[0]
