"""One fact, one place: an engine's title, defaults and pins live in its descriptor (core/engines.py), a signature and
a source in one module, and every other file reads them. Each test fails when a second definition appears."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, Tuple

from core.engines import ENGINES, GPU_ARCHITECTURES, NAMES, pin_groups

REPO = Path(__file__).resolve().parents[2]
DESCRIPTORS = REPO / "core" / "engines.py"
CODE_SUFFIXES = (".py", ".sh", ".yml", ".yaml", ".j2", "")  # "" : the tools without a suffix (tools/gpu-payload)


def code_files() -> List[Path]:
    """Every committed file of code and configuration but the descriptors, the tests, the docs and the data."""
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    skip = ("tests/", "docs/", "reports/", ".ci/")
    return [REPO / f for f in listed if not f.startswith(skip) and (REPO / f).suffix in CODE_SUFFIXES
            and REPO / f != DESCRIPTORS and (REPO / f).is_file() and not f.endswith(("README.md", "uv.lock"))]


def python_literals(path: Path) -> Iterator[Tuple[int, ast.AST]]:
    """(line, node) of every list, tuple, set and dict display in a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            yield node.lineno, node


def strings_in(node: ast.AST) -> List[str]:
    """The string constants directly in a display (a dict's keys and values)."""
    items = [*node.keys, *node.values] if isinstance(node, ast.Dict) else list(node.elts)
    return [x.value for x in items if isinstance(x, ast.Constant) and isinstance(x.value, str)]


def test_no_second_pin_list():
    """No file holds two pinned versions of one group in one list, dict or line: the versions are typed once."""
    groups = [set(g.versions) for g in pin_groups().values()]
    found = []
    for path in code_files():
        if path.suffix == ".py":
            for line, node in python_literals(path):
                if any(len(set(strings_in(node)) & versions) >= 2 for versions in groups):
                    found.append(f"{path.relative_to(REPO)}:{line}")
        else:
            for line, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
                words = set(re.findall(r"[0-9][0-9.]*[0-9]", text))
                if any(len(words & versions) >= 2 for versions in groups):
                    found.append(f"{path.relative_to(REPO)}:{line}")
    assert found == [], "pinned versions typed outside core/engines.py (read them with python -m engines.pins)"


def engine_facts(node: ast.AST) -> bool:
    """A list of two or more engine names, or a dict that maps them to constants (a table of titles, of defaults);
    a dict that maps them to a tool's own functions is dispatch, not a fact."""
    names = set(NAMES)
    if not isinstance(node, ast.Dict):
        return len(set(strings_in(node)) & names) >= 2
    keys = set(strings_in(ast.List(elts=node.keys)))
    return len(keys & names) >= 2 and all(isinstance(v, ast.Constant) for v in node.values)


def test_no_second_table_or_list_of_engines():
    """No dict of facts keyed by engine names (a table of titles) and no list of them: the descriptors say both."""
    found = [f"{p.relative_to(REPO)}:{line}" for p in code_files() if p.suffix == ".py"
             for line, node in python_literals(p) if engine_facts(node)]
    assert found == [], "engine names listed outside core/engines.py"


def test_no_second_title_or_default():
    """An engine's title and its defaults are string constants in its descriptor only: "TensorRT for RTX", the
    optimization level ORT_ENABLE_ALL, OpenVINO's f32 hint; and the 1 GiB workspace is no number anywhere else."""
    distinct = {s.title for s in ENGINES.values() if " " in s.title} | {"TensorRT-RTX"}
    distinct |= {o.default for s in ENGINES.values() for o in s.options if o.default.isupper() and len(o.default) > 4}
    found = []
    for path in (p for p in code_files() if p.suffix == ".py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in distinct:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}")
            if isinstance(node, ast.Dict) and "INFERENCE_PRECISION_HINT" in strings_in(ast.List(elts=node.keys)):
                if any(isinstance(v, ast.Constant) for v in node.values):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: OpenVINO's precision hint")
            if isinstance(node, ast.Constant) and node.value == ENGINES["tensorrt"].settings["workspace_mb"]:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: a workspace of {node.value} MiB?")
    allowed = {"generators/q_output_type.py"}  # a hidden size of 1024 (the skipLayerNorm kernel's), not a workspace
    assert [f for f in found if f.split(":")[0] not in allowed] == []


