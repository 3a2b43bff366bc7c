"""Every view says a cell in core/words.py's words and fails loudly on a word it does not know: a status no table has
raises an error naming it, never a silent default ("not run", "Unknown-stage", "compare"). And no module but
core/words.py types out a tuple or set of status words: the groups are its own."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from core.cell import Cell
from core.words import STATUSES
from tests.matrix.conftest import cell as make

REPO = Path(__file__).resolve().parents[2]
BOGUS = "bogus_status"
NEWER = "10.4.0"


def bogus(cell: Cell) -> Cell:
    """The cell with a status no table knows (a results file from a newer suite, or a typo in a view's code)."""
    object.__setattr__(cell, "status", BOGUS)  # Cell refuses it in __init__: a view must refuse it too
    return cell


def failing(**fields: Any) -> Cell:
    return make("q_output_type/out=uint8", status="fail", verdict="new failure", last_stage="build", fused=None,
                error="[E] unsupported", explanation="fail, and no source documents a failure here", **fields)


def _grid(cell: Cell, older: Cell) -> Any:
    from matrix.grid import cell_code

    return cell_code(cell)


def _plots(cell: Cell, older: Cell) -> Any:
    from matrix.plots import plot_class

    return plot_class(cell)


def _targets(cell: Cell, older: Cell) -> Any:
    from matrix.targets import target_words

    return target_words(cell)


def _diff(cell: Cell, older: Cell) -> Any:
    from matrix.diff import compare_cells

    return compare_cells(older, cell, cell.hardware)


def _regressions(cell: Cell, older: Cell) -> Any:
    from matrix.diff import regressions

    return regressions([older, cell])


def _conformance(cell: Cell, older: Cell) -> Any:
    from matrix.conformance import entry_of

    return entry_of(cell)


def _nodes(cell: Cell, older: Cell) -> Any:
    from matrix.nodes import node_report

    return node_report([cell], {"target_nodes": ["node_of_y"]})


def _causes(cell: Cell, older: Cell) -> Any:
    from matrix.causes import root_causes

    return root_causes([older, cell])


def _upgrade(cell: Cell, older: Cell) -> Any:
    from matrix.upgrade import upgrade_view

    return upgrade_view([older, cell])


def _junit(cell: Cell, older: Cell) -> Any:
    from matrix.merge import build
    from matrix.render import junit_xml

    return junit_xml(build([older, cell], [], [cell.bundle], {}))


def _bug_bundle(cell: Cell, older: Cell) -> Any:
    from matrix.bugbundle import title, view

    meta = {"params": cell.params, "opset": 17, "ir_version": 8, "checker": "passes", "reference": "onnx"}
    return view(cell, meta, [older, cell]), title(cell)


VIEWS: Dict[str, Callable[[Cell, Cell], Any]] = {
    "grid": _grid, "plots": _plots, "targets": _targets, "diff": _diff,
    "regressions": _regressions, "conformance": _conformance, "nodes": _nodes, "causes": _causes,
    "upgrade": _upgrade, "junit": _junit, "bug bundle": _bug_bundle,
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_every_view_fails_loudly_on_an_unknown_status(view):
    older = make("q_output_type/out=uint8", engine_version="10.3.0")
    with pytest.raises((KeyError, ValueError), match=BOGUS):
        VIEWS[view](bogus(failing(engine_version=NEWER)), older)


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_every_view_takes_a_known_status(view):
    """The same call with the cell's own status works: the error above is the unknown word's, not the call's."""
    older = make("q_output_type/out=uint8", engine_version="10.3.0")
    VIEWS[view](failing(engine_version=NEWER), older)


def status_groups(tree: ast.AST) -> List[str]:
    """Each tuple, list or set of two or more string literals, every one a status word, in a tree."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2 and all(
                isinstance(e, ast.Constant) and e.value in STATUSES for e in node.elts):
            found.append(f"{getattr(node, 'lineno', '?')}: {ast.unparse(node)}")
    return found


def test_no_status_group_is_typed_outside_core_words():
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    typed = [f"{f}:{line}" for f in files if not f.startswith("tests/") and f != "core/words.py"
             for line in status_groups(ast.parse((REPO / f).read_text(encoding="utf-8")))]
    assert typed == [], "name core.words' group (FAILED, WORKED, IDLE, NOT_TRIED, RAN, ...) instead"


def test_the_grep_finds_a_typed_status_group():
    assert status_groups(ast.parse('x = s in ("fail", "crashed")\ny = s in {"pass", "built", "fail"}\n'
                                   'z = ("fail", "int8")\n')) == \
        ["1: ('fail', 'crashed')", "2: {'pass', 'built', 'fail'}"]
