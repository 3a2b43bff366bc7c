"""The report's bug-bundle command, pasted into a shell, names exactly one cell: several GPUs and option variants of one
engine version each hold a cell of the same bundle (issue 40: it lacked --hardware and failed with "3 cells match")."""

from __future__ import annotations

import html
import re
import shlex
from pathlib import Path
from typing import List

from core.cell import Cell
from matrix.__main__ import _parser
from matrix.bugbundle import select
from matrix.merge import build
from tests.matrix.conftest import H200, cell, write_reports

H100 = "NVIDIA H100 80GB HBM3 (sm_90)"
BUNDLE = "grouped_conv/g=2"


def failing(hardware: str, **variant: str) -> Cell:
    """A failing TensorRT 8.6.0 cell of BUNDLE, against its expectation, on this hardware and option variant."""
    return cell(BUNDLE, engine_version="8.6.0", hardware=hardware, variant=variant, status="fail", last_stage="build",
                verdict="fails against expectation", fused=None, error="no implementation")


def page_commands(folder: Path) -> List[str]:
    """Each column's bug-bundle command for BUNDLE as matrix.html's script composes it from its column heading."""
    text = (folder / "matrix.html").read_text(encoding="utf-8")
    assert "`nox -s bugs -- --cell ${bundle} ${col.b}`" in text  # the script's part of the command
    return [f"nox -s bugs -- --cell {BUNDLE} {html.unescape(b)}" for b in re.findall(r' data-b="([^"]*)"', text)]


def test_each_columns_command_selects_its_own_cell_alone(tmp_path: Path) -> None:
    cells = [failing(H100), failing(H200), failing(H200, tactics="tensorrt-only"), failing("cpu: a $HOME `x`")]
    write_reports(build(cells), tmp_path, generated="2026-01-01")
    commands = page_commands(tmp_path)
    assert len(commands) == len(cells)
    chosen = []
    for command in commands:
        words = shlex.split(command)  # as a POSIX shell splits it: the quoted hardware is one word
        assert words[:4] == ["nox", "-s", "bugs", "--"], command
        args = _parser().parse_args(["bugs", *words[4:]])
        chosen.append(select(cells, args.cell, args.engine, args.version, args.hardware, args.variant))
    assert sorted(map(id, chosen)) == sorted(map(id, cells))
    assert commands[chosen.index(cells[1])].endswith(f'--hardware "{H200}" --variant default')
