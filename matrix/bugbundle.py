"""Bug bundles: one folder per cell with the model, its data, a standalone repro.py and an ISSUE.md to file upstream.

    bug-bundles/<column: engine, version, hardware, option variant, source; a digest>/<bundle id, "/" -> "__">/
        model.onnx inputs.npz expected.npz case.json   the reproducer bundle that ran (digest checked)
        float.npz                                      a user bundle's float outputs, where it has them
        repro.py                                       matrix/repro.py, unchanged: Python 3.9+, numpy and the engine
        cell.json                                      what repro.py reads: the recorded cell, as data
        suite/                                         the suite's own files repro.py runs, unchanged: judge.py (the
                                                       judge of a cell, core/judge.py) with numerics.py, words.py and
                                                       engines.py, and tensorrt/ (the worker) or stages.py
        commands.md data_loader.py                     TensorRT cells: trtexec and Polygraphy equivalents
        environment.json                               whitelisted fields of the cell, never os.environ
        log.txt                                        the cell's error and engine log
        build-verbose.log                              TensorRT family: the verbose build log, where the cell has one
        ISSUE.md                                       NVIDIA/TensorRT's bug report template, filled in

Never imports an engine: it copies the engine's files into the bundle by path. repro.py is one static file for
every cell: everything from a results file (ids, error texts) reaches it as JSON data in cell.json, never as code.
"""

from __future__ import annotations

import io
import json
import math
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from cases.verdict import signature_basis_words
from core.cell import Cell, unpack_text
from core.engines import ENGINES, REPRO_ALWAYS, pinned_build, variant_label
from core.engines import title as engine_title
from core.numerics import float_source
from core.outcome import outcome
from core.portable import portable_path
from core.words import (
    BEFORE_RUN,
    EXECUTED,
    FAILED,
    FAILED_STAGE,
    ISSUE_STAGES,
    NO_REFERENCE,
    RAN,
    UNEXPECTED,
    WORKED,
    file_name,
)
from matrix.cellfiles import safe_name
from matrix.diff import regressions, runs_key
from matrix.merge import Column, column_key, version_key
from matrix.nodes import network_words
from matrix.safe import clean, md_cell, md_code, md_fence

TEMPLATES = Path(__file__).resolve().parent / "templates"
REPO = Path(__file__).resolve().parent.parent
SOURCE_FILES = ("model.onnx", "inputs.npz", "expected.npz", "case.json")
# A user bundle's float outputs (check --float-model, or the float twin derived from the model), where it has them:
# the judge's fragile floor reads them, so a bug bundle without them could judge otherwise.
OPTIONAL_FILES = ("float.npz",)
REPRO_TIMEOUT_S = 600
# environment.json: only these fields of the cell, so nothing private leaves the machine by accident.
ENVIRONMENT_FIELDS = ("bundle", "digest", "engine", "engine_version", "hardware")
DETAIL_FIELDS = ("name", "compute_capability", "driver", "cuda_driver", "cpu", "machine", "cores", "isa", "os",
                 "container", "openvino_device", "capabilities", "providers", "device")
VERSION_FIELDS = ("python", "numpy", "onnx", "cudnn", "cublas", "payload", *(s.module for s in ENGINES.values()),
                  "driver", "cuda_driver")
VERBOSE_LOG = "build-verbose.log"  # the worker's file name for it too (engines/tensorrt/worker.py)
PREVIOUS_CELLS = "previous-version-cells.jsonl"  # a regression's earlier runs, each cell whole
NOT_RECORDED = "not recorded (the cell predates the suite recording it)"
# A Q/DQ element type (onnx's TensorProto name) -> the precision a title names.
PRECISION_OF = {"INT8": "INT8", "UINT8": "INT8", "INT4": "INT4", "UINT4": "INT4", "INT16": "INT16", "UINT16": "INT16",
                "FLOAT8E4M3FN": "FP8", "FLOAT8E4M3FNUZ": "FP8", "FLOAT8E5M2": "FP8", "FLOAT8E5M2FNUZ": "FP8",
                "FLOAT4E2M1": "FP4"}
PRECISION_ORDER = ("FP4", "FP8", "INT4", "INT8", "INT16")
RUN_FIELDS = ("date", "source")


class Refused(Exception):
    """A bug bundle that must not be made: its reproducer is missing or is not the one that ran."""


class NeedsModel(Refused):
    """A user model's cell whose bundle is not here: only the model's owner can make it (python -m check)."""


@dataclass(frozen=True)
class Source:
    """The reproducer bundle that ran, read once: its files' bytes (copied into the bug bundle as they are), its
    case.json, and what its model says (the Q/DQ precision the title names, the target nodes' op types)."""

    path: Path
    files: Dict[str, bytes]
    meta: Dict[str, Any]
    precision: str = ""
    target_ops: Dict[str, str] = field(default_factory=dict)


class Missing(Refused):
    """The reproducer bundle is not there (make_all says whether only the model's owner can make it)."""


@dataclass(frozen=True)
class Made:
    """What became of one cell: the folder written (and zip), or why it was refused."""

    cell: Cell
    path: Optional[Path] = None
    archive: Optional[Path] = None
    refused: str = ""
    needs_model: bool = False  # refused only because a user model's bundle is not here: listed, not a failure


def wanted(cell: Cell, documented: bool = False, unreferenced: bool = False) -> bool:
    """A cell worth a bug bundle: it failed or crashed, or its verdict is unexpected; one that does what an upstream
    source documents ("as documented", or a failure whose error is a documented signature: nothing new to file) only
    with `documented`, one of a model the reference cannot run ("no reference": the model's fault) only with
    `unreferenced`."""
    return (cell.status in FAILED or cell.verdict in UNEXPECTED) and (documented or not documented_failure(cell)) \
        and (unreferenced or cell.verdict != NO_REFERENCE)


def documented_failure(cell: Cell) -> bool:
    """Whether a cell's failure is one an upstream source documents: its verdict says so, or its case documents no
    failure there ("new failure") but its error is a signature that NVIDIA's documentation or source code gives as a
    refusal, such as the parser refusing a non-zero zero point (a triager closes that as intended behaviour). A
    signature read from an issue thread is a known bug, not a documented refusal: its cells keep their bundles."""
    source = cell.signature_source or ""
    return cell.verdict == "as documented" or (
        cell.status in FAILED and bool(cell.signature) and cell.signature_basis == "documented"
        and not is_thread(source))


