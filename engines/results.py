"""Results files written: one JSON object per line, appended under an OS lock, resumable; no pytest here.

A results file starts with a session header (schema qdq-matrix/session/2) and holds one cell per
line. Whoever writes it (the pytest controller, or `engines.idle` for columns that cannot run here)
holds an exclusive fcntl lock for the whole run; a killed writer's cut-off last line is dropped before
anything is appended. A stored cell stands for a new run of it when its reuse key matches. Files are read by
core/results.py, the one reader, under core/schema.py's policy.

A run replaces what it runs again: when it closes, the file keeps one cell per bundle and column, the last (written
to a new file, then renamed over it), so `--fresh`, a re-run and a killed run's copies leave one cell per bundle.
A folder that cannot be written is `ResultsUnwritable`, one line naming the folder and the errno.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import platform
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from core.cell import SESSION_FAMILY, SESSION_SCHEMA, Cell
from core.results import disk_error, read_results
from core.words import LABELS, NOT_TRIED, REUSED, file_name

if TYPE_CHECKING:
    from engines.base import EngineInfo

REPO = Path(__file__).resolve().parent.parent
REUSABLE = REUSED  # observations; engines.reuse says which other cells stand

Items = Tuple[Tuple[str, str], ...]
ReuseKey = Tuple[str, str, str, str, str, Items, Items]


def items(mapping: Optional[Mapping[str, Any]]) -> Items:
    """A column's variant or options as a key: its (name, value) pairs in order."""
    return tuple(sorted((str(k), str(v)) for k, v in (mapping or {}).items()))


def reuse_key(cell: Cell) -> ReuseKey:
    """What must match for a stored cell to stand for a new run of it: the bundle's digest, the engine
    version, the hardware (a CPU's INT8 level included), the column variant and the engine's own options."""
    return (cell.bundle, cell.digest, cell.engine, cell.engine_version, cell.hardware, items(cell.variant),
            items(cell.run.get("cell_options")))


def info_key(info: EngineInfo, bundle_id: str, digest: str, cell_options: Mapping[str, str]) -> ReuseKey:
    """The reuse key a new cell of this bundle would have."""
    return (bundle_id, digest, info.name, info.version, info.hardware, items(info.variant), items(cell_options))


def stored_cells(path: Path, upto: Optional[int] = None) -> Dict[ReuseKey, Cell]:
    """The cells in a results file (or its first `upto` bytes) by reuse key, the last of each key winning
    (engines.reuse decides which of them stand); none from a file its schema refuses (the writer sets such a file
    aside before a run resumes it), or that cannot be read or checked."""
    from core.schema import SchemaUnavailable

    try:
        found = read_results(path, upto)
    except SchemaUnavailable:
        return {}
    if found.refused:
        return {}
    return {reuse_key(c.cell): c.cell for c in found.cells}


def with_symptom(cell: Cell) -> Cell:
    """The cell with its symptom field (engines.reasons.symptom_of), found from its texts as a report shows them
    (machine paths made portable), whichever code made the cell."""
    found = (_symptom(cell.status, cell.error, cell.reason, cell.parser_errors) if cell.parser_errors
             else _symptom_once(cell.status, cell.error, cell.reason))
    return cell if found == cell.symptom else replace(cell, symptom=found)


def _symptom(status: str, error: str, reason: str, parser_errors: Sequence[Any] = ()) -> str:
    from core.portable import scrub
    from engines.reasons import symptom_of

    return symptom_of(status, scrub(error), scrub(reason), parser_errors)


# a cell without parser errors: its symptom found once per text (a column's not-run cells, hundreds of them, all say
# the same)
_symptom_once = functools.lru_cache(maxsize=512)(_symptom)


def same_not_run(new: Cell, stored: Optional[Cell]) -> bool:
    """A not-run cell that says what the stored one said: nothing new to write."""
    return (stored is not None and new.status in NOT_TRIED and new.status == stored.status
            and new.reason == stored.reason)


def default_path(info: EngineInfo, folder: Optional[Path] = None) -> Path:
    """results/<engine>-<version>-<hardware and variant>.jsonl: an INT8 level and a variant get files of their own."""
    setting = info.hardware + "".join(f" {k} {v}" for k, v in sorted(info.variant.items()))
    hw = file_name(setting, LABELS)
    return (folder or REPO / "results") / f"{info.name}-{info.version}-{hw}.jsonl"



