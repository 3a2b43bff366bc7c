"""One catalogue reproducer built by this machine's TensorRT-RTX (no GPU: an ahead-of-time plan), as a cell."""

from __future__ import annotations

import sys
from pathlib import Path

from cases import get_case


def rtx_cell(root: Path, case_id: str, params: dict, **options):
    """Write the reproducer's bundle under root and run it through the TensorRT-RTX adapter with these options."""
    from engines.cells import run_cell
    from engines.tensorrt import RtxAdapter
    from generators import write
    from generators.bundle import load_bundle

    case = get_case(case_id)
    bundle = load_bundle(write.write_bundle(case, params, root=root).path)
    adapter = RtxAdapter(python=sys.executable, **options)
    try:
        return run_cell(case, bundle, adapter, adapter.probe(), {"source": "local"})
    finally:
        adapter.close()
