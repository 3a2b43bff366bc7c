"""Text from results files made safe for reports: XML-legal characters, no raw HTML and no link in Markdown.

Error texts and engine logs carry terminal colours and raw control characters (TensorRT 8.6's
inspector JSON has some), and ids come from results files anyone can edit. XML 1.0 forbids most
control characters and lone surrogates outright; pytest's junitxml (`bin_xml_escape`) writes them
as visible escapes, and so does this module, after dropping ANSI terminal sequences.
"""

from __future__ import annotations

import re
from typing import Any

# ESC [ ... final byte (CSI: colours, cursor moves), ESC ] ... BEL/ST (OSC: titles, links), ESC + one char.
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# Everything XML 1.0 does not allow (tab, newline and carriage return are allowed), plus DEL and C1 controls.
ILLEGAL = re.compile("[^\u0009\u000a\u000d\u0020-\u007e\u00a0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# "[" and "]": every Markdown link and image needs them ([text](url), [text][ref], ![alt](src), a "[ref]: url" line), so
# a node named "[click](javascript:alert(3))" stays text; the one other link form, <scheme:...>, is the "<" below.
MD_ESCAPES = {"\\": "\\\\", "|": "\\|", "`": "\\`", "[": "\\[", "]": "\\]", "\r": " ", "\n": " "}
# Markdown passes HTML through only where "<" opens a tag, a comment or a declaration, and "&" an entity; every other
# "<", ">" and "&" is plain text (CommonMark, raw HTML and entity references), so ">=8.0,<10.0" stays as it is.
MD_SPECIAL = re.compile("[" + re.escape("".join(MD_ESCAPES)) + "]|<(?=[A-Za-z/!?])|&(?=#?\\w+;)")
_MD_HTML = {"<": "&lt;", "&": "&amp;"}


def clean(value: Any) -> Any:
    """Text without ANSI sequences and with every XML-illegal character as a visible \\xNN/\\uNNNN escape."""
    if not isinstance(value, str):
        return value
    return ILLEGAL.sub(_visible, ANSI.sub("", value))


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def md_cell(value: Any) -> str:
    """Text safe in a Markdown table cell or line, and inside a link's [...]: no raw HTML, no link, no cell break, no
    code span, one line; a "<" or "&" that cannot start HTML stays as it is."""
    return MD_SPECIAL.sub(lambda m: MD_ESCAPES.get(m.group()) or _MD_HTML[m.group()], clean(str(value)))


def md_code(value: Any) -> str:
    """An inline code span that holds any text, backticks included (CommonMark: a longer fence)."""
    text = clean(str(value)).replace("\r", " ").replace("\n", " ")
    fence = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or fence != "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_CODE_SPAN = re.compile(r"(`[^`\n]+`)")


def md_with_code(value: Any) -> str:
    """md_cell, except that a `...` span of the text stays a code span (a command to copy): its inside is literal in
    Markdown, so it can hold no link or HTML either."""
    parts = _CODE_SPAN.split(clean(str(value)))
    return "".join(md_code(p[1:-1]) if i % 2 else md_cell(p) for i, p in enumerate(parts))


def md_fence(text: Any) -> str:
    """A fenced code block's fence, longer than any backtick run inside it (at least three)."""
    return "`" * max(3, _longest_run(clean(str(text)), "`") + 1)


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max((len(r) for r in runs), default=0)
