"""The TensorRT lint's predictions against what TensorRT did, from data: findings (case.json's `lint`) and cells.

check.lint writes the findings (it needs onnx); this module only reads them, so a report built on a GPU box
or any other machine can say per node and per TensorRT version whether the catalogue's knowledge held.
A miss is news for the catalogue: a documented behaviour that did not reproduce, or one nobody documented. A
prediction that a node runs (in INT8 or float) says the network parses and builds: where it did not and no finding
foresaw a failure for that engine version, the network is one miss (a row at the model level, `level` "model").
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from core.cell import Cell
from core.engines import LINT_ENGINES, title, variant_label
from core.outcome import outcome
from core.words import fails_at, first_few
from matrix.merge import version_key

ENGINE = "tensorrt"
ENGINES = LINT_ENGINES  # the engines the lint predicts for (core.engines: TensorRT and TensorRT-RTX, one ONNX parser)
# The failures the lint predicts: at load (the ONNX parser's) and at build (the builder's), in core.words's words.
PREDICTED_STAGES = ("load", "build")
FAILURES = tuple(fails_at(stage, ENGINE) for stage in PREDICTED_STAGES)  # "parse fails", "build fails"
PREDICTIONS = (*FAILURES, "float", "int8")
NEWS = "news for the catalogue"
NOT_RUN = "predicted, not run here"
AGREEMENT = {True: "agrees", False: NEWS, None: "cannot say"}  # a Comparison's `agrees`, in a report's words
# What node predictions of "int8" or "float" say together about the network: it parses and builds.
BUILDS = "builds"
# What a network's row says where no finding spoke about its version: the lint knew of no problem, which is no
# prediction that it builds; a failure there is still a miss of the lint's.
NO_KNOWN_PROBLEM = "no known problem"
# Where a finding's knowledge comes from: an upstream document (a URL), or cells this project observed (a results file
# or folder under reports/observed/, or our runs' logs kept as test data).
FINDING_BASES = ("documented", "observed")


def basis_of(source: str) -> str:
    """A source's basis: "documented" for an upstream URL, "observed" for anything this project ran."""
    return "documented" if source.startswith(("https://", "http://")) else "observed"


@dataclass(frozen=True)
class Comparison:
    """One finding next to what one TensorRT version did with that node."""

    node: str
    rule: str
    version: str
    predicted: str
    observed: str  # a prediction word, "not observable" (the model stopped before the node) or "unknown"
    agrees: Optional[bool]  # None where the observation cannot say
    source: str
    hardware: str = ""
    engine: str = ENGINE
    setting: str = ""  # the cell's column variant ("target=SM86"), "" for the engine's default column
    level: str = "node"  # "model": the network's row (node and rule ""), a parse or build failure nothing foresaw
    basis: str = ""  # the finding's basis (FINDING_BASES); "" on a model row
    case: str = ""  # the catalogue case the finding came from; "" for a rule's own source or a model row

    @property
    def news(self) -> bool:
        """A miss: the catalogue's knowledge does not hold here."""
        return self.agrees is False

    @property
    def column(self) -> List[str]:
        """The cell's column as fields: engine, version, hardware, variant (what a report keys its rows by)."""
        return [self.engine, self.version, self.hardware, self.setting]

    @property
    def label(self) -> str:
        """The engine and its setting for people: "tensorrt-rtx · target=SM86"."""
        return " · ".join(filter(None, [self.engine, self.setting]))


