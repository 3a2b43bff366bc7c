"""A failure's evidence, found once where the cell is made: the node the engine's error names and the engine's own
reason, from the parser's structured errors where the engine gives them, else from its error text.

The engines' message formats are known here, beside the adapters that produce them, and nowhere else: the reports
read the cell's `failing_node` and `engine_reason` fields and never parse an error again. Standard library only.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence, Tuple

# The TensorRT ONNX parser names the node it refused: "Invalid Node - <name>" in its description, or, where the
# parser error has node fields, the worker's "[node <name> (<op>), <function>]" suffix (engines/tensorrt/build.py).
_INVALID_NODE = re.compile(r"Invalid Node - (\S+)")
_NODE_SUFFIX = re.compile(r"\[node (\S+)(?: \([^()]*\))?(?:, [^\]]*)?\]")
# Prefixes the TensorRT worker puts before the engine's own words (build.py, execute.py).
_WORKER_PREFIX = re.compile(r"^(?:ONNX parse failed|build_serialized_network returned None|"
                            r"deserialize_cuda_engine returned None)(?::\s*|$)")
# Lines of an engine's error that say where, or what the machine lacks, never why: the parser's own trail
# ("While parsing node ...", "--- Begin node ---"), the CUDA runtime's complaint that TensorRT-RTX appends to every
# error on a machine without a GPU ("Error Code 1: Cuda Runtime (... CUDA driver version is insufficient ...)"), and
# OpenVINO's trail of source lines ("Exception from <file>:<line>:").
_NOT_WHY = re.compile(r"^(?:While parsing node|--- (?:Begin|End) node|Node name:|ERROR: ModelImporter)|"
                      r"Error Code 1: Cuda Runtime|^Exception from \S+:\d+:$")
# TensorRT's errors say why in parentheses: "<function>: Error Code 4: API Usage Error (<why>. In <func> at <file>)",
# the why often starting with the node's name.
_TRT_ERROR = re.compile(r"^(?:\S+: )?Error Code \d+: [A-Za-z ]+ \((.*)\)$")
_SOURCE_SUFFIX = re.compile(r"\.?\s+In \w+ at \S+\)?$")
# An engine's own source lines and addresses: 'pass.cpp:1357' and 'pass.cpp:1348' are one message from two builds.
_SOURCE_LINE = re.compile(r"\b([\w./-]+\.(?:cpp|cc|cu|h|hpp)):\d+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
# A symptom (matrix.causes groups failures by it): also Python source lines, folders, build targets and numbers masked.
_ANY_SOURCE_LINE = re.compile(r"\b([\w./-]+\.(?:cpp|cc|cu|c|h|hpp|py)):\d+")
_PATH = re.compile(r"[^\s'\"()\[\]]*[\\/][^\s'\"()\[\]]*[\\/]")  # two separators or more: a folder
_ARCH = re.compile(r"\b(sm|SM|compute)_?\d+\b")  # a target's compute capability: what a cause spans, not splits it
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")  # a number on its own, not a part of a name
REASON_LIMIT = 300


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
    return " ".join(_NUMBER.sub("N", text).split())


def failing_node(error: str) -> str:
    """The node a TensorRT parser error names, "" where it names none (never a guess from the log)."""
    found = _INVALID_NODE.search(error or "") or _NODE_SUFFIX.search(error or "")
    return found.group(1) if found else ""


def reason_line(error: str, node: str = "", parser_errors: Sequence[Mapping[str, Any]] = ()) -> str:
    """The engine's own reason for a failure: from the parser's structured errors where the cell has them (each
    error's description, less its "Invalid Node - <node_name>" line and the machine's noise), else from the error
    text; a line that quotes the node says why after "<node>: "."""
    for e in parser_errors:
        named = str(e.get("node_name") or "")
        why = _why(str(e.get("desc") or ""), named if named and not named.startswith("<") else node)
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
