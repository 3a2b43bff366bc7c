"""Declarations shared by every case: signatures, expectations and the case record itself."""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Optional, Tuple

from cases.pattern import Pattern
from core.engines import ENGINES as _SPECS
from core.engines import GPU_ARCHITECTURES
from core.words import STAGES

ENGINES = tuple(_SPECS)
# What a documentation source says happens to a cell:
#   fail      - the engine fails (at `stage`, with `signature` where given)
#   pass      - it runs and matches the reference
#   int8      - it runs, matches, and every target node runs in INT8 (fused)
#   not_int8  - it runs and matches, but target nodes fall back to a float kernel
#   unknown   - the source does not say; never guessed
OUTCOMES = ("fail", "pass", "int8", "not_int8", "unknown")
# What an expectation or a signature rests on, its `basis`:
#   documented - an upstream source says so: NVIDIA's documentation or release notes, an issue or pull request of the
#                engine or its parser. `source` is its address (https://...).
#   baseline   - this project's own earlier run says so: `source` is the file of this repository that holds it (a
#                results file under reports/observed/, listed in its MANIFEST.json, or an engine log kept under
#                tests/data/), and an expectation names the `hardware` it ran on. A regression baseline: a cell that
#                agrees with it is "as observed before", never "as documented".
BASES = ("documented", "baseline")

ParamValue = Any  # str, int or bool
Params = Mapping[str, ParamValue]


def upstream(source: str) -> bool:
    """Whether a source is an upstream address (https://...), as a documented one must be."""
    return re.match(r"https?://[^/\s]+", source) is not None


def repository_path(source: str) -> bool:
    """Whether a source is a path of this repository as a baseline names it: relative, POSIX, inside the tree."""
    parts = source.split("/")
    return (not upstream(source) and ":" not in source and not source.startswith("/") and "\\" not in source
            and all(p not in ("", ".", "..") and not p.isspace() for p in parts))


def check_basis(what: str, basis: str, source: str) -> None:
    """ValueError where a source does not fit its basis: documented is upstream, a baseline this repository's file."""
    if basis not in BASES:
        raise ValueError(f"{what}: basis {basis!r} is not one of {BASES}")
    if basis == "documented" and not upstream(source):
        raise ValueError(f"{what}: a documented source is an upstream address (https://...), not {source!r}; this "
                         "repository's own observation is a baseline (basis='baseline')")
    if basis == "baseline" and not repository_path(source):
        raise ValueError(f"{what}: a baseline names the file of this repository that holds the observation, "
                         f"not {source!r}")


@dataclass(frozen=True)
class Signature:
    """A documented symptom: the exact text from an upstream thread, as a regex."""

    name: str
    pattern: str
    kind: str  # "error", "warning", or "environment": the machine lacks what this version needs to build
    source: str  # where the text was seen: an upstream thread (documented) or this repository's file (baseline)
    reason: str = ""  # environment signatures: the "not run" reason a matching cell gets
    short: str = ""  # the symptom in the few words a report says it in ("non-zero zero point")
    basis: str = "documented"  # BASES: an upstream source, or this project's own earlier run

    def __post_init__(self) -> None:
        if self.kind not in ("error", "warning", "environment"):
            raise ValueError(f"signature {self.name!r}: kind must be 'error', 'warning' or 'environment', "
                             f"not {self.kind!r}")
        check_basis(f"signature {self.name!r}", self.basis, self.source)
        if not self.short:
            raise ValueError(f"signature {self.name!r}: give it the few words a report says it in (short=...)")
        if self.kind == "environment" and not self.reason:
            raise ValueError(f"signature {self.name!r}: an environment signature says why the cell is not run")
        re.compile(self.pattern)

    def search(self, text: str) -> bool:
        return re.search(self.pattern, text) is not None


