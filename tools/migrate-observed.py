#!/usr/bin/env python3
"""One committed rewrite of reports/observed/ (issue 26), like engines/tensorrt/rederive.py's for evidence:

    python tools/migrate-observed.py [--write]

1. No machine paths: every recorded command (session headers, cells' run.command, the sweeps' .jsonl.gz) is
   made relative to the repository (cases.portable): `--results` names the committed file itself, a checkout of
   this repository (`/work/main/`, the fresh clone `/tmp/fresh0/`) becomes the repository, and any other path keeps
   its last two parts behind "…/". The reductions' model paths and repro-check.txt get the same treatment.
2. The tensorrt-only H200 files: 258 cells (parse failures and not-run cells) never recorded their tactic sources,
   so the merge put them in the default-tactics column, where they were dropped as duplicates. Each cell of those
   files now carries `variant: {"tactics": "tensorrt-only"}` and `options.tactics`; a cell without
   `tactic_sources` gets the ones its session's built cells recorded, with a note saying so.

Prints what changes per file; --write rewrites in place (unchanged lines kept byte for byte). Running it again
changes nothing (a test checks that). Afterwards the manifest is re-digested: `nox -s observe -- FILES`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cases.portable import portable_path, portable_text  # noqa: E402
from generators.bundle import meta_digest  # noqa: E402

OBSERVED = REPO / "reports" / "observed"
# Folders that were checkouts of this repository when the commands ran (docs/findings.md and git history say so).
CHECKOUTS = ("/work/main/", "/tmp/fresh0/")
TACTICS_NOTE = ("tactic sources recorded by tools/migrate-observed.py from the cells of this session that built "
                "(TensorRT's own tactics, stub cuDNN): this cell stopped before a builder config existed")


def command(text: str, here: str) -> str:
    """A recorded command with no machine path: --results is the committed file, checkouts are the repository."""
    for root in CHECKOUTS:
        text = text.replace(root, str(REPO) + "/")
    words = text.split(" ")
    for i, word in enumerate(words[:-1]):
        if word == "--results" and words[i + 1].startswith("/"):
            words[i + 1] = here
    return portable_text(" ".join(words))


def session_sources(records: List[Dict[str, Any]]) -> List[str]:
    """The tactic sources this session's built cells recorded (one list for the whole session)."""
    found = {json.dumps(r["options"]["tactic_sources"]) for r in records
             if r.get("schema") == "qdq-matrix/cell/1" and (r.get("options") or {}).get("tactic_sources")}
    if len(found) != 1:
        raise SystemExit(f"migrate-observed: expected one tactic-source list in the session, found {sorted(found)}")
    return json.loads(found.pop())


def migrate_record(record: Dict[str, Any], here: str, tensorrt_only: Optional[List[str]]) -> Dict[str, Any]:
    """One results line, migrated."""
    out = json.loads(json.dumps(record))
    if out.get("schema") == "qdq-matrix/session/1":
        if out.get("command"):
            out["command"] = command(out["command"], here)
        return out
    run = out.get("run") or {}
    if run.get("command"):
        run["command"] = command(run["command"], here)
    if tensorrt_only is not None:
        options = out.setdefault("options", {})
        options.setdefault("tactics", "tensorrt-only")
        if "tactic_sources" not in options:
            options["tactic_sources"] = list(tensorrt_only)
            options["notes"] = list(options.get("notes") or []) + [TACTICS_NOTE]
        out["variant"] = dict(out.get("variant") or {}, tactics="tensorrt-only")
    return out


def migrate_lines(text: str, here: str, tensorrt_only: bool) -> Tuple[str, int]:
    """(new text, changed lines) of a JSONL file."""
    lines = text.split("\n")
    records = [json.loads(line) for line in lines if line.strip()]
    sources = session_sources(records) if tensorrt_only else None
    changed = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        new = json.dumps(migrate_record(json.loads(line), here, sources), sort_keys=True)
        if new != line:
            lines[i], changed = new, changed + 1
    return "\n".join(lines), changed


def migrate_json(text: str) -> Tuple[str, int]:
    """(new text, changed fields) of a reduction.json or a bug bundle's case.json: its model path made portable."""
    data = json.loads(text)
    changed = 0
    for holder, key in ((data, "model"), (data.get("source_model") or {}, "path")):
        value = holder.get(key)
        if isinstance(value, str) and value.startswith("/"):
            holder[key] = portable_path(value)
            changed += 1
    if changed and "meta_digest" in data:
        data["meta_digest"] = meta_digest(data)
    return (json.dumps(data, indent=2) + "\n" if changed else text), changed


def migrate_file(path: Path) -> Tuple[bytes, int]:
    """(new bytes, changes) of one file under reports/observed/."""
    here = path.relative_to(REPO).as_posix()
    raw = path.read_bytes()
    if path.name.endswith(".jsonl.gz"):
        text, n = migrate_lines(gzip.decompress(raw).decode("utf-8"), here, False)
        return (gzip.compress(text.encode("utf-8"), mtime=0) if n else raw), n
    if path.suffix == ".jsonl":
        text, n = migrate_lines(raw.decode("utf-8"), here, path.name.endswith("-tensorrt-only.jsonl"))
        return text.encode("utf-8"), n
    if path.name in ("reduction.json", "case.json"):
        text, n = migrate_json(raw.decode("utf-8"))
        return text.encode("utf-8"), n
    if path.name == "repro-check.txt":
        old = raw.decode("utf-8").split("\n")
        new = [portable_text(line) for line in old]
        return "\n".join(new).encode("utf-8"), sum(a != b for a, b in zip(old, new))
    return raw, 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/migrate-observed.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the files in place")
    parser.add_argument("--root", type=Path, default=OBSERVED, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    total = 0
    for path in sorted(p for p in args.root.rglob("*") if p.is_file() and p.name != "MANIFEST.json"):
        new, n = migrate_file(path)
        if not n:
            continue
        total += n
        print(f"{path.relative_to(REPO)}: {n} changed")
        if args.write:
            tmp = path.with_name(path.name + ".migrating")
            tmp.write_bytes(new)
            tmp.replace(path)
    print(f"{total} changes" + ("" if args.write or not total else " (dry run: --write to apply)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
