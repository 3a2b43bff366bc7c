"""The JSON Schemas of a results file's lines: core/cell.schema.json (a cell), core/session.schema.json (a header).

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

from core.cell import CELL_FAMILY, SESSION_FAMILY, SESSION_SCHEMA
from core.cell import SCHEMA as CELL_SCHEMA

HERE = Path(__file__).resolve().parent
SCHEMA_FILES = {CELL_SCHEMA: HERE / "cell.schema.json", SESSION_SCHEMA: HERE / "session.schema.json"}
SHOWN = 3  # schema errors named per line
MESSAGE_LIMIT = 200  # characters of one error message (a hostile value can be megabytes long)


def problems(record: Any) -> List[str]:
    """What is wrong with one decoded results line: [] for a valid cell or session header."""
    if not isinstance(record, dict):
        return [f"a results line is a JSON object, not {type(record).__name__}"]
    kind = record.get("schema")
    if older_version(record):
        current = CELL_SCHEMA if kind.startswith(CELL_FAMILY) else SESSION_SCHEMA
        return [f"a {kind} line: this suite reads {current} only (tools/migrate-observed.py rewrote the committed "
                "observations at each step; a local results file of an older version is run again)"]
    if not isinstance(kind, str) or kind not in SCHEMA_FILES:  # a list or object there is as wrong as any other
        return [f"not a qdq-matrix record: schema is {_short(repr(kind))}, expected {CELL_SCHEMA!r} or "
                f"{SESSION_SCHEMA!r}"]
    accepts = _accepts(kind)
    if accepts is not None and accepts(record):  # the common case: a line that meets every constraint, said fast
        return []
    validator = _validator(kind)  # jsonschema, imported only where a line may be wrong (about 0.4 s a process)
    errors = sorted(validator.iter_errors(record), key=lambda e: [str(p) for p in e.absolute_path])
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
    older: str = ""  # the first record's schema where it is an older version of this suite's ("qdq-matrix/session/1")


def check_lines(text: str, validate_from: int = 0) -> Lines:
    """Every line of a results file decoded and checked against its schema (those that start before character
    `validate_from` only decoded: check_file found them clean before)."""
    lines = text.split("\n")
    complete_end = text.endswith("\n") or text == ""
    records: List[Tuple[int, Dict[str, Any]]] = []
    bad: List[Tuple[int, str]] = []
    cut_off = None
    older = ""
    offset = 0
    for number, line in enumerate(lines, start=1):
        start, offset = offset, offset + len(line) + 1
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
        if not records and not bad:
            older = older_version(record)
        wrong = problems(record) if start >= validate_from else []
        if wrong:
            bad.append((number, "; ".join(wrong)))
        else:
            records.append((number, record))
    return Lines(tuple(records), tuple(bad), cut_off, older)


def older_version(record: Any) -> str:
    """The record's schema where it is an older version of one this suite reads ("qdq-matrix/cell/2"), else ""."""
    kind = record.get("schema") if isinstance(record, dict) else None
    for family, current in ((CELL_FAMILY, CELL_SCHEMA), (SESSION_FAMILY, SESSION_SCHEMA)):
        if isinstance(kind, str) and kind.startswith(family) and kind != current:
            return kind
    return ""


# How much of each results file was found clean, by its path: the sha256 of that part and of the schemas it was
# checked against. A cache outside the repository (as uv's and the GPU payload's are): a committed folder stays as
# it is, and a file whose bytes or schemas changed is checked again. It lies in $QDQ_CACHE_DIR, else
# $XDG_CACHE_HOME/qdq-matrix, else ~/.cache/qdq-matrix (the XDG default); it holds digests only, never a result, and
# losing it costs one check of each file.
CACHE_ENV = "QDQ_CACHE_DIR"


def check_file(path: Path, text: str) -> Lines:
    """check_lines(text) for a results file, where the part of it that an earlier check found clean is decoded but
    not validated again while its bytes and the schemas are unchanged; a clean file is remembered so."""
    done = _checked(path, text)
    lines = check_lines(text, validate_from=done)
    if not lines.bad and done < text.rfind("\n") + 1:  # something new was found clean: remember it (else it is)
        remember_checked(path, text)
    return lines


def file_problems(path: Path, text: str) -> Tuple[Tuple[int, str], ...]:
    """The lines of a results file that its schema refuses (check_file's `bad`)."""
    return check_file(path, text).bad


def remember_checked(path: Path, text: str) -> None:
    """Record that `text` (up to its last complete line) is the checked content of the results file at path."""
    end = text.rfind("\n") + 1
    table = _table()
    table[str(Path(path).resolve())] = {"chars": end, "sha256": _sha(text[:end]), "schemas": _schemas_digest()}
    _save_table({k: v for k, v in table.items() if os.path.exists(k)})


def _checked(path: Path, text: str) -> int:
    """How many characters at the start of text were found clean before (0 where none, or where they changed)."""
    entry = _table().get(str(Path(path).resolve())) or {}
    end = entry.get("chars", 0)
    if not isinstance(end, int) or not 0 < end <= len(text) or entry.get("schemas") != _schemas_digest():
        return 0
    return end if _sha(text[:end]) == entry.get("sha256") else 0


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=None)
def _schemas_digest() -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in SCHEMA_FILES.values())).hexdigest()


def cache_dir() -> Path:
    """The suite's cache folder: $QDQ_CACHE_DIR, else $XDG_CACHE_HOME/qdq-matrix, else ~/.cache/qdq-matrix."""
    return Path(os.environ.get(CACHE_ENV) or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser(
        "~/.cache"), "qdq-matrix"))


def _cache_file() -> Path:
    return cache_dir() / "schema-checked.json"