def select(cells: Iterable[Cell], bundle: str, engine: str, version: str, hardware: Optional[str] = None,
           variant: Optional[str] = None) -> Cell:
    """The one cell named on the command line (`variant`: its column options as the report says them,
    "x64quantprecision=1", "target=SM89", or "default"); ValueError says what matched instead."""
    same = [c for c in cells if c.bundle == bundle and c.engine == engine and c.engine_version == version]
    if hardware is not None:
        same = [c for c in same if c.hardware == hardware]
    if variant is not None:
        same = [c for c in same if variant_label(c.variant) == ("" if variant == "default" else variant)]
    if len(same) == 1:
        return same[0]
    named = "".join(f" [{v}]" for v in (hardware, variant) if v is not None)
    if not same:
        raise ValueError(f"no cell {bundle} on {engine} {version}{named}")
    options = [f"--hardware {shlex.quote(c.hardware)} --variant {shlex.quote(variant_label(c.variant) or 'default')}"
               for c in same]
    if len(set(options)) < len(options):  # the same hardware and variant from two files: no option tells them apart
        choices = "; ".join(f"{o} from {c.run.get('source', 'local')}" for o, c in zip(options, same))
        raise ValueError(f"{len(same)} cells match {bundle} on {engine} {version}: {choices}; they are one cell from "
                         "two results files (results/ and reports/observed/): move one file out of results/")
    raise ValueError(f"{len(same)} cells match {bundle} on {engine} {version}{named}: add one of "
                     + "; ".join(options))


def failed_stage(cell: Cell) -> str:
    """The stage that failed ("" where none did): core.outcome's."""
    return outcome(cell).failed_stage


def folder_for(cell: Cell, out: Path) -> Path:
    """<out>/<the cell's column>/<bundle id with "/" -> "__">, each a plain name inside out (column_folder)."""
    return out / column_folder(cell) / folder_name(cell.bundle.replace("/", "__"))


def column_folder(cell: Cell) -> str:
    """The cell's whole column as one folder name: engine, version, hardware, option variant (ONNX Runtime's
    x64quantprecision, TensorRT's tactics, TensorRT-RTX's target) and source, readable, with a digest of them so that
    two columns never share a folder (matrix.cellfiles names the column's file alike)."""
    return safe_name(Column(*column_key(cell)).id, limit=160)


def folder_name(text: str) -> str:
    """One folder name from text out of a results file: no separator, no "..", never absolute."""
    return file_name(text)


def read_source(cell: Cell, root: Path) -> Source:
    """The reproducer bundle that ran in this cell, each file read once; Refused when it is missing, or its digest
    differs from the cell's (Missing: not there at all)."""
    from generators.bundle import digest

    parts = cell.bundle.replace("\\", "/").split("/")
    if cell.bundle.startswith(("/", "\\")) or any(p in ("", ".", "..") or ":" in p for p in parts):
        raise Refused(f"bundle id {cell.bundle!r} is not a relative <case>/<params> path; refused")
    path = Path(root) / cell.bundle
    missing = [n for n in SOURCE_FILES if not (path / n).is_file()]
    if missing:
        raise Missing(f"bundle {cell.bundle} is not in {show(root)} (missing {', '.join(missing)}); write it with "
                      f"`python -m generators write --case {cell.case}` and check that its digest is {cell.digest}")
    files = {n: (path / n).read_bytes() for n in (*SOURCE_FILES, *(n for n in OPTIONAL_FILES if (path / n).is_file()))}
    meta = json.loads(files["case.json"])
    recorded = meta.get("digest", "")
    if recorded != cell.digest:
        raise Refused(f"digest mismatch for {cell.bundle}: the cell ran {cell.digest}, but {path} is {recorded}; "
                      "the generator changed since that run, so this is not the model that ran (refused)")
    actual = digest(files["model.onnx"], _arrays(files["inputs.npz"]), _arrays(files["expected.npz"]))
    if actual != cell.digest:
        raise Refused(f"digest mismatch for {cell.bundle}: its files hash to {actual}, not {cell.digest} as "
                      "case.json and the cell say (edited files?); refused")
    graph = _graph(files["model.onnx"])
    targets = set(meta.get("target_nodes") or [])
    return Source(path, files, meta, graph_precision(graph) if graph is not None else "",
                  {n.name: n.op_type for n in graph.node if n.name in targets} if graph is not None else {})


def needs_model(cell: Cell, root: Path) -> NeedsModel:
    """The refusal of a user model's cell whose bundle is not here."""
    return NeedsModel(f"needs the model: {cell.bundle} is a user's model and its bundle is not in {show(root)}; its "
                      f"owner makes it with `python -m check MODEL.onnx` (or `--prepare-only --out DIR`, then "
                      f"--user-bundles DIR), and it must hash to {cell.digest[:12]}")


def _arrays(data: bytes) -> Dict[str, Any]:
    """The arrays of an npz file's bytes."""
    import numpy as np

    with np.load(io.BytesIO(data)) as f:
        return {k: f[k] for k in f.files}


def _graph(model: bytes) -> Any:
    """The model's graph, None where onnx is not here or cannot read it (the title then says "quantized")."""
    try:
        import onnx

        return onnx.load_model_from_string(model).graph
    except Exception:  # no onnx here, or a model it cannot read
        return None


def is_user_model(cell: Cell) -> bool:
    """A cell of an external case (a user's own model, python -m check): no generator can write its bundle."""
    from cases import get_case

    try:
        return get_case(cell.case).external
    except KeyError:
        return False


def model_cells(cells: Iterable[Cell], names: Sequence[str]) -> List[Cell]:
    """The cells of the user models named: a bundle id (user_model/net-<10 hex>), the model's name (net: every model
    of that name), or the model file (its own bundle only)."""
    from cases.user_model import ID, bundle_id_for, slug_of

    wanted, slugs = set(), set()
    for name in names:
        if Path(name).is_file():
            wanted.add(bundle_id_for(name))
        else:
            wanted |= {name, f"{ID}/{name}"}
            slugs.add(name)
    return [c for c in cells if is_user_model(c) and (c.bundle in wanted or slug_of(c.bundle) in slugs)]


def make_all(cells: Sequence[Cell], everything: Sequence[Cell], bundles: Path, out: Path,
             archive: bool = False, user_bundles: Optional[Path] = None) -> List[Made]:
    """A bug bundle for each cell, one folder each; `everything` (all merged cells) answers the cross-version
    questions. A user model's bundle comes from user_bundles (python -m check's folder) where given. A second cell of
    one column and bundle (two results files of one column, unmerged) is refused: it would overwrite the first."""
    made: List[Made] = []
    written: Dict[Path, Cell] = {}
    for cell in cells:
        root = user_bundles if user_bundles is not None and is_user_model(cell) else bundles
        target = folder_for(cell, Path(out))
        if target in written:
            made.append(Made(cell, refused=f"{show(target)} holds this run's bug bundle of the same reproducer and "
                                           f"column ({written[target].column}); one cell per column (merge first)"))
            continue
        try:
            path = make(cell, everything, root, out)
        except Refused as e:
            if isinstance(e, Missing) and is_user_model(cell):
                e = needs_model(cell, root)
            made.append(Made(cell, refused=str(e), needs_model=isinstance(e, NeedsModel)))
            continue
        written[target] = cell
        made.append(Made(cell, path, _zip(path) if archive else None))
    return made


