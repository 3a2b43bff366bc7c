"""A check's work grows with the model, not with its square: counted in lines of this project's code executed (bundle,
lint, float twin, each CPU engine's cell with its per-node evidence, the per-node report), never timed. The seconds are
tools/benchmark.py --scale's, in docs/benchmark.md."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Dict

import pytest

from cases import get_case
from check.bundle import bundle_from_model
from check.chain import write_chain
from core.engines import CPU_ENGINES
from engines import get_engine
from engines.cells import run_cell
from matrix.nodes import node_report, write_node_reports

REPO = Path(__file__).resolve().parents[2]
OURS = tuple(str(REPO / folder) for folder in ("cases", "check", "engines", "generators", "matrix"))
SIZES = (200, 400, 800)  # nodes: each twice the one before


def lines_run(fn: Callable[[], Any]) -> int:
    """Lines of this project's code (its packages and report templates) that fn executes, comprehensions' turns
    included: a scan of the whole graph inside a per-node loop shows as the graph's size squared."""
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += event == "line"
        return local

    def call(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(OURS) else None

    sys.settrace(call)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def steps(tmp: Path, nodes: int) -> Dict[str, int]:
    """Lines run by each step of a check of a chain of `nodes` nodes on each CPU engine installed."""
    model = write_chain(tmp / f"chain-{nodes}.onnx", nodes)
    made: Dict[str, Any] = {}
    counted = {"bundle": lines_run(lambda: made.update(bundle=bundle_from_model(model, tmp / "b")))}
    cells = []
    for name in CPU_ENGINES:
        engine = get_engine(name)
        info = engine.probe()
        if not info.available:
            continue
        # called at once, inside this iteration
        counted[name] = lines_run(lambda: cells.append(run_cell(get_case("user_model"), made["bundle"],  # noqa: B023
                                                                engine, info, {})))  # noqa: B023
        assert cells[-1].status == "pass", cells[-1].reason
    counted["report"] = lines_run(lambda: write_node_reports(node_report(cells, made["bundle"].meta), tmp / "rep",
                                                             f"chain-{nodes}"))
    return counted


@pytest.mark.slow
def test_each_step_of_a_check_grows_linearly_with_the_number_of_nodes(tmp_path):
    pytest.importorskip("onnxruntime")  # the reference
    steps(tmp_path, 8)  # imports, the observed cells the lint reads once: what every size would share
    small, middle, large = (steps(tmp_path, n) for n in SIZES)
    for step in small:
        # linear: each doubling adds the same lines; a per-node scan of the graph doubles what it adds
        first, second = middle[step] - small[step], large[step] - middle[step]
        assert second <= 2.5 * first, (f"{step}: {small[step]}, {middle[step]}, {large[step]} lines for "
                                       f"{', '.join(map(str, SIZES))} nodes: it grows faster than the model")
