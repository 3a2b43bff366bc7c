"""A failure's evidence, found once where the cell is made: the node the engine's error names and the engine's own
reason, from the parser's structured errors where the engine gives them, else from its error text.

The engines' message formats are known here, beside the adapters that produce them, and nowhere else: the reports
read the cell's `failing_node` and `engine_reason` fields and never parse an error again. Standard library only.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence, Tuple

from core.words import FAILED, WORKED, mask_numbers

# The TensorRT ONNX parser names the node it refused: "Invalid Node - <name>" in its description, or, where the
# parser error has node fields, the worker's "[node <name> (<op>), <function>]" suffix (engines/tensorrt/build.py).
_INVALID_NODE = re.compile(r"Invalid Node - (\S+)")
_NODE_SUFFIX = re.compile(r"\[node (\S+)(?: \(([^()]*)\))?(?:, ([^\]]*))?\]")
# An op checker's bare verdict ("false" in checkDynamicQuantizeLinear): the reason names the op and the checker.
_BARE = re.compile(r"^(?:false|true)$")
# Prefixes the TensorRT worker puts before the engine's own words (build.py, execute.py).
_WORKER_PREFIX = re.compile(r"^(?:ONNX parse failed|build_serialized_network returned None|"
                            r"deserialize_cuda_engine returned None)(?::\s*|$)")
# Lines of an engine's error that say where, or what the machine lacks, never why: the TensorRT parser's own trail
# ("While parsing node ...", "--- Begin node ---"), the CUDA runtime's complaint that TensorRT-RTX appends to every
# error on a machine without a GPU ("Error Code 1: Cuda Runtime (... CUDA driver version is insufficient ...)"), and
# OpenVINO's trail: its source lines ("Exception from <file>:<line>:"), the checks that failed there ("Check 'false'
# failed at <file>:<line>:"), the frontend's categories ("FrontEnd API failed with GeneralFailure:", "Model wasn't
# fully converted. ...", "Loading input model" before the frontend's "Unsupported type") and the graph node it was
# validating.
_NOT_WHY = re.compile(r"^(?:While parsing node|--- (?:Begin|End) node|Node name:|ERROR: ModelImporter)|"
                      r"Error Code 1: Cuda Runtime|^Exception from \S+:\d+:$|^Check '.*' failed at \S+:\d+:$|"
                      r"^FrontEnd API failed with \w+:$|^Errors during ONNX translation:$|"
                      r"^Model wasn't fully converted\.|^Summary:$|^While validating node '.*':$|"
                      r"^Loading input model$")
# OpenVINO names what it could not convert: "-- Conv-23 with a message:" before the message, the ONNX node it was
# validating ("While validating ONNX node '<Node(Conv): y>': Check '...' failed at <file>:<line>:"), and, where no
# message says more, a summary ("-- No conversion rule found for operations: my.domain.FancyOp").
_OV_OPERATION = re.compile(r"^-- (\S+) with a message:$")
_OV_NODE = re.compile(r"^While validating ONNX node '<Node\(([\w.]+)\): ([^>]*)>':(?: Check '.*' failed at \S+:\d+:)?$")
_OV_SUMMARY = re.compile(r"^-- ((?:No conversion rule found for operations|Conversion is failed for): .+)$")
# OpenVINO's CPU plugin names the node a run or compile failed in ("Node y of type ROIAlign"), then says why after
# the check that failed, again naming the node ("ROIAlign node with name 'y' Batch index cannot be less, than -1").
_OV_CPU_NODE = re.compile(r"^Node (\S+) of type (\w+)$")
# A transformation of OpenVINO's plugin that threw on a node: "[AddTransformation] END: node: opset1::Add Add@1
# (<inputs>) -> (<outputs>) CALLBACK HAS THROWN: Check 'index < m_inputs.size()' failed at src/core/src/node.cpp:304:",
# then the check's message on the next line ("index '0' out of range"). Its node names hold dots ("p2o.Mul.0").
_OV_CALLBACK = re.compile(r"^\[(\w+)\] END: node: (\S+) (\S+) \(.*CALLBACK HAS THROWN: (.*)$")
_OV_CHECK = re.compile(r"^Check '(.*)' failed at \S+:\d+:?$")
_OV_CPU_NAMED = re.compile(r"^\w+ node with name '[^']*':?\s*")
# ONNX Runtime's exceptions: "[ONNXRuntimeError] : 10 : INVALID_GRAPH : <message>", a load failure's "Load model from
# <path> failed:", a run failure's "Non-zero status code returned while running Conv node. Name:'y' Status Message:"
# before the message, and a message that starts at a source line and the C++ function there
# ("/onnxruntime_src/.../model.cc:149 onnxruntime::Model::Model(...) Unsupported model IR version: 11, ...").
_ORT_PREFIX = re.compile(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ")
# An exception that carries another: "Exception during initialization: <source> <function> [ONNXRuntimeError] : 1 :
# FAIL : tensorprotoutils.cc:1730 ValidateEmbeddedTensorProtoDataSizeAndShape Initializer 'w': raw_data size (0 bytes)
# ...": the innermost one says why.
_ORT_NESTED = re.compile(r"\[ONNXRuntimeError\] : \d+ : \w+ : ")
_ORT_CATEGORY = re.compile(r"^Exception during initialization:\s*")
_ORT_LOAD = re.compile(r"^Load model from .*? failed:\s*")
_ORT_RUN = re.compile(r"^Non-zero status code returned while running \S+ node\. Name:'[^']*' Status Message: ")
_SOURCE_PREFIX = re.compile(r"^\S*\.(?:cc|cpp|cu|h|hpp):\d+:?\s+"
                            r"(?:(?:\w+::)+\w+\s+|[A-Z][a-z]+(?:[A-Z][a-z0-9]+){2,}\s+|"
                            r"[^()\s][^()]*\((?:[^()]|\([^()]*\))*\)(?: const)?\s+)?")
# Sentences that name a category or a condition, never why: ONNX Runtime's "This is an invalid model." before the
# type error, and its enforce conditions ("utils::IsPrimitiveDataType<T>(dtype_) was false." before the message).
_NOT_A_REASON = re.compile(r"^(?:This is an invalid model|Fatal error)$|\bwas false$")
_LABEL = re.compile(r"^Fatal error:\s*")
# A sentence ends at ". " or where a period runs into the next sentence's capital ("implementations.This may").
_SENTENCE_END = re.compile(r"(?<=[^\s.])\.(?:\s+|(?=[A-Z][a-z]))")
# TensorRT's errors say why in parentheses: "<function>: Error Code 4: API Usage Error (<why>. In <func> at <file>)",
# the why often starting with the node's name.
_TRT_ERROR = re.compile(r"^(?:\S+: )?Error Code \d+: [A-Za-z ]+ \((.*)\)$")
_SOURCE_SUFFIX = re.compile(r"\.?\s+In \w+ at \S+\)?$")
# An engine's own source lines and addresses: 'pass.cpp:1357' and 'pass.cpp:1348' are one message from two builds.
_SOURCE_LINE = re.compile(r"\b([\w./-]+\.(?:cpp|cc|cu|h|hpp)):\d+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
# A symptom (the cell's field that matrix.causes groups failures by): also Python source lines, folders, build targets
# and numbers masked.
_ANY_SOURCE_LINE = re.compile(r"\b([\w./-]+\.(?:cpp|cc|cu|c|h|hpp|py)):\d+")
_PATH = re.compile(r"[^\s'\"()\[\]]*[\\/][^\s'\"()\[\]]*[\\/]")  # two separators or more: a folder
_ARCH = re.compile(r"\b(sm|SM|compute)_?\d+\b")  # a target's compute capability: what a cause spans, not splits it
REASON_LIMIT = 300
# A model newer than the engine version reads, refused at load by ONNX Runtime's model loader: "Unsupported model IR
# version: 10, max supported IR version: 9", and "ONNX Runtime only *guarantees* support for models stamped with
# official released onnx opset versions. Opset 25 is under development ... Current official support for domain ai.onnx
# is till opset 19." (both seen on 1.16.3). The cell is not applicable to that version: the refusal says nothing about
# its quantization. OpenVINO has no such refusal: 2024.6 and 2026.4 read a model of IR version 99 or opset 99; an
# operator version it lacks fails that operator, which stays a failure.
_NEWER_MODEL = (
    (re.compile(r"Unsupported model IR version: (\d+), max supported IR version: (\d+)"),
     "the model's ONNX IR version {0} is newer than this version reads (IR {1} at most)"),
    (re.compile(r"Opset (\d+) is under development.*?support for domain \S+ is till opset (\d+)", re.S),
     "the model's opset {0} is newer than this version reads (opset {1} at most)"),
)


def failure_evidence(error: str, parser_errors: Sequence[Mapping[str, Any]] = ()) -> Tuple[str, str]:
    """(failing node, engine reason) of a failed cell: the node its error names ("" where none), and the first line
    of its error that says why ("" where no line says more than where)."""
    node = failing_node(error) or next((str(e["node_name"]) for e in parser_errors if e.get("node_name")), "")
    return node, reason_line(error, node, parser_errors)


def error_line(error: str) -> str:
    """The error's first line without the engine's own source lines and addresses, so that the same failure from
    two builds of one engine reads the same ("" for no error)."""
    first = error.strip().splitlines()[0] if (error or "").strip() else ""
    return _HEX.sub("0x", _SOURCE_LINE.sub(r"\1", first))


def symptom(text: str) -> str:
    """An error line with the engine's source lines, addresses, folders, build targets and free-standing numbers
    masked, so that one failure reads the same from every build, version and target ("pass.cpp:1357" and
    "pass.cpp:1348" are one message; "conv1" and "INT8" stay names)."""
    text = _ANY_SOURCE_LINE.sub(r"\1", text)
    text = _HEX.sub("0x…", text)
    text = _PATH.sub("…/", text)
    text = _ARCH.sub(r"\1N", text)
    return " ".join(mask_numbers(text).split())


def symptom_of(status: str, error: str, reason: str, parser_errors: Sequence[Mapping[str, Any]] = ()) -> str:
    """A cell's symptom, the field the reports group root causes by: for a failure, the parser's errors as fields
    (operator, masked message, check; node names left out), else its error's first line, else its reason's; for a
    cell that did not run, its reason's first line; masked by symptom(); "" for a cell that worked."""
    if status in WORKED:
        return ""
    if status not in FAILED:
        return symptom(_first_line(reason))
    said = [_parser_symptom(e) for e in parser_errors if isinstance(e, Mapping)]
    return "; ".join(dict.fromkeys(said)) or symptom(_first_line(error) or _first_line(reason))


