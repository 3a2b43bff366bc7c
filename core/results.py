"""Results files as read: the one reader (`read_results`) that the merge, the lint, rederive, the resume and the
tools share, under one tolerance policy, core/schema.py's.

Every complete line must be a session header or a cell that its JSON Schema and the Cell record accept, or the whole
file is refused; a cut-off last line (a killed writer's) is dropped and refuses nothing. A cell whose engine, version
or hardware is not what the session header above it says ran is refused by its line (`ResultsFile.foreign`): no
reader gets it, the file's other cells stand. Reading imports no engine. Writing a results file is the cell runner's
(engines/results.py).
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from core.cell import SESSION_SCHEMA, Cell
from core.portable import portable_path


@dataclass(frozen=True)
class StoredCell:
    """One cell of a results file: its line number and the session header it was written under ({} for none)."""

    line: int
    cell: Cell
    header: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResultsFile:
    """A results file as read: its bytes, session headers and cells, and what (if anything) refuses it."""

    path: Path
    data: bytes = b""
    headers: Tuple[Dict[str, Any], ...] = ()
    cells: Tuple[StoredCell, ...] = ()
    bad: Tuple[Tuple[int, str], ...] = ()  # (line, why): any one refuses the whole file
    cut_off: Optional[Tuple[int, str]] = None  # a last line without its newline: dropped, refuses nothing
    unreadable: str = ""  # why the file could not be read at all
    foreign: Tuple[Tuple[int, str], ...] = ()  # (line, why): cells unlike their session header, refused one by one
    older: str = ""  # written by an older version of this suite: its first record's schema ("qdq-matrix/session/1")

    @property
    def refused(self) -> bool:
        return bool(self.bad or self.unreadable)

    @property
    def why_refused(self) -> str:
        """"line 3: not JSON (...)" for the first line that refuses the file, "" for a file that stands."""
        if self.unreadable:
            return self.unreadable
        return f"line {self.bad[0][0]}: {self.bad[0][1]}" if self.bad else ""


# What one results file may hold, so that no file can take a report down: the largest committed file is 2.3 MB and
# its longest line (a cell with its whole layer listing) 0.11 MB.
MAX_FILE_BYTES = 256 * 2**20  # a file (after gunzip) over this is refused whole, unread
MAX_LINE_BYTES = 4 * 2**20  # a line over this refuses its file, by its line number


def not_regular(path: Path) -> str:
    """Why `path` is not read as a results file ("" where it may be): anything but a regular file (a FIFO, a device,
    a socket), or a symbolic link to something outside the folder that holds the link."""
    try:
        link = os.lstat(path)
        if stat.S_ISLNK(link.st_mode):
            target = Path(os.path.realpath(path))
            if Path(os.path.realpath(path.parent)) not in target.parents:
                return "a symbolic link out of its folder: not read (copy the file in instead)"
        mode = os.stat(path).st_mode
    except OSError as e:
        return f"cannot read: {e}"
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else (
            "a folder" if stat.S_ISDIR(mode) else "not a regular file")
        return f"{kind}, not a regular file: not read"
    return ""


def _read_bounded(path: Path, upto: Optional[int]) -> Tuple[bytes, bytes]:
    """The file's bytes as stored and as text (gunzipped for .gz), at most `upto` of them; ValueError past
    MAX_FILE_BYTES, read no further."""
    limit = MAX_FILE_BYTES + 1 if upto is None else min(upto, MAX_FILE_BYTES + 1)
    with open(path, "rb") as f:
        data = f.read(limit)
    plain = data
    if path.name.endswith(".gz"):
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as g:
            plain = g.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES or len(plain) > MAX_FILE_BYTES:
        raise ValueError(f"over {MAX_FILE_BYTES // 2**20} MiB: refused unread (a results file is a few MB)")
    return data, plain


def _long_lines(text: str) -> List[Tuple[int, str]]:
    """(line, why) for each line over MAX_LINE_BYTES (counted in characters, a lower bound of its bytes)."""
    if len(text) <= MAX_LINE_BYTES:
        return []
    return [(n, f"a line of {len(line):,} characters, over the {MAX_LINE_BYTES // 2**20} MiB a cell may take")
            for n, line in enumerate(text.split("\n"), 1) if len(line) > MAX_LINE_BYTES]


def read_results(path: Union[str, Path], upto: Optional[int] = None) -> ResultsFile:
    """Every line of one results file (.jsonl, or .jsonl.gz), or its first `upto` bytes, checked against its JSON
    Schema and read into cells; core.schema.SchemaUnavailable where jsonschema is not installed. The part of a file
    an earlier check found clean is not validated again while its bytes and the schemas are unchanged. Only a regular
    file is opened, and at most MAX_FILE_BYTES of it; a line over MAX_LINE_BYTES refuses the file by its number."""
    from core.schema import check_file

    path = Path(path)
    why = not_regular(path)
    if why:
        return ResultsFile(path, unreadable=why)
    try:
        data, plain = _read_bounded(path, upto)
        text = plain.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile, ValueError) as e:
        return ResultsFile(path, unreadable=f"cannot read: {e}")
    long_lines = _long_lines(text)
    if long_lines:
        return ResultsFile(path, bad=tuple(long_lines))
    checked = check_file(path, text)
    bad: List[Tuple[int, str]] = list(checked.bad)
    headers: List[Dict[str, Any]] = []
    cells: List[StoredCell] = []
    foreign: List[Tuple[int, str]] = []
    header_line = 0
    for number, record in checked.records:
        if record["schema"] == SESSION_SCHEMA:
            headers.append(record)
            header_line = number
            continue
        try:
            cell = Cell.from_dict(record)
        except (ValueError, TypeError) as e:
            bad.append((number, str(e)))
            continue
        header = headers[-1] if headers else {}
        unlike = unlike_header(cell, header, header_line)
        if unlike:
            foreign.append((number, unlike))
        else:
            cells.append(StoredCell(number, cell, header))
    return ResultsFile(path, data, tuple(headers), tuple(cells), tuple(sorted(bad)), checked.cut_off,
                       foreign=tuple(foreign), older=checked.older)


HEADER_FIELDS = ("engine", "engine_version", "hardware")  # what a session header says ran, and every cell under it


def unlike_header(cell: Cell, header: Dict[str, Any], header_line: int) -> str:
    """Why a cell cannot be one of the session it sits in: its engine, version or hardware is not the header's
    ("" where they agree, or where the file has no header to say)."""
    if not header:
        return ""
    differ = [k for k in HEADER_FIELDS if k in header and str(header[k]) != str(getattr(cell, k))]
    if not differ:
        return ""
    said = ", ".join(f"{k} {getattr(cell, k)!r}" for k in differ)
    told = ", ".join(f"{k} {header[k]!r}" for k in differ)
    return (f"a cell of {said}, but the session header on line {header_line} says {told}: a cell is refused unless "
            "it is what its run's header says ran (remove the line, or run the column again with --fresh)")


def disk_error(folder: Path, error: OSError) -> str:
    """"cannot write in results/: EROFS (Read-only file system)": a folder and what the OS said, in one line."""
    code = errno.errorcode.get(error.errno or 0, f"errno {error.errno}")
    where = portable_path(os.path.abspath(folder))
    return f"cannot write in {where}/: {code} ({error.strerror or error})"
