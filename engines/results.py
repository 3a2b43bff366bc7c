"""Results files: one JSON object per line, appended under an OS lock, resumable; no pytest here.

A results file starts with a session header (schema qdq-matrix/session/1) and holds one cell per
line. Whoever writes it (the pytest controller, or `engines.idle` for columns that cannot run here)
holds an exclusive fcntl lock for the whole run; a killed writer's cut-off last line is dropped before
anything is appended. A stored cell stands for a new run of it when its reuse key matches.

This module is the one reader of results files too (`read_results`): the merge, the lint, rederive, the resume
and the tools read through it, under one tolerance policy, cases/schema.py's: every complete line must be a
session header or a cell that its JSON Schema and the Cell record accept, or the whole file is refused; a
cut-off last line (a killed writer's) is dropped and refuses nothing. Reading imports no engine and not numpy.
"""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import platform
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from cases.cell import SESSION_SCHEMA, Cell

if TYPE_CHECKING:
    from engines.base import EngineInfo

REPO = Path(__file__).resolve().parent.parent
REUSABLE = ("pass", "fail", "built")  # observations; engines.reuse says which other cells stand

ReuseKey = Tuple[str, str, str, str, str, str, str]


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

    @property
    def refused(self) -> bool:
        return bool(self.bad or self.unreadable)

    @property
    def why_refused(self) -> str:
        """"line 3: not JSON (...)" for the first line that refuses the file, "" for a file that stands."""
        if self.unreadable:
            return self.unreadable
        return f"line {self.bad[0][0]}: {self.bad[0][1]}" if self.bad else ""


def read_results(path: Union[str, Path], upto: Optional[int] = None) -> ResultsFile:
    """Every line of one results file (.jsonl, or .jsonl.gz), or its first `upto` bytes, checked against its JSON
    Schema and read into cells; cases.schema.SchemaUnavailable where jsonschema is not installed. The part of a file
    an earlier check found clean is not validated again while its bytes and the schemas are unchanged."""
    from cases.schema import check_file

    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = f.read() if upto is None else f.read(upto)
        text = (gzip.decompress(data) if path.name.endswith(".gz") else data).decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as e:
        return ResultsFile(path, unreadable=f"cannot read: {e}")
    checked = check_file(path, text)
    bad: List[Tuple[int, str]] = list(checked.bad)
    headers: List[Dict[str, Any]] = []
    cells: List[StoredCell] = []
    for number, record in checked.records:
        if record["schema"] == SESSION_SCHEMA:
            headers.append(record)
            continue
        try:
            cells.append(StoredCell(number, Cell.from_dict(record), headers[-1] if headers else {}))
        except (ValueError, TypeError) as e:
            bad.append((number, str(e)))
    return ResultsFile(path, data, tuple(headers), tuple(cells), tuple(sorted(bad)), checked.cut_off)


def reuse_key(cell: Cell) -> ReuseKey:
    """What must match for a stored cell to stand for a new run of it: the bundle's digest, the engine
    version, the hardware (a CPU's INT8 level included), the column variant and the engine's own options."""
    return (cell.bundle, cell.digest, cell.engine, cell.engine_version, cell.hardware,
            json.dumps(cell.variant, sort_keys=True), cell.run.get("cell_options", ""))


def info_key(info: EngineInfo, bundle_id: str, digest: str, cell_options: str) -> ReuseKey:
    """The reuse key a new cell of this bundle would have."""
    return (bundle_id, digest, info.name, info.version, info.hardware, json.dumps(info.variant, sort_keys=True),
            cell_options)


def stored_cells(path: Path, upto: Optional[int] = None) -> Dict[ReuseKey, Cell]:
    """The cells in a results file (or its first `upto` bytes) by reuse key, the last of each key winning
    (engines.reuse decides which of them stand); none from a file its schema refuses (the writer sets such a file
    aside before a run resumes it), or that cannot be read or checked."""
    from cases.schema import SchemaUnavailable

    try:
        found = read_results(path, upto)
    except SchemaUnavailable:
        return {}
    if found.refused:
        return {}
    return {reuse_key(c.cell): c.cell for c in found.cells}


def same_not_run(new: Cell, stored: Optional[Cell]) -> bool:
    """A not-run cell that says what the stored one said: nothing new to write."""
    return (stored is not None and new.status in ("skipped", "not_run") and new.status == stored.status
            and new.reason == stored.reason)


def default_path(info: EngineInfo, folder: Optional[Path] = None) -> Path:
    """results/<engine>-<version>-<hardware and variant>.jsonl: an INT8 level and a variant get files of their own."""
    setting = info.hardware + "".join(f" {k} {v}" for k, v in sorted(info.variant.items()))
    hw = re.sub(r"[^A-Za-z0-9.]+", "-", setting).strip("-").lower() or "unknown"
    return (folder or REPO / "results") / f"{info.name}-{info.version}-{hw}.jsonl"



class ResultsBusy(Exception):
    """Another run holds the results file."""


class NotAResultsFile(Exception):
    """--results names a file that is not a results file: it is left untouched."""