def earlier(out: Path, made: Sequence[Made]) -> List[Path]:
    """Bug bundles in out that this run did not write (an earlier run's, of cells that are gone or now pass)."""
    mine = {m.path.resolve() for m in made if m.path is not None}
    return sorted(p.parent for p in Path(out).glob("*/*/ISSUE.md") if p.parent.resolve() not in mine)


def make(cell: Cell, everything: Sequence[Cell], bundles: Path, out: Path) -> Path:
    """Write one bug bundle folder and return it: the reproducer's files are read once, and everything else comes from
    the cell (its signature's regex, source and basis included), never from the catalogue."""
    source = read_source(cell, bundles)
    meta = source.meta
    target = folder_for(cell, Path(out))
    if Path(out).resolve() not in target.resolve().parents:
        raise Refused(f"{target} is not inside {out}; refused")
    shipped = shipped_files(cell)
    shown = view(cell, meta, everything, source)
    texts = {"cell.json": json.dumps(repro_cell(cell, meta, source.target_ops, shown["last_stages_seen"]),
                                     indent=2) + "\n",
             "log.txt": log_text(cell, meta),
             "environment.json": json.dumps(environment(cell), indent=2, sort_keys=True) + "\n"}
    if shown["verbose"]["attached"]:
        texts[VERBOSE_LOG] = verbose_text(cell)
    was = shown["regression"]
    if was:  # the earlier version's runs a regression is measured against, whole: the title's claim, checkable
        texts[PREVIOUS_CELLS] = "".join(c.to_json() + "\n" for c in previous_cells(cell, everything, was["from"]))
    if cell.engine in ENGINES and ENGINES[cell.engine].repro_commands:
        texts["commands.md"] = render(ENGINES[cell.engine].repro_commands, shown)
        texts["data_loader.py"] = render("data_loader.py.j2", {})
    files = sorted([*source.files, *texts, "repro.py", "suite/", "ISSUE.md"])
    texts["ISSUE.md"] = render("ISSUE.md.j2", dict(shown, files=files))
    _clear(target)  # only now: a cell that cannot be rendered leaves nothing behind
    target.mkdir(parents=True)
    for name, data in source.files.items():
        (target / name).write_bytes(data)
    for name, path in shipped.items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / name)
    for name, text in texts.items():
        (target / name).write_text(text, encoding="utf-8")
    return target


def shipped_files(cell: Cell) -> Dict[str, Path]:
    """Bundle path -> the repository file repro.py runs for this cell's engine; Refused for an engine it cannot run."""
    spec = ENGINES.get(cell.engine)
    if spec is None or not spec.repro_files:
        raise Refused(f"no repro.py driver for engine {cell.engine!r}")
    return {name: REPO / path for name, path in {**REPRO_ALWAYS, **spec.repro_files}.items()}


def _clear(target: Path) -> None:
    """Replace an earlier bug bundle; never a folder this tool did not write."""
    if not target.exists():
        return
    if not (target / "ISSUE.md").is_file():
        raise Refused(f"{target} exists and is not a bug bundle; move it away first")
    shutil.rmtree(target)


def show(path: Path) -> str:
    """A folder as a message names it, without this machine's path."""
    return portable_path(Path(path).absolute())


def _zip(path: Path) -> Path:
    return Path(shutil.make_archive(str(path), "zip", root_dir=path.parent, base_dir=path.name))


def environment(cell: Cell) -> Dict[str, Any]:
    """The cell's environment from an explicit whitelist of its recorded fields."""
    env: Dict[str, Any] = {k: getattr(cell, k) for k in ENVIRONMENT_FIELDS}
    env["hardware_detail"] = {k: cell.hardware_detail[k] for k in DETAIL_FIELDS if k in cell.hardware_detail}
    env["versions"] = {k: cell.versions[k] for k in VERSION_FIELDS if k in cell.versions}
    env["run"] = {k: cell.run[k] for k in RUN_FIELDS if k in cell.run}
    return env


def log_text(cell: Cell, meta: Optional[Dict[str, Any]] = None) -> str:
    """The cell's outcome, error and engine log as plain text (`meta`: the bundle's case.json, which names where its
    float outputs come from)."""
    head = [
        f"cell: {cell.bundle} on {cell.engine} {cell.engine_version} [{cell.hardware}]",
        f"run: {cell.run.get('source', 'local')}, {cell.run.get('date', 'no date')}",
        f"status: {cell.status} ({cell.verdict}); last stage reached: {cell.last_stage or 'none'}"
        + (f"; failed at: {failed_stage(cell)}" if failed_stage(cell) else ""),
        f"signature: {cell.signature or 'none matched'}",
        f"max error: {_steps(cell.max_error_steps)} steps (tolerance {_steps(cell.tolerance_steps)})",
    ]
    if (cell.output_stats or {}).get("measure") == "network":
        said = network_words(cell.output_stats, float_source(meta or {}))
        head.append(f"outputs against the reference: {said} (judged by SQNR >= {cell.output_stats.get('min_sqnr_db')} "
                    f"dB and cosine >= {cell.output_stats.get('min_cosine')})")
    if cell.reason:
        head.append(f"reason: {cell.reason}")
    body = ["", "== error ==", cell.error or "(none)", "", "== engine log ==", cell.log or "(empty)"]
    return clean("\n".join(head + body) + "\n")  # terminal colours dropped, control characters made visible


def recorded(cell: Cell, meta: Dict[str, Any], seen: Sequence[str] = ()) -> Dict[str, Any]:
    """What repro.py compares against: the recorded outcome, with the signature as a regex; and `seen`, the last
    stages this version's runs of the reproducer reached where they failed it at several (stages_seen), which repro.py
    takes as the same failure."""
    tolerance = cell.tolerance_steps if cell.tolerance_steps is not None else meta.get("tolerance_steps", 1.0)
    return {
        "last_stages_seen": list(seen), "failed_stages_seen": [FAILED_STAGE[s] for s in seen],
        "bundle": cell.bundle, "engine": cell.engine, "engine_version": cell.engine_version,
        "hardware": cell.hardware, "status": cell.status, "verdict": cell.verdict, "last_stage": cell.last_stage,
        "failed_stage": failed_stage(cell), "error_first_line": first_line(cell.error), "reason": cell.reason,
        "signature": cell.signature, "signature_regex": signature_pattern(cell),
        "max_error_steps": cell.max_error_steps, "tolerance_steps": float(tolerance), "fused": cell.fused,
    }


def stages_seen(cell: Cell, everything: Sequence[Cell]) -> List[str]:
    """The last stages this version's failing cells of the reproducer reached on GPUs of the cell's architecture and
    variant, where there are several ([] where every run failed it at one stage, or the cell is no GPU failure)."""
    key = runs_key(cell)
    if cell.status != "fail" or not key[-1]:
        return []
    seen = {c.last_stage for c in everything
            if c.bundle == cell.bundle and c.status == "fail" and runs_key(c) == key} | {cell.last_stage}
    return sorted(seen) if len(seen) > 1 else []


