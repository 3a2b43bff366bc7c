"""The pinned engine versions, from the engine descriptors (core/engines.py), for the noxfile and the GPU tools.

    python -m engines.pins                       # every group: session, versions, python, index, requirements
    python -m engines.pins trt                   # one group's versions, one a line (tools/gpu-payload, gpu-round.sh)
    python -m engines.pins trt --field cuda      # "VERSION VALUE" a line: the CUDA major each wheel names
    python -m engines.pins --github trt trt10    # tensorrt={"include": [{"trt", "session"}, ...]} for $GITHUB_OUTPUT
    python -m engines.pins --json                # the whole table

Standard library only, and it imports no engine (nor numpy): it runs on the bare Python of a GPU machine.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional, Sequence

from core.cli import ArgumentParser
from core.engines import PinGroup, engine_of, pin_groups

FIELDS = ("cuda", "python", "index", "requirements")


def table() -> Dict[str, Dict[str, Any]]:
    """Every group as plain data, by session name."""
    return {name: {"engine": engine_of(name), "versions": list(g.versions), "python": g.python, "index": g.index,
                   "requirements": {v: list(g.requirements(v)) for v in g.versions}, "cuda": dict(g.cuda)}
            for name, g in pin_groups().items()}


def field_lines(group: PinGroup, name: str) -> List[str]:
    """"VERSION VALUE" per version of a group ("-" where the field has no value)."""
    values = {"cuda": lambda v: group.cuda.get(v, ""), "python": lambda v: group.python,
              "index": lambda v: group.index, "requirements": lambda v: " ".join(group.requirements(v))}[name]
    return [f"{v} {values(v) or '-'}" for v in group.versions]


def github_matrix(sessions: Sequence[str]) -> str:
    """A GitHub Actions matrix of one job per version: {"include": [{"trt": V, "session": "trt(V)"}]}."""
    groups = pin_groups()
    include = [{"trt": v, "session": f"{s}({v})"} for s in sessions for v in groups[s].versions]
    return json.dumps({"include": include}, separators=(",", ":"))


def summary() -> List[str]:
    """The table for people, a line per group."""
    lines = []
    for name, g in pin_groups().items():
        where = ", ".join(x for x in (f"Python {g.python}" if g.python else "", g.index,
                                      " ".join(g.requires)) if x)
        lines.append(f"{name} ({engine_of(name)}): {' '.join(g.versions)}" + (f" [{where}]" if where else ""))
    return lines


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = ArgumentParser(prog="python -m engines.pins", description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", help=f"pin groups: {', '.join(pin_groups())}")
    parser.add_argument("--field", choices=FIELDS, help="print 'VERSION VALUE' lines of one field")
    parser.add_argument("--github", action="store_true", help="a GitHub Actions matrix line for $GITHUB_OUTPUT")
    parser.add_argument("--json", action="store_true", help="the whole table as JSON")
    args = parser.parse_args(argv)
    groups = pin_groups()
    unknown = [g for g in args.groups if g not in groups]
    if unknown:
        print(f"engines.pins: no pin group {', '.join(unknown)}; groups: {', '.join(groups)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(table(), indent=1, sort_keys=True))
    elif args.github:
        print(f"tensorrt={github_matrix(args.groups or [g for g in groups if engine_of(g) == 'tensorrt'])}")
    elif not args.groups:
        print("\n".join(summary()))
    else:
        for g in args.groups:
            print("\n".join(field_lines(groups[g], args.field) if args.field else groups[g].versions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
