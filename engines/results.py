"""Results files: one JSON object per line, appended under an OS lock, resumable; no pytest here.

A results file starts with a session header (schema qdq-matrix/session/1) and holds one cell per
line. Whoever writes it (the pytest controller, or `engines.idle` for columns that cannot run here)
holds an exclusive fcntl lock for the whole run; a killed writer's cut-off last line is dropped before
anything is appended. A stored cell stands for a new run of it when its reuse key matches.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import re
import time
from pathlib import Path
from typing import Dict, IO, Optional, Tuple

from cases.cell import SESSION_SCHEMA, Cell
from engines.base import EngineInfo

REPO = Path(__file__).resolve().parent.parent
REUSABLE = ("pass", "fail", "built")  # observations; engines.reuse says which other cells stand

ReuseKey = Tuple[str, str, str, str, str, str, str]


def reuse_key(cell: Cell) -> ReuseKey:
    """What must match for a stored cell to stand for a new run of it: the bundle's digest, the engine
    version, the hardware (a CPU's INT8 level included), the column variant and the engine's own options."""
    return (cell.bundle, cell.digest, cell.engine, cell.engine_version, cell.hardware,
            json.dumps(cell.variant, sort_keys=True), cell.run.get("cell_options", ""))


def info_key(info: EngineInfo, bundle_id: str, digest: str, cell_options: str) -> ReuseKey:
    """The reuse key a new cell of this bundle would have."""
    return (bundle_id, digest, info.name, info.version, info.hardware, json.dumps(info.variant, sort_keys=True),
            cell_options)


def stored_cells(path: Path, upto: int) -> Dict[ReuseKey, Cell]:
    """The cells in the first `upto` bytes of a results file by reuse key, the last of each key winning
    (engines.reuse decides which of them stand)."""
    try:
        with open(path, "rb") as f:
            data = f.read(upto)
    except OSError:
        return {}
    return cells_by_key(data.decode("utf-8", errors="replace"))


def cells_by_key(text: str) -> Dict[ReuseKey, Cell]:
    """The cells of a results file's text by reuse key, the last of each key winning; a damaged line is skipped."""
    found: Dict[ReuseKey, Cell] = {}
    for line in text.splitlines():
        try:
            record = json.loads(line)
            if record.get("schema") == SESSION_SCHEMA:
                continue
            cell = Cell.from_dict(record)
        except (ValueError, AttributeError, TypeError):  # another schema or a damaged line: never reused
            continue
        found[reuse_key(cell)] = cell
    return found


def same_not_run(new: Cell, stored: Optional[Cell]) -> bool:
    """A not-run cell that says what the stored one said: nothing new to write."""
    return (stored is not None and new.status in ("skipped", "not_run") and new.status == stored.status
            and new.reason == stored.reason)


def default_path(info: EngineInfo, folder: Optional[Path] = None) -> Path:
    """results/<engine>-<version>-<hardware and variant>.jsonl: an INT8 level and a variant get files of their own."""
    setting = info.hardware + "".join(f" {k} {v}" for k, v in sorted(info.variant.items()))
    hw = re.sub(r"[^A-Za-z0-9.]+", "-", setting).strip("-").lower() or "unknown"
    return (folder or REPO / "results") / f"{info.name}-{info.version}-{hw}.jsonl"


def checked_text(path: Path) -> Optional[str]:
    """A results file's text where its schema accepts every line; None where it is missing, unreadable or refused
    (a writer would set it aside, so none of its cells may stand for a new run)."""
    from cases.schema import SchemaUnavailable, file_problems

    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
        return None if file_problems(Path(path), text) else text
    except (OSError, SchemaUnavailable):
        return None


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