def signature_pattern(cell: Cell) -> str:
    """The regex of the catalogue signature the cell matched, as the cell records it ("" if none: repro.py then checks
    status and stage only)."""
    return cell.signature_pattern if cell.signature else ""


def signature_source(cell: Cell) -> str:
    """Where the matched signature's text comes from, as the cell records it ("" if none)."""
    return cell.signature_source if cell.signature else ""


def repro_cell(cell: Cell, meta: Dict[str, Any], target_ops: Optional[Dict[str, str]] = None,
               seen: Sequence[str] = ()) -> Dict[str, Any]:
    """cell.json: the recorded outcome, the engine, and how the adapter ran it (TensorRT: the worker's request
    without its paths and GPU, which repro.py fills in; `target_ops`: the target nodes' op types, read_source's)."""
    spec = ENGINES[cell.engine]
    engine = {"name": cell.engine, "family": spec.family, "module": spec.module, "title": spec.title,
              "requirement": spec.requirement, "device": spec.device,
              "install": install_command(cell.engine, cell.engine_version)}
    out = {"recorded": recorded(cell, meta, seen), "failed_stages": dict(FAILED_STAGE),
           "timeout_s": REPRO_TIMEOUT_S,
           "engine": engine, "options": _engine_options(cell)}
    if spec.family == "tensorrt":  # the column's options as the worker's request and its engine record carry them
        trt = dict(spec.settings, **(meta.get("trt") or {}))
        trt.update({n: spec.value(cell.variant, n) for n in spec.request_options})
        engine.update({n: spec.value(cell.variant, n) for n in spec.worker_options})
        out["request"] = {"bundle": cell.bundle, "target_nodes": list(meta.get("target_nodes") or []),
                          "target_ops": dict(target_ops or {}), "profile": profile_of(cell, meta), "trt": trt}
    return out


def profile_of(cell: Cell, meta: Dict[str, Any]) -> Dict[str, Dict[str, List[int]]]:
    """min/opt/max per dynamic input: what the cell's worker set (options.profile), else the bundle's case.json
    profile; {} for a static model."""
    used = cell.options.get("profile") or meta.get("profile") or {}
    return {str(name): {k: [int(d) for d in shape[k]] for k in ("min", "opt", "max")} for name, shape in used.items()}


def profile_commands(profile: Dict[str, Dict[str, List[int]]]) -> Dict[str, List[str]]:
    """trtexec's --minShapes/--optShapes/--maxShapes and Polygraphy's --trt-{min,opt,max}-shapes for a profile."""
    if not profile:
        return {"trtexec": [], "polygraphy": [], "lines": []}
    trtexec, polygraphy = [], []
    for key, flag in (("min", "min"), ("opt", "opt"), ("max", "max")):
        trtexec.append(shlex.quote(f"--{flag}Shapes=" + ",".join(
            f"{name}:{'x'.join(map(str, p[key]))}" for name, p in profile.items())))
        polygraphy.append(f"--trt-{flag}-shapes " + " ".join(
            shlex.quote(f"{name}:[{','.join(map(str, p[key]))}]") for name, p in profile.items()))
    lines = [f"{name}: min {'x'.join(map(str, p['min']))}, opt {'x'.join(map(str, p['opt']))}, "
             f"max {'x'.join(map(str, p['max']))}" for name, p in profile.items()]
    return {"trtexec": [" ".join(trtexec)], "polygraphy": [" ".join(polygraphy)], "lines": lines}


def _engine_options(cell: Cell) -> Dict[str, Any]:
    """The options the adapter used, with the descriptor's defaults where a cell did not record them."""
    return ENGINES[cell.engine].run_options(cell.options, cell.variant)


def view(cell: Cell, meta: Dict[str, Any], everything: Sequence[Cell],
         source: Optional[Source] = None) -> Dict[str, Any]:
    """Everything ISSUE.md and commands.md show, in one dict (`source`: the reproducer as read_source read it, whose
    model names the precision)."""
    trt = dict(meta.get("trt") or {})
    seen = stages_seen(cell, everything)
    precision = source.precision if source is not None else ""
    was = regression(cell, everything)
    return {
        "cell": cell, "meta": meta, "title": title(cell, seen, precision, was, meta), "precision": precision,
        "regression": was, "documented": cell.verdict == "as documented", "install": install_command(
            cell.engine, cell.engine_version), "env": environment_words(cell), "verbose": verbose_words(cell),
        "latest": latest_release(cell, everything), "expected": expected_words(cell, meta, was),
        "actual": actual_words(cell, meta),
        "params": params_text(cell, meta),
        "engine_title": engine_title(cell.engine),
        "engine_family": ENGINES[cell.engine].family if cell.engine in ENGINES else "",
        "is_trt": cell.engine == "tensorrt", "failed_stage": failed_stage(cell), "device": device(cell),
        "error_first_line": first_line(cell.error), "error_lines": _lines(cell.error, 30),
        "log_lines": _lines(cell.log, 40), "signature_pattern": signature_pattern(cell),
        "signature_source": signature_source(cell), "versions": versions_tried(cell, everything),
        "links": [link_words(str(link)) for link in meta.get("links") or []],
        # a signature read from an issue or pull request thread: a report of the failure, not a document of it
        "signature_thread": bool(cell.signature) and is_thread(signature_source(cell)),
        "signature_words": signature_basis_words(cell.signature_basis) if cell.signature else "",
        "baseline": (cell.expectation or {}).get("basis") == "baseline",
        "others": other_engines(cell, everything), "cross_check": meta.get("cross_check") or {},
        "trt": trt, "tactic_sources": cell.tactic_sources, "tensorrt_only": tensorrt_only(cell),
        "settings": settings(cell),
        "last_stages_seen": seen, "stages_seen": [FAILED_STAGE[s] for s in seen],
        "parser_flags": list(trt.get("parser_flags") or []), "workspace_mb": workspace_mb(cell, trt),
        "tolerances": tolerances(meta),
        "max_error": _steps(cell.max_error_steps), "tolerance": _steps(cell.tolerance_steps),
        "network": network_words(cell.output_stats, float_source(meta))
        if (cell.output_stats or {}).get("measure") == "network" else "",
        **tool_commands(cell, meta),
    }


def settings(cell: Cell) -> str:
    """ISSUE.md's settings line: the column's options (its variant over the descriptor's defaults: the target, the
    tactics, x64quantprecision that make it this column), then the settings every cell of the engine has."""
    spec = ENGINES.get(cell.engine)
    if spec is None:
        return ""
    column = ", ".join(f"{o.name}={spec.value(cell.variant, o.name)}" for o in spec.options if o.column)
    more = spec.run_settings_words(_engine_options(cell))
    return "; ".join(p for p in (column, more) if p)


def tensorrt_only(cell: Cell) -> bool:
    """A TensorRT cell built with its own kernels only (the column's tactics choice)."""
    return cell.engine == "tensorrt" and ENGINES["tensorrt"].value(cell.variant, "tactics") == "tensorrt-only"


