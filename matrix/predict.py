"""The TensorRT lint's predictions against what TensorRT did, from data: findings (case.json's `lint`) and cells.

check.lint writes the findings (it needs onnx); this module only reads them, so a report built on a GPU box
or any other machine can say per node and per TensorRT version whether the catalogue's knowledge held.
A miss is news for the catalogue: a documented behaviour that did not reproduce, or one nobody documented.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from matrix.merge import version_key

PREDICTIONS = ("parse fails", "build fails", "float", "int8")
ENGINE = "tensorrt"
ENGINES = ("tensorrt", "tensorrt-rtx")  # the engines the lint predicts for (TensorRT-RTX shares the ONNX parser)
NEWS = "news for the catalogue"
NOT_RUN = "predicted, not run here"
_ENGINE_NAMES = {"tensorrt": "TensorRT", "tensorrt-rtx": "TensorRT-RTX"}
VERDICTS = {True: "agrees", False: NEWS, None: "cannot say"}
# The TensorRT ONNX parser names the node it refused: "Invalid Node - <name>" in its description, or, where
# the parser error has node fields, the worker's "[node <name> (<op>), <function>]" suffix (build.describe).
_INVALID_NODE = re.compile(r"Invalid Node - (\S+)")
_NODE_SUFFIX = re.compile(r"\[node (\S+)(?: \([^()]*\))?(?:, [^\]]*)?\]")
# Prefixes the TensorRT worker puts before the engine's own words (build.py, execute.py).
_WORKER_PREFIX = re.compile(r"^(?:ONNX parse failed|build_serialized_network returned None|"
                            r"deserialize_cuda_engine returned None)(?::\s*|$)")
# A version a specifier names and includes: ==X, >=X, <=X, ~=X (not the open bounds > and <).
_NAMED = re.compile(r"(?:==|>=|<=|~=)\s*([0-9][0-9A-Za-z.+!-]*)")


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

    @property
    def news(self) -> bool:
        """A miss: the catalogue's knowledge does not hold here."""
        return self.agrees is False


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


def failing_node(error: str) -> str:
    """The node a TensorRT parser error names, "" where it names none (never a guess from the log)."""
    found = _INVALID_NODE.search(error or "") or _NODE_SUFFIX.search(error or "")
    return found.group(1) if found else ""


def engine_words(error: str, node: str = "") -> str:
    """What the engine said went wrong, in its own words: the parser's line about the node where it names one
    ("<node>: <why>", or the description before "[node <node> ...]"), else the error's first line."""
    lines = [_WORKER_PREFIX.sub("", x.strip()) for x in (error or "").splitlines() if x.strip()]
    for line in lines if node else ():
        if line.startswith(node + ": "):
            return line[len(node) + 2:].strip().rstrip(".")
        found = _NODE_SUFFIX.search(line)
        if found and found.group(1) == node and line[:found.start()].strip():
            return line[:found.start()].strip().rstrip(".")
    return next((x for x in lines if x), "")


# Lines of an engine's error that say where, or what the machine lacks, never why: the parser's own trail
# ("While parsing node ...", "--- Begin node ---"), and the CUDA runtime's complaint that TensorRT-RTX appends to
# every error on a machine without a GPU ("Error Code 1: Cuda Runtime (... CUDA driver version is insufficient ...)").
_NOT_WHY = re.compile(r"^(?:While parsing node|--- (?:Begin|End) node|Node name:|ERROR: ModelImporter)|"
                      r"Error Code 1: Cuda Runtime|^Exception from \S+:\d+:$")  # OpenVINO's trail of source lines
# TensorRT's errors say why in parentheses: "<function>: Error Code 4: API Usage Error (<why>. In <func> at <file>)",
# the why often starting with the node's name.
_TRT_ERROR = re.compile(r"^(?:\S+: )?Error Code \d+: [A-Za-z ]+ \((.*)\)$")
_SOURCE_SUFFIX = re.compile(r"\.?\s+In \w+ at \S+\)?$")
REASON_LIMIT = 300


