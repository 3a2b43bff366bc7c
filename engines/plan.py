"""A run's columns, as data: what `python -m engines.run` hands the cell runner (engines/runner.py, executed by
pytest with the engines.pytest_cells plugin) in a plan file; no pytest here.

A column is one engine version with its options over some bundles, written to one results file. It crosses every
hop as fields: the command line's JSON column specs, the plan file, the xdist workers' input, the results file's
session header and each cell's `run.cell_options`; a test id only names a cell for people, and the plugin finds a
cell's column and bundle in the table `cell_refs` builds from the plan, never by splitting the id.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

PLAN_SCHEMA = "qdq-matrix/plan/1"
PROGRESS_PREFIX = "[cells] "  # a running cell's heartbeat lines start with it (engines.run shows them as they come)
RUNNER = Path(__file__).resolve().with_name("runner.py")  # the module of cell tests that pytest executes
PLUGIN = "engines.pytest_cells"
COLUMN_MARK = "|"  # between a column's label and a bundle id in a test id, for people reading pytest's output


@dataclass(frozen=True)
class Column:
    """One column of a run: an engine version with its options over some bundles, written to one results file."""

    engine: str  # a name in core.engines, or module:Class
    options: Dict[str, str] = field(default_factory=dict)  # every option of the engine's descriptor, resolved
    version: str = ""  # --engine-version: the version it must be
    python: str = ""  # the interpreter its TensorRT-family worker runs under, or that has its in-process engine
    isolate: bool = False  # --trt-isolate
    results: str = ""  # the results file; "" for results/<engine>-<version>-<hardware>[-<variant>].jsonl
    bundles: Tuple[str, ...] = ()  # the bundle ids to run, in order; () for every bundle the filters below keep
    only_cases: Tuple[str, ...] = ()
    plugins_only: bool = False
    # also every bundle whose case.json asks for a build per target (trt.per_target: the conformance bundles of types
    # whose support the GPU architecture decides), beside only_cases' bundles; alone, only those
    per_target: bool = False
    label: str = ""  # its test ids' prefix ("" in a run of one column)
    command: str = ""  # how to run it again, as its cells record it
    reused: int = 0  # stored cells of it that engines.run found standing (not among `bundles`): counted, never run
    # one-node bundles (their case's Case.one_node) per test, run one after the other in one engine process; 0 or 1:
    # one bundle per test (engines.run reruns a batch whose process died this way, so a crash costs one cell)
    batch: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Column":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for k in ("bundles", "only_cases"):
            known[k] = tuple(known.get(k) or ())
        known["options"] = {str(k): str(v) for k, v in (known.get("options") or {}).items()}
        return cls(**known)

    def quick(self) -> bool:
        """Whether its engine does a cell in milliseconds (on the CPU, or a build ahead of time), so that with `batch`
        every reproducer of the catalogue joins its batches, not only the one-node ones (a user's model stays alone): a
        TensorRT build on a GPU takes seconds to minutes, and a batch of those would share one cell's timeout."""
        from core.engines import ENGINES

        return self.engine in ENGINES and ENGINES[self.engine].device != "nvidia-gpu"

    def select(self, present: Sequence[str], needs_plugin: Callable[[str], bool],
               per_target: Callable[[str], bool] = lambda bundle: False) -> List[str]:
        """The bundles this column runs, of those present: the ones it names (else every one), less what its filters
        leave out (plugins only; only some cases and, with per_target, the bundles built per target)."""
        have = set(present)
        chosen = [i for i in self.bundles if i in have] if self.bundles else list(present)
        if self.plugins_only:
            chosen = [i for i in chosen if needs_plugin(i)]
        if self.only_cases or self.per_target:
            chosen = [i for i in chosen if i.split("/", 1)[0] in self.only_cases or (self.per_target and per_target(i))]
        return chosen


@dataclass(frozen=True)
class CellRef:
    """One cell test of a run: the index of its column in the plan and its bundle, or the bundles of a batch."""

    column: int
    bundle: str  # "" for a batch
    batch: Tuple[str, ...] = ()  # a batch's one-node bundles, run in this order by one test

    @property
    def bundles(self) -> Tuple[str, ...]:
        """The bundles this test runs: its batch, or its one bundle."""
        return self.batch or (self.bundle,)


def cell_refs(columns: Sequence[Column], present: Sequence[str], needs_plugin: Callable[[str], bool],
              per_target: Callable[[str], bool] = lambda bundle: False,
              one_node: Callable[[str], bool] = lambda bundle: False,
              catalogue: Callable[[str], bool] = lambda bundle: False) -> Dict[str, CellRef]:
    """Every cell test of a run by its test id ("<column label>|<bundle>", or the bundle alone in a run of one
    column), in order; a column with `batch` gathers its one-node bundles (on a `quick` engine, every bundle of a
    catalogue case) into tests of that many ("<column label>|batch <k>", where its first bundle was); ValueError
    where two columns would give one id (a plan of several columns labels each)."""
    refs: Dict[str, CellRef] = {}
    for index, column in enumerate(columns):
        joins = (lambda b: one_node(b) or catalogue(b)) if column.quick() else one_node
        for name, bundles in _tests(column, column.select(present, needs_plugin, per_target), joins):
            name = f"{column.label}{COLUMN_MARK}{name}" if column.label else name
            if name in refs:
                raise ValueError(f"two columns of the plan give the test id {name!r}: a plan of several columns "
                                 "gives each a label of its own")
            refs[name] = CellRef(index, bundles[0]) if len(bundles) == 1 else CellRef(index, "", tuple(bundles))
    return refs


def _tests(column: Column, bundles: Sequence[str], joins: Callable[[str], bool]) -> List[Tuple[str, List[str]]]:
    """A column's tests in order, each (its name, its bundles): a bundle alone, or up to `batch` bundles that join
    batches."""
    if column.batch <= 1:
        return [(b, [b]) for b in bundles]
    tests: List[Tuple[str, List[str]]] = []
    batches: List[List[str]] = []
    for b in bundles:
        if not joins(b):
            tests.append((b, [b]))
        elif batches and len(batches[-1]) < column.batch:
            batches[-1].append(b)  # already in tests
        else:
            batches.append([b])
            tests.append((f"batch {len(batches)}", batches[-1]))
    return [(found[0] if len(found) == 1 else name, found) for name, found in tests]


def pytest_args(plan: Path) -> List[str]:
    """The arguments after `python` that run a plan's cells: pytest with the cell plugin over the cell runner.

    `-o timeout=0`: the test suite's per-test timeout (pyproject.toml) is not a cell's; a cell has none unless the run
    names one with --timeout (the nox sessions give 600 s), which takes precedence."""
    return ["-m", "pytest", "-p", PLUGIN, str(RUNNER), "-p", "no:cacheprovider", "-o", "timeout=0",
            "--cells-plan", str(plan)]


def pytest_command(plan: Path, python: str = sys.executable) -> List[str]:
    """The whole command that runs a plan's cells under an interpreter (this one unless named)."""
    return [python, *pytest_args(plan)]


def write_plan(columns: List[Column], path: Path) -> Path:
    """The plan file that the cell runner runs (pytest_args)."""
    path.write_text(json.dumps({"schema": PLAN_SCHEMA, "columns": [c.to_dict() for c in columns]}, indent=1),
                    encoding="utf-8")
    return path


def summary_path(plan: Path) -> Path:
    """Where the pytest controller of a plan writes what each column recorded (engines.pytest_cells), for engines.run
    to count: {"columns": [{"results", "reused", "written": {status: n}}], "stopped": why, or ""}."""
    return Path(plan).with_name(Path(plan).stem + "-summary.json")


def progress_path(plan: Path) -> Path:
    """Where a pytest run of a plan that runs its cells in its own process (no xdist workers) writes each cell as it is
    recorded, one JSON line {"column", "bundle"}: what engines.run reads where that process died without a summary,
    to run the rest again one per test."""
    return Path(plan).with_name(Path(plan).stem + "-progress.ndjson")


def read_progress(plan: Path) -> Dict[int, List[str]]:
    """column index -> the bundles a plan's in-process run recorded (progress_path); a torn last line is skipped."""
    done: Dict[int, List[str]] = {}
    try:
        text = progress_path(plan).read_text(encoding="utf-8")
    except OSError:
        return done
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            done.setdefault(int(entry["column"]), []).append(str(entry["bundle"]))
        except (ValueError, KeyError, TypeError):
            continue
    return done


def read_plan(path: Path) -> List[Column]:
    """The columns of a plan file; ValueError for one that is not a plan, or has none."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("schema") != PLAN_SCHEMA:
            raise ValueError(f"not a {PLAN_SCHEMA} file")
        columns = [Column.from_dict(c) for c in data["columns"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: {e}") from None
    if not columns:
        raise ValueError(f"{path}: no columns")
    return columns
