"""The JSON Schemas of a results file's lines: cases/cell.schema.json (a cell), cases/session.schema.json (a header).

Every line is checked before anything trusts it: by the merge before a report renders, and by a run before it
resumes a results file. A line that breaks its schema refuses its whole file.
"""

from __future__ import annotations

import functools
import json
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
    if isinstance(kind, str) and kind.startswith("qdq-matrix/cell/") and kind != CELL_SCHEMA:
        return [f"a {kind} cell: this suite reads {CELL_SCHEMA} only (tools/migrate-observed.py rewrote the committed "
                "observations once; a local results file of an older version is run again)"]
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
