"""Benchmark `nox -s matrix` as a user meets it: a fresh clone, the same command again, then one case changed.

    python3 tools/matrix-benchmark.py [--rev REV] [--clone DIR] [--runs 1|2|3] [--json OUT]

Clones this repository at REV (default HEAD) into DIR (default a new temporary folder), sets it up as `.ci/run`
does (`python3 -m venv .venv`, nox and uv at `.ci/run`'s pins), then times up to three runs of `.venv/bin/nox -s
matrix --add-timestamp`: fresh, unchanged, and after one edit that changes one case's reproducers (--change FILE OLD
NEW; by default concat_requant's spatial size, so its 8 models change and nothing else does). uv's package cache is
used as it is: warm it first (any `nox -s matrix`) to measure what a second clone costs; the project's own cache
(schema checks, $QDQ_CACHE_DIR) starts empty in <clone>-cache. Each run's log and its
reports/matrix.json are kept beside the clone (<clone>-<run>.log, <clone>-<run>-matrix.json: compare two with
tools/compare-matrix.py). Prints a Markdown table (wall clock, CPU seconds of the process tree, which load on a
shared machine disturbs less, peak RSS, the machine's own speed just before and after each run (a fixed piece of
CPU work on every core, machine_probe), seconds per nox session, the cell counts the runs printed) and writes it as
JSON with --json. Standard library only: of the project it imports only the argument
parser (core/cli.py).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

KIB = 1 << 10  # getrusage's ru_maxrss is in KiB
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from core.cli import ArgumentParser  # noqa: E402 (standard library only, as this tool)

CHANGE = ("generators/concat_requant.py", "SPATIAL = 6", "SPATIAL = 5")
STAMP = re.compile(r"^nox > \[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[.,]\d+)\] (.*)$")
COUNTED = ("cells:", "engines.run:", "report:", "engines.idle:")  # the lines that say what a run did


@dataclass(frozen=True)
class Run:
    """One timed `nox -s matrix`."""

    name: str
    seconds: float
    peak_rss_mb: float
    exit_status: int
    load: float  # the 1-minute load average as the run started (other users of the machine)
    # CPU seconds of the command's process tree (user, system): what other users of the machine disturb less
    user_s: float = 0.0
    system_s: float = 0.0
    load_after: float = 0.0  # the 1-minute load average as it ended
    sessions: Dict[str, float] = field(default_factory=dict)  # nox session -> seconds, from nox's timestamps
    said: List[str] = field(default_factory=list)  # the lines that count cells
    # the machine's own speed just before and just after the run (machine_probe): what the same code's wall clock
    # follows on a shared machine, whose speed moves by a fifth within the hour
    probe_before: float = 0.0
    probe_after: float = 0.0


def pins(ci_run: Path) -> List[str]:
    """nox and uv as `.ci/run` pins them."""
    found = re.findall(r'"((?:nox|uv)==[^"]+)"', ci_run.read_text(encoding="utf-8"))
    if len(found) != 2:
        raise SystemExit(f"{ci_run}: cannot find its nox and uv pins")
    return found


def setup(clone: Path, rev: str) -> None:
    """A clone of this repository at rev with `.ci/run`'s .venv (nox and uv)."""
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", "--detach", rev], check=True)
    subprocess.run([sys.executable, "-m", "venv", str(clone / ".venv")], check=True)
    subprocess.run([str(clone / ".venv/bin/python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *pins(clone / ".ci/run")], check=True)


# A fixed piece of CPU work (a pure Python loop and SHA-256 over 32 MiB, in memory), one copy per core at once: its
# seconds say how fast this machine is at the moment, independently of the project's code.
PROBE = ("import hashlib, time\n"
         "start = time.perf_counter(); data = bytes(32 << 20); total = 0\n"
         "for i in range(3_000_000): total += i * i % 7\n"
         "for _ in range(4): hashlib.sha256(data).hexdigest()\n"
         "print(time.perf_counter() - start)")


def machine_probe() -> float:
    """Seconds of the slowest of one PROBE per core run side by side (0.4 s on the 2-core development machine at its
    fastest, more when it is slower): the machine's speed at the moment, which the same commit's wall clock follows."""
    procs = [subprocess.Popen([sys.executable, "-c", PROBE], stdout=subprocess.PIPE, text=True)
             for _ in range(os.cpu_count() or 1)]
    return round(max(float(p.communicate()[0]) for p in procs), 2)


def timed_matrix(clone: Path, name: str, log: Path) -> Run:
    """Run `nox -s matrix` in the clone; wall clock, peak RSS of its process tree, its log."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOX", "VIRTUAL_ENV", "QDQ_"))}
    env["QDQ_CACHE_DIR"] = str(clone.parent / f"{clone.name}-cache")  # the project's own cache starts empty
    probe = machine_probe()
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen([str(clone / ".venv/bin/nox"), "-s", "matrix", "--add-timestamp", "--no-color"],
                                cwd=clone, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    load_after = os.getloadavg()[0]
    text = log.read_text(encoding="utf-8", errors="replace")
    return Run(name, round(seconds, 1), round(usage.ru_maxrss / KIB, 1), os.waitstatus_to_exitcode(status),
               round(load, 1), round(usage.ru_utime, 1), round(usage.ru_stime, 1), round(load_after, 1),
               session_seconds(text, seconds), [line.strip() for line in text.splitlines()
                                                if line.strip().startswith(COUNTED)], probe, machine_probe())


def session_seconds(log: str, total: float) -> Dict[str, float]:
    """Seconds per session: from its 'Running session' line to the next one (the last one to the end of the run)."""
    marks = []
    for line in log.splitlines():
        m = STAMP.match(line)
        if m and m.group(2).startswith("Running session "):
            when = _dt.datetime.fromisoformat(m.group(1).replace(",", "."))
            marks.append((m.group(2)[len("Running session "):].strip(), when))
    if not marks:
        return {}
    end = marks[0][1] + _dt.timedelta(seconds=total)
    return {name: round(((marks[i + 1][1] if i + 1 < len(marks) else end) - when).total_seconds(), 1)
            for i, (name, when) in enumerate(marks)}


def change_one_case(clone: Path, change: Sequence[str]) -> None:
    """Apply the edit that changes one case's reproducers; refuse one that matches nothing."""
    path = clone / change[0]
    text = path.read_text(encoding="utf-8")
    if change[1] not in text:
        raise SystemExit(f"{change[0]}: {change[1]!r} not found, so the edit would change nothing")
    path.write_text(text.replace(change[1], change[2], 1), encoding="utf-8")


def table(runs: Sequence[Run], rev: str) -> str:
    """The Markdown the benchmark page keeps."""
    first = runs[0].seconds
    lines = [f"`nox -s matrix` at {rev}, {os.cpu_count()} cores:", "",
             "| run | wall s | vs fresh | CPU s (user + system) | peak RSS MB | exit | load average at start, end "
             "| machine probe s before, after |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in runs:
        lines.append(f"| {r.name} | {r.seconds:.1f} | {first / r.seconds:.1f}x | {r.user_s + r.system_s:.1f} "
                     f"({r.user_s:.1f} + {r.system_s:.1f}) | {r.peak_rss_mb:.0f} | {r.exit_status} "
                     f"| {r.load:.1f}, {r.load_after:.1f} | {r.probe_before:.2f}, {r.probe_after:.2f} |")
    names = list(dict.fromkeys(n for r in runs for n in r.sessions))
    lines += ["", "| session | " + " | ".join(r.name for r in runs) + " |", "| --- |" + " ---: |" * len(runs)]
    for n in names:
        lines.append(f"| `{n}` | " + " | ".join(f"{r.sessions[n]:.1f}" if n in r.sessions else "-" for r in runs)
                     + " |")
    for r in runs:
        lines += ["", f"{r.name}:"] + [f"    {s}" for s in r.said]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = ArgumentParser(prog="tools/matrix-benchmark.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default="HEAD", help="the commit to clone (default HEAD)")
    parser.add_argument("--clone", type=Path, default=None,
                        help="where to clone (a new folder; default a temporary one)")
    parser.add_argument("--change", nargs=3, metavar=("FILE", "OLD", "NEW"), default=list(CHANGE),
                        help=f"the one-case edit (default: {' '.join(CHANGE)})")
    parser.add_argument("--runs", type=int, choices=(1, 2, 3), default=3,
                        help="fresh only (1), and unchanged (2), and one case changed (3, the default)")
    parser.add_argument("--json", type=Path, default=None, help="write the runs here as JSON")
    args = parser.parse_args(argv)
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.rev], check=True, text=True,
                         capture_output=True).stdout.strip()
    clone = args.clone or Path(tempfile.mkdtemp(prefix="qdq-matrix-bench-")) / "clone"
    if clone.exists():
        raise SystemExit(f"{clone} exists: name a new folder")
    setup(clone, rev)
    runs = []
    for name in ("fresh", "unchanged", "one case changed")[:args.runs]:
        if name == "one case changed":
            change_one_case(clone, args.change)
        stem = clone.parent / f"{clone.name}-{name.replace(' ', '-')}"
        runs.append(timed_matrix(clone, name, stem.with_suffix(".log")))
        report = clone / "reports" / "matrix.json"
        if report.is_file():
            shutil.copyfile(report, f"{stem}-matrix.json")
        print(f"{name}: {runs[-1].seconds:.1f} s (exit {runs[-1].exit_status}; log {stem}.log)", flush=True)
    print(table(runs, rev))
    if args.json:
        args.json.write_text(json.dumps({"rev": rev, "clone": str(clone), "runs": [asdict(r) for r in runs]},
                                        indent=1) + "\n", encoding="utf-8")
    return max(r.exit_status for r in runs)


if __name__ == "__main__":
    sys.exit(main())
