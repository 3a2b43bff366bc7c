"""The manifest of committed observations: what makes a cell *observed*.

reports/observed/MANIFEST.json lists every file under reports/observed/ with its sha256, the machine it ran on
and the command that made it, as a wheel's RECORD lists its files. A results file is observed only where the
manifest lists it with the digest it has now; a file outside the folder, or in it and not listed, is a local run,
whatever its lines say. A listed file whose digest is not the listed one was changed after it was observed: it gives
no cell to any answer (grid, upgrade answer, diff, lint, bug bundles) and is listed as refused (`refusal`). Adding
to the manifest is the one way to add observations:

    nox -s observe -- reports/observed/nvidia-h100/trt-8.6.0.jsonl --machine "NVIDIA H100 80GB HBM3 ..." \
        [--command "tools/gpu-round.sh observe nvidia-h100"]
    nox -s observe -- --check          # every listed file present with its digest, every file listed
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
OBSERVED = REPO / "reports" / "observed"
MANIFEST_NAME = "MANIFEST.json"
MANIFEST_SCHEMA = "qdq-matrix/observed-manifest/1"
ABOUT = ("Every file under reports/observed/ with its sha256, the machine it ran on and the command that made it. "
         "A results file is observed only where this manifest lists it with the digest it has now; anything else "
         "is a local run. Written by `nox -s observe` (python -m matrix observe), never by hand.")


class ManifestError(Exception):
    """A manifest that cannot be read, or an entry that cannot be written: the message says which and why."""


@dataclass(frozen=True)
class Entry:
    """One observed file: where it lies (relative to the manifest's folder), its digest, machine and command."""

    path: str
    sha256: str
    machine: str
    command: str
    added: str = ""  # the day the entry was written or its digest last changed


@dataclass(frozen=True)
class Migration:
    """A committed rewrite of observed files (no cell's outcome changed): when, by what command, what it changed
    and which files it re-digested; the manifest keeps every one, oldest first."""

    date: str
    command: str
    change: str
    files: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Manifest:
    """The entries of one manifest, by path; root is the folder their paths are relative to."""

    root: Path
    entries: Dict[str, Entry] = field(default_factory=dict)
    migrations: Tuple[Migration, ...] = ()

    @property
    def path(self) -> Path:
        return self.root / MANIFEST_NAME

    def relative(self, path: Path) -> Optional[str]:
        """The entry path of a file under root ("nvidia-h200/trt-8.6.0.jsonl"), None for a file outside it."""
        try:
            return Path(os.path.realpath(path)).relative_to(os.path.realpath(self.root)).as_posix()
        except ValueError:
            return None

    def observed(self, path: Path, data: bytes) -> str:
        """"" when the file is listed with exactly this content, else why its cells are not observed."""
        rel = self.relative(path)
        if rel is None:
            return f"it is not under {show(self.root)}"
        entry = self.entries.get(rel)
        if entry is None:
            return f"{show(self.path)} does not list it"
        if entry.sha256 != sha256(data):
            return f"its sha256 is not the one {show(self.path)} lists (edited since it was observed?)"
        return ""

    def refusal(self, path: Path, data: bytes) -> str:
        """Why a file gives no cell to any answer: the manifest lists it, at another digest ("" for every other
        file, observed or local); the message says how to put it right."""
        rel = self.relative(path)
        entry = self.entries.get(rel) if rel is not None else None
        if entry is None or entry.sha256 == sha256(data):
            return ""
        shown = show(path)
        return (f"its sha256 {sha256(data)[:12]}... is not the {entry.sha256[:12]}... that {show(self.path)} lists: "
                f"it was changed after it was observed, so no answer uses it; restore it with `git checkout -- "
                f"{shown}`, or re-observe it (run it again where it was observed, then `nox -s observe -- {shown}`)")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(root: Path = OBSERVED) -> Manifest:
    """The manifest in root (an empty one where there is none); ManifestError for one that does not parse."""
    path = Path(root) / MANIFEST_NAME
    if not path.is_file():
        return Manifest(Path(root))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != MANIFEST_SCHEMA:
            raise ValueError(f"schema is {data.get('schema')!r}, expected {MANIFEST_SCHEMA!r}")
        entries = [Entry(**e) for e in data["files"]]
        for e in entries:
            if not all(isinstance(v, str) for v in asdict(e).values()):
                raise ValueError(f"entry {e.path!r}: every field is text")
        migrations = tuple(Migration(**dict(m, files=tuple(m.get("files") or ()))) for m in data.get("migrations", []))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ManifestError(f"{show(path)}: not a readable observations manifest ({e}); no file counts as "
                            "observed until it is repaired (git checkout it)") from e
    return Manifest(Path(root), {e.path: e for e in entries}, migrations)


def save(manifest: Manifest) -> Path:
    """Write the manifest, sorted by path, through a temporary file and a rename."""
    data: Dict[str, Any] = {"schema": MANIFEST_SCHEMA, "about": ABOUT,
                            "files": [asdict(manifest.entries[k]) for k in sorted(manifest.entries)]}
    if manifest.migrations:
        data["migrations"] = [dict(asdict(m), files=list(m.files)) for m in manifest.migrations]
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".MANIFEST.", dir=manifest.root)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, manifest.path)
    return manifest.path


