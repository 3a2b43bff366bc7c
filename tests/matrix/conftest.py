"""Hand-made cell records for the report plumbing, written to tmp_path only (never under reports/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

import pytest

from core.cell import Cell
from engines.reasons import error_line, failure_evidence
from engines.results import with_symptom

H200 = "NVIDIA H200 (sm_90)"
A100 = "NVIDIA A100 (sm_80)"


def cells_from_report(data: Dict[str, Any], folder: Path) -> List[Cell]:
    """Every cell of a matrix.json whole, read back from the column files it names (folder: the reports folder)."""
    return [Cell.from_dict(json.loads(line)) for column in data["columns"]
            for line in (Path(folder) / column["cells"]).read_text(encoding="utf-8").splitlines() if line]


def write_reports(result: Any, out: Path, generated: Optional[str] = None, node_reports: Iterable[Dict[str, Any]] = (),
                  conformance_manifest: Optional[Dict[str, Any]] = None) -> List[Path]:
    """The reports of a merge in out, as `matrix report` writes them (in one process): its view built once, then
    written."""
    from matrix.render import write_cells, write_diffs, write_pages
    from matrix.view import build_view

    view = build_view(result, generated, Path(out), list(node_reports), conformance_manifest)
    write_cells(result, Path(out))
    write_diffs(view["upgrade"], Path(out))
    return write_pages(result, view, Path(out))


def cell(bundle: str = "q_output_type/out=uint8", **fields: Any) -> Cell:
    """A plausible cell; any field can be overridden. A failure's evidence fields come from its error, as where a
    cell is made (engines.reasons), and its symptom as where it is recorded (engines.results), unless given."""
    case, slug = bundle.split("/", 1)
    base: Dict[str, Any] = dict(
        bundle=bundle, case=case, params={"out": slug.split("=", 1)[-1]}, digest="d" * 16, engine="tensorrt",
        engine_version="10.3.0", hardware=H200, status="pass", verdict="as documented", last_stage="compare",
        explanation="passes as documented", max_error_steps=0.0, tolerance_steps=1.0,
        precision={"node_of_y": {"precision": "int8", "evidence": "layer runs Int8"}}, fused=True,
        expectation={"outcome": "int8", "versions": ">=10", "source": "https://github.com/NVIDIA/TensorRT/issues/3844"},
        run={"date": "2026-01-01T00:00:00Z", "source": "local"},
    )
    base.update(fields)
    error = str(base.get("error") or "")
    base.setdefault("error_line", error_line(error))
    if base["status"] in ("fail", "crashed") and "failing_node" not in fields:
        base["failing_node"], base["engine_reason"] = failure_evidence(error, base.get("parser_errors") or [])
    made = Cell(**base)
    return made if "symptom" in fields else with_symptom(made)


def header(engine: str = "tensorrt", version: str = "10.3.0", hardware: str = H200, source: str = "local",
           date: str = "2026-01-01T00:00:00Z") -> Dict[str, Any]:
    """A session header line as the pytest plugin writes it."""
    return {"schema": "qdq-matrix/session/2", "kind": "session", "engine": engine, "engine_version": version,
            "hardware": hardware, "hardware_detail": {}, "date": date, "host": "test", "command": "pytest",
            "source": source}


@pytest.fixture
def make_cell() -> Callable[..., Cell]:
    return cell


@pytest.fixture
def write_results(tmp_path: Path) -> Callable[..., Path]:
    """Write cells (and an optional header) as one JSONL results file under tmp_path."""

    def write(name: str, cells: Iterable[Cell], head: Optional[Dict[str, Any]] = None, tail: str = "") -> Path:
        path = tmp_path / "results" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ([json.dumps(head)] if head else []) + [c.to_json() for c in cells]
        path.write_text("".join(line + "\n" for line in lines) + tail, encoding="utf-8")
        return path

    return write


@pytest.fixture
def make_header() -> Callable[..., Dict[str, Any]]:
    return header