@dataclass(frozen=True)
class Expectation:
    """What one source documents for one engine over a PEP 440 version range."""

    engine: str
    versions: str  # PEP 440 specifier set, e.g. ">=8.6,<10.1"; "" means every version
    outcome: str
    source: str  # documented: the URL of the thread, doc page or header that says so; baseline: the repository file
    stage: Optional[str] = None
    signature: Optional[str] = None  # Signature.name
    where: Mapping[str, Tuple[ParamValue, ...]] = field(default_factory=dict)  # param filter
    hardware: Optional[str] = None  # hardware the source observed it on, where it says
    note: str = ""
    # Cell filter: the CPU's INT8 level ("isa": ("avx2", "avx512")), a GPU engine's GPU architecture ("gpu": ("SM87",),
    # core.engines.GPU_ARCHITECTURES) and the engine's column options ("x64quantprecision": ("0",)); an option the
    # cell does not set counts at its default.
    when: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)
    basis: str = "documented"  # BASES: an upstream source, or this project's own earlier run (with its hardware)
    # The source documents the process dying (a signal, an abort), not only a failure: a crashed cell agrees with a
    # failing expectation only where this is set (cases.verdict.judge); a crash is never the documented error.
    crashes: bool = False
    # A user model's expectation read from its lint (cases.verdict.lint_expectation): the lint rule that predicted it.
    rule: str = ""

    def __post_init__(self) -> None:
        from packaging.specifiers import SpecifierSet

        if self.engine not in ENGINES:
            raise ValueError(f"expectation engine {self.engine!r} is not one of {ENGINES}")
        if self.outcome not in OUTCOMES:
            raise ValueError(f"expectation outcome {self.outcome!r} is not one of {OUTCOMES}")
        if self.stage is not None and self.stage not in STAGES:
            raise ValueError(f"expectation stage {self.stage!r} is not one of {STAGES}")
        if not self.source:
            raise ValueError("every expectation names its source")
        check_basis(f"expectation {self.engine} {self.versions or 'any'}", self.basis, self.source)
        if self.basis == "baseline" and not self.hardware:
            raise ValueError(f"expectation {self.engine} {self.versions or 'any'}: a baseline names the hardware its "
                             f"observation {self.source} ran on (hardware=...)")
        SpecifierSet(self.versions)  # raises InvalidSpecifier on a bad range
        gpu = {"gpu"} if _SPECS[self.engine].device == "nvidia-gpu" else set()
        allowed = {"isa"} | gpu | {o.name for o in _SPECS[self.engine].options}
        unknown = [k for k in self.when if k not in allowed]
        if unknown:
            raise ValueError(f"expectation filters on {unknown}; {self.engine} cells know {sorted(allowed)}")
        bad = [g for g in self.when.get("gpu", ()) if g not in GPU_ARCHITECTURES]
        if bad:
            raise ValueError(f"expectation filters on GPU architectures {bad}, not among {GPU_ARCHITECTURES}")

    def applies(self, engine: str, version: str, params: Params, context: Optional[Mapping[str, str]] = None) -> bool:
        if engine != self.engine:
            return False
        if self.versions and not _in_range(self.versions, version):
            return False
        if not all(params.get(k) in vals for k, vals in self.where.items()):
            return False
        context = dict(_SPECS[engine].defaults(), **(context or {}))
        return all(context.get(k) in vals for k, vals in self.when.items())


