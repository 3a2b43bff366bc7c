"""docs/adding-a-case.md, followed step by step on its throwaway case in a copy of the repository: the page's code
blocks are the case module, its builder and its test, and its commands register it, write the catalogue page, build
the bundles, run the cells on ONNX Runtime and render the report. A step of the page that stops working fails here."""

from __future__ import annotations

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
PLAIN_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
COMMAND = re.compile(r"^    ((?:python|nox|\.venv/bin/nox|tools/) ?[^#\n]*?)\s*(?:#.*)?$", re.MULTILINE)
# What the steps need of the repository: the layers up to the reports, the case tests and the catalogue page.
COPIED = ("cases", "core", "generators", "engines", "matrix", "tests/conftest.py", "tests/cases", "docs/catalogue.md",
          "pyproject.toml")


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
    """The parts of the repository the steps need, in tmp/repo."""
    root = tmp / "repo"
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


def _register(root: Path, cid: str) -> None:
    """Step 4: the page's line in CASE_MODULES, after the last seed case and before the external ones."""
    [block] = [b for b in PLAIN_BLOCK.findall(GUIDE.read_text(encoding="utf-8")) if f'"cases.{cid}",' in b]
    assert "# External cases" in block and block.index(f'"cases.{cid}"') < block.index("# External cases")
    init = root / "cases" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    marker = "    # External cases"
    assert text.count(marker) == 1
    init.write_text(text.replace(marker, f'    "cases.{cid}",\n{marker}'), encoding="utf-8")


def _run(root: Path, *args: str, env: Dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *args], cwd=str(root), capture_output=True, text=True, timeout=240, env=env)
    said = f"{' '.join(args)}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    return done


def _verdicts(path: Path) -> List[tuple]:
    return sorted((s.cell.bundle, s.cell.status, s.cell.verdict, s.cell.expectation.get("source", ""))
                  for s in read_results(path).cells)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_page_followed_on_its_throwaway_case(tmp_path: Path):
    pytest.importorskip("onnxruntime")
    root, cid = _copy(tmp_path), case_id()
    seed = f"{len(all_cases()):03d}"  # the next free seed (the page says which it had when written)
    for path, text in guide_files().items():
        if path.startswith("cases/"):
            assert re.search(r'seed="\d{3}"', text)
            text = re.sub(r'seed="\d{3}"', f'seed="{seed}"', text)
        (root / path).write_text(text, encoding="utf-8")
    _register(root, cid)
    env = {**os.environ, "PYTHONPATH": str(root), "QDQ_BUNDLES": str(tmp_path / "bundles")}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_CURRENT_TEST", None)

    # The files lint clean, as the whole tree must.
    _run(root, "-m", "ruff", "check", "--config", str(REPO / "pyproject.toml"), *guide_files(), env=env)
    # Step 6: the catalogue page, with the case as its last seed.
    _run(root, "-m", "cases.catalogue", "--markdown", "--out", "docs/catalogue.md", env=env)
    page = (root / "docs" / "catalogue.md").read_text(encoding="utf-8")
    assert f"| {seed} | [`{cid}`](../cases/{cid}.py) |" in page
    # Steps 4 and 5: the catalogue's checks of every case and the case's own test pass on it.
    tests = _run(root, "-m", "pytest", "tests/cases/test_catalogue.py", "tests/cases/test_catalogue_page.py",
                 f"tests/cases/per_case/test_{cid}.py", "-k", cid, "-n", "0", "-q", "-p", "no:cacheprovider", env=env)
    assert re.search(r"(\d+) passed", tests.stdout) and int(re.search(r"(\d+) passed", tests.stdout)[1]) >= 15, \
        tests.stdout[-2000:]
    assert " failed" not in tests.stdout and " error" not in tests.stdout, tests.stdout[-2000:]
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
