"""The README a newcomer reads first, and the docs/ pages it leads to: short, linked, and true to the catalogue."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Set

import pytest

from cases import all_cases
from cases.catalogue import reproducers

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
README_MAX_LINES = 220
FIRST_SCREEN = 40  # lines a terminal or a GitHub page shows before the reader scrolls
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def pages() -> List[Path]:
    """The README and every Markdown page under docs/."""
    return [README] + sorted(DOCS.glob("*.md"))


def test_readme_reads_in_five_minutes():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= README_MAX_LINES


def test_the_two_commands_are_on_the_first_screen():
    first = "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])
    for command in ("nox -s matrix", "nox -s tests", "bash .ci/run"):
        assert command in first, command


def test_every_docs_page_is_linked_from_the_readme():
    linked = set(_links(README))
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if f"docs/{p.name}" not in linked]
    assert not missing, f"docs/ pages the README does not link: {missing}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path):
    """A moved section or file breaks no link: every relative target exists, and so does every #anchor."""
    broken = []
    for target in _links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in _anchors(dest)):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_readme_counts_are_the_catalogues():
    cases = all_cases()
    text = README.read_text(encoding="utf-8")
    assert f"{len(cases)} cases (seeds {cases[0].seed}-{cases[-1].seed}), " \
           f"{sum(reproducers(c) for c in cases)} reproducers" in text


def _links(page: Path) -> List[str]:
    """The target of every relative Markdown link in the page; web addresses are left to the reader."""
    return [t for t in LINK.findall(page.read_text(encoding="utf-8")) if not re.match(r"[a-z]+:", t)]


def _anchors(page: Path) -> Set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    heads = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}
