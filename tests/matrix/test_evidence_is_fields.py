"""The reports read evidence as fields: no regex in matrix/ parses an error, a log or an evidence sentence, neither
its own nor one of a helper it imports; every committed observation is cell/3, its options an object and its symptom
a field; the merge reads cell/3 only, with no branch for older cells."""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path
from typing import Dict, Set, Tuple

from core.cell import SCHEMA, SESSION_FAMILY

REPO = Path(__file__).resolve().parents[2]
MATRIX = REPO / "matrix"
PACKAGES = ("core", "cases", "engines", "generators", "check")  # the suite's own modules that matrix/ may import
OBSERVED = REPO / "reports" / "observed"
# The only places in matrix/ a regex may stand, and what each reads: names and labels, never evidence or errors.
ALLOWED = {
    ("safe", "<module>"): "control characters and terminal escapes, removed from any text before it is published",
    ("safe", "_visible"): "control characters made visible",
    ("safe", "_longest_run"): "the longest run of one character (a backtick) in a text, to fence it",
    ("bugbundle", "tool_commands"): "which input names trtexec takes unquoted",
    ("nodes", "renamed_user_bundle"): "a user bundle folder's id suffix",
    ("targets", "_target_key"): "the number in a build target's name (SM86)",
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


# The only helpers with a regex that matrix/ may import, and what each reads: names and paths, never evidence or errors.
ALLOWED_IMPORTS = {
    ("core.portable", "scrub"): "machine paths made portable in any text before it is published",
    ("core.portable", "portable_text"): "machine paths made portable in a recorded command",
    ("cases.user_model", "bundle_id_for"): "a user model's file name as a bundle id",
    ("cases.user_model", "bundle_ids_for"): "user models' file names as bundle ids",
    ("core.words", "file_name"): "a bundle id, column label or text from a results file as a file name",
    ("core.words", "error_words"): "whether two versions' error lines say the same once source lines, folders, "
                                   "function names in brackets and 'TRT' are set aside (matrix.diff: reworded)",
}


def _uses_re(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "re"
               for n in ast.walk(node))


def regex_functions(path: Path) -> Set[str]:
    """The functions of one module that use a regex: the re module, a pattern the module compiled at its top level, or
    another function of the module that does."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    patterns: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _uses_re(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            patterns |= {t.id for t in targets if isinstance(t, ast.Name)}
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    using: Set[str] = set()
    grew = True
    while grew:
        grew = False
        for name, function in functions.items():
            names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
            if name not in using and (_uses_re(function) or names & (patterns | using)):
                using.add(name)
                grew = True
    return using


def regex_imports(path: Path, repo: Path = REPO) -> Set[Tuple[str, str]]:
    """(module, name) of every helper with a regex that one matrix/ file imports from the suite's own modules."""
    found: Set[Tuple[str, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES):
            continue
        base = repo / Path(*node.module.split("."))
        source = next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)
        using = regex_functions(source) if source else set()
        found |= {(node.module, a.name) for a in node.names if a.name in using}
    return found


def test_no_helper_matrix_imports_masks_or_parses_text_with_a_regex():
    """A regex over error text in a helper (engines.reasons.symptom) is a regex in the report that imports it."""
    found = set().union(*(regex_imports(p) for p in MATRIX.glob("*.py")))
    assert found - set(ALLOWED_IMPORTS) == set(), "a report groups or reads text by an imported regex: use a cell field"
    assert not any(p.read_text(encoding="utf-8").count("engines.reasons") for p in MATRIX.glob("*.py")), \
        "the engines' message formats are engines.reasons's: a report reads the fields it found"


def test_the_import_scan_sees_a_regex_helper(tmp_path):
    """A helper that masks with a pattern compiled at its module's top, or through another helper, is seen; and so is
    the one the reports masked error text with before the symptom was a cell field."""
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "words.py").write_text("import re\n_N = re.compile(r'[0-9]+')\n\n\ndef masked(t):\n"
                                                 "    return _N.sub('N', t)\n\n\ndef grouped(t):\n"
                                                 "    return masked(t).lower()\n\n\ndef plain(t):\n    return t\n")
    (tmp_path / "causes.py").write_text("from cases.words import grouped, plain\n")
    assert regex_imports(tmp_path / "causes.py", tmp_path) == {("cases.words", "grouped")}
    (tmp_path / "upgrade.py").write_text("from engines.reasons import symptom\n")
    assert regex_imports(tmp_path / "upgrade.py") == {("engines.reasons", "symptom")}