def workspace_mb(cell: Cell, trt: Dict[str, Any]) -> int:
    """The builder's workspace pool: the bundle's, else the engine's setting (core.engines); 0 for an engine with
    no such pool."""
    spec = ENGINES.get(cell.engine)
    return int(trt.get("workspace_mb") or (spec.settings.get("workspace_mb", 0) if spec else 0))


def strongly_typed_only(cell: Cell) -> bool:
    """The engine has no weak typing, as the worker's capability record says (TensorRT 11: no --int8/--fp16)."""
    return (cell.options.get("api") or {}).get("typing") == "always strong"


def tool_commands(cell: Cell, meta: Dict[str, Any]) -> Dict[str, Any]:
    """trtexec and Polygraphy command lines closest to what the suite ran (one option a line), and how they differ."""
    trt = dict(meta.get("trt") or {})
    names = list(meta.get("inputs") or {})
    load = ",".join(f"{n}:{n}.bin" if re.fullmatch(r"[A-Za-z0-9_.]+", n) else f"'{n}':'{n}.bin'" for n in names)
    simple = all(re.fullmatch(r"[A-Za-z0-9_.]+", n) for n in names)
    workspace = workspace_mb(cell, trt)
    trtexec = ["trtexec --onnx=model.onnx"]
    polygraphy = ["polygraphy run model.onnx --trt --onnxrt"]
    notes: List[str] = []
    # TensorRT 11 removed --int8/--fp16 (weak typing): every network is strongly typed, as the worker's capability
    # record says. NOT VERIFIED ON REAL TENSORRT
    v11 = strongly_typed_only(cell)
    # what the build did, where the worker recorded it: TensorRT 8.x has no strongly typed networks, and built the
    # suite's strongly typed request weakly typed, with the INT8 and FP16 flags
    strong = bool((cell.options or {}).get("strongly_typed", trt.get("strongly_typed")))
    for key in ("int8", "fp16"):
        if trt.get(key, key == "int8") and not strong and not v11:
            trtexec.append(f"--{key}")
            polygraphy.append(f"--{key}")
    if trt.get("strongly_typed") and not strong and not v11:
        notes.append(f"the suite asks for a strongly typed network; {engine_title(cell.engine)} {cell.engine_version} "
                     "has none and built it weakly typed, with INT8 and FP16 allowed, as these commands do")
    if v11:
        notes.append("TensorRT 11 builds every network strongly typed (no --int8/--fp16/--stronglyTyped): the "
                     "model's Q/DQ nodes set the precision")
    elif strong:
        trtexec.append("--stronglyTyped")
        polygraphy.append("--strongly-typed")
    # A cell built with TensorRT's default tactic sources needs no option; one built without cuBLAS/cuDNN does.
    own_kernels = tensorrt_only(cell)
    if not v11 and own_kernels:  # 11.0 removed the CUBLAS, CUBLAS_LT and CUDNN tactic sources
        trtexec.append("--tacticSources=-CUBLAS,-CUBLAS_LT,-CUDNN")
    sources = cell.tactic_sources
    if sources and own_kernels:
        polygraphy.append("--tactic-sources " + " ".join(sources))
    elif not sources:
        notes.append("Polygraphy: give --tactic-sources every source of your TensorRT except CUBLAS, CUBLAS_LT "
                     "and CUDNN (this cell did not record the list)")
    trtexec.append(f"--memPoolSize=workspace:{workspace}")
    polygraphy.append(f"--pool-limit workspace:{workspace}M")
    shapes = profile_commands(profile_of(cell, meta))
    trtexec += shapes["trtexec"]
    polygraphy += shapes["polygraphy"]
    for raw in trt.get("parser_flags") or []:
        name = raw.lstrip("-")
        if raw == "-NATIVE_INSTANCENORM":
            trtexec.append("--pluginInstanceNorm")
            polygraphy.append("--plugin-instancenorm")
            notes.append("trtexec --pluginInstanceNorm and polygraphy --plugin-instancenorm clear NATIVE_INSTANCENORM "
                         "in recent releases; older trtexec/Polygraphy may not know them")
        elif raw.startswith("-"):
            notes.append(f"the suite clears parser flag {name}; neither tool has a switch for that here")
        else:
            polygraphy.append(f"--onnx-flags {name.lower()}")
            notes.append(f"trtexec: no switch sets parser flag {name}; repro.py sets it by name")
    trtexec += ["--profilingVerbosity=detailed --exportLayerInfo=layers.json",
                f"--loadInputs={load}" if simple else f'"--loadInputs={load}"',
                "--exportOutput=outputs.json --iterations=1 --warmUp=0 --duration=0 --verbose"]
    atol = " ".join(f"{t['name']}:{t['atol']}" for t in tolerances(meta))
    polygraphy += ["--data-loader-script data_loader.py", f"--atol {atol} --rtol 0"]
    if v11 and ("calibrator" in trt or trt.get("int8_ranges")):
        notes.append("not applicable on TensorRT 11: INT8 calibration and dynamic ranges were removed in 11.0 "
                     "(NVIDIA, Migrating from TensorRT 10.x to 11.x); this reproducer's path is implicit INT8")
    elif trt.get("int8_ranges") == "trtexec":
        notes.append("the suite set trtexec-style dummy dynamic ranges (int8_ranges=trtexec); trtexec --int8 "
                     "without --calib does the same for a network without Q/DQ layers; Polygraphy does not "
                     "(it may calibrate with the data loader instead)")
    elif trt.get("int8", True) and not v11:
        notes.append("the suite set no dynamic ranges; trtexec --int8 without --calib sets dummy ranges when the "
                     "network has no Q/DQ layers, and Polygraphy may calibrate with the data loader: for such a "
                     "network neither is the same build as repro.py")
    if trt.get("plugins"):
        notes.append(f"the model needs plugins {', '.join(trt['plugins'])}: load their library with "
                     "trtexec --plugins / polygraphy --plugins")
    return {"trtexec": trtexec, "polygraphy": polygraphy, "tool_notes": notes, "profile_lines": shapes["lines"],
            "strongly_typed": strong}


def title(cell: Cell, varies: Sequence[str] = (), precision: str = "",
          was: Optional[Dict[str, Any]] = None, meta: Optional[Dict[str, Any]] = None) -> str:
    """The issue title, after NVIDIA/TensorRT's "XXX failure of TensorRT X.Y when running XXX on GPU XXX", with the
    reproducer's precision (its Q/DQ types) and target; "Regression from X to Y: " first where it is one (`was`:
    regression()), "Matches the documentation, do not file as a new bug: " where it does what the documentation
    says; `meta`: case.json, whose parameters are in the case's axis order)."""
    text = _title(cell, varies, precision, meta)
    if was:
        text = f"Regression from {was['from']} to {cell.engine_version}: {text}"
    if cell.verdict == "as documented":
        text = f"Matches the documentation, do not file as a new bug: {text}"
    if cell.verdict == NO_REFERENCE:
        text = f"The model's fault, do not file as an engine bug ({cell.reason}): {text}"
    return text


