"""The TensorRT lint's predictions against what TensorRT did, from data: findings (case.json's `lint`) and cells.

check.lint writes the findings (it needs onnx); this module only reads them, so a report built on a GPU box
or any other machine can say per node and per TensorRT version whether the catalogue's knowledge held.
A miss is news for the catalogue: a documented behaviour that did not reproduce, or one nobody documented.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, is_dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from cases.engines import LINT_ENGINES, title, variant_label
from cases.outcome import outcome
from matrix.merge import version_key

PREDICTIONS = ("parse fails", "build fails", "float", "int8")
ENGINE = "tensorrt"
ENGINES = LINT_ENGINES  # the engines the lint predicts for (cases.engines: TensorRT and TensorRT-RTX, one ONNX parser)
NEWS = "news for the catalogue"
NOT_RUN = "predicted, not run here"
VERDICTS = {True: "agrees", False: NEWS, None: "cannot say"}
# A failure at load is the ONNX parser's, at build the builder's: the words a prediction says them in.
FAILED_WORDS = {"load": "parse fails", "build": "build fails"}


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


def covers(versions: str, version: str) -> bool:
    """Whether a PEP 440 specifier set ("" is every version) speaks about one TensorRT version."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(versions).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def record(item: Any) -> Dict[str, Any]:
    """A finding or a cell as a dict, whether it came as a dataclass or as JSON."""
    return asdict(item) if is_dataclass(item) else dict(item)


def node_outcome(cell: Mapping[str, Any], node: str) -> str:
    """What a cell shows for one node: a model-level failure, or the node's precision."""
    said = outcome(cell)
    if said.failed and said.failed_stage in FAILED_WORDS:
        named = str(cell.get("failing_node") or "")
        if named and named != node:  # the parser stopped at another node: this one was never judged
            return "not observable"
        return FAILED_WORDS[said.failed_stage]
    if said.worked or (said.status == "fail" and said.failed_stage == "compare"):
        precision = (cell.get("precision") or {}).get(node, {}).get("precision", "unknown")
        return precision if precision in ("int8", "float") else "unknown"
    return "unknown"


def compare(findings: Iterable[Any], cells: Iterable[Any]) -> List[Comparison]:
    """Each finding against each TensorRT cell of a version it covers (findings and cells: records or dicts)."""
    rows = []
    cells = [record(c) for c in cells]
    for f in map(record, findings):
        for c in cells:
            if c.get("engine") != f.get("engine", ENGINE) or \
                    not covers(f.get("versions", ""), str(c.get("engine_version", ""))):
                continue
            if f.get("setting") and f["setting"] != cell_setting(c):  # a finding for one build target: its column
                continue
            observed = node_outcome(c, f["node"])
            agrees: Optional[bool] = None
            if observed in PREDICTIONS:
                agrees = observed == f["predicted"]
                if f["predicted"] in ("int8", "float") and observed in ("parse fails", "build fails"):
                    observed, agrees = "not observable", None
            rows.append(Comparison(f["node"], f["rule"], str(c["engine_version"]), f["predicted"], observed, agrees,
                                   f.get("source", ""), str(c.get("hardware", "")), str(c.get("engine", ENGINE)),
                                   cell_setting(c)))
    return rows


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
    findings = [record(f) for f in lint.get("findings") or []]
    cells = [record(c) for c in cells]
    ran_by: Dict[str, List[str]] = {}
    for c in cells:
        if c.get("engine") in ENGINES:
            ran_by.setdefault(str(c["engine"]), []).append(str(c.get("engine_version", "")))
    ran_by = {e: sorted(set(v), key=version_key) for e, v in ran_by.items()}
    rows: List[Dict[str, Any]] = []
    for order, f in enumerate(findings):
        engine = f.get("engine", ENGINE)
        label = engine if not f.get("setting") else f"{engine} · {f['setting']}"
        base = {"node": f["node"], "rule": f["rule"], "words": f.get("words", ""), "predicted": f["predicted"],
                "source": f.get("source", ""), "detail": f.get("detail", ""), "fix": f.get("fix", ""),
                "range": f.get("versions", ""), "order": order}
        for r in compare([f], cells):
            rows.append(dict(base, version=engine_version_label(label, r.version), hardware=r.hardware,
                             observed=r.observed, ran=True, verdict=VERDICTS[r.agrees], news=r.news, engine=engine,
                             column=r.column))
        for v in not_run(f, ran_by.get(engine, [])):
            rows.append(dict(base, version=engine_version_label(label, v), hardware="", observed="", ran=False,
                             verdict=NOT_RUN, news=False, engine=engine, column=[engine, v, "", f.get("setting", "")]))
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
        "nodes": list(dict.fromkeys(f["node"] for f in findings)), "sources": sources, "fixes": fixes,
    }


SHOWN_NODES = 4  # node names a grouped row shows before "and N more"


def grouped(rows: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The rows as a report shows them: one per rule, engine version and outcome, with its node count and first
    nodes (every node stays in `rows`), in the rows' order (misses first)."""
    groups: Dict[tuple, Dict[str, Any]] = {}
    for r in rows:
        key = (r["rule"], r["version"], r["hardware"], r["predicted"], r["observed"], r["verdict"], r["source_no"],
               r["fix_no"])
        if key not in groups:
            groups[key] = {k: r[k] for k in ("rule", "version", "hardware", "predicted", "observed", "ran", "verdict",
                                             "news", "source_no", "fix_no", "detail", "range", "engine")}
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
    findings = [record(f) for f in lint["findings"]]
    if not findings:
        return [f"lint {name}: no findings (no catalogue rule matched this graph)"]
    same: Dict[tuple, List[str]] = {}
    for f in findings:
        key = (f["rule"], f.get("engine", ENGINE), f.get("versions", ""), f.get("setting", ""), f["predicted"],
               f.get("source", ""))
        same.setdefault(key, []).append(f["node"])
    lines = []
    for (rule, engine, versions, setting, predicted, source), nodes in same.items():
        shown = ", ".join(nodes[:SHOWN_NODES]) + (f" and {len(nodes) - SHOWN_NODES} more" if len(nodes) > SHOWN_NODES
                                                  else "")
        where = shown if len(nodes) == 1 else f"{len(nodes)} nodes ({shown})"
        lines.append(f"lint {name}: {where} ({rule}): {title(engine)} {versions or 'any version'}"
                     f"{' (' + setting + ')' if setting else ''} predicted {predicted} [{source}]")
    return lines
