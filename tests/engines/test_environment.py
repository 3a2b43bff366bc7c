"""A cell whose engine was removed or reinstalled under the run is not run: environment broken."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import pytest

from cases import get_case
from engines import environment
from engines.base import EngineInfo, Observation
from engines.cells import run_cell
from engines.results import REUSABLE
from generators.bundle import load_bundle
from generators.write import write_bundle

ORT = EngineInfo("onnxruntime", "1.31.1", "cpu: x (avx512_vnni)", True)
RUN = {"date": "2026-11-24T00:00:00Z", "source": "local"}


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A module installed in a folder on sys.path, as a wheel would put it."""
    (tmp_path / "qdq_engine_x").mkdir()
    (tmp_path / "qdq_engine_x" / "__init__.py").write_text("VERSION = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "qdq_engine_x" / "__init__.py"
    sys.modules.pop("qdq_engine_x", None)


def test_a_reinstalled_or_removed_module_is_noticed(package):
    probed = environment.installation("qdq_engine_x")
    assert probed and environment.broken("qdq_engine_x", probed) == ""
    fresh = package.with_name("__init__.new")
    fresh.write_text("VERSION = 1\n")  # same bytes, a new file: what uv sync or a rebuilt venv leaves
    os.replace(fresh, package)
    assert "was reinstalled under the running cells" in environment.broken("qdq_engine_x", probed)
    package.unlink()
    assert "was removed from this environment" in environment.broken("qdq_engine_x", probed)


class _Frontendless:
    """OpenVINO's failure when its frontends vanished mid-run, as the issue saw it."""

    name = "onnxruntime"

    def run(self, bundle):
        return Observation(stage="", error="Unable to read the model: model.onnx Please check that model format: "
                                           "onnx is supported and the model is correct. Available frontends:")


def test_a_failed_cell_on_a_changed_engine_is_not_run_never_a_verdict(tmp_path, monkeypatch):
    case = get_case("q_output_type")
    bundle = load_bundle(write_bundle(case, {"variant": "q_dq_chain", "activation": "int8", "plugin": "none"},
                                      tmp_path).path)
    probed = replace(ORT, installation="…/onnxruntime/__init__.py dev 1 inode 1 mtime 1")
    monkeypatch.setattr(environment, "installation", lambda module: "")  # the files are gone
    cell = run_cell(case, bundle, _Frontendless(), probed, RUN)
    assert (cell.status, cell.verdict) == ("not_run", "not run") and cell.status not in REUSABLE
    assert cell.reason.startswith("environment broken: onnxruntime was removed")
    assert "Available frontends" in cell.error  # what the engine said is kept, as evidence
    monkeypatch.setattr(environment, "installation", lambda module: probed.installation)
    same = run_cell(case, bundle, _Frontendless(), probed, RUN)
    assert same.status == "fail"  # the same install failing is the engine's own failure: a verdict