def _title(cell: Cell, varies: Sequence[str], precision: str, meta: Optional[Dict[str, Any]] = None) -> str:
    """The title's own words: a failure whose stage varies between runs (`varies`: the last stages reached,
    stages_seen) names each stage seen."""
    running = f"when running {cell.case} ({params_text(cell, meta)})"
    where = f"{engine_title(cell.engine)} {cell.engine_version} {running} {precision or 'quantized'} ONNX model on " \
            f"{device(cell)}"
    if cell.status == "crashed":
        return f"Crash failure of {where}"
    if cell.status == "fail" and varies:
        words = [ISSUE_STAGES[FAILED_STAGE[s]] for s in varies]
        stages = " or ".join([words[0]] + [w.lower() for w in words[1:]])
        return f"{stages} failure (the stage varies) of {where}"
    if cell.status == "fail":
        return f"{ISSUE_STAGES[failed_stage(cell)]} failure of {where}"
    if cell.status == "pass" and cell.verdict == "fails against expectation":
        return f"INT8 fusion failure of {where}"
    if cell.status == "pass" and cell.verdict == "fixed":
        return f"Documented failure no longer seen on {where}"
    if cell.status == "pass":
        return f"No failure of {where}"
    return f"Not run ({cell.status}): {where}"


def params_text(cell: Cell, meta: Optional[Dict[str, Any]] = None) -> str:
    """"k=v, ..." in the order of the bundle's case.json (`meta`: the case's axis order), else the record's own."""
    order = list((meta or {}).get("params") or {})
    keys = [k for k in order if k in cell.params] + [k for k in cell.params if k not in order]
    return ", ".join(f"{k}={_param(cell.params[k])}" for k in keys)


def device(cell: Cell) -> str:
    """ "GPU NVIDIA H200" or "CPU Intel(R) Xeon(R) ..." from the recorded hardware."""
    if cell.engine == "tensorrt":
        return f"GPU {cell.hardware_detail.get('name') or cell.hardware}"
    if cell.engine == "tensorrt-rtx":  # built on any machine for its targets; a GPU only where one ran the plan
        on = f"on GPU {cell.hardware_detail['name']}" if cell.hardware_detail.get("name") else "with no GPU"
        return f"{rtx_targets(cell)} (built ahead of time {on})"
    cpu = cell.hardware_detail.get("cpu") or cell.hardware
    return f"CPU {cpu}"


def rtx_targets(cell: Cell) -> str:
    """The architectures a TensorRT-RTX cell was built for: its column's target ("SM75"), else the targets its plan
    names, else the builder's default set."""
    target = ENGINES["tensorrt-rtx"].value(cell.variant, "target")
    if target != "default":
        return target
    named = [str(t) for t in (cell.options or {}).get("plan_targets") or []]
    return f"its default targets ({', '.join(named)})" if named else "the builder's default targets"


def install_command(engine: str, version: str) -> str:
    """The pip command that installs one engine version as the pin table does (its index, what it needs beside it)."""
    spec = ENGINES[engine]
    group = next((g for g in spec.pins if version in g.versions), None)
    needs = list(group.requirements(version)) if group else []
    wanted = [f'"{engine}=={version}"'] + [f'"{r}"' if any(c in r for c in "<>=!~") else r for r in needs]
    if not any(r.startswith("numpy") for r in needs):
        wanted.append("numpy")
    index = f"--extra-index-url {group.index} " if group and group.index else ""
    return f"pip install {index}{' '.join(wanted)}"


def graph_precision(graph: Any) -> str:
    """The precisions a graph's Q/DQ nodes quantize to ("FP8", "INT4 and INT8"); "" where none is found."""
    kinds = {t.name: t.data_type for t in graph.initializer}
    for v in [*graph.input, *graph.output, *graph.value_info]:
        kinds[v.name] = v.type.tensor_type.elem_type
    for node in graph.node:
        if node.op_type == "Constant":
            kinds.update({out: a.t.data_type for out in node.output for a in node.attribute if a.name == "value"})
    found = set()
    for node in graph.node:  # in graph order: a Q's output type is known before the DQ that reads it
        names = _qdq_types(node, kinds)
        found |= {PRECISION_OF[n] for n in names if n in PRECISION_OF}
    return " and ".join(p for p in PRECISION_ORDER if p in found)


def _qdq_types(node: Any, kinds: Dict[str, int]) -> List[str]:
    """The element type names one node quantizes to or dequantizes from (recording a Q's output type in kinds)."""
    import onnx

    name = onnx.TensorProto.DataType.Name
    if node.op_type == "QuantizeLinear":
        attr = {a.name: a.i for a in node.attribute}
        zero = kinds.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        kind = kinds.get(node.output[0]) or zero or attr.get("output_dtype") or onnx.TensorProto.UINT8
        kinds[node.output[0]] = kind
        return [name(kind)]
    if node.op_type == "DequantizeLinear" and node.input and kinds.get(node.input[0]):
        return [name(kinds[node.input[0]])]
    if node.op_type == "MatMulNBits":
        return ["INT4" if {a.name: a.i for a in node.attribute}.get("bits", 4) == 4 else "INT8"]
    if node.op_type in ("DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"):
        return ["INT8"]
    return []


def hardware_class(cell: Cell) -> tuple:
    """What two versions' cells must share to be the same reproducer on the same hardware class: the option variant,
    and the GPU's architecture (compute capability), else the hardware label (a CPU with its INT8 level)."""
    return (variant_label(cell.variant), str((cell.hardware_detail or {}).get("compute_capability") or cell.hardware))


def is_thread(link: str) -> bool:
    """Whether a source is an upstream thread (an issue, a pull request, a discussion): a report of a failure, not a
    document of what the engine does."""
    return any(part in link for part in ("/issues/", "/pull/", "/discussions/"))


def link_words(link: str) -> str:
    """A case's source link with what it is: "(thread)" for an issue, pull request or discussion, and a package page
    for where the model the case was reduced from came from; a document as it is."""
    if is_thread(link):
        return f"{link} (thread)"
    if "pypi.org/project/" in link:
        return f"{link} (the package that ships the model it was reduced from, not a thread)"
    return link


def previous_cells(cell: Cell, everything: Sequence[Cell], version: str) -> List[Cell]:
    """The cells of the earlier version a regression is measured against: the same reproducer, engine and hardware
    class, that ran (regression's `before`)."""
    key = hardware_class(cell)
    return [c for c in everything if c.bundle == cell.bundle and c.engine == cell.engine and c.engine_version == version
            and c.status in RAN and hardware_class(c) == key]