class ResultsBusy(Exception):
    """Another run holds the results file."""


class NotAResultsFile(Exception):
    """--results names a file that is not a results file: it is left untouched."""


class ResultsUnwritable(Exception):
    """The results folder cannot be written (read-only, full, not permitted): one line naming it and the errno."""

    def __init__(self, folder: Path, error: OSError) -> None:
        self.folder, self.error = Path(folder), error
        super().__init__(disk_error(self.folder, error))


def check_writable(folder: Path) -> None:
    """ResultsUnwritable unless a file can be made, written and synced in folder (made where missing): a read-only
    or full disk is said before a run starts, not as a cell's error."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".qdq-writable-", dir=folder)
        try:
            os.write(fd, b"\n" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as e:
        raise ResultsUnwritable(folder, e) from None


def machine_key() -> str:
    """This machine, as an owner file names it: a digest of its host name, never the name."""
    return hashlib.sha256(platform.node().encode("utf-8")).hexdigest()[:16]


def owner_path(results: Path) -> Path:
    """Where the run that holds a results file says who it is."""
    return results.with_name(results.name + ".owner")


def clean_stale_owners(folder: Path) -> List[Path]:
    """Remove every <results>.owner in folder whose results file no run holds (a killed run's); the removed ones.
    The lock decides, not the pid: a held file's owner stays, whatever machine holds it."""
    removed = []
    for owner in sorted(Path(folder).glob("*.owner")):
        results = owner.with_name(owner.name[: -len(".owner")])
        try:
            with open(results, "rb") as f:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # released as the file closes
        except FileNotFoundError:
            pass
        except (BlockingIOError, OSError):
            continue  # held: a live run's owner
        try:
            owner.unlink()
            removed.append(owner)
        except OSError:
            pass
    return removed


class ResultsWriter:
    """Appends one JSON object per line and flushes it; one writer per file, the OS lock says so.

    It holds an exclusive lock on the file for the whole run (fcntl.flock: the OS drops it when the
    process dies, so a killed run never leaves a stale lock). A line cut off by a killed run is
    removed before anything is appended: it was never a finished cell.
    """

    def __init__(self, path: Path, info: EngineInfo, run: Dict[str, Any], wait: float = 0.0) -> None:
        self.path = path
        self._clean = False  # every line of the file passed its schema (then close() remembers it checked)
        self._owner = owner_path(path)
        self.resume_offset = 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[str] = open(path, "a+", encoding="utf-8")
            self._lock(wait, run)
            self._refuse_foreign()
            self.resume_offset = self._drop_cut_off_line()
            self.notice = self._set_aside_if_refused()
        except OSError as e:
            if getattr(self, "_file", None) is not None:
                self._file.close()
            raise ResultsUnwritable(path.parent, e) from None
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

    def _lock(self, wait: float, run: Dict[str, Any]) -> None:
        deadline = time.monotonic() + max(0.0, wait)
        while True:
            try:
                fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = self._holder()
                    self._file.close()
                    raise ResultsBusy(
                        f"results file {self.path} is in use by another run ({holder}); wait for it to finish, "
                        "pass --results-wait SECONDS, or choose another --results file"
                    ) from None
                time.sleep(0.2)
                continue
            if self._same_file():
                break
            # the run before replaced the file (close() renames a new one over it) while this one waited on the old
            self._file.close()
            self._file = open(self.path, "a+", encoding="utf-8")
        owner = {"pid": os.getpid(), "machine": machine_key(), "date": run.get("date", ""),
                 "command": run.get("command", "")}
        self._owner.write_text(json.dumps(owner), encoding="utf-8")

    def _same_file(self) -> bool:
        try:
            here, there = os.fstat(self._file.fileno()), os.stat(self.path)
        except FileNotFoundError:
            return False
        return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)

    def _holder(self) -> str:
        try:
            o = json.loads(self._owner.read_text(encoding="utf-8"))
            where = "this machine" if o.get("machine") == machine_key() else "another machine"
            return f"pid {o['pid']} on {where}, started {o['date']}: {o['command']}"
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return "holder unknown"

    def _refuse_foreign(self) -> None:
        """Never append to a file that is not a results file (a typo in --results must not damage it)."""
        with open(self.path, "rb") as f:
            first = f.readline(1 << 20)
        if not first.strip():
            return
        try:
            ours = str(json.loads(first).get("schema")).startswith(SESSION_FAMILY)  # an older session's file too
        except (ValueError, AttributeError):
            ours = False
        if not ours:
            self.close()
            raise NotAResultsFile(f"{self.path} is not a qdq-matrix results file (its first line is not a "
                                    f"{SESSION_SCHEMA} header); refusing to append to it: name another --results")

    def _set_aside_if_refused(self) -> str:
        """A file the merge would refuse (a line that is not JSON or breaks core/cell.schema.json) is never resumed:
        its bytes are moved to <name>.refused-<time> and the run starts the file again; returns why, or ""."""
        from core.schema import SchemaUnavailable, file_problems

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
        """One whole line, appended at once; where the disk takes only part of it, the part is cut off again."""
        data = (line + "\n").encode("utf-8")
        fd = self._file.fileno()  # opened to append: every write lands at the end
        try:
            start = os.fstat(fd).st_size
        except OSError as e:
            raise ResultsUnwritable(self.path.parent, e) from None
        try:
            done = 0
            while done < len(data):
                done += os.write(fd, data[done:])
        except OSError as e:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass
            raise ResultsUnwritable(self.path.parent, e) from None
        if self._clean:
            from core.schema import problems

            self._clean = not problems(json.loads(line))

    def write(self, cell: Cell) -> None:
        """Append one cell (after this run's session header), with its symptom found from its final status, error
        and reason (engines.reasons); ResultsUnwritable where the disk refuses it."""
        if self._header is not None:
            self.write_line(self._header)
            self._header = None
        self.write_line(with_symptom(cell).to_json())
        self.counts[cell.status] = self.counts.get(cell.status, 0) + 1

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            replaced = self._without_earlier()
        except OSError:
            replaced = None
        if self._clean:  # while the lock still holds: the next run (and engines.run) need not check it again
            from core.schema import remember_checked

            text = replaced if replaced is not None else self.path.read_bytes()
            remember_checked(self.path, text.decode("utf-8", errors="replace"))
        try:
            self._owner.unlink()
        except OSError:
            pass
        if replaced is not None:
            try:
                self._swap_in(replaced)
            except OSError:  # a disk that takes no more: the earlier cells stay, and the merge keeps the newest
                pass
        self._file.close()  # closing the file releases the lock

    def _without_earlier(self) -> Optional[bytes]:
        """The file with one cell per place (same bundle, same column): the last, which is this run's where it wrote
        one, else the later of a killed run's two; the session headers left with no cell are dropped. None where
        nothing is replaced."""
        if not self.resume_offset:
            return None
        data = self.path.read_bytes()
        lines = data.splitlines(keepends=True)
        records = [_record(line) for line in lines]
        last: Dict[Tuple[str, ...], int] = {}
        for i, record in enumerate(records):
            if record is not None and record.get("schema") != SESSION_SCHEMA:
                last[_place_of(record)] = i
        kept: List[bytes] = []
        header: Optional[bytes] = None  # a session's header, written once one of its cells is kept
        dropped = 0
        for i, (line, record) in enumerate(zip(lines, records)):
            if record is not None and record.get("schema") == SESSION_SCHEMA:
                header = line
                continue
            if record is not None and last[_place_of(record)] != i:
                dropped += 1
                continue
            if header is not None:
                kept.append(header)
                header = None
            kept.append(line)
        return b"".join(kept) if dropped else None

    def _swap_in(self, data: bytes) -> None:
        """A new file beside this one, synced, then renamed over it: a kill at any point leaves one whole file, and
        a run waiting for the lock on the old one opens the new one (_lock)."""
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".replacing", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def _place_of(record: Dict[str, Any]) -> Tuple[Any, ...]:
    """A cell's bundle and column in one results file: what a later cell of the same place replaces."""
    run = record.get("run") if isinstance(record.get("run"), dict) else {}
    variant, options = record.get("variant"), run.get("cell_options")
    return (str(record.get("bundle", "")), str(record.get("engine", "")), str(record.get("engine_version", "")),
            str(record.get("hardware", "")), items(variant if isinstance(variant, dict) else {}),
            items(options if isinstance(options, dict) else {}))


def _record(line: bytes) -> Optional[Dict[str, Any]]:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


