"""The JSON Schemas of a results file's lines: cases/cell.schema.json (a cell), cases/session.schema.json (a header).

Every line is checked before anything trusts it: by the merge before a report renders, and by a run before it
resumes a results file. A line that breaks its schema refuses its whole file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from cases.cell import SCHEMA as CELL_SCHEMA
from cases.cell import SESSION_SCHEMA

HERE = Path(__file__).resolve().parent
SCHEMA_FILES = {CELL_SCHEMA: HERE / "cell.schema.json", SESSION_SCHEMA: HERE / "session.schema.json"}
SHOWN = 3  # schema errors named per line
MESSAGE_LIMIT = 200  # characters of one error message (a hostile value can be megabytes long)


def problems(record: Any) -> List[str]:
    """What is wrong with one decoded results line: [] for a valid cell or session header."""
    if not isinstance(record, dict):
        return [f"a results line is a JSON object, not {type(record).__name__}"]
    kind = record.get("schema")
    if kind not in SCHEMA_FILES:
        return [f"not a qdq-matrix record: schema is {_short(repr(kind))}, expected {CELL_SCHEMA!r} or "
                f"{SESSION_SCHEMA!r}"]
    errors = sorted(_validator(kind).iter_errors(record), key=lambda e: [str(p) for p in e.absolute_path])
    found = [f"{_where(e.absolute_path)}: {_short(e.message)}" for e in errors[:SHOWN]]
    if len(errors) > SHOWN:
        found.append(f"{len(errors) - SHOWN} more schema errors")
    return found


@dataclass(frozen=True)
class Lines:
    """A results file's text, line by line: the records that passed, the lines that refuse the file, and a cut-off
    last line (a killed writer's), which refuses nothing."""

    records: Tuple[Tuple[int, Dict[str, Any]], ...]
    bad: Tuple[Tuple[int, str], ...]
    cut_off: Optional[Tuple[int, str]] = None


def check_lines(text: str) -> Lines:
    """Every line of a results file decoded and checked against its schema."""
    lines = text.split("\n")
    complete_end = text.endswith("\n") or text == ""
    records: List[Tuple[int, Dict[str, Any]]] = []
    bad: List[Tuple[int, str]] = []
    cut_off = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines) and not complete_end:
                cut_off = (number, e.msg)
            else:
                bad.append((number, f"not JSON ({e.msg})"))
            continue
        wrong = problems(record)
        if wrong:
            bad.append((number, "; ".join(wrong)))
        else:
            records.append((number, record))
    return Lines(tuple(records), tuple(bad), cut_off)


CHECKED = ".schema-checked.json"  # beside results files: how much of each was checked already, and its sha256


def file_problems(path: Path, text: str) -> Tuple[Tuple[int, str], ...]:
    """The lines of a results file (its text) that its schema refuses, like check_lines(text).bad; the part that an
    earlier call found clean is not checked again when its bytes are unchanged (their sha256 is in CHECKED beside
    the file), and a clean file is remembered so."""
    done = _checked(path, text)
    bad = tuple((n + text[:done].count("\n"), why) for n, why in check_lines(text[done:]).bad)
    if not bad:
        remember_checked(path, text)
    return bad


def remember_checked(path: Path, text: str) -> None:
    """Record that `text` (up to its last complete line) is the checked content of the results file at path."""
    end = text.rfind("\n") + 1
    table = _table(path)
    table[Path(path).name] = {"chars": end, "sha256": hashlib.sha256(text[:end].encode("utf-8")).hexdigest()}
    _save_table(path, table)


def _checked(path: Path, text: str) -> int:
    """How many characters at the start of text were found clean before (0 where none, or where they changed)."""
    entry = _table(path).get(Path(path).name) or {}
    end = entry.get("chars", 0)
    if not isinstance(end, int) or not 0 < end <= len(text):
        return 0
    return end if hashlib.sha256(text[:end].encode("utf-8")).hexdigest() == entry.get("sha256") else 0


def _table(path: Path) -> Dict[str, Any]:
    try:
        table = json.loads((Path(path).parent / CHECKED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def _save_table(path: Path, table: Dict[str, Any]) -> None:
    """Written whole and swapped in; a folder that cannot be written only costs a check next time."""
    folder = Path(path).parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=".schema-checked-", dir=folder)
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(table, f, sort_keys=True)
        os.replace(tmp, folder / CHECKED)
    except OSError:
        pass


class SchemaUnavailable(ImportError):
    """jsonschema is not installed where results are read."""


@functools.lru_cache(maxsize=None)
def _validator(kind: str) -> Any:
    """A validator of the schema's own draft, the schema itself checked first."""
    try:
        import jsonschema
    except ImportError as e:
        raise SchemaUnavailable(f"jsonschema is not installed in this Python, so results cannot be checked against "
                                f"{SCHEMA_FILES[kind].name}: install it (it is in the report, cells and check "
                                "groups, and in tools/gpu-requirements.txt)") from e

    schema = json.loads(SCHEMA_FILES[kind].read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _where(path: Any) -> str:
    return ".".join(str(p) for p in path) or "(the record)"


def _short(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."