def _table() -> Dict[str, Any]:
    """The cache's table, a copy of its own (read once per version of the file: a report checks a hundred files)."""
    path = _cache_file()
    try:
        stat = path.stat()
    except OSError:
        return {}
    return dict(_read_table(str(path), stat.st_ino, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=4)
def _read_table(path: str, inode: int, mtime_ns: int, size: int) -> Dict[str, Any]:
    """The cache file at path as it is at that inode, time and size (_save_table swaps a new file in)."""
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def _save_table(table: Dict[str, Any]) -> None:
    """Written whole and swapped in; a cache that cannot be written only costs a check next time."""
    target = _cache_file()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".schema-checked-", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(table, sort_keys=True))  # the C encoder: json.dump to a file always takes the Python one
        os.replace(tmp, target)
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

    schema = _schema(kind)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(_inlined(schema))


@functools.lru_cache(maxsize=None)
def _schema(kind: str) -> Dict[str, Any]:
    """A schema file as written (jsonschema's validator and the fast path each read it once, from here)."""
    return json.loads(SCHEMA_FILES[kind].read_text(encoding="utf-8"))


def _inlined(schema: Dict[str, Any]) -> Dict[str, Any]:
    """The schema with each "$ref" to one of its own "$defs" replaced by the definition (the same constraints; a
    reference resolved once here, not once per value checked). Our schemas' definitions refer to no other."""
    defs = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[len("#/$defs/"):] in defs and len(node) == 1:
                return inline(defs[ref[len("#/$defs/"):]])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)


# ---- the fast path ------------------------------------------------------------------------------------------
# jsonschema spends about half a millisecond on a cell, and a fresh `nox -s matrix` checks some 16,000 lines as it
# writes and reads them. _accepts compiles a schema that uses only the keywords below into one predicate that says
# whether a record meets every constraint, in a twentieth of that time. It only ever answers "valid": a record it does
# not accept goes to jsonschema, which says what is wrong (or that nothing is: the predicate may be stricter than the
# schema, never looser; tests/core/test_schema_fast.py holds it to jsonschema on every committed line and on
# thousands of broken ones). A schema with any other keyword gets no predicate, and jsonschema checks every line.
# jsonschema is imported only when a line is not accepted, so a process that meets only good lines never loads it.

_ANNOTATIONS = {"$schema", "$id", "$defs", "$comment", "title", "description"}
_KINDS: Dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


class _Unsupported(Exception):
    """A schema keyword (or form of one) the fast path does not compile."""


@functools.lru_cache(maxsize=None)
def _accepts(kind: str) -> Optional[Any]:
    """The compiled predicate of a schema (its $refs inlined), or None where it uses what _compile does not know."""
    try:
        return _compile(_inlined(_schema(kind)))
    except _Unsupported:
        return None


def _compile(node: Any) -> Any:
    """One schema node as a predicate over a decoded JSON value (True: every constraint of the node holds)."""
    if node is True or node == {}:
        return lambda v: True
    if not isinstance(node, dict):
        raise _Unsupported(repr(node))
    checks = []
    for key, value in node.items():
        if key in _ANNOTATIONS or key in ("properties", "additionalProperties"):
            continue
        checks.append(_keyword(key, value))
    if "properties" in node or "additionalProperties" in node:
        checks.append(_object(node.get("properties", {}), node.get("additionalProperties", True)))
    return _all(checks)


def _all(checks: List[Any]) -> Any:
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)

    def every(v: Any) -> bool:
        for check in checks:
            if not check(v):
                return False
        return True

    return every


def _keyword(key: str, value: Any) -> Any:
    if key == "type":
        kinds = [value] if isinstance(value, str) else value
        if not isinstance(kinds, list) or not all(k in _KINDS for k in kinds):
            raise _Unsupported(f"type {value!r}")
        tests = [_KINDS[k] for k in kinds]
        if len(tests) == 1:
            return tests[0]
        return lambda v: any(t(v) for t in tests)
    if key in ("enum", "const"):
        options = value if key == "enum" else [value]
        if not isinstance(options, list) or not all(isinstance(o, (str, bool)) or o is None for o in options):
            raise _Unsupported(f"{key} of numbers or containers")  # jsonschema's own equality of those
        strings = frozenset(o for o in options if isinstance(o, str))
        singletons = [o for o in options if not isinstance(o, str)]  # true, false, null: the very value
        return lambda v: (isinstance(v, str) and v in strings) or any(v is o for o in singletons)
    if key == "required" and isinstance(value, list):
        names = tuple(value)
        return lambda v: not isinstance(v, dict) or all(n in v for n in names)
    if key == "minLength" and isinstance(value, int):
        return lambda v: not isinstance(v, str) or len(v) >= value
    if key == "minimum" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return lambda v: not _KINDS["number"](v) or v >= value
    if key == "items" and isinstance(value, (dict, bool)):
        each = _compile(value) if value is not False else None
        if each is None:
            return lambda v: not isinstance(v, list) or not v
        return lambda v: not isinstance(v, list) or all(each(x) for x in v)
    raise _Unsupported(key)


def _object(properties: Dict[str, Any], additional: Any) -> Any:
    if not isinstance(properties, dict):
        raise _Unsupported("properties")
    known = {name: _compile(sub) for name, sub in properties.items()}
    if additional is True or additional == {}:
        other = None
    elif additional is False:
        other = False
    else:
        other = _compile(additional)

    def check(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        for name, value in v.items():
            test = known.get(name)
            if test is not None:
                if not test(value):
                    return False
            elif other is False or (other is not None and not other(value)):
                return False
        return True

    return check


def _where(path: Any) -> str:
    return ".".join(str(p) for p in path) or "(the record)"


def _short(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."