def _parser_symptom(e: Mapping[str, Any]) -> str:
    """One parser error as a symptom: "<operator>: <message, masked> [<parser function>]", a part it lacks left out."""
    op, func = str(e.get("node_operator") or ""), str(e.get("func") or "")
    return (f"{op}: " if op else "") + symptom(str(e.get("desc", ""))) + (f" [{func}]" if func else "")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if (text or "").strip() else ""


def failing_node(error: str) -> str:
    """The node an engine's error names, "" where it names none (never a guess from the log): TensorRT's parser
    ("Invalid Node - <name>", the worker's "[node <name> ...]"), OpenVINO's frontend ("While validating ONNX node
    '<Node(Conv): <name>>'"), ONNX Runtime ("node with name '<name>'", "(node:'<name>' ...)", "Name:'<name>'",
    "in node (<name>)")."""
    for pattern in _NODE_NAMED:
        found = pattern.search(error or "")
        if found:
            return found.group(1)
    return ""


_NODE_NAMED = (_INVALID_NODE, _NODE_SUFFIX, re.compile(r"While validating ONNX node '<Node\([\w.]+\): ([^>]+)>'"),
               re.compile(r"^Node (\S+) of type \w+$", re.M),
               re.compile(r"node with name '([^']+)'"), re.compile(r"\(node:'([^']+)'"),
               re.compile(r"running \S+ node\. Name:'([^']+)'"), re.compile(r"\bin node \(([^()]+)\)"))


