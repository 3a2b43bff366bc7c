"""Committed TensorRT evidence names the layer that computed each node: never an inserted helper beside it."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from cases import get_case
from core.cell import Cell
from core.outcome import outcome
from core.results import read_results
from generators import write

OBSERVED = Path(__file__).resolve().parents[2] / "reports" / "observed"
HELPERS = ("NoOp", "Shuffle", "Reformat", "Constant")
# Q and DQ are computed by reformats and scales; a Concat by the copies TensorRT lists under its own metadata.
NOT_COMPUTE = ("QuantizeLinear", "DequantizeLinear", "Concat")
FILES = sorted(p for p in OBSERVED.rglob("*.jsonl") if re.match(r"(trt|rtx)-", p.name))


@functools.lru_cache(maxsize=None)
def _ops(bundle: str, params: str) -> Dict[str, str]:
    case = get_case(bundle.split("/", 1)[0])
    model = write.build(case, json.loads(params)).model
    return {n.name: n.op_type for n in model.graph.node}


def test_observed_tensorrt_files_are_there():
    assert len(FILES) >= 9 and any("rtx-" in p.name for p in FILES)


def _helper_evidence(path: Path) -> Tuple[List[str], int, List[Cell]]:
    """(compute nodes whose evidence is a helper layer, compute nodes inspected, catalogue cells read) of one file,
    read by core.results under today's schema."""
    found = read_results(path)
    assert found.cells and not found.bad and not found.unreadable, (found.bad, found.unreadable)
    # user models and the conformance bundles come from outside the catalogue: no seeded model to rebuild here
    cells = [s.cell for s in found.cells if not get_case(s.cell.case).external]
    wrong, inspected = [], 0
    for cell in cells:
        ops = _ops(cell.bundle, json.dumps(cell.params, sort_keys=True))
        for node, entry in cell.precision.items():
            if ops.get(node) in NOT_COMPUTE or entry.get("precision") == "unknown":
                continue
            inspected += 1
            kind = entry.get("layer_type") or (re.findall(r"layer '[^']*' (\w+)", entry.get("evidence", "")) or [""])[0]
            if kind in HELPERS:
                wrong.append(f"{cell.bundle} {node} ({ops.get(node)}): {entry['evidence'][:100]}")
    return wrong, inspected, cells


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(OBSERVED)) for p in FILES])
def test_no_compute_node_rests_on_a_helper_layer(path):
    """Every catalogue cell of the file is read; a file with no node evidence is one where no cell got past the
    parser (seeds 019-023 on 8.x) or the builder (seed 032's copy forms), never one the test could not read."""
    wrong, inspected, cells = _helper_evidence(path)
    if not cells:  # a file of external bundles only (the conformance bundles' single operators): no node evidence
        external = [s.cell for s in read_results(path).cells]
        known = [n for c in external for n, e in c.precision.items() if e.get("precision") != "unknown"]
        assert external and not known, f"{path.name}: no catalogue cell read, and external cells with evidence"
        return
    assert inspected or all(outcome(c).failed_stage in ("load", "build") for c in cells), \
        f"{path.name}: no evidence inspected"
    assert not wrong, "\n".join(wrong[:10])


def test_the_helper_layer_rule_inspects_the_committed_evidence():
    """The rule above holds on more than a thousand compute nodes, not on none: a filter that lets nothing through
    checks nothing."""
    assert sum(_helper_evidence(path)[1] for path in FILES) >= 1000


def test_seed_011_names_the_gemm_or_convolution_on_every_8x_version_and_gpu():
    found = 0
    for gpu in ("nvidia-h100", "nvidia-h200"):
        for version in ("8.5.1.7", "8.5.2.2", "8.5.3.1", "8.6.0"):
            for line in (OBSERVED / gpu / f"trt-{version}.jsonl").read_text(encoding="utf-8").splitlines():
                cell = json.loads(line)
                if cell.get("case") != "matmul_per_channel" or cell.get("status") != "pass":
                    continue
                [entry] = cell["precision"].values()  # the MatMul or Gemm: seed 011's one target
                assert entry["layer_type"] in ("CaskConvolution", "CaskGemm", "Gemm", "MatrixMultiply"), entry
                assert not entry["layer"].startswith("reshape_before_"), entry
                found += 1
    assert found == 2 * 4 * 8


def test_every_committed_file_is_in_the_manifest_with_its_digest():
    """A committed file is an observation because reports/observed/MANIFEST.json lists it with its sha256, machine
    and command (nox -s observe), not because its lines say so; nothing committed is missing from it."""
    from matrix import observed

    manifest = observed.load(OBSERVED)
    assert observed.verify(manifest) == []
    assert all(e.machine.strip() and e.command.strip() for e in manifest.entries.values())
    assert sum(p.endswith(".jsonl") for p in manifest.entries) >= 22  # the results files of the GPUs and CPUs
