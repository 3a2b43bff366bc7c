"""docs/adding-a-case.md, followed step by step on its throwaway case in a copy of the repository: the page's code
blocks are the case module, its builder and its test, the three files a case is; its commands write the catalogue
page, run the tests a new case can break (the whole of tests/cases, the docs and ruff), build the bundles, run the cells
on ONNX Runtime and render the report. A step of the page that stops working fails here, and so does a case that needs
a file more: a list to register it in, a count to edit by hand, a map in check/."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from cases import all_cases
from core.results import read_results

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "adding-a-case.md"
FILE_BLOCK = re.compile(r"^```python file=(\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
COMMAND = re.compile(r"^    ((?:python|nox|\.venv/bin/nox|tools/) ?[^#\n]*?)\s*(?:#.*)?$", re.MULTILINE)
PAGE = "docs/catalogue.md"  # the one file a command rewrites for a new case


def guide_files() -> Dict[str, str]:
    """The page's files: path -> text, from its ```python file=PATH blocks."""
    return {path: text for path, text in FILE_BLOCK.findall(GUIDE.read_text(encoding="utf-8"))}


def case_id() -> str:
    """The throwaway case's id: the name of the page's case module."""
    [path] = [p for p in guide_files() if p.startswith("cases/")]
    return Path(path).stem


def test_the_page_names_a_case_module_a_builder_and_a_test_of_one_case():
    files = guide_files()
    cid = case_id()
    assert set(files) == {f"cases/{cid}.py", f"generators/{cid}.py", f"tests/cases/per_case/test_{cid}.py"}
    assert cid not in {c.id for c in all_cases(external=True)}, "the page's case is a throwaway: never registered"
    assert all(not (REPO / path).exists() for path in files), "the page's files are never committed"


def test_the_pages_commands_name_real_sessions_flags_and_files():
    """Every command the page shows names a nox session of the noxfile and a module or script that exists."""
    text = GUIDE.read_text(encoding="utf-8")
    commands = COMMAND.findall(text)
    assert len(commands) >= 10, commands
    noxfile = (REPO / "noxfile.py").read_text(encoding="utf-8")
    for command in commands:
        words = command.split()
        if "-s" in words:
            session = words[words.index("-s") + 1].strip('"').split("(")[0]
            assert re.search(rf"def {session}\(|name=\"{session}\"", noxfile), command
        if "-m" in words:
            module = words[words.index("-m") + 1]
            assert (REPO / module.replace(".", "/")).with_suffix(".py").is_file() or \
                (REPO / module.replace(".", "/") / "__main__.py").is_file(), command
        if words[0].startswith("tools/"):
            assert (REPO / words[0]).is_file(), command
    from engines.run import _parser

    run = next(c for c in commands if c.startswith('nox -s "ort('))  # its posargs go to engines.run
    flags = {f for action in _parser()._actions for f in action.option_strings}
    assert {w for w in run.split(" -- ", 1)[1].split() if w.startswith("-")} <= flags, run


def _copy(tmp: Path) -> Path:
    """The repository's files as git tracks them (the working tree's text of each), in tmp/repo, itself a git
    checkout that tracks them (the tests that read `git ls-files` read it)."""
    root = tmp / "repo"
    listed = _git(REPO, "ls-files", "-z").decode().split("\0")
    for name in listed:
        if name and (REPO / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    return root


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=str(root), capture_output=True, check=True, timeout=120).stdout


def _digests(root: Path) -> Dict[str, str]:
    """Every file of the copy (caches aside) -> its sha256."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*")
            if p.is_file() and not {"__pycache__", ".ruff_cache", ".git"} & set(p.relative_to(root).parts)}


def _touched(before: Dict[str, str], after: Dict[str, str]) -> List[str]:
    """The files added, changed or removed between two digests of the copy."""
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def _run(root: Path, *args: str, env: Dict[str, str], timeout: int = 240) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *args], cwd=str(root), capture_output=True, text=True, timeout=timeout,
                          env=env)
    said = f"{' '.join(args)}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    return done


# What the lint knows of the case, in the copy: the rule's name once, then the node its pattern matches in each
# reproducer, found by check.lint's own engine (case_patterns: every case's pattern by the op types it visits).
LINT_PROBE = """
from cases import get_case
from check.lint import case_patterns, index, rule_words
from generators import write
case = get_case("{cid}")
print(*[r for r in rule_words() if r in case.pattern.rules])
for params in case.variants():
    g = index(write.build(case, params).model)
    print(*[m.node for n in g.nodes for c, p in case_patterns().get(n.op_type, []) if c.id == case.id
            for m in p.find(g, n)])
