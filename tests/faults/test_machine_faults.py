"""Nothing about the machine is published: its host name and its own paths stay out of cells, reports, bug bundles
and the committed observations.

The machine is given a distinctive host name (a sitecustomize that answers platform.node() and
socket.gethostname() with a canary) for a real run of ONNX Runtime, its reports and a bug bundle; every file they
wrote is searched for it.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from generators.write import write_all

REPO = Path(__file__).resolve().parents[2]
OBSERVED = REPO / "reports" / "observed"
CANARY = "qdq-canary-host-5c1e"
BUNDLE = "grouped_conv/cpg=3+weights=per_channel+activation=int8+output_qdq=yes+epilogue=none"
PARAMS = {"cpg": [3], "weights": ["per_channel"], "activation": ["int8"], "output_qdq": [True], "epilogue": ["none"]}


@pytest.fixture
def renamed(tmp_path: Path) -> dict:
    """An environment whose Python processes all see the canary as this machine's host name."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import platform, socket\n"
        f"platform.node = lambda: {CANARY!r}\n"
        f"socket.gethostname = lambda: {CANARY!r}\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    check = subprocess.run([sys.executable, "-c", "import platform; print(platform.node())"], env=env,
                           capture_output=True, text=True)
    assert check.stdout.strip() == CANARY  # the machine really is named so, for every process started here
    return env


def _written(root: Path, leave_out: Path) -> List[Path]:
    return [p for p in root.rglob("*") if p.is_file() and leave_out not in p.parents]


@pytest.mark.slow
def test_no_host_name_in_cells_reports_or_bug_bundles(tmp_path: Path, renamed: dict) -> None:
    bundles = tmp_path / "bundles"
    write_all(["grouped_conv"], PARAMS, root=bundles)
    results = tmp_path / "results" / "ort.jsonl"
    ran = subprocess.run([sys.executable, "-m", "engines.run", "--engine", "onnxruntime", "-n", "1", "--bundles",
                          str(bundles), "--results", str(results)], cwd=REPO, capture_output=True, text=True,
                         timeout=300, env=renamed)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    cells = [json.loads(x) for x in results.read_text().splitlines()]
    assert len(cells) == 2 and not any("host" in (c.get("run") or c) for c in cells)  # a header and its cell
    version = cells[1]["engine_version"]
    for args in (["report", "--results", str(results.parent), "--out", str(tmp_path / "reports"), "--bundles",
                  str(bundles)],
                 ["bugs", "--results", str(results.parent), "--bundles", str(bundles), "--out",
                  str(tmp_path / "bug-bundles"), "--cell", BUNDLE, "--engine", "onnxruntime", "--version", version,
                  "--zip"]):
        done = subprocess.run([sys.executable, "-m", "matrix", *args], cwd=REPO, capture_output=True, text=True,
                              timeout=300, env=renamed)
        assert done.returncode == 0, done.stdout + done.stderr
    written = _written(tmp_path, tmp_path / "site")
    assert any(p.name == "matrix.html" for p in written) and any(p.name == "ISSUE.md" for p in written)
    assert any(p.parent.name == "cells" for p in written)
    leaks = [str(p) for p in written if CANARY.encode() in p.read_bytes()]
    assert not leaks


def test_an_unusable_models_report_keeps_no_machine_path(tmp_path: Path, renamed: dict) -> None:
    """`python -m check MODEL --inputs /abs/path.npz` where the inputs cannot be read: the report says which file
    by its last parts, never by this machine's path."""
    bundles = tmp_path / "bundles"
    write_all(["grouped_conv"], PARAMS, root=bundles)
    model = tmp_path / "mine.onnx"
    model.write_bytes((bundles / BUNDLE / "model.onnx").read_bytes())
    inputs = tmp_path / "private" / "inputs.npz"
    inputs.parent.mkdir()
    inputs.write_text("not an npz file\n")
    reports = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "check", str(model), "--inputs", str(inputs), "--engine",
                           "onnxruntime", "--out", str(tmp_path / "user-bundles"), "--results",
                           str(tmp_path / "results"), "--reports", str(reports)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, env=renamed)
    assert "not a numpy .npz file" in done.stdout, done.stdout + done.stderr
    written = _written(reports, tmp_path / "site")
    assert written
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert str(tmp_path) not in text and os.path.realpath(tmp_path) not in text, (path, text)
        assert "not a numpy .npz file" in text and "private/inputs.npz" in text


def test_the_committed_observations_name_no_host() -> None:
    """tools/migrate-observed.py step 4: no session header and no cell records a host (gzip files included), and the
    manifest records the migration."""
    found = []
    for path in sorted(OBSERVED.rglob("*")):
        if not path.is_file():
            continue
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        if b'"host"' in data:
            found.append(str(path.relative_to(REPO)))
    assert not found
    manifest = json.loads((OBSERVED / "MANIFEST.json").read_text(encoding="utf-8"))
    assert any("host" in m["change"] and m["files"] for m in manifest.get("migrations", []))
