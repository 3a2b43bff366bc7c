"""A TensorRT-family cell's packed texts: its layer listing (the per-node evidence, derived again later without a GPU:
engines.tensorrt.rederive) and its verbose build log.
"""

from __future__ import annotations

import base64
import zlib
from pathlib import Path
from typing import Any, Dict

from core.cell import pack_text


def pack_listing(kind: str, text: str) -> Dict[str, str]:
    """A layer listing kept with its cell, compressed: the evidence can be re-derived later without a GPU."""
    data = base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    return {"kind": kind, "encoding": "zlib+base64", "data": data}


def verbose_record(said: Dict[str, Any]) -> Dict[str, Any]:
    """The worker's verbose build log as a cell keeps it (core.cell: packed text, its size and what was kept); {} where
    the file is gone."""
    try:
        text = Path(said["file"]).read_text(encoding="utf-8", errors="replace")
    except (OSError, KeyError):
        return {}
    return dict(pack_text(text), bytes=int(said.get("bytes", 0)), kept=int(said.get("kept", 0)))


def unpack_listing(listing: Dict[str, str]) -> str:
    """The text of a listing packed by pack_listing ("" where there is none)."""
    if not listing or listing.get("encoding") != "zlib+base64":
        return ""
    return zlib.decompress(base64.b64decode(listing["data"])).decode("utf-8")