"""


def _passed_per_file(junit: Path) -> Dict[str, int]:
    """Test module (dotted) -> how many of its tests passed, from pytest's JUnit XML; a failure or an error fails."""
    import xml.etree.ElementTree as ET

    passed: Dict[str, int] = {}
    for case in ET.parse(junit).iter("testcase"):
        bad = [c.tag for c in case if c.tag in ("failure", "error")]
        assert not bad, (case.get("classname"), case.get("name"), bad)
        if not any(c.tag == "skipped" for c in case):
            module = re.sub(r"\.[A-Z]\w*$", "", case.get("classname", ""))  # a class's tests count for its module
            passed[module] = passed.get(module, 0) + 1
    return passed


def _verdicts(path: Path) -> List[tuple]:
    return sorted((s.cell.bundle, s.cell.status, s.cell.verdict, s.cell.expectation.get("source", ""))
                  for s in read_results(path).cells)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_page_followed_on_its_throwaway_case(tmp_path: Path):
    pytest.importorskip("onnxruntime")
    root, cid = _copy(tmp_path), case_id()
    seed = f"{len(all_cases()):03d}"  # the next free seed (the page says which it had when written)
    before = _digests(root)
    for path, text in guide_files().items():
        if path.startswith("cases/"):
            assert re.search(r'seed="\d{3}"', text)
            text = re.sub(r'seed="\d{3}"', f'seed="{seed}"', text)
        (root / path).write_text(text, encoding="utf-8")
    assert _touched(before, _digests(root)) == sorted(guide_files()), "a case is its module, its builder, its test"
    _git(root, "add", *guide_files())  # as its author commits them
    env = {**os.environ, "PYTHONPATH": str(root), "QDQ_BUNDLES": str(tmp_path / "bundles")}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_CURRENT_TEST", None)

    # Step 6: the catalogue page, with the case as its last seed: the only other file a new case changes.
    _run(root, "-m", "cases.catalogue", "--markdown", "--out", PAGE, env=env)
    page = (root / PAGE).read_text(encoding="utf-8")
    assert f"| {seed} | [`{cid}`](../cases/{cid}.py) |" in page
    assert _touched(before, _digests(root)) == sorted([*guide_files(), PAGE])
    # Steps 2 and 5: its pattern is a lint rule with no edit of check/: its words are in the registry, and the lint's
    # engine runs it on the case's reproducers, whose Add it matches.
    lint = _run(root, "-c", LINT_PROBE.format(cid=cid), env=env)
    assert lint.stdout.split() == ["qlinear_add", "node_of_c", "node_of_c"], lint.stdout
    # Step 5: the tests a new case can break, whole: every case's checks, the catalogue page, the lint's patterns and
    # cross-matches over every case, the docs (counts included) and ruff on the whole tree.
    junit = tmp_path / "junit.xml"
    _run(root, "-m", "pytest", "tests/cases", "tests/test_docs.py", "tests/test_ruff.py", "--deselect",
         "tests/cases/test_adding_a_case.py", "-n", "2", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
         env=env, timeout=900)
    passed = _passed_per_file(junit)
    for test in (f"tests.cases.per_case.test_{cid}", "tests.cases.test_catalogue", "tests.cases.test_catalogue_page",
                 "tests.cases.test_patterns", "tests.test_docs", "tests.test_ruff"):
        assert passed.get(test, 0) > 0, (test, passed)
    assert sum(passed.values()) > 2000, passed
    # Step 7: its bundles, and its cells on ONNX Runtime: the default column and the unoptimized one.
    _run(root, "-m", "generators", "write", "--case", cid, env=env)
    bundles = sorted(p.name for p in (tmp_path / "bundles" / cid).iterdir() if not p.name.startswith("."))
    assert bundles == ["ratio=10", "ratio=6"], bundles
    default, plain = tmp_path / "default.jsonl", tmp_path / "plain.jsonl"
    run = ["-m", "engines.run", "--engine", "onnxruntime", "--only-case", cid, "-n", "0",
           "--bundles", str(tmp_path / "bundles")]
    _run(root, *run, "--results", str(default), env=env)
    _run(root, *run, "--ort-opt-level", "ORT_DISABLE_ALL", "--results", str(plain), env=env)
    source = "https://github.com/microsoft/onnxruntime/issues/32132"
    assert _verdicts(plain) == sorted((f"{cid}/{b}", "pass", "as documented", source) for b in bundles)
    # At the fusing level the failure is documented: it reproduces (as documented) or it does not (fixed).
    for bundle, status, verdict, cited in _verdicts(default):
        assert (status, verdict) in (("fail", "as documented"), ("pass", "fixed")) and cited == source, bundle
    # Step 8: the report holds its rows.
    _run(root, "-m", "matrix", "report", "--results", str(default), "--results", str(plain), "--out",
         str(tmp_path / "reports"), "--bundles", str(tmp_path / "bundles"), env=env)
    html = (tmp_path / "reports" / "matrix.html").read_text(encoding="utf-8")
    grid = (tmp_path / "reports" / "cells" / "grid.md").read_text(encoding="utf-8")
    assert f"{seed} &middot; {cid}" in html and f"### {seed} · {cid}" in grid
    assert all(f"| {b} |" in grid for b in bundles)
