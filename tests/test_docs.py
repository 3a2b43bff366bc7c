"""The README a newcomer reads first, and the docs/ pages it leads to: short, linked, and true to the catalogue."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Iterator, List, Set, Tuple

import pytest

from cases import all_cases
from cases.catalogue import reproducers

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
README_MAX_LINES = 220
FIRST_SCREEN = 40  # lines a terminal or a GitHub page shows before the reader scrolls
# A count of the catalogue ("34 cases", "316 reproducers", "a 219-reproducer catalogue"), a date, a seed range.
COUNT = re.compile(r"(?<![\w.-])(\d+)(?:-reproducer\b| (?:seed )?(?:cases|reproducers)\b)")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
SEEDS = re.compile(r"\b[Ss]eeds? (\d{3})(?:-(\d{3}))?")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
PACKAGES = ("core", "cases", "generators", "engines", "matrix", "check")
# Folders a run writes (git-ignored): a page names what lands there, not what is committed.
GENERATED = ("results/", ".bundles", "reports/matrix", "reports/cells", "reports/diff", "reports/nodes",
             "reports/conformance", "reports/check", "reports/junit.xml", "reports/plots.html")


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


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_path_a_page_names_exists(page: Path):
    """A file or folder of this repository named in backticks (`engines/runner.py`, `core/words.py`) is there."""
    roots = PACKAGES + ("tools", "tests", "docs", "reports", "ci", ".ci")
    missing = [t for t in _code(page) if re.fullmatch(r"[\w./-]+", t) and "/" in t and t.split("/")[0] in roots
               and not t.startswith(GENERATED) and not (REPO / t.split("::")[0].rstrip("/")).exists()]
    assert not missing, f"{page.name}: {missing}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_dotted_name_a_page_gives_resolves(page: Path):
    """`core.cell.VERDICTS`, `engines.run`, `cases.verdict.rejudge`: a module of this repository, or a name in one."""
    unresolved = [t for t in _code(page) if re.fullmatch(rf"(?:{'|'.join(PACKAGES)})(?:\.\w+)+(?:\(\))?", t)
                  and not re.search(r"\.(html|md|json|jsonl|py|onnx|npz|txt|js)$", t) and not _resolves(t)]
    assert not unresolved, f"{page.name}: {unresolved}"


def _code(page: Path) -> List[str]:
    """Every inline code span of a page, stripped."""
    return [t.strip() for t in CODE.findall(page.read_text(encoding="utf-8"))]


def _resolves(dotted: str) -> bool:
    """Whether a dotted name is a module of this repository or an attribute of the longest module it starts with."""
    parts = dotted.rstrip("()").split(".")
    for i in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def catalogue_counts(page: Path) -> Iterator[Tuple[str, int, str, str]]:
    """Every count of cases or reproducers a page states, with its scope: (the count as written, the number, the
    seeds it speaks of as "LOW-HIGH" (the whole catalogue "000-999"), the sentence). Its scope is the seeds its
    sentence names, else its paragraph's, else its heading's. A count in a paragraph or under a heading that holds a
    date (YYYY-MM-DD) is history and not yielded, and neither is one quoted as a report's words ("...")."""
    heading = ""
    for paragraph in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")):
        if paragraph.startswith("#"):
            heading = paragraph.splitlines()[0]
        if DATE.search(paragraph) or DATE.search(heading):
            continue
        for sentence in re.split(r"(?<=[.;:])\s+(?=[A-Z(])", paragraph):
            unquoted = re.sub(r'"[^"]*"', "", sentence)
            for m in COUNT.finditer(unquoted):
                named = SEEDS.search(sentence) or SEEDS.search(paragraph) or SEEDS.search(heading)
                seeds = f"{named[1]}-{named[2] or named[1]}" if named else "000-999"
                yield m[0], int(m[1]), seeds, sentence


def test_every_count_of_the_catalogue_in_the_docs_is_the_catalogues_or_dated():
    """A count of cases or reproducers that the README or a page states is what the catalogue says today for the seeds
    it speaks of, or it is dated as history (docs/catalogue.md is written with its counts and checked apart)."""
    cases = all_cases()
    for page in pages():
        if page.name == "catalogue.md":
            continue
        for said, number, seeds, sentence in catalogue_counts(page):
            low, high = seeds.split("-")
            scope = [c for c in cases if low <= c.seed <= high]
            today = len(scope) if "case" in said else sum(reproducers(c) for c in scope)
            assert number == today, f"{page.name}: {said!r} (seeds {seeds}): the catalogue has {today} today; " \
                                    f"date it as history or say today's count: {sentence!r}"


def test_a_count_that_the_catalogue_outgrew_fails_and_a_dated_one_does_not(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Now\n\nThe catalogue: 3 cases, 5 reproducers (seeds 000-002); `x` has 8 reproducers.\n\n"
                    "## Then (2026-11-20)\n\nThe whole catalogue: 200 reproducers.\n\nA report says "
                    '"302 reproducers compared".\n', encoding="utf-8")
    found = [(said, seeds) for said, _, seeds, _ in catalogue_counts(page)]
    assert found == [("3 cases", "000-002"), ("5 reproducers", "000-002"), ("8 reproducers", "000-002")]


def _links(page: Path) -> List[str]:
    """The target of every relative Markdown link in the page; web addresses are left to the reader."""
    return [t for t in LINK.findall(page.read_text(encoding="utf-8")) if not re.match(r"[a-z]+:", t)]


def _anchors(page: Path) -> Set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    heads = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}
