#!/usr/bin/env python3
"""One committed rewrite of reports/observed/, like engines/tensorrt/rederive.py's for evidence:

    python tools/migrate-observed.py [--write]

1. No machine paths: every recorded command (session headers, cells' run.command, the sweeps' .jsonl.gz) is
   made relative to the repository (core.portable): `--results` names the committed file itself, a checkout of
   this repository (`/work/main/`, the fresh clone `/tmp/fresh0/`) becomes the repository, and any other path keeps
   its last two parts behind "…/". The reductions' model paths and repro-check.txt get the same treatment.
2. The tensorrt-only H200 files: 258 cells (parse failures and not-run cells) never recorded their tactic sources,
   so the merge put them in the default-tactics column, where they were dropped as duplicates. Each cell of those
   files now carries `variant: {"tactics": "tensorrt-only"}` and `options.tactics`; a cell without
   `tactic_sources` gets the ones its session's built cells recorded, with a note saying so.

3. cell/2: `stage` becomes `last_stage`; a failed cell's evidence becomes fields, found by the same code
   that finds it for a new cell (engines/reasons.py): `failing_node`, `engine_reason` and `error_line`; the tactic
   sources move from `options` to the cell's own `tactic_sources`; what the merge used to fill in on every read comes
   in once: a missing `hardware_detail` and run date, host or command from the session header, a TensorRT cell's
   column variant from its tactics; and the per-node evidence that the four tensorrt-only files wrote as sentences
   only (old engines/tensorrt/inspect.py: "layer 'X' Type: weights Int8, input Int8 (...), output ...") gets the
   fields every later cell has: layer, layer_type, inputs, outputs, weights, tactic.
4. No machine names: session headers and cells' `run` no longer carry `host` (the name of the machine that ran
   them; nothing keys on it, and a cell names its hardware by its GPU or CPU label).
5. cell/3 and session/2: the column's engine options (`cell_options`, in each session header and each cell's `run`)
   are a JSON object, no longer a string of JSON inside the JSON line; and each cell gets its `symptom`, the field the
   reports group root causes by, found by the code that finds it for a new cell (engines.reasons.symptom_of, over
   the error and reason as a report shows them), so that no report masks error text again.

Prints what changes per file; --write rewrites in place (unchanged lines kept byte for byte), re-digests the
changed files in reports/observed/MANIFEST.json (their machine and command kept) and records the migration there
(`migrations`: date, command, change, files). Running it again changes nothing (a test checks that).
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

import re  # noqa: E402

from core.cell import SCHEMA as CELL_SCHEMA  # noqa: E402
from core.cell import SESSION_FAMILY, SESSION_SCHEMA  # noqa: E402
from core.cli import ArgumentParser  # noqa: E402
from core.portable import portable_path, portable_text, scrub  # noqa: E402
from core.words import FAILED, NOT_TRIED  # noqa: E402
from engines.reasons import error_line, failure_evidence, symptom_of  # noqa: E402
from engines.tensorrt.layers import dtype  # noqa: E402
from generators.bundle import meta_digest  # noqa: E402
from matrix import observed  # noqa: E402

CELL_1, CELL_2 = "qdq-matrix/cell/1", "qdq-matrix/cell/2"
CELLS = (CELL_1, CELL_2, CELL_SCHEMA)
# The sentence old engines/tensorrt/inspect.py wrote for a layer it could read, and its parts.
_OLD_LAYER = re.compile(r"^layer '([^']*)' (\S+): ")
_OLD_PART = {"weights": re.compile(r"\bweights (\w+)"), "inputs": re.compile(r"\binput (\w+) \("),
             "outputs": re.compile(r"\boutput (\w+) \("), "tactic": re.compile(r"\btactic (\S+?)(?:;|$)")}
_OLD_TACTICS_SUFFIX = ", tensorrt-only tactics"  # the hardware label of tensorrt-only cells merged before variants

OBSERVED = REPO / "reports" / "observed"
# Folders that were checkouts of this repository when the commands ran (docs/findings.md and git history say so).
CHECKOUTS = ("/work/main/", "/tmp/fresh0/")
MACHINE_NAMES = ("host",)  # step 4: fields that name the machine, dropped from headers and cells' run
CHANGE = ("step 5 (cell/3, session/2): cell_options, in session headers and cells' run, is a JSON object instead of a "
          "string of JSON; every cell has its symptom field (engines.reasons.symptom_of), which the root causes are "
          "grouped by; no outcome, verdict or evidence changed")
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


def _sources(record: Dict[str, Any]) -> List[str]:
    """A cell record's tactic sources, where either schema keeps them."""
    return list(record.get("tactic_sources") or (record.get("options") or {}).get("tactic_sources") or [])