def reason_line(error: str, node: str = "", parser_errors: Sequence[Mapping[str, Any]] = ()) -> str:
    """The engine's own reason for a failure: the first line that says why, not only where.

    From the parser's structured errors where the cell has them (each error's description, less its "Invalid Node -
    <node_name>" line and the machine's noise), else from the error text; a line that quotes the node says why after
    "<node>: ". "" where no line says more than where."""
    for e in parser_errors:
        named = str(e.get("node_name") or "")
        why = _why(str(e.get("desc") or ""), named if named and not named.startswith("<") else node)
        if why:
            return why
    return _why(error, node) or engine_words(error, node)


def _why(text: str, node: str) -> str:
    """The first line of text that says why (see reason_line), trimmed to the reason itself."""
    for raw in (text or "").splitlines():
        line = _WORKER_PREFIX.sub("", raw.strip())
        if not line or _NOT_WHY.search(line) or (node and line in (f"Invalid Node - {node}", node)):
            continue
        if line.startswith("Invalid Node - "):
            continue
        wrapped = _TRT_ERROR.match(line)
        line = _SOURCE_SUFFIX.sub("", wrapped.group(1) if wrapped else line).strip()
        suffix = _NODE_SUFFIX.search(line)
        if suffix and suffix.group(1) == node and line[:suffix.start()].strip():
            line = line[:suffix.start()]
        elif node and line.startswith(f"{node}: "):
            line = line[len(node) + 2:]
        return line.split(". ", 1)[0].strip().rstrip(".")[:REASON_LIMIT]  # its first sentence
    return ""


def node_outcome(cell: Mapping[str, Any], node: str) -> str:
    """What a cell shows for one node: a model-level failure, or the node's precision."""
    status = cell.get("status")
    if status in ("fail", "crashed") and cell.get("stage", "") in ("", "load"):
        named = failing_node(cell.get("error") or "")
        if named and named != node:  # the parser stopped at another node: this one was never judged
            return "not observable"
        return "parse fails" if not cell.get("stage") else "build fails"  # stage is the last stage reached
    if (status in ("pass", "fail") and cell.get("stage") in ("run", "compare")) or status == "built":
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
                                   f.get("source", ""), str(c.get("hardware", "")),
                                   " · ".join(filter(None, [str(c.get("engine", ENGINE)), cell_setting(c)]))))
    return rows


def cell_setting(cell: Mapping[str, Any]) -> str:
    """A cell's column variant in a finding's words: "target=SM86", "" for the default setting."""
    variant = cell.get("variant") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(variant.items()))


def not_run(finding: Mapping[str, Any], ran: Sequence[str]) -> List[str]:
    """What a finding predicts for that no cell ran: its whole range when no run falls in it, else the versions
    its range names (==, >=, <=) that did not run."""
    versions = finding.get("versions", "")
    if not any(covers(versions, v) for v in ran):
        return [versions or "any version"]
    named = dict.fromkeys(v for v in _NAMED.findall(versions) if covers(versions, v))
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
        base = {"node": f["node"], "rule": f["rule"], "predicted": f["predicted"], "source": f.get("source", ""),
                "detail": f.get("detail", ""), "fix": f.get("fix", ""), "range": f.get("versions", ""),
                "order": order}
        for r in compare([f], cells):
            rows.append(dict(base, version=engine_version_label(label, r.version), hardware=r.hardware,
                             observed=r.observed, ran=True, verdict=VERDICTS[r.agrees], news=r.news, engine=engine))
        for v in not_run(f, ran_by.get(engine, [])):
            rows.append(dict(base, version=engine_version_label(label, v), hardware="", observed="", ran=False,
                             verdict=NOT_RUN, news=False, engine=engine))
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
        lines.append(f"lint {name}: {where} ({rule}): {_ENGINE_NAMES.get(engine, engine)} {versions or 'any version'}"
                     f"{' (' + setting + ')' if setting else ''} predicted {predicted} [{source}]")
    return lines
