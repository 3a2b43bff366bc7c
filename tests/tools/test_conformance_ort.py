"""tools/conformance-ort.py: the conformance table's ONNX Runtime entries, made by the cell runner, agree with ONNX
Runtime run directly (no runner, no adapter, no core.numerics) on the same converted models, for every bundle."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
ort = pytest.importorskip("onnxruntime")


def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("qdq_conformance_ort", ROOT / "tools" / "conformance-ort.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.slow
def test_the_tables_onnx_runtime_entries_agree_with_onnx_runtime_run_directly(tmp_path):
    from generators.onnx_node_tests import write_all

    bundles = tmp_path / "bundles"
    written = write_all(bundles)
    results = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "engines.run", "--engine", "onnxruntime", "--only-case",
                           "onnx_node_tests", "--bundles", str(bundles), "--results", str(results / "ort.jsonl"),
                           "--results-dir", str(results), "-n", "0"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    check = tool()
    entries = check.table([results], ort.__version__)
    assert len(entries) == len(written.paths)
    tests = {b.split("/", 1)[1].rsplit("-opset", 1)[0] for b in entries}
    opsets = {int(b.rsplit("-opset", 1)[1]) for b in entries}
    assert len(tests) >= 40 and len(opsets) >= 3
    assert {w for w, _ in entries.values()} >= {"right", "refused"}
    agree, differ = check.compare(bundles, entries, ort)
    assert (agree, differ) == (len(written.paths), [])
    # the check can fail: an entry that says otherwise than ONNX Runtime does is named
    some = sorted(b for b, (w, _) in entries.items() if w == "right")[0]
    _, differ = check.compare(bundles, dict(entries, **{some: ("refused", None)}), ort)
    assert differ == [f"{some}: table says refused, directly right"]


def test_a_model_whose_ir_version_onnx_runtime_cannot_read_is_not_applicable_not_refused(tmp_path):
    """ONNX Runtime's own words for an IR version newer than it reads make the direct word "not applicable", as the
    table says; any other load error stays "refused"."""
    (tmp_path / "case.json").write_text("{}", encoding="utf-8")

    class Refusing:
        def __init__(self, message: str) -> None:
            self.message = message

        def SessionOptions(self):  # noqa: N802 (onnxruntime's name)
            return type("Options", (), {})()

        def InferenceSession(self, *args, **kwargs):  # noqa: N802
            raise RuntimeError(self.message)

    ir = "[ONNXRuntimeError] : 1 : FAIL : Load model failed: Unsupported model IR version: 14, max supported IR " \
         "version: 13"
    assert tool().direct(tmp_path, Refusing(ir))[0] == "not applicable"
    assert tool().direct(tmp_path, Refusing("[ONNXRuntimeError] : 10 : INVALID_GRAPH : bad node"))[0] == "refused"