@functools.lru_cache(maxsize=4096)
def covers(versions: str, version: str) -> bool:
    """Whether a PEP 440 specifier set ("" is every version) speaks about one TensorRT version."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(versions).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def record(item: Any) -> Dict[str, Any]:
    """A finding or a cell as a dict, whether it came as a dataclass or as JSON (a Cell by its own fields, which are
    plain JSON data read here only: Cell.as_dict, without dataclasses.asdict's deep copy)."""
    if isinstance(item, Cell):
        return item.as_dict()
    return asdict(item) if is_dataclass(item) else dict(item)


def failure_prediction(stage: str) -> str:
    """A failure at one stage in the lint's prediction words: "parse fails", "build fails", "" for a stage the lint
    predicts no failure at (run, compare)."""
    return fails_at(stage, ENGINE) if stage in PREDICTED_STAGES else ""


def node_outcome(cell: Mapping[str, Any], node: str) -> str:
    """What a cell shows for one node: a model-level failure, or the node's precision."""
    said = outcome(cell)
    if said.failed and said.failed_stage in PREDICTED_STAGES:
        named = str(cell.get("failing_node") or "")
        if named and named != node:  # the parser stopped at another node: this one was never judged
            return "not observable"
        return failure_prediction(said.failed_stage)
    if said.worked or (said.status == "fail" and said.failed_stage == "compare"):
        precision = (cell.get("precision") or {}).get(node, {}).get("precision", "unknown")
        return precision if precision in ("int8", "float") else "unknown"
    return "unknown"


# What makes findings one claim about one node: a matcher matches a node once per form the graph cannot tell apart
# (seed 004's plugin, IPluginV3 or IPluginV2), and an expectation that speaks for both forms comes once per match.
CLAIM = ("node", "rule", "engine", "versions", "setting", "predicted", "source", "basis", "case")


def claims(findings: Iterable[Any], reach: bool = True) -> List[Dict[str, Any]]:
    """The findings as records, each claim about a node once, in their order: findings that differ only in their
    detail or fix become one, whose detail and fix say each of theirs ("...; or ..."); with `reach`, only what the
    engine reaches (reached: no build or precision prediction where a parse failure is predicted)."""
    merged: Dict[Tuple[Any, ...], Dict[str, Any]] = {}
    for f in map(record, findings):
        key = tuple(f.get(k) for k in CLAIM)
        if key not in merged:
            merged[key] = f
            continue
        for k in ("detail", "fix"):
            said = [s for s in str(merged[key].get(k) or "").split("; or ") if s]
            if f.get(k) and f[k] not in said:
                merged[key] = dict(merged[key], **{k: "; or ".join(said + [f[k]])})
    return reached(list(merged.values())) if reach else list(merged.values())


# The order a network meets its stages in: the parser, the builder, then its kernels (a node's precision). A failure
# predicted at one stage keeps that engine version from every later one.
STAGE_ORDER = {"parse fails": 0, "build fails": 1, "float": 2, "int8": 2}


def reached(findings: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The findings an engine can reach, in their order: a prediction for a later stage (a build failure, a node's
    precision) is left out for the versions of its engine and setting where a finding predicts an earlier failure (a
    model the parser refuses never reaches the builder), and kept, narrowed, for its other versions."""
    failing: Dict[Tuple[str, str, int], Dict[str, None]] = {}  # (engine, setting, stage) -> the failing ranges
    for f in findings:
        if f["predicted"] in FAILURES:
            key = (f.get("engine", ENGINE), f.get("setting", ""), STAGE_ORDER[f["predicted"]])
            failing.setdefault(key, {})[f.get("versions", "")] = None
    out: List[Dict[str, Any]] = []
    for f in findings:
        ranges = [f.get("versions", "")]
        for (engine, setting, stage), earlier in failing.items():
            if engine == f.get("engine", ENGINE) and setting in ("", f.get("setting", "")) \
                    and stage < STAGE_ORDER[f["predicted"]]:
                for versions in earlier:
                    ranges = [piece for r in ranges for piece in without(r, versions)]
        out += [dict(f, versions=r) for r in ranges]
    return out


@functools.lru_cache(maxsize=4096)
def without(versions: str, failing: str) -> Tuple[str, ...]:
    """The versions of one specifier set that another does not cover, as disjoint specifier sets: (versions,) where
    they do not meet, () where `failing` covers them all."""
    from packaging.specifiers import SpecifierSet

    if empty(",".join(filter(None, (versions, failing)))):
        return (versions,)
    pieces, before = [], []  # not s1, or s1 and not s2, or ...: the complement of s1,s2,... as disjoint sets
    for s in sorted(SpecifierSet(failing), key=str):  # in one order, so each run writes the same sets
        for other in _complement(s.operator, s.version):
            piece = ",".join(filter(None, (versions, *before, other)))
            if not empty(piece):
                pieces.append(str(SpecifierSet(piece)))
        before.append(str(s))
    return tuple(pieces)


def _complement(operator: str, version: str) -> List[str]:
    """The versions one specifier does not cover, as disjoint specifier sets."""
    if operator == "~=":  # ~=X.Y is >=X.Y,==X.*
        prefix = ".".join(version.split(".")[:-1])
        return [f"<{version}", f">={version},!={prefix}.*"]
    flipped = {">=": "<", ">": "<=", "<=": ">", "<": ">=", "==": "!=", "!=": "=="}
    return [f"{flipped[operator]}{version}"] if operator in flipped else []


def empty(versions: str) -> bool:
    """Whether a specifier set covers no version: none of the versions it names, just above each, the next release
    of each one's last part, 0 or 99999 is in it (a set of PEP 440 intervals holds one of these where it holds any)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    probes = {"0", "99999"}
    for s in SpecifierSet(versions):
        base = s.version[:-2] if s.version.endswith(".*") else s.version
        try:
            release = Version(base).release
        except InvalidVersion:
            continue
        probes |= {base, f"{base}.0.0.0.0.1", ".".join(map(str, release[:-1] + (release[-1] + 1,)))}
    return not any(covers(versions, v) for v in probes)


def compare(findings: Iterable[Any], cells: Iterable[Any]) -> List[Comparison]:
    """Each finding (each claim once: claims) against each TensorRT cell of a version it covers (findings and cells:
    records or dicts), then one model row per cell that failed to parse or build where no finding foresaw a failure
    (unforeseen_failures)."""
    return [r for _, r in comparisons(claims(findings), [record(c) for c in cells])]


def comparisons(findings: Sequence[Mapping[str, Any]],
                cells: Sequence[Mapping[str, Any]]) -> List[Tuple[Optional[int], Comparison]]:
    """compare's rows, each with the index of its finding (None for a model row). A node predicted to run in a cell
    that failed first is "not observable" where a finding foresaw a failure there; where none did, the node row shows
    the failure and cannot say, and the network's row is the miss. A node the engine named as the one it refused is
    a miss of its own, and then the network's row is not added."""
    rows: List[Tuple[Optional[int], Comparison]] = []
    foreseen = [foresaw_failure(findings, c) for c in cells]  # once per cell: a network's rows all ask it
    for i, f in enumerate(findings):
        for c, failure_foreseen in zip(cells, foreseen):
            if not applies(f, c):
                continue
            observed = node_outcome(c, f["node"])
            agrees: Optional[bool] = None
            if observed in PREDICTIONS:
                agrees = observed == f["predicted"]
                if f["predicted"] in ("int8", "float") and observed in FAILURES:
                    agrees = False if refused_at(c, f["node"]) else None
                    if failure_foreseen and not refused_at(c, f["node"]):
                        observed = "not observable"
            rows.append((i, Comparison(f["node"], f["rule"], str(c["engine_version"]), f["predicted"], observed, agrees,
                                       f.get("source", ""), str(c.get("hardware", "")), str(c.get("engine", ENGINE)),
                                       cell_setting(c), basis=finding_basis(f), case=f.get("case", ""))))
    rows += [(None, r) for r in unforeseen_failures(findings, cells)]
    return rows


def applies(finding: Mapping[str, Any], cell: Mapping[str, Any]) -> bool:
    """Whether a finding speaks about a cell: its engine, a version its range covers, the build target it names."""
    if cell.get("engine") != finding.get("engine", ENGINE) or \
            not covers(finding.get("versions", ""), str(cell.get("engine_version", ""))):
        return False
    return not finding.get("setting") or finding["setting"] == cell_setting(cell)


def foresaw_failure(findings: Iterable[Mapping[str, Any]], cell: Mapping[str, Any]) -> bool:
    """Whether any finding that speaks about this cell predicts a parse or build failure."""
    return any(f["predicted"] in FAILURES and applies(f, cell) for f in findings)


def refused_at(cell: Mapping[str, Any], node: str) -> bool:
    """Whether the cell names this node as the one the engine refused (its failing_node, found where it was made)."""
    return bool(node) and str(cell.get("failing_node") or "") == node and bool(network_failure(cell))


def network_failure(cell: Mapping[str, Any]) -> str:
    """The cell's parse or build failure in prediction words, "" where it parsed and built."""
    said = outcome(cell)
    return failure_prediction(said.failed_stage) if said.failed else ""


def unforeseen_failures(findings: Sequence[Mapping[str, Any]], cells: Iterable[Mapping[str, Any]]) -> List[Comparison]:
    """One miss per TensorRT-family cell (ENGINES) that failed to parse or build where no finding predicted a failure;
    another engine's failure (OpenVINO's, ONNX Runtime's) is none of the lint's business. Where findings predicted
    nodes to run ("int8", "float") the network was predicted to build; where none spoke about the cell, the lint knew
    of no problem (NO_KNOWN_PROBLEM), and a failure it did not foresee counts against it all the same."""
    rows = []
    for c in cells:
        if c.get("engine", ENGINE) not in ENGINES:  # the lint predicts for TensorRT's parser alone: not its miss
            continue
        failed = network_failure(c)
        speaking = [f for f in findings if applies(f, c)]
        running = [f for f in speaking if f["predicted"] in ("int8", "float")]
        # no failure, a failure foreseen, or the refused node's own row is the miss
        if not failed or foresaw_failure(speaking, c) or any(refused_at(c, f["node"]) for f in running):
            continue
        predicted = BUILDS if running else NO_KNOWN_PROBLEM
        rows.append(Comparison("", "", str(c["engine_version"]), predicted, failed, False, "",
                               str(c.get("hardware", "")), str(c.get("engine", ENGINE)), cell_setting(c),
                               level="model"))
    return rows


def finding_basis(finding: Mapping[str, Any]) -> str:
    """A finding's basis: its own field, or (a bundle linted before findings carried one) its source's."""
    return finding.get("basis") or basis_of(finding.get("source", ""))


def cell_setting(cell: Mapping[str, Any]) -> str:
    """A cell's column variant in a finding's words: "target=SM86", "" for the default setting."""
    return variant_label(cell.get("variant") or {})


def not_run(finding: Mapping[str, Any], ran: Sequence[str]) -> List[str]:
    """What a finding predicts for that no cell ran: its whole range when no run falls in it, else the versions
    its range names and includes (==, >=, <=, ~=) that did not run."""
    from packaging.specifiers import SpecifierSet

    versions = finding.get("versions", "")
    if not any(covers(versions, v) for v in ran):
        return [versions or "any version"]
    named = dict.fromkeys(s.version for s in SpecifierSet(versions) if s.operator in ("==", ">=", "<=", "~=")
                          and covers(versions, s.version))
    return [v for v in named if v not in ran]


def predictions_view(lint: Optional[Mapping[str, Any]], cells: Iterable[Any]) -> Dict[str, Any]:
    """The report's prediction-against-observation section: misses first, then findings in graph order."""
    lint = dict(lint or {})
    findings = claims(lint.get("findings") or [])  # a bundle linted before lint_model said each claim once
    cells = [record(c) for c in cells]
    ran_by: Dict[str, List[str]] = {}
    for c in cells:
        if c.get("engine") in ENGINES:
            ran_by.setdefault(str(c["engine"]), []).append(str(c.get("engine_version", "")))
    ran_by = {e: sorted(set(v), key=version_key) for e, v in ran_by.items()}
    rows: List[Dict[str, Any]] = []
    for i, r in comparisons(findings, cells):
        label = r.engine if not r.setting else f"{r.engine} · {r.setting}"
        base = finding_row(findings[i], i) if i is not None else dict(MODEL_ROW, predicted=r.predicted)
        rows.append(dict(base, version=engine_version_label(label, r.version), hardware=r.hardware,
                         observed=r.observed, ran=True, verdict=AGREEMENT[r.agrees], news=r.news, engine=r.engine,
                         column=r.column))
    for order, f in enumerate(findings):
        engine = f.get("engine", ENGINE)
        label = engine if not f.get("setting") else f"{engine} · {f['setting']}"
        for v in not_run(f, ran_by.get(engine, [])):
            rows.append(dict(finding_row(f, order), version=engine_version_label(label, v), hardware="", observed="",
                             ran=False, verdict=NOT_RUN, news=False, engine=engine,
                             column=[engine, v, "", f.get("setting", "")]))
    for r in rows:  # a network's row says how many node predictions said it would build
        if r["level"] == "model":
            said = sum(o["column"] == r["column"] and o["predicted"] in ("int8", "float") for o in rows)
            r["detail"] = (f"{said} node prediction{'' if said == 1 else 's'} said {r['version']} runs this network "
                           f"(in INT8 or float) and none a parse or build failure: {r['observed']}")
    rows.sort(key=lambda r: (not r["news"], not r["ran"], r["order"], r["engine"] != ENGINE,
                             version_key(r["version"].split()[-1]), r["hardware"]))
    sources = list(dict.fromkeys(r["source"] for r in rows if r["source"]))
    fixes = list(dict.fromkeys(r["fix"] for r in rows if r["fix"]))
    for r in rows:  # each source and fix is said once, under the table; a row names it by number
        del r["order"]
        r["source_no"] = sources.index(r["source"]) + 1 if r["source"] else 0
        r["fix_no"] = fixes.index(r["fix"]) + 1 if r["fix"] else 0
    return {
        "findings": len(findings), "error": lint.get("error", ""), "present": "findings" in lint,
        "ran": [engine_version_label(e, v) for e in ENGINES for v in ran_by.get(e, [])], "rows": rows,
        "groups": grouped(rows),
        "news": sum(r["news"] for r in rows),
        "agrees": sum(r["verdict"] == "agrees" for r in rows), "not_run": sum(not r["ran"] for r in rows),
        "cannot_say": sum(r["verdict"] == AGREEMENT[None] for r in rows),
        "nodes": list(dict.fromkeys(f["node"] for f in findings)),
        "sources": [{"source": s, "basis": basis_of(s)} for s in sources], "fixes": fixes,
    }


# A network's row: the whole model, predicted to build (every finding for that version said a node runs), or that no
# known problem matched (no finding spoke about that version); its `predicted` is the comparison's.
MODEL_ROW = {"node": "", "rule": "", "words": "the network: no failure foreseen", "predicted": BUILDS, "source": "",
             "detail": "", "fix": "", "range": "", "order": -1, "level": "model", "basis": "", "case": ""}


def finding_row(f: Mapping[str, Any], order: int) -> Dict[str, Any]:
    """The fields every row of one finding shares, in graph order."""
    return {"node": f["node"], "rule": f["rule"], "words": f.get("words", ""), "predicted": f["predicted"],
            "source": f.get("source", ""), "detail": f.get("detail", ""), "fix": f.get("fix", ""),
            "range": f.get("versions", ""), "order": order, "level": "node", "basis": finding_basis(f),
            "case": f.get("case", "")}


SHOWN_NODES = 4  # node names a grouped row shows before "and N more"


def grouped(rows: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The rows as a report shows them: one per rule, engine version and outcome, with its node count and first
    nodes (every node stays in `rows`), in the rows' order (misses first)."""
    groups: Dict[tuple, Dict[str, Any]] = {}
    for r in rows:
        key = (r["rule"], r["version"], r["hardware"], r["predicted"], r["observed"], r["verdict"], r["source_no"],
               r["fix_no"], r["case"])
        if key not in groups:
            groups[key] = {k: r[k] for k in ("rule", "version", "hardware", "predicted", "observed", "ran", "verdict",
                                             "news", "source_no", "fix_no", "detail", "range", "engine", "level",
                                             "basis", "words")}
            groups[key]["nodes"] = []
        groups[key]["nodes"].append(r["node"])
    for g in groups.values():
        g["count"], g["shown"] = len(g["nodes"]), g["nodes"][:SHOWN_NODES]
        g["more"] = max(0, len(g["nodes"]) - SHOWN_NODES)
    return list(groups.values())


def engine_version_label(engine: str, version: str) -> str:
    """A version as a report names it: bare for TensorRT, with the engine's name for any other."""
    return version if engine == ENGINE else f"{engine} {version}"


def summary_lines(name: str, lint: Optional[Mapping[str, Any]]) -> List[str]:
    """One line per rule, engine, version range and prediction, naming its nodes (what `python -m check` prints
    before any engine runs)."""
    lint = dict(lint or {})
    if "findings" not in lint:
        return [f"lint {name}: no lint in this bundle (made before bundles carried one)"]
    if lint.get("error"):
        return [f"lint {name}: the lint could not read the model: {lint['error']}"]
    findings = claims(lint["findings"])  # each claim once, none the engine does not reach (a bundle linted before)
    if not findings:
        return [f"lint {name}: no known problem matched (no catalogue case's pattern and no source-cited rule; "
                "no prediction that it builds)"]
    # each node once, in the lint's order (two findings may say one thing), and one line for a prediction that two
    # sources back (seed 032's baselines on an H100 and an H200), with both sources
    same: Dict[tuple, Dict[str, None]] = {}
    sources: Dict[tuple, Dict[str, None]] = {}
    for f in findings:
        key = (f["rule"], f.get("engine", ENGINE), f.get("versions", ""), f.get("setting", ""), f["predicted"])
        same.setdefault(key, {})[f["node"]] = None
        sources.setdefault(key, {})[f.get("source", "")] = None
    lines = []
    for key, named in same.items():
        rule, engine, versions, setting, predicted = key
        nodes = list(named)
        shown = first_few(nodes, SHOWN_NODES)
        where = shown if len(nodes) == 1 else f"{len(nodes)} nodes ({shown})"
        cited = "; ".join(f"{basis_of(source)}: {source}" for source in sources[key])
        lines.append(f"lint {name}: {where} ({rule}): {title(engine)} {versions or 'any version'}"
                     f"{' (' + setting + ')' if setting else ''} predicted {predicted} [{cited}]")
    return lines
