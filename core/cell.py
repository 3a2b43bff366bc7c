"""The cell record: one reproducer on one engine version on one machine, as written to JSONL."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Dict, List, Optional

from core import numerics
from core.engines import variant_label
from core.words import LEGACY_VERDICTS, STATUSES, VERDICTS

SCHEMA = "qdq-matrix/cell/3"  # its JSON Schema: core/cell.schema.json (core.schema checks every line)
CELL_FAMILY = "qdq-matrix/cell/"
# Only this version is read: tools/migrate-observed.py rewrote the committed files at each schema step (its docstring
# says what each step changed), and a local results file of an older version is run again.
SESSION_SCHEMA = "qdq-matrix/session/2"  # a results file's header line: core/session.schema.json
SESSION_FAMILY = "qdq-matrix/session/"  # what every version of the header's schema starts with
# status: what happened
#   pass     - every stage ran and the outputs match the reference within tolerance
#   fail     - a stage failed (load/build/run) or the outputs do not match (compare)
#   crashed  - the engine took its process down (signal, hang past the timeout)
#   skipped  - the engine is not installed here; `reason` says why
#   not_run  - it cannot run here (for example: no NVIDIA GPU); `reason` says why
#   not_applicable - the engine ran, but this version removed the API the reproducer's documented
#              path needs (TensorRT 11.0 removed INT8 calibration), or cannot read the model (its ONNX IR version or
#              opset is newer than this version reads: ONNX Runtime 1.16.3 on IR 10); `reason` says which
#   built    - parsed and built ahead of time (TensorRT-RTX), but this machine cannot run the plan (no
#              GPU, or one the plan does not target); `reason` says why. Its verdict rests on the parse,
#              the build and the per-node precision; its numerics were not run.
#   harness_error - the suite's own code raised (the runner, the adapter, the judging), not the engine: `reason` is
#              the exception, `log` its traceback. Neither the engine's failure nor a pass; never reused.
#   (the words: core.words.STATUSES)
# Where a results file's cells come from. A closed set: the merge refuses any other source, so that
# a test double's cells (source "test" or "stand-in") can never reach a report.
SOURCES = ("local", "observed")
# verdict: what the status means against the catalogue (cases/verdict.py); every view has words for each of them
#   as documented      - it did what an upstream source (documentation, release notes, an issue or pull request) says
#   as observed before - it did what this project's own earlier run did (a baseline expectation: a file of this
#                        repository and its hardware); a regression baseline, not documentation
#   fixed              - it passed where the documented or earlier observed outcome is a failure (or float)
#   fails against expectation - it failed (or fell back to float) where the documented or earlier observed outcome
#                        is a pass (or INT8); the explanation says which of the two it was. Not "regressed": a
#                        regression is an upgrade's (passes on the older version, fails on the newer: matrix.diff)
#   new failure        - it failed where nothing says it would; undocumented: it passed where nothing says
#   not run, not applicable - the engine did not run it here; the API its documented path needs is gone
#   harness error      - the suite's own code failed on it: nothing is said about the engine
#   no reference       - the engine ran a user's model that the reference cannot run (the model's or its inputs' fault:
#                        empty weights, a 0 dimension, indices out of range): what the engine did is recorded, and
#                        nobody is blamed for it; `reason` says why the reference cannot run it. Never a failure at
#                        parse or build, which produced no output and is judged as any (core.judge.ran_inputs)
#   (the words: core.words.VERDICTS; a verdict an older file stores is read as today's, core.words.LEGACY_VERDICTS:
#   the schema accepts it, a cell never holds it, and every merge judges a cell again in any case)
QUANTIZED_PRECISIONS = numerics.QUANTIZED_PRECISIONS  # the judge ships alone in bug bundles: it holds the list


@dataclass(frozen=True)
class Cell:
    """(case, params, engine, engine version, hardware) and what was observed there."""

    bundle: str  # "<case id>/<param slug>"
    case: str
    params: Dict[str, Any]
    digest: str  # the bundle's digest: which exact model and data ran
    engine: str
    engine_version: str
    hardware: str  # short label: "NVIDIA H200 (sm_90)", "cpu: AMD EPYC ...", "no NVIDIA GPU"
    status: str
    verdict: str
    last_stage: str = ""  # the last stage reached: "", load, build, run, compare (core.outcome: the failed one)
    reason: str = ""  # why skipped / not run / crashed
    error: str = ""  # the engine's error text (first lines)
    # TensorRT family: the ONNX parser's errors as the worker recorded them (desc, code, node_name, node_operator,
    # func, ...), so a report reads the engine's reason from fields, not from the error text
    parser_errors: List[Dict[str, Any]] = field(default_factory=list)
    # A failure's evidence, found where the cell is made (engines.reasons), never parsed back out of `error` by a
    # report: the node the engine's error names ("" where it names none), and the engine's own reason, the first
    # line of its error that says why, not only where ("" where no line does).
    failing_node: str = ""
    engine_reason: str = ""
    # The error's first line with the engine's own source lines and addresses masked ("pass.cpp:1357" ->
    # "pass.cpp"): what two versions' failures are compared by.
    error_line: str = ""
    # What the failure (or the not-run) reads as from every build, version, target and folder: the parser's errors
    # (operator, message, check), else the error's or the reason's first line, with source lines, addresses, folders,
    # build targets and numbers masked (engines.reasons.symptom_of, when the cell is recorded); "" for a cell that
    # worked. The reports group root causes by it and by the signature, never by the text again.
    symptom: str = ""
    signature: str = ""  # the documented error signature it matched, if any
    # That signature as the catalogue declared it when the cell was judged (cases.verdict.signature_fields): its regex,
    # where its text comes from (an upstream thread, or this repository's file for a baseline) and its basis
    # (cases.base.BASES); "" each where none matched. A bug bundle reads them here, never from the catalogue; a cell
    # stored before they were recorded gets them when the merge judges it again.
    signature_pattern: str = ""
    signature_source: str = ""
    signature_basis: str = ""
    warnings: List[str] = field(default_factory=list)  # matched warning signature names
    output_dtypes: Dict[str, str] = field(default_factory=dict)
    network_dtypes: Dict[str, str] = field(default_factory=dict)  # TensorRT: tensor dtypes before build
    max_error_steps: Optional[float] = None  # worst |out - expected| over all outputs, in quantization steps
    tolerance_steps: Optional[float] = None
    # How the outputs were judged and, per output, against the reference: {"measure": "steps" | "network",
    # "min_sqnr_db", "min_cosine" (network) or "tolerance_steps", "outputs": {name: {"sqnr_db", "cosine", "max_abs",
    # "peak", "non_finite"?, "float"?: the same against the float model's outputs, "loss"?: the reference against
    # them, "fragile"?}}} (core.numerics, docs/numerics.md); {} where nothing was compared.
    output_stats: Dict[str, Any] = field(default_factory=dict)
    precision: Dict[str, Dict[str, str]] = field(default_factory=dict)  # node -> {precision, evidence}
    fused: Optional[bool] = None  # every target node ran in INT8
    expectation: Dict[str, Any] = field(default_factory=dict)  # the documented expectation used, if any
    explanation: str = ""  # one readable sentence: why this verdict
    hardware_detail: Dict[str, str] = field(default_factory=dict)  # GPU, compute capability, driver, CUDA
    versions: Dict[str, str] = field(default_factory=dict)  # engine, python, numpy, onnx ...
    options: Dict[str, Any] = field(default_factory=dict)  # build flags, optimization level, ...
    # TensorRT family: the tactic sources the builder was configured with ([] where the build never got that far,
    # and for other engines); the choice between them is the column's (variant `tactics`).
    tactic_sources: List[str] = field(default_factory=list)
    # The engine's own column options that differ from its defaults (core.engines): {} is the
    # engine's default column; {"x64quantprecision": "1"} for ONNX Runtime with that session option.
    variant: Dict[str, str] = field(default_factory=dict)
    # The engine's own layer listing that the per-node evidence was read from, packed so that the evidence
    # can be re-derived later without the engine: {"kind", "encoding": "zlib+base64", "data"}.
    listing: Dict[str, str] = field(default_factory=dict)
    timings: Dict[str, float] = field(default_factory=dict)  # seconds per stage
    log: str = ""  # the engine's log, trimmed
    # TensorRT family, a failure at load or build on a GPU: the same parse and build once more with the logger at
    # VERBOSE (what NVIDIA asks for), packed: {"encoding": "zlib+base64", "data", "bytes": the log's whole size,
    # "kept": the bytes kept, its last 2 MiB}; {} where none was recorded (every cell before it was).
    verbose_log: Dict[str, Any] = field(default_factory=dict)
    # How it ran: date, command, source (local/observed), python, workers, and cell_options, the column's engine
    # options as a JSON object (every option of the engine's descriptor, resolved)
    run: Dict[str, Any] = field(default_factory=dict)
    schema: str = SCHEMA

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"cell status {self.status!r} is not one of {STATUSES}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"cell verdict {self.verdict!r} is not one of {VERDICTS}")

    @property
    def setting(self) -> str:
        """Hardware and option variant: what a column holds fixed besides the engine version."""
        return self.hardware + (f" · {variant_label(self.variant)}" if self.variant else "")

    @property
    def column(self) -> str:
        """The matrix column: engine@version on hardware, with its option variant."""
        return f"{self.engine}@{self.engine_version} [{self.setting}]"

    def as_dict(self) -> Dict[str, Any]:
        """The cell's fields by name, its own values (not copies: a cell's values are plain JSON data, so a reader
        that serialises them needs none, and dataclasses.asdict's deep copy was most of a report's time)."""
        return {name: getattr(self, name) for name in _FIELD_NAMES}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True, default=_jsonable)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Cell":
        """Parse one record; raise ValueError naming what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("a cell record is a JSON object")
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema is {data.get('schema')!r}, expected {SCHEMA!r}")
        unknown = sorted(set(data).difference(_FIELD_NAMES))
        if unknown:
            raise ValueError(f"unknown fields {unknown}")
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise ValueError(f"missing fields {missing}")
        if data.get("verdict") in LEGACY_VERDICTS:
            data = dict(data, verdict=LEGACY_VERDICTS[data["verdict"]])
        return _made({name: data[name] if name in data else _DEFAULTS[name]() for name in _FIELD_NAMES})

    def changed(self, **changes: Any) -> "Cell":
        """The cell with some fields changed, as dataclasses.replace makes it (the other values shared, the status and
        verdict checked), without its pass over every field and __init__'s one frozen assignment per field: a report
        makes one per cell it reads and one per cell it judges again."""
        unknown = set(changes).difference(_FIELD_NAMES)
        if unknown:
            raise TypeError(f"a cell has no fields {sorted(unknown)}")
        return _made(dict(self.__dict__, **changes))



_FIELD_NAMES = tuple(f.name for f in fields(Cell))
_REQUIRED = tuple(f.name for f in fields(Cell) if f.default is MISSING and f.default_factory is MISSING)
# Each optional field's default, as a call that makes it (a fresh list or dict per cell, as __init__ makes them).
_DEFAULTS = {f.name: (f.default_factory if f.default_factory is not MISSING else (lambda d=f.default: d))
             for f in fields(Cell) if f.name not in _REQUIRED}


def _made(values: Dict[str, Any]) -> Cell:
    """A Cell of these values, one per field in field order, checked as __init__ checks it (__post_init__)."""
    cell = object.__new__(Cell)
    object.__setattr__(cell, "__dict__", values)
    cell.__post_init__()
    return cell


def pack_text(text: str) -> Dict[str, str]:
    """A long text kept in a cell, compressed: {"encoding": "zlib+base64", "data"}."""
    return {"encoding": "zlib+base64", "data": base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")}


def unpack_text(packed: Dict[str, Any]) -> str:
    """The text pack_text packed ("" where there is none)."""
    if not packed or packed.get("encoding") != "zlib+base64":
        return ""
    return zlib.decompress(base64.b64decode(packed["data"])).decode("utf-8")


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