def reason_line(error: str, node: str = "", parser_errors: Sequence[Mapping[str, Any]] = ()) -> str:
    """The engine's own reason for a failure: from the parser's structured errors where the cell has them (each
    error's description, less its "Invalid Node - <node_name>" line and the machine's noise), else from the error
    text; a line that quotes the node says why after "<node>: "."""
    for e in parser_errors:
        named = str(e.get("node_name") or "")
        why = _why(str(e.get("desc") or ""), named if named and not named.startswith("<") else node)
        if _BARE.match(why) and e.get("func"):
            why = _checker(why, str(e.get("node_operator") or ""), str(e["func"]))
        if why:
            return why
    return _why(error, node) or _engine_words(error, node)


def _engine_words(error: str, node: str) -> str:
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


def _why(text: str, node: str) -> str:
    """The first line of text that says why (see reason_line), trimmed to the reason itself: its first sentence that
    names no category or condition. OpenVINO's reason names the operation it was converting ("Conv-23: ...")."""
    where = ""  # OpenVINO: the operation whose message this is
    lines = (text or "").splitlines()
    for k, raw in enumerate(lines):
        line = _ORT_PREFIX.sub("", _WORKER_PREFIX.sub("", raw.strip()))
        callback = _OV_CALLBACK.match(line)
        if callback:
            return _callback_reason(callback, lines[k + 1:])[:REASON_LIMIT]
        operation, validating, summary = _OV_OPERATION.match(line), _OV_NODE.match(line), _OV_SUMMARY.match(line)
        cpu = _OV_CPU_NODE.match(line)
        if operation or validating or cpu:
            op = cpu.group(2) if cpu else (operation or validating).group(1)
            where = where if validating and where.split("-")[0] == op else op
            continue
        if summary:
            return summary.group(1)[:REASON_LIMIT]
        if not line or _NOT_WHY.search(line) or (node and line in (f"Invalid Node - {node}", node)):
            continue
        if line.startswith("Invalid Node - "):
            continue
        wrapped = _TRT_ERROR.match(line)
        line = _SOURCE_SUFFIX.sub("", wrapped.group(1) if wrapped else line).strip()
        suffix = _NODE_SUFFIX.search(line)
        if suffix and suffix.group(1) == node and line[:suffix.start()].strip():
            before = line[:suffix.start()].strip()
            line = _checker(before, suffix.group(2) or "", suffix.group(3) or "") if _BARE.match(before) else before
        elif node and line.startswith(f"{node}: "):
            line = line[len(node) + 2:]
        line = _ORT_CATEGORY.sub("", _ORT_RUN.sub("", _ORT_LOAD.sub("", _innermost(line))))
        why = _first_reason(_OV_CPU_NAMED.sub("", _SOURCE_PREFIX.sub("", line)))
        if why:
            named = f"{where}: {why}" if where and not why.startswith(where.split("-")[0]) else why
            return named[:REASON_LIMIT]
    return ""


