"""The catalogue as a table, written from the cases themselves: `python -m cases.catalogue --markdown`.

    python -m cases.catalogue                                   # seed, id and reproducers, one case a line
    python -m cases.catalogue --markdown --out docs/catalogue.md   # the page the README links to
    python -m cases.catalogue --markdown --check                # exit 1 when docs/catalogue.md is stale

docs/catalogue.md is this module's output, never edited by hand; tests/cases/test_catalogue_page.py fails when
the committed page differs from what the cases say today.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple
from urllib.parse import urlparse

from cases import all_cases
from cases.base import Case, ParamValue
from core.cli import ArgumentParser

PAGE = Path(__file__).resolve().parent.parent / "docs" / "catalogue.md"
WRITE_COMMAND = "python -m cases.catalogue --markdown --out docs/catalogue.md"
EXIT_STALE, EXIT_USAGE = 1, 2
# Documentation sites, by URL prefix (host and path), as a source is named in the table.
SITES = (
    ("docs.nvidia.com/deeplearning/tensorrt-rtx/", "TensorRT-RTX docs"),
    ("docs.nvidia.com/deeplearning/tensorrt/", "TensorRT docs"),
    ("onnx.ai/", "ONNX docs"),
    ("onnxruntime.ai/", "ONNX Runtime docs"),
    ("nvidia.github.io/", "ModelOpt docs"),
)
HEADER = """\
<!-- Written by `{command}` from cases/*.py: edit the cases, then run it again. -->
# The catalogue

{cases} cases (seeds {first}-{last}), {reproducers} reproducers. Each case is a module in `cases/` that cites the
upstream threads it reproduces; its parameter axes are swept, and every valid combination is one reproducer,
a bundle that `nox -s generate` builds from its seed. What the engines did with them is in
[findings.md](findings.md) (seeds 000-018), [low-precision.md](low-precision.md) (seeds 019-023),
[real-architectures.md](real-architectures.md) (seeds 024-025) and [cross-check-engines.md](cross-check-engines.md)
(seeds 026-031); how a case is declared, in [design.md](design.md).

| seed | case | what it reproduces | upstream | what it sweeps | reproducers |
| --- | --- | --- | --- | --- | ---: |
"""


def markdown(cases: Sequence[Case]) -> str:
    """The whole page: a header with the counts, then one row per case in seed order."""
    seeds = sorted(c.seed for c in cases)
    head = HEADER.format(command=WRITE_COMMAND, cases=len(cases), first=seeds[0], last=seeds[-1],
                         reproducers=sum(reproducers(c) for c in cases))
    return head + "".join(_row(c) + "\n" for c in sorted(cases, key=lambda c: c.seed))


def reproducers(case: Case) -> int:
    """How many reproducers the case's sweep yields (its valid parameter combinations)."""
    return sum(1 for _ in case.variants())


def _row(case: Case) -> str:
    """One table row: seed, id (linked to its module), title, sources, axes, reproducers."""
    cells = (case.seed, f"[`{case.id}`](../cases/{case.id}.py)", _escape(case.title),
             "<br>".join(f"[{_escape(source_label(url))}]({url})" for url in case.links),
             "; ".join(_axis(name, values) for name, values in case.axes.items()), str(reproducers(case)))
    return "| " + " | ".join(cells) + " |"


def source_label(url: str) -> str:
    """A short name for a source: owner/repo#N for a GitHub issue or pull request, else repository or site and page."""
    parsed = urlparse(url)
    parts = [p for p in parsed.path.split("/") if p]
    if parsed.netloc == "github.com" and len(parts) >= 2:
        repo = f"{parts[0]}/{parts[1]}"
        if len(parts) >= 4 and parts[2] in ("issues", "pull"):
            return f"{repo}#{parts[3]}"
        return f"{repo} {parts[-1]}" if len(parts) > 4 else repo
    where = parsed.netloc + parsed.path
    site = next((name for prefix, name in SITES if where.startswith(prefix)), parsed.netloc)
    return f"{site}: {_page(parts, parsed.fragment)}" if parts else site


def _page(parts: List[str], fragment: str) -> str:
    """The page's own name: its anchor, else its file name without extension (an index names its folder)."""
    if fragment:
        return fragment
    stem = parts[-1].rsplit(".", 1)[0]
    if stem == "index" and len(parts) > 1:
        stem = parts[-2]
    return stem.replace("onnx__", "").lstrip("_")


def _axis(name: str, values: Tuple[ParamValue, ...]) -> str:
    """`name`: v1, v2, ... with booleans as yes/no, as bundle ids spell them."""
    shown = (("yes" if v else "no") if isinstance(v, bool) else str(v) for v in values)
    return f"`{name}`: " + ", ".join(_escape(v) for v in shown)


def _escape(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print the catalogue, write the page, or say whether the committed page is current."""
    args = _parser().parse_args(argv)
    cases = all_cases()
    if not args.markdown:
        if args.out or args.check:
            print("error: --out and --check go with --markdown", file=sys.stderr)
            return EXIT_USAGE
        for case in cases:
            print(f"{case.seed}  {case.id:<30} {reproducers(case):>3} reproducers")
        return 0
    text = markdown(cases)
    if args.check:
        return _check(Path(args.out or PAGE), text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}: {len(cases)} cases, {sum(reproducers(c) for c in cases)} reproducers")
    else:
        sys.stdout.write(text)
    return 0


def _check(page: Path, text: str) -> int:
    """0 when the page holds exactly what the cases say today; 1 with the command that rewrites it."""
    current = page.read_text(encoding="utf-8") if page.is_file() else None
    if current == text:
        print(f"{page}: current")
        return 0
    print(f"{page} is {'missing' if current is None else 'stale'}: run `{WRITE_COMMAND}` and commit it",
          file=sys.stderr)
    return EXIT_STALE


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m cases.catalogue", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--markdown", action="store_true", help="the Markdown page (default: one line per case)")
    parser.add_argument("--out", metavar="FILE", help="write the page there (with --check: the page to compare)")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed page (default docs/catalogue.md); exit 1 if it differs")
    return parser


if __name__ == "__main__":
    sys.exit(main())