def test_no_regex_in_matrix_reads_evidence_or_error_text():
    uses = set().union(*(regex_uses(p) for p in MATRIX.glob("*.py")))
    assert uses - set(ALLOWED) == set(), "a regex in matrix/ on evidence or error text: make it a cell field"
    for module in ("predict", "models", "render", "diff", "merge", "grid", "upgrade", "nodes"):
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
        if str(record.get("schema")).startswith(SESSION_FAMILY):
            assert isinstance(record.get("cell_options", {}), dict), path
        else:
            yield record


def test_every_committed_observation_is_cell_3():
    """Each cell's options a JSON object (never JSON in a string), its symptom a field where it did not work."""
    files = sorted([*OBSERVED.rglob("*.jsonl"), *OBSERVED.rglob("*.jsonl.gz")])
    schemas: Dict[str, int] = {}
    for path in files:
        for record in _cells(path):
            schemas[record.get("schema")] = schemas.get(record.get("schema"), 0) + 1
            assert "stage" not in record and "tactic_sources" not in record.get("options", {}), path
            assert isinstance(record["run"].get("cell_options", {}), dict), path
            assert bool(record["symptom"]) == (record["status"] not in ("pass", "built")), (path, record["bundle"])
    assert set(schemas) == {SCHEMA} and schemas[SCHEMA] > 4000


def test_the_merge_has_no_branch_for_older_cells():
    """matrix/merge.py fills nothing in on read (no variant from options, no header's hardware detail), and a cell/1
    line refuses its file, saying how to migrate it."""
    source = (MATRIX / "merge.py").read_text(encoding="utf-8")
    for legacy in ("tactic_sources", "_older_variant", "tensorrt-only tactics", "hardware_detail\") or"):
        assert legacy not in source
    from core.schema import problems

    for old in ({"schema": "qdq-matrix/cell/1", "bundle": "b/x"}, {"schema": "qdq-matrix/cell/2", "bundle": "b/x"},
                {"schema": "qdq-matrix/session/1"}):
        assert "tools/migrate-observed.py" in problems(old)[0]


LABEL_READS = ("split", "rsplit", "partition", "rpartition", "startswith", "endswith", "replace", "strip", "find",
               "index", "removeprefix", "removesuffix")
# The only places in matrix/ that treat a hardware label as text: a name made from it, never a fact read out of it.
LABEL_AS_NAME = {("bugbundle", "folder_for"): "a hardware label as a folder name"}


def label_reads(path: Path) -> Set[Tuple[str, str]]:
    """(module, function) of every string method or regex applied to a `.hardware` label in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: Set[Tuple[str, str]] = set()

    def on_label(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr == "hardware" for n in ast.walk(node))

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                method, owner = child.func.attr, child.func.value
                regex = isinstance(owner, ast.Name) and owner.id == "re" and any(map(on_label, child.args))
                if regex or (method in LABEL_READS and on_label(owner)):
                    found.add((path.stem, where))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_no_report_reads_a_fact_back_out_of_a_hardware_label():
    """GPU, compute capability, CPU and INT8 level are hardware_detail's fields; the label is only shown or compared."""
    uses = set().union(*(label_reads(p) for p in MATRIX.glob("*.py")))
    assert uses - set(LABEL_AS_NAME) == set(), "a fact read back out of a hardware label: render it from its detail"


def test_the_label_scan_sees_a_label_parsed(tmp_path):
    (tmp_path / "plots.py").write_text("import re\n\ndef short(col):\n"
                                       "    return re.sub('NVIDIA ', '', col.hardware)\n\n\n"
                                       "def cpu(c):\n    return c.hardware.startswith('cpu: ')\n")
    assert label_reads(tmp_path / "plots.py") == {("plots", "short"), ("plots", "cpu")}


def test_a_column_head_names_the_machine_from_its_recorded_facts():
    from matrix.plots import short_hardware

    assert short_hardware({"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}) == "H100"
    assert short_hardware({"name": "NVIDIA GeForce RTX 4090"}) == "GeForce RTX 4090"
    assert short_hardware({"cpu": "AMD EPYC 7B13", "isa_level": "avx2"}) == "AMD EPYC 7B13 (avx2)"
    assert short_hardware({}) == "no GPU"