def _callback_reason(callback: "re.Match[str]", after: Sequence[str]) -> str:
    """OpenVINO's transformation that threw on a node, in one line: "AddTransformation on opset1::Add Add@1: Check
    'index < m_inputs.size()' failed: index '0' out of range" (the check's message is the next line)."""
    transformation, op, name, thrown = callback.groups()
    check = _OV_CHECK.match(thrown.strip())
    said = f"Check '{check.group(1)}' failed" if check else _SOURCE_LINE.sub(r"\1", thrown.strip()).rstrip(":")
    message = next((x.strip() for x in after if x.strip()), "") if check or thrown.strip().endswith(":") else ""
    return f"{transformation} on {op} {name}: {said}" + (f": {message}" if message else "")


def _innermost(line: str) -> str:
    """An ONNX Runtime error that carries another: the innermost one's words (the line itself where it carries none)."""
    inner = _ORT_NESTED.split(line)[-1].strip()
    return inner or line


def _checker(verdict: str, op: str, func: str) -> str:
    """An op checker's bare verdict with the op and the checker that gave it: "DynamicQuantizeLinear: false
    [checkDynamicQuantizeLinear]"."""
    return (f"{op}: " if op else "") + verdict + (f" [{func}]" if func else "")


def _first_reason(line: str) -> str:
    """A line's first sentence that says why: not a category ("This is an invalid model") or an enforced condition
    ("... was false"); "" where none does."""
    for sentence in _SENTENCE_END.split(line):
        said = _LABEL.sub("", sentence.strip()).strip().rstrip(".").strip()
        if said and not _NOT_A_REASON.search(said):
            return said
    return ""


def newer_model(error: str) -> str:
    """Why a load failure is not applicable to this version (the model's IR version or opset is newer than it reads),
    "" for any other error."""
    for pattern, words in _NEWER_MODEL:
        found = pattern.search(error)
        if found:
            return words.format(*found.groups())
    return ""