@functools.lru_cache(maxsize=4096)  # a merge asks it of every cell: each (range, version) parsed once
def _in_range(versions: str, version: str) -> bool:
    """Whether a PEP 440 specifier set holds a version (prereleases too); False for a version that is not PEP 440."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return SpecifierSet(versions).contains(v, prereleases=True)


@dataclass(frozen=True)
class Case:
    """One documented upstream issue, swept over the parameters that matter."""

    id: str
    seed: str  # its number in the catalogue, three digits, given here alone (cases.all_cases); "" for an external case
    title: str
    links: Tuple[str, ...]
    axes: Mapping[str, Tuple[ParamValue, ...]]
    target_nodes: Tuple[str, ...]  # ONNX node names whose precision matters (a builder may narrow per variant)
    signatures: Tuple[Signature, ...]
    expectations: Tuple[Expectation, ...]
    builder: str  # "module:function" in generators/, imported only when a model is built
    valid: Optional[Callable[[Params], bool]] = None  # drops combinations that make no sense
    opset: int = 13
    intentionally_invalid: str = ""  # non-empty: why the checker is expected to refuse the model
    external: bool = False  # not a seed: bundles come from outside the catalogue (a user's model), not a sweep
    # Its outcome depends on the GPU architecture a TensorRT-RTX plan targets: a full run builds it once per swept
    # target (core.engines, the target option's `sweep`), each a column.
    arch_dependent: bool = False
    # Every bundle of it is a one-node model (one operator's test, milliseconds on any engine): the cell runner runs
    # many of them per test in one engine process (engines.plan.cell_refs' batches), and alone where a batch died.
    one_node: bool = False
    # Axes added after the case's first reproducers ran, each with the value those reproducers had: a reproducer at
    # that value leaves the axis out of its id (so it keeps its id, seed, model and committed cells), and a cell
    # written before the axis existed is judged at that value.
    defaults: Mapping[str, ParamValue] = field(default_factory=dict)
    # The graph pattern it reproduces, as the lint's rule for it (cases.pattern): every seed case declares one.
    pattern: Optional[Pattern] = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9_]+", self.id):
            raise ValueError(f"case id {self.id!r}: use lower-case letters, digits and '_'")
        for k, v in self.defaults.items():
            if v not in self.axes.get(k, ()):
                raise ValueError(f"case {self.id}: default {k}={v!r} is not a value of an axis of the sweep")
        names = [s.name for s in self.signatures]
        for e in self.expectations:
            if e.signature is not None and e.signature not in names:
                raise ValueError(f"case {self.id}: expectation names unknown signature {e.signature!r}")
            for k, vals in e.where.items():
                if k not in self.axes:
                    raise ValueError(f"case {self.id}: expectation filters on unknown axis {k!r}")
                bad = [v for v in vals if v not in self.axes[k]]
                if bad:
                    raise ValueError(f"case {self.id}: expectation filters {k} on values {bad} not in the sweep")

    def variants(self) -> Iterator[dict]:
        """Every parameter combination of the sweep, in a stable order."""
        keys = list(self.axes)
        for combo in itertools.product(*(self.axes[k] for k in keys)):
            params = dict(zip(keys, combo))
            if self.valid is None or self.valid(params):
                yield params

    def check_params(self, params: Params) -> None:
        """Raise a readable error for an unknown axis or value."""
        for k, v in params.items():
            if k not in self.axes:
                raise KeyError(f"case {self.id} has no parameter {k!r}; axes: {', '.join(self.axes)}")
            if v not in self.axes[k]:
                raise ValueError(
                    f"case {self.id}: {k}={v!r} is not in the sweep; values: {', '.join(map(str, self.axes[k]))}"
                )
        missing = [k for k in self.axes if k not in params]
        if missing:
            raise KeyError(f"case {self.id}: missing parameters {missing}")
        if self.valid is not None and not self.valid(params):
            raise ValueError(f"case {self.id}: the combination {dict(params)} is excluded from the sweep")

    def expectation_for(self, engine: str, version: str, params: Params,
                        context: Optional[Mapping[str, str]] = None) -> Optional[Expectation]:
        """The most specific documented expectation, or None where no source says.

        `context` is the cell's side of it: {"isa": INT8 level} and its column options (core.engines).
        """
        params = self.with_defaults(params)
        found = [e for e in self.expectations if e.applies(engine, version, params, context)]
        if not found:
            return None
        return max(found, key=specificity)

    def with_defaults(self, params: Params) -> dict:
        """The parameters with every added axis they leave out (a cell written before it existed) at its default."""
        if not self.defaults or all(k in params for k in self.defaults):
            return dict(params)
        given = dict(self.defaults, **params)
        return {**{k: given[k] for k in self.axes if k in given}, **given}

    def id_params(self, params: Params) -> dict:
        """The parameters a reproducer's id names: each one but an added axis at its `defaults` value."""
        return {k: v for k, v in params.items() if k not in self.defaults or not _same(v, self.defaults[k])}

    def signature(self, name: str) -> Signature:
        for s in self.signatures:
            if s.name == name:
                return s
        raise KeyError(name)


def specificity(e: Expectation) -> Tuple[Any, ...]:
    """How specific an expectation is, most first: its filters on the reproducer and the cell, then how narrow its
    version range: one version (==) before a bounded range before an open one before every version, and of two
    bounded ranges the one inside the other. Two that tie must say the same (tests/cases/test_one_place.py), so the
    catalogue's order never decides."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    specs = list(SpecifierSet(e.versions))
    operators = {s.operator for s in specs}
    narrow = 3 if operators & {"==", "==="} else 2 if operators & {"<", "<=", "~="} else 1 if operators else 0
    lows = [Version(s.version) for s in specs if s.operator in (">=", ">", "~=")]
    highs = [Version(s.version) for s in specs if s.operator in ("<", "<=")]
    low = max(lows).release if lows else ()
    high = tuple(-x for x in min(highs).release) if highs else ()
    return len(e.where) + len(e.when), narrow, low, high


def slug(params: Params) -> str:
    """A stable, filesystem-safe name for one parameter combination."""
    return "+".join(f"{k}={_fmt(v)}" for k, v in params.items()) or "default"


def _same(a: ParamValue, b: ParamValue) -> bool:
    """Equal and of one type (True is not 1)."""
    return type(a) is type(b) and a == b


def _fmt(v: ParamValue) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)