def regression(cell: Cell, everything: Sequence[Cell]) -> Optional[Dict[str, Any]]:
    """Where this cell is a regression (matrix.diff.regressions, the one definition every view uses: it fails or lost
    INT8 fusion where the engine's previous version that ran the reproducer on its hardware setting passed, built or
    fused): that version, its runs on the same hardware class (their hardware and files), and their verdict's source
    where they did what one documents; else None."""
    mine = [c for c in everything if c.bundle == cell.bundle and c.engine == cell.engine]  # its runs of every version
    found = regressions(mine).get((column_key(cell), cell.bundle))
    if found is None:
        return None
    previous, change = found
    before = previous_cells(cell, mine, previous)
    lost = cell.status in WORKED and cell.fused is False
    documented = sorted({c.expectation["source"] for c in before if c.verdict == "as documented"})
    return {"from": previous, "lost_fusion": lost, "hardware": sorted({c.setting for c in before}),
            "files": sorted({str(c.run.get("file") or "") for c in before} - {""}), "documented": documented,
            "before": "built" if before and all(c.status == "built" for c in before) else "passed",
            "fused": bool(before) and all(c.fused for c in before), "kind": change.kind}


def _engine_build(cell: Cell, said: str) -> str:
    """The engine version as its cell records it, with the build its wheel ships where the pin table knows one and the
    cell does not say it ("8.6.0 (build 8.6.0.12: <source>)")."""
    build, source = pinned_build(cell.engine, cell.engine_version)
    return f"{said} (build {build}: {source})" if build and build != said else said


def payload_pins(cell: Cell) -> Dict[str, str]:
    """The CUDA wheels the GPU run's payload pinned ("nvidia-cuda-runtime-cu12==12.0.146, ..."): name -> version."""
    pins = [p.strip().split("==", 1) for p in str(cell.versions.get("payload") or "").split(",") if "==" in p]
    return {name: version for name, version in pins}


def environment_words(cell: Cell) -> Dict[str, str]:
    """ISSUE.md's Environment, each field from the cell's record: the CUDA runtime, cuBLAS and cuDNN from the payload's
    wheel pins and the libraries the worker found loaded, the OS and container the worker probed (NOT_RECORDED for a
    cell older than that)."""
    pins = payload_pins(cell)

    def pinned(prefix: str) -> str:
        found = [f"{name}=={version}" for name, version in pins.items() if name.startswith(prefix)]
        return f" (wheel {', '.join(found)})" if found else ""

    runtime = next((v for n, v in pins.items() if n.startswith("nvidia-cuda-runtime-cu")), "")
    driver_cuda = cell.hardware_detail.get("cuda_driver") or cell.versions.get("cuda_driver") or ""
    cuda = ", ".join(x for x in (f"CUDA runtime {runtime}{pinned('nvidia-cuda-runtime-cu')}" if runtime else "",
                                 f"the driver supports CUDA {driver_cuda}" if driver_cuda else "") if x)
    module = ENGINES[cell.engine].module if cell.engine in ENGINES else cell.engine
    return {
        "engine": _engine_build(cell, str(cell.versions.get(module) or cell.engine_version)),
        "cuda": cuda or NOT_RECORDED,
        "cudnn": (cell.versions.get("cudnn") or NOT_RECORDED) + pinned("nvidia-cudnn-cu"),
        "cublas": (cell.versions.get("cublas") or NOT_RECORDED) + pinned("nvidia-cublas-cu"),
        "driver": cell.hardware_detail.get("driver") or cell.versions.get("driver") or NOT_RECORDED,
        "os": cell.hardware_detail.get("os") or NOT_RECORDED,
        "container": _container_words(cell.hardware_detail.get("container") or ""),
        "python": (f"{cell.versions['python']} (the interpreter TensorRT ran in, which need not be the operating "
                   "system's own)" if cell.versions.get("python") else NOT_RECORDED),
    }


def _container_words(said: str) -> str:
    """The worker's container probe in an issue's words: a kind alone ("docker") says that its image and tag cannot be
    seen from inside it (a triager asks for them), and that the OS above is the container's."""
    if not said:
        return NOT_RECORDED
    if said in ("docker", "podman", "container"):
        return (f"{said} (its image and tag are not visible from inside it and were not recorded; the operating "
                "system above is the container's)")
    return said


def verbose_words(cell: Cell) -> Dict[str, Any]:
    """The verbose build log: attached (its size, and whether it was cut to its end), or, for a TensorRT-family failure
    at load or build without one, that it was not recorded and the command that records it."""
    packed = cell.verbose_log or {}
    family = ENGINES[cell.engine].family if cell.engine in ENGINES else ""
    wanted = family == "tensorrt" and cell.status == "fail" and failed_stage(cell) in BEFORE_RUN
    return {"attached": bool(packed.get("data")), "wanted": wanted, "file": VERBOSE_LOG,
            "bytes": int(packed.get("bytes") or 0), "kept": int(packed.get("kept") or 0),
            "cut": int(packed.get("kept") or 0) < int(packed.get("bytes") or 0)}


def verbose_text(cell: Cell) -> str:
    """build-verbose.log: the cell's verbose build log, with a first line that says where it was cut."""
    said = verbose_words(cell)
    text = unpack_text(cell.verbose_log)
    if said["cut"]:
        text = f"[qdq-matrix] the last {said['kept']} of {said['bytes']} bytes of this log; its start was cut\n{text}"
    when = cell.run.get("date", "") or "on an unrecorded date"
    head = (f"[qdq-matrix] {engine_title(cell.engine)} {_engine_build(cell, cell.engine_version)} on {cell.hardware}, "
            f"recorded {when}; the model it "
            "parsed is this folder's model.onnx (the log names the path it had on the machine that ran it)\n")
    return head + text


def latest_release(cell: Cell, everything: Sequence[Cell]) -> List[str]:
    """Sentences for "Have you tried the latest release?": the newest version of the engine that ran this reproducer
    here, the pinned versions this suite could not run and why (TensorRT 10.x/11.x), and for TensorRT for RTX, that no
    plan has run."""
    spec = ENGINES.get(cell.engine)
    if spec is None:
        return []
    ran = {c.engine_version for c in everything if c.engine == cell.engine and c.status in RAN}
    said = []
    for group in spec.pins:
        if cell.engine_version in group.early_access:
            ga, source = group.early_access[cell.engine_version]
            build = group.builds.get(cell.engine_version, ("", ""))[0]
            said.append(f"{spec.title} {cell.engine_version}{f' (build {build})' if build else ''} is an Early Access "
                        f"release; the GA release of its line, {ga} ({source}), is not in this suite's pin table "
                        "(PyPI has no whole wheel of it) and was not run. Please try it before filing.")
        never = [v for v in group.versions if v not in ran]
        if never and group.index:
            majors = " and ".join(dict.fromkeys(f"{v.split('.')[0]}.x" for v in never))
            said.append(f"{spec.title} {majors} ({never[0]} to {never[-1]} in this suite's pin table) could not be run "
                        "by this suite: their builder wheels download only from NVIDIA's package index "
                        f"({group.index}), which this suite cannot reach. Please try the newest of them before filing "
                        "(or the triager may).")
    if cell.engine == "tensorrt-rtx" and not any(c.engine == cell.engine and (c.status == "pass" or (
            c.status in FAILED and failed_stage(c) not in BEFORE_RUN)) for c in everything):
        said.append(f"No {spec.title} engine has run in this suite: its runtime refuses the only GPUs the suite has "
                    "(compute capability 9.0, sm_90), so every cell is a parse and an ahead-of-time build.")
    return said


