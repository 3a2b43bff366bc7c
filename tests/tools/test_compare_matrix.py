"""tools/compare-matrix.py: two user models under one bundle id in one column are two cells, compared as a set."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "compare-matrix.py"


def report(folder: Path, statuses) -> Path:
    folder.mkdir()
    columns = [{"id": "tensorrt@8.6.0 [H100] (observed)", "cells": "cells/none.jsonl"}]
    cells = [{"bundle": "user_model/reduced", "column": 0, "status": s, "verdict": "undocumented", "fused": None}
             for s in statuses]
    path = folder / "matrix.json"
    path.write_text(json.dumps({"columns": columns, "cells": cells}), encoding="utf-8")
    return path


def compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), str(a), str(b)], capture_output=True, text=True, check=False)


def test_two_models_of_one_bundle_id_are_both_counted_and_compared(tmp_path):
    a = report(tmp_path / "a", ["pass", "fail"])
    same = compare(a, report(tmp_path / "b", ["fail", "pass"]))  # the other order: the same cells
    assert same.returncode == 0 and same.stdout.startswith("2 cells in"), same.stdout
    other = compare(a, report(tmp_path / "c", ["pass", "pass"]))  # the second model changed
    assert other.returncode == 1 and "1 differ" in other.stdout, other.stdout


def test_the_differences_are_split_into_each_side_only_and_changed(tmp_path):
    a = report(tmp_path / "a", ["pass"])
    b = tmp_path / "b"
    b.mkdir()
    columns = [{"id": "tensorrt@8.6.0 [H100] (observed)", "cells": "cells/none.jsonl"}]
    cells = [{"bundle": "user_model/reduced", "column": 0, "status": "fail", "verdict": "undocumented", "fused": None},
             {"bundle": "case/new", "column": 0, "status": "pass", "verdict": "undocumented", "fused": None}]
    (b / "matrix.json").write_text(json.dumps({"columns": columns, "cells": cells}), encoding="utf-8")
    done = compare(a, b / "matrix.json")
    assert done.returncode == 1
    assert "; 2 differ: 0 only in the first, 1 only in the second, 1 changed (" in done.stdout, done.stdout
    back = compare(b / "matrix.json", a)
    assert "; 2 differ: 1 only in the first, 0 only in the second, 1 changed (" in back.stdout, back.stdout
