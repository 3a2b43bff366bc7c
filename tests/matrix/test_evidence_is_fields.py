"""The reports read evidence as fields: no regex in matrix/ parses an error, a log or an evidence sentence; every
committed observation is cell/2; the merge reads cell/2 only, with no branch for older cells."""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path
from typing import Dict, Set, Tuple

from cases.cell import SCHEMA

REPO = Path(__file__).resolve().parents[2]
MATRIX = REPO / "matrix"
OBSERVED = REPO / "reports" / "observed"
# The only places in matrix/ a regex may stand, and what each reads: names and labels, never evidence or errors.
ALLOWED = {
    ("safe", "<module>"): "control characters and terminal escapes, removed from any text before it is published",
    ("safe", "_visible"): "control characters made visible",
    ("safe", "_longest_run"): "the longest run of one character (a backtick) in a text, to fence it",
    ("cellfiles", "<module>"): "a column label as a file name",
    ("bugbundle", "folder_name"): "text from a results file as a folder name",
    ("bugbundle", "tool_commands"): "which input names trtexec takes unquoted",
    ("nodes", "renamed_user_bundle"): "a user bundle folder's id suffix",
    ("nodes", "file_stem"): "a bundle id as a file name",
    ("targets", "_target_key"): "the number in a build target's name (SM86)",
    ("plots", "_short"): "a hardware label shortened for a rotated column head",
    ("repro", "verdict"): "the documented signature's own pattern, searched as the suite's cell was",
}


def regex_uses(path: Path) -> Set[Tuple[str, str]]:
    """(module, enclosing function or <module>) of every use of the re module in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: Set[Tuple[str, str]] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name) and child.value.id == "re":
                found.add((path.stem, where))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_no_regex_in_matrix_reads_evidence_or_error_text():
    uses = set().union(*(regex_uses(p) for p in MATRIX.glob("*.py")))
    assert uses - set(ALLOWED) == set(), "a regex in matrix/ on evidence or error text: make it a cell field"
    for module in ("predict", "models", "render", "diff", "merge", "grid", "upgrade", "words", "nodes"):
        assert not {u for u in uses if u[0] == module} - set(ALLOWED), module


def test_the_test_sees_a_regex_where_one_is_added(tmp_path):
    (tmp_path / "predict.py").write_text("import re\n\ndef failing_node(error):\n"
                                         "    return re.search(r'Invalid Node - (\\S+)', error)\n")
    assert regex_uses(tmp_path / "predict.py") == {("predict", "failing_node")}


def _cells(path: Path):
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if path.name.endswith(".gz") else raw).decode("utf-8")
    for line in text.splitlines():
        record = json.loads(line)
        if record.get("schema") != "qdq-matrix/session/1":
            yield record


def test_every_committed_observation_is_cell_2():
    files = sorted([*OBSERVED.rglob("*.jsonl"), *OBSERVED.rglob("*.jsonl.gz")])
    schemas: Dict[str, int] = {}
    for path in files:
        for record in _cells(path):
            schemas[record.get("schema")] = schemas.get(record.get("schema"), 0) + 1
            assert "stage" not in record and "tactic_sources" not in record.get("options", {}), path
    assert set(schemas) == {SCHEMA} and schemas[SCHEMA] > 4000


def test_the_merge_has_no_branch_for_older_cells():
    """matrix/merge.py fills nothing in on read (no variant from options, no header's hardware detail), and a cell/1
    line refuses its file, saying how to migrate it."""
    source = (MATRIX / "merge.py").read_text(encoding="utf-8")
    for legacy in ("tactic_sources", "_older_variant", "tensorrt-only tactics", "hardware_detail\") or"):
        assert legacy not in source
    from cases.schema import problems

    old = {"schema": "qdq-matrix/cell/1", "bundle": "b/x"}
    assert "tools/migrate-observed.py" in problems(old)[0]