def expected_words(cell: Cell, meta: Dict[str, Any], was: Optional[Dict[str, Any]]) -> str:
    """What should happen, with its basis: the previous version's runs (a regression), the expectation's source, or
    the reference and the other engines where nothing documents the configuration."""
    name = engine_title(cell.engine)
    e = cell.expectation or {}
    if was:
        did = ("built it ahead of time" if was["before"] == "built" else "parsed, built and ran it") + \
            (" with every target node in INT8" if was["fused"] else "")
        basis = f"observed by this suite on {', '.join(was['hardware'])}" + \
            (f" ({', '.join(was['files'])})" if was["files"] else "") + \
            (f"; documented too ({', '.join(was['documented'])})" if was["documented"] else "")
        return (f"As on {name} {was['from']}, the previous version this suite ran it on, which {did}: {basis}; "
                f"those cells, whole, are in {PREVIOUS_CELLS}.")
    basis = "observed before by this suite" if e.get("basis") == "baseline" else "documented"
    if e.get("outcome") in ("pass", "int8", "not_int8"):
        what = {"pass": "pass", "int8": "run with every target node in INT8", "not_int8": "run, a target in float"}
        return f"{name} {cell.engine_version} should {what[e['outcome']]}: {basis} ({e.get('source', '')})."
    steps = f"{_steps(cell.tolerance_steps)} quantization step{'' if cell.tolerance_steps == 1 else 's'}"
    valid = (f"The model passes onnx.checker ({meta.get('checker', '?')}) and its reference "
             f"({meta.get('reference', '?')}) computes it, so {name} should parse, build and run it within {steps} of "
             "the reference, or refuse it with an error that names what it does not support.")
    if e.get("outcome") == "fail":  # a known failure is what this suite expects to see, never what the engine should do
        stage = f" at {e['stage']}" if e.get("stage") else ""
        return (f"{valid} The failure{stage} is known, not expected of a correct engine: {basis} "
                f"({e.get('source', '')}).")
    return f"Nothing upstream documents this configuration. {valid}"


def actual_words(cell: Cell, meta: Dict[str, Any]) -> str:
    """What happened, in one sentence (`meta`: case.json, which says how a whole network's outputs are judged)."""
    error = first_line(cell.error)
    if cell.status == "crashed":
        return f"The process dies ({cell.reason or 'no reason recorded'}) during the {failed_stage(cell)} stage."
    if cell.status == "fail":
        return f"It fails at the {failed_stage(cell)} stage" + (f": {error}" if error else ".")
    if cell.status in WORKED and cell.fused is False:
        return "It " + ("builds" if cell.status == "built" else "runs") + ", but a target node is computed in float."
    if cell.status == "pass" and (cell.output_stats or {}).get("measure") == "network":
        said = network_words(cell.output_stats, float_source(meta))
        return f"It runs; against the reference, its worst output has {said}."
    if cell.status == "pass":
        return f"It runs; the worst output is {_steps(cell.max_error_steps)} quantization steps off the reference."
    if cell.status == "built":
        return "It builds ahead of time" + (", every target node quantized." if cell.fused else ".")
    return f"It did not run ({cell.status}): {cell.reason}"


def versions_tried(cell: Cell, everything: Sequence[Cell]) -> List[Dict[str, Any]]:
    """Every version of this cell's engine that ran this bundle, oldest first, the newest marked."""
    ran = [c for c in everything if c.bundle == cell.bundle and c.engine == cell.engine
           and c.status in EXECUTED]
    ran.sort(key=lambda c: (version_key(c.engine_version), c.setting))
    newest = ran[-1].engine_version if ran else ""
    return [{"version": c.engine_version, "hardware": c.setting, "status": c.status, "verdict": c.verdict,
             "stage": failed_stage(c), "this": c is cell or _same(c, cell), "newest": c.engine_version == newest,
             "source": c.run.get("source", "local")} for c in ran]


def other_engines(cell: Cell, everything: Sequence[Cell]) -> List[Dict[str, Any]]:
    """The same bundle on every other engine: status, verdict, version, error in steps."""
    found = [c for c in everything if c.bundle == cell.bundle and c.engine != cell.engine]
    found.sort(key=lambda c: (c.engine, version_key(c.engine_version), c.setting))
    return [{"engine": engine_title(c.engine), "version": c.engine_version, "hardware": c.setting,
             "status": c.status, "verdict": c.verdict, "stage": failed_stage(c), "max_error": _steps(c.max_error_steps),
             "note": first_line(c.error or c.reason)} for c in found]


def tolerances(meta: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Per output: the absolute tolerance the suite allows (tolerance in steps times the step)."""
    steps = float(meta.get("tolerance_steps", 1.0))
    out = []
    for name, info in (meta.get("outputs") or {}).items():
        step = info.get("step")
        integer = "int" in str(info.get("dtype", ""))
        atol = steps * (1.0 if integer or not step else float(step))
        out.append({"name": name, "step": step, "atol": f"{atol:.6g}", "known": bool(step) or integer})
    return out


def render(name: str, data: Dict[str, Any]) -> str:
    """One template under matrix/templates, not autoescaped (Markdown and Python, not HTML)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, Undefined

    # Python templates fail on any missing value; Markdown ones read optional record fields as empty.
    strict = name.endswith(".py.j2")
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=False,
                      undefined=StrictUndefined if strict else Undefined, finalize=clean,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(code=md_code, md=md_cell, fence=md_fence, line=one_line)
    return env.get_template(name).render(**data)


def one_line(value: Any) -> str:
    """Text for one line of an indented code block: nothing can end the block early."""
    return clean(str(value)).replace("\r", " ").replace("\n", " ")


def first_line(text: str) -> str:
    lines = [x.strip() for x in (text or "").strip().splitlines() if x.strip()]
    return lines[0] if lines else ""


def _lines(text: str, limit: int) -> List[str]:
    lines = (text or "").rstrip().splitlines()
    return lines if len(lines) <= limit else lines[:limit] + [f"... ({len(lines) - limit} more lines in log.txt)"]


def _steps(value: Optional[float]) -> str:
    if value is None:
        return "n/a"
    return "inf" if math.isinf(value) else f"{value:.3g}"


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _same(a: Cell, b: Cell) -> bool:
    return (a.bundle, a.engine, a.engine_version, a.setting, a.run.get("source")) == \
        (b.bundle, b.engine, b.engine_version, b.setting, b.run.get("source"))