def test_the_noxfile_and_the_gpu_tools_read_the_pins(tmp_path):
    done = subprocess.run([sys.executable, "-m", "engines.pins", "trt"], cwd=REPO, capture_output=True, text=True,
                          check=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == list(pin_groups()["trt"].versions)
    assert "import numpy" not in done.stderr and done.returncode == 0  # a bare Python on a GPU machine runs it
    for tool in ("tools/gpu-payload", "tools/gpu-round.sh", "tools/gpu-session.sh", "ci/github/gpu-matrix.yml"):
        assert "engines.pins" in (REPO / tool).read_text(), tool
    assert "pin_group(" in (REPO / "noxfile.py").read_text()


def test_every_signature_has_one_name_and_one_declaration():
    """A signature's name is declared once (cases/common.py shares one between cases); two declarations of one name
    with different patterns would match differently depending on the case."""
    import cases
    from cases.common import ENGINE_SIGNATURES, ENVIRONMENT_SIGNATURES

    declared = {}
    every = [s for c in cases.all_cases() for s in c.signatures]
    every += [s for table in (ENGINE_SIGNATURES, ENVIRONMENT_SIGNATURES) for sigs in table.values() for s in sigs]
    for s in every:
        assert declared.setdefault(s.name, s) == s, f"signature {s.name!r} declared twice, differently"
    engine_wide = {s.name for sigs in ENGINE_SIGNATURES.values() for s in sigs}
    assert not [c.id for c in cases.all_cases() if engine_wide & {s.name for s in c.signatures}], \
        "an engine-wide signature listed again in a case"
    assert all(s.short for s in declared.values())


def test_no_source_url_is_declared_in_two_modules():
    """A source is a constant in one module of core/, cases/ and check/ (cases/common.py for the shared ones)."""
    seen = {}
    twice = []
    for path in sorted([*(REPO / "core").glob("*.py"), *(REPO / "cases").glob("*.py"), *(REPO / "check").glob("*.py")]):
        for m in re.finditer(r'^[A-Z_0-9]+ = "(https?://[^"]+)"', path.read_text(encoding="utf-8"), re.MULTILINE):
            if seen.setdefault(m.group(1), path.name) != path.name:
                twice.append(f"{m.group(1)}: {seen[m.group(1)]} and {path.name}")
    assert twice == []


def probe_versions(case) -> List[str]:
    """Every pinned version, every version an expectation's range names, and the next one after each."""
    from packaging.specifiers import SpecifierSet

    found = {v for g in pin_groups().values() for v in g.versions}
    for e in case.expectations:
        for s in SpecifierSet(e.versions):
            v = s.version.replace(".*", "")
            parts = v.split(".")
            found |= {v, ".".join(parts[:-1] + [str(int(parts[-1]) + 1)])} if parts[-1].isdigit() else {v}
    return sorted(found)


def probe_contexts(case, engine: str) -> Iterator[dict]:
    """Every combination of the cell-side values the case's expectations for this engine filter on."""
    import itertools

    from core.isa import ISA_LEVELS

    keys = sorted({k for e in case.expectations if e.engine == engine for k in e.when})
    choices = [ISA_LEVELS if k == "isa" else GPU_ARCHITECTURES if k == "gpu" else ENGINES[engine].option(k).choices
               for k in keys]
    for combo in itertools.product(*choices):
        yield dict(zip(keys, combo))


def test_no_two_expectations_tie_and_say_different_things():
    """Where two expectations apply to one cell and are as specific as each other (cases.base.specificity), they say
    the same outcome, stage and signature: which one the case lists first never decides a verdict."""
    import cases
    from cases.base import specificity

    ambiguous = []
    for case in cases.all_cases():
        for params in case.variants():
            for engine in sorted({e.engine for e in case.expectations}):
                for version in probe_versions(case):
                    for context in probe_contexts(case, engine):
                        found = [e for e in case.expectations if e.applies(engine, version, params, context)]
                        top = max(map(specificity, found), default=None)
                        said = {(e.outcome, e.stage, e.signature) for e in found if specificity(e) == top}
                        if len(said) > 1:
                            said_once = sorted(said, key=str)
                            ambiguous.append(f"{case.id} {params} {engine} {version} {context}: {said_once}")
    assert ambiguous == []


def test_the_narrower_range_wins_a_tie_whatever_the_order():
    from cases.base import Case, Expectation

    narrow = Expectation("tensorrt", ">=10.16,<10.17", "fail", "https://example/narrow", stage="build")
    wide = Expectation("tensorrt", ">=10.0,<11.0", "fail", "https://example/wide")
    exact = Expectation("tensorrt", "==10.16.1.11", "pass", "https://example/exact")
    for order in ((narrow, wide), (wide, narrow)):
        case = Case("tie", "999", "t", (), {"a": (1,)}, (), (), order, "generators.x:build")
        assert case.expectation_for("tensorrt", "10.16.1.11", {"a": 1}) is narrow
        assert case.expectation_for("tensorrt", "10.3.0", {"a": 1}) is wide
    case = Case("tie", "999", "t", (), {"a": (1,)}, (), (), (wide, narrow, exact), "generators.x:build")
    assert case.expectation_for("tensorrt", "10.16.1.11", {"a": 1}) is exact