class ResultsWriter:
    """Appends one JSON object per line and flushes it; one writer per file, the OS lock says so.

    It holds an exclusive lock on the file for the whole run (fcntl.flock: the OS drops it when the
    process dies, so a killed run never leaves a stale lock). A line cut off by a killed run is
    removed before anything is appended: it was never a finished cell.
    """

    def __init__(self, path: Path, info: EngineInfo, run: Dict[str, str], wait: float = 0.0) -> None:
        self.path = path
        self._clean = False  # every line of the file passed its schema (then close() remembers it checked)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = open(path, "a+", encoding="utf-8")
        self._owner = path.with_name(path.name + ".owner")
        self._lock(wait, run)
        self._refuse_foreign()
        self.resume_offset = self._drop_cut_off_line()
        self.notice = self._set_aside_if_refused()
        header = {
            "schema": SESSION_SCHEMA, "kind": "session", "engine": info.name, "engine_version": info.version,
            "hardware": info.hardware, "hardware_detail": info.hardware_detail, "versions": info.versions,
            "available": info.available, "reason": info.reason, **run,
        }
        # Written before this run's first cell: a run that adds nothing leaves the file as it was (and the report,
        # which depends on it, need not be rendered again).
        self._header: Optional[str] = json.dumps(header, sort_keys=True)
        self.counts: Dict[str, int] = {}
        self.reused = 0

    def _lock(self, wait: float, run: Dict[str, str]) -> None:
        deadline = time.monotonic() + max(0.0, wait)
        while True:
            try:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = self._holder()
                    self._file.close()
                    raise ResultsBusy(
                        f"results file {self.path} is in use by another run ({holder}); wait for it to finish, "
                        "pass --results-wait SECONDS, or choose another --results file"
                    ) from None
                time.sleep(0.2)
        owner = {"pid": os.getpid(), "host": platform.node(), "date": run.get("date", ""),
                 "command": run.get("command", "")}
        self._owner.write_text(json.dumps(owner), encoding="utf-8")

    def _holder(self) -> str:
        try:
            o = json.loads(self._owner.read_text(encoding="utf-8"))
            return f"pid {o['pid']} on {o['host']}, started {o['date']}: {o['command']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "holder unknown"

    def _refuse_foreign(self) -> None:
        """Never append to a file that is not a results file (a typo in --results must not damage it)."""
        with open(self.path, "rb") as f:
            first = f.readline(1 << 20)
        if not first.strip():
            return
        try:
            ours = json.loads(first).get("schema") == SESSION_SCHEMA
        except (ValueError, AttributeError):
            ours = False
        if not ours:
            self.close()
            raise NotAResultsFile(f"{self.path} is not a qdq-matrix results file (its first line is not a "
                                    f"{SESSION_SCHEMA} header); refusing to append to it: name another --results")

    def _set_aside_if_refused(self) -> str:
        """A file the merge would refuse (a line that is not JSON or breaks cases/cell.schema.json) is never resumed:
        its bytes are moved to <name>.refused-<time> and the run starts the file again; returns why, or ""."""
        from cases.schema import SchemaUnavailable, file_problems

        data = self.path.read_bytes()
        self._clean = False
        try:
            bad = file_problems(self.path, data.decode("utf-8", errors="replace"))
        except SchemaUnavailable as e:
            return "" if not data else f"{self.path} was resumed without a schema check: {e}"
        self._clean = True  # every line so far passed, and so has every line this run writes (write_line checks)
        if not bad:
            return ""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.path.with_name(f"{self.path.name}.refused-{stamp}")
        aside.write_bytes(data)
        os.truncate(self.path, 0)  # in place: the lock this run holds stays on the file
        self.resume_offset = 0
        number, why = bad[0]
        return (f"{self.path} is refused by its schema (line {number}: {why}"
                + (f"; {len(bad) - 1} more bad lines" if len(bad) > 1 else "") + f"), so no cell of it is reused: "
                f"moved to {aside.name}, and this run starts the file again")

    def _drop_cut_off_line(self) -> int:
        """Truncate a last line without its newline (a killed writer's); return the size after that."""
        self._file.flush()
        with open(self.path, "rb") as f:
            data = f.read()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            os.truncate(self.path, keep)
            return keep
        return len(data)

    def write_line(self, line: str) -> None:
        self._file.write(line + "\n")
        self._file.flush()
        if self._clean:
            from cases.schema import problems

            self._clean = not problems(json.loads(line))

    def write(self, cell: Cell) -> None:
        if self._header is not None:
            self.write_line(self._header)
            self._header = None
        self.write_line(cell.to_json())
        self.counts[cell.status] = self.counts.get(cell.status, 0) + 1

    def close(self) -> None:
        if self._file.closed:
            return
        if self._clean:  # while the lock still holds: the next run (and engines.run) need not check it again
            from cases.schema import remember_checked

            remember_checked(self.path, self.path.read_bytes().decode("utf-8", errors="replace"))
        try:
            self._owner.unlink()
        except OSError:
            pass
        self._file.close()  # closing the file releases the lock