def session_sources(records: List[Dict[str, Any]]) -> List[str]:
    """The tactic sources this session's built cells recorded (one list for the whole session)."""
    found = {json.dumps(_sources(r)) for r in records if r.get("schema") in CELLS and _sources(r)}
    if len(found) != 1:
        raise SystemExit(f"migrate-observed: expected one tactic-source list in the session, found {sorted(found)}")
    return json.loads(found.pop())


def migrate_record(record: Dict[str, Any], here: str, tensorrt_only: Optional[List[str]],
                   header: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One results line, migrated (header: the session header above it)."""
    out = json.loads(json.dumps(record))
    if str(out.get("schema")).startswith(SESSION_FAMILY):
        if out.get("command"):
            out["command"] = command(out["command"], here)
        for key in MACHINE_NAMES:
            out.pop(key, None)
        return dict(options_object(out), schema=SESSION_SCHEMA)
    run = out.get("run") or {}
    if run.get("command"):
        run["command"] = command(run["command"], here)
    for key in MACHINE_NAMES:
        run.pop(key, None)
    if out.get("schema") == CELL_1:
        out = cell_2(tensorrt_only_cell(out, tensorrt_only), header or {})
    if out.get("schema") == CELL_2:
        out = cell_3(out)
    return out


def options_object(record: Dict[str, Any]) -> Dict[str, Any]:
    """Step 5: a header's or a cell's run's cell_options as the JSON object its string held."""
    if isinstance(record.get("cell_options"), str):
        record["cell_options"] = json.loads(record["cell_options"])
    return record


def cell_3(out: Dict[str, Any]) -> Dict[str, Any]:
    """Step 5: a cell/2 record as cell/3: its run's cell_options an object, its symptom a field."""
    options_object(out.setdefault("run", {}))
    out["schema"] = CELL_SCHEMA
    out["symptom"] = symptom_of(str(out.get("status", "")), scrub(str(out.get("error") or "")),
                                scrub(str(out.get("reason") or "")), out.get("parser_errors") or [])
    return out


def tensorrt_only_cell(out: Dict[str, Any], tensorrt_only: Optional[List[str]]) -> Dict[str, Any]:
    """Step 2: a cell of a tensorrt-only file with its tactics recorded."""
    if tensorrt_only is not None:
        options = out.setdefault("options", {})
        options.setdefault("tactics", "tensorrt-only")
        if "tactic_sources" not in options:
            options["tactic_sources"] = list(tensorrt_only)
            options["notes"] = list(options.get("notes") or []) + [TACTICS_NOTE]
        out["variant"] = dict(out.get("variant") or {}, tactics="tensorrt-only")
    return out


def cell_2(out: Dict[str, Any], header: Dict[str, Any]) -> Dict[str, Any]:
    """Step 3: a cell/1 record as cell/2."""
    out["schema"] = CELL_2
    out["last_stage"] = out.pop("stage", "")
    options = out.setdefault("options", {})
    out["tactic_sources"] = [str(x) for x in options.pop("tactic_sources", None) or []]
    if not out.get("hardware_detail") and header.get("hardware_detail"):
        out["hardware_detail"] = dict(header["hardware_detail"])
    run = out.setdefault("run", {})
    for key in ("date", "command"):
        if not run.get(key) and header.get(key):
            run[key] = str(header[key])
    if out.get("engine") == "tensorrt" and not out.get("variant"):
        choice = options.get("tactics") or ("default" if {"CUBLAS", "CUDNN"} & set(out["tactic_sources"]) or
                                            not out["tactic_sources"] else "tensorrt-only")
        out["variant"] = {"tactics": choice} if choice != "default" else {}
    if out.get("variant") and str(out.get("hardware", "")).endswith(_OLD_TACTICS_SUFFIX):
        out["hardware"] = out["hardware"][: -len(_OLD_TACTICS_SUFFIX)]
    failed = out.get("status") in FAILED
    node, says = failure_evidence(out.get("error") or "", out.get("parser_errors") or []) if failed else ("", "")
    out["failing_node"], out["engine_reason"] = node, says
    out["error_line"] = error_line(out.get("error") or "") if out.get("status") not in NOT_TRIED else ""
    out["precision"] = {n: evidence_fields(e) for n, e in (out.get("precision") or {}).items()}
    return out


def evidence_fields(entry: Dict[str, Any]) -> Dict[str, Any]:
    """A precision entry with the fields every later cell has, read once from old inspect.py's sentence."""
    found = _OLD_LAYER.match(str(entry.get("evidence") or ""))
    if entry.get("layer") or found is None:
        return entry
    text = entry["evidence"]
    out = dict(entry, layer=found.group(1), layer_type=found.group(2))
    for key in ("inputs", "outputs", "weights"):
        words = _OLD_PART[key].search(text)
        out[key] = [dtype(words.group(1))] if words else []
    tactic = _OLD_PART["tactic"].search(text)
    out["tactic"] = tactic.group(1) if tactic else ""
    return out


def migrate_lines(text: str, here: str, tensorrt_only: bool) -> Tuple[str, int]:
    """(new text, changed lines) of a JSONL file."""
    lines = text.split("\n")
    records = [json.loads(line) for line in lines if line.strip()]
    sources = session_sources(records) if tensorrt_only else None
    changed = 0
    header: Dict[str, Any] = {}
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        record = json.loads(line)
        if str(record.get("schema")).startswith(SESSION_FAMILY):
            header = record
        new = json.dumps(migrate_record(record, here, sources, header), sort_keys=True)
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
    parser = ArgumentParser(prog="tools/migrate-observed.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the files in place")
    parser.add_argument("--root", type=Path, default=OBSERVED, help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, action="append", default=[],
                        help="rewrite these results files in place too (test data outside reports/observed/; no "
                             "manifest lists them)")
    args = parser.parse_args(argv)
    total = 0
    changed: List[Path] = []
    for path in sorted(p for p in args.root.rglob("*") if p.is_file() and p.name != "MANIFEST.json"):
        new, n = migrate_file(path)
        if not n:
            continue
        total += n
        changed.append(path)
        print(f"{show(path)}: {n} changed")
        if args.write:
            tmp = path.with_name(path.name + ".migrating")
            tmp.write_bytes(new)
            tmp.replace(path)
    for path in (f.resolve() for f in args.file):
        new, n = migrate_file(path)
        total += n
        print(f"{show(path)}: {n} changed")
        if args.write and n:
            path.write_bytes(new)
    print(f"{total} changes" + ("" if args.write or not total else " (dry run: --write to apply)"))
    if args.write and changed:
        manifest = observed.load(args.root)
        saved = observed.save(observed.migrated(manifest, changed, "python tools/migrate-observed.py --write", CHANGE))
        print(f"{show(saved)}: {len(changed)} files re-digested, the migration recorded")
    return 0


def show(path: Path) -> str:
    return observed.show(path)


if __name__ == "__main__":
    sys.exit(main())