def add(manifest: Manifest, files: Sequence[Path], machine: str = "", command: str = "",
        today: Optional[str] = None) -> Manifest:
    """The manifest with these files listed at their current digest; a new entry needs its machine and command, a
    listed one keeps them unless given (so a committed migration re-digests a file without re-describing it)."""
    day = today or _dt.date.today().isoformat()
    entries = dict(manifest.entries)
    for path in files:
        rel = manifest.relative(path)
        if rel is None or rel == MANIFEST_NAME:
            raise ManifestError(f"{show(path)}: an observation is a file under {show(manifest.root)} (copy it there "
                                "first, as it will be committed)")
        if not Path(path).is_file() or Path(path).is_symlink():
            raise ManifestError(f"{show(path)}: no such regular file")
        old = entries.get(rel)
        what = machine.strip() or (old.machine if old else "")
        how = command.strip() or (old.command if old else "") or session_commands(Path(path))
        if not what:
            raise ManifestError(f"{show(path)}: a new observation needs --machine (the GPU or CPU, driver, libraries)")
        if not how:
            raise ManifestError(f"{show(path)}: a new observation needs --command (what made it; a results file "
                                "says it in its session headers)")
        digest = sha256(Path(path).read_bytes())
        keep = old is not None and old.sha256 == digest and old.machine == what and old.command == how
        entries[rel] = old if keep else Entry(rel, digest, what, how, day)
    return replace(manifest, entries=entries)


def migrated(manifest: Manifest, files: Sequence[Path], command: str, change: str,
             today: Optional[str] = None) -> Manifest:
    """The manifest with these files re-digested (machine and command kept) and the migration that changed them
    recorded: a committed rewrite says what it did where the observations are listed."""
    day = today or _dt.date.today().isoformat()
    moved = add(manifest, files, today=day)
    record = Migration(day, command, change, tuple(sorted(manifest.relative(Path(f)) or show(f) for f in files)))
    return replace(moved, migrations=manifest.migrations + (record,))


def session_commands(path: Path) -> str:
    """The distinct commands of a results file's session headers, joined by " ; " ("" for any other file)."""
    from core.results import read_results

    if path.suffix != ".jsonl":
        return ""
    found = [str(h["command"]) for h in read_results(path).headers if h.get("command")]
    return " ; ".join(dict.fromkeys(found))


def verify(manifest: Manifest, files: Optional[Iterable[Path]] = None) -> List[str]:
    """What disagrees between the manifest and its folder: a listed file missing or changed, a file not listed."""
    problems = []
    for rel, entry in sorted(manifest.entries.items()):
        path = manifest.root / rel
        if not path.is_file():
            problems.append(f"{rel}: listed in {MANIFEST_NAME} but missing")
        elif sha256(path.read_bytes()) != entry.sha256:
            problems.append(f"{rel}: its sha256 is not the listed one (changed since it was observed; if a committed "
                            "migration changed it on purpose, run `nox -s observe -- FILE` again)")
    if files is None:
        from core.results import not_regular

        for path in sorted(manifest.root.rglob("*")):
            why = "" if path.is_dir() and not path.is_symlink() else not_regular(path)
            if why:
                problems.append(f"{path.relative_to(manifest.root).as_posix()}: {why}")
    present = files if files is not None else [
        p for p in manifest.root.rglob("*") if p.is_file() and not p.is_symlink()]
    for path in sorted(present):
        rel = manifest.relative(path)
        if rel and rel != MANIFEST_NAME and rel not in manifest.entries:
            problems.append(f"{rel}: not listed in {MANIFEST_NAME} (add it with `nox -s observe -- {show(path)} "
                            "--machine ... --command ...`)")
    return problems


def since_commit(manifest: Manifest) -> Tuple[str, List[str]]:
    """The manifest against its last commit (the newest commit that touched the observed folder): (that commit, or
    why there is none to compare with; one line per entry added, re-digested or dropped since). The manifest attests
    the files, and git history attests the manifest: an uncommitted edit of a file *and* its digest shows here."""
    import subprocess

    root = os.path.realpath(manifest.root)

    def git(where: str, *args: str) -> str:
        return subprocess.run(["git", "-C", where, *args], capture_output=True, text=True, check=True,
                              timeout=60).stdout

    try:
        top = git(root, "rev-parse", "--show-toplevel").strip()
        rel = Path(os.path.relpath(os.path.realpath(manifest.path), top)).as_posix()
        commit = git(top, "log", "-1", "--format=%H", "--", Path(os.path.relpath(root, top)).as_posix()).strip()
        if not commit:
            return "no commit has touched the observed folder", [f"{e}: not in any commit" for e in manifest.entries]
        committed = json.loads(git(top, "show", f"{commit}:{rel}"))
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return f"no git history to compare with ({type(e).__name__}): the digests are only as sound as the copy", []
    was = {e["path"]: e.get("sha256", "") for e in committed.get("files", [])}
    now = {rel_: e.sha256 for rel_, e in manifest.entries.items()}
    short = commit[:12]
    changed = [f"{f}: listed since commit {short} (not committed yet)" for f in sorted(set(now) - set(was))]
    changed += [f"{f}: its digest changed since commit {short} (the file and its manifest entry were both edited, "
                "not committed)" for f in sorted(set(now) & set(was)) if now[f] != was[f]]
    changed += [f"{f}: dropped from the manifest since commit {short}" for f in sorted(set(was) - set(now))]
    return short, changed


def show(path: Any) -> str:
    """A path relative to the repository where it lies inside it, else its name with "…/" (never a machine path)."""
    p = Path(os.path.realpath(path))
    try:
        return p.relative_to(os.path.realpath(REPO)).as_posix() or "."
    except ValueError:
        return "…/" + p.name
