"""Bug bundles for everything: a user model's failing cell gets one, and a committed user-model cell
whose bundle is not here needs the model, which is no failure."""

from __future__ import annotations

from pathlib import Path

import pytest

import matrix.__main__ as matrix_cli
from check.__main__ import main as check
from generators.__main__ import main as generators
from tests.check.models import float_convnet, quantize_static

REPO = Path(__file__).resolve().parents[2]
H200_CHECK = REPO / "reports" / "observed" / "nvidia-h200" / "check"


def test_a_committed_user_model_without_its_bundle_needs_the_model(tmp_path, capsys):
    out = tmp_path / "bug-bundles"
    code = matrix_cli.main(["bugs", "--results", str(H200_CHECK), "--bundles", str(tmp_path / "none"),
                            "--user-bundles", str(tmp_path / "none"), "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "needs the model: user_model/ort_resnet_u8_per_tensor (2 failing cells: tensorrt 8.5.3.1, tensorrt " \
           "8.6.0)" in printed.out
    assert "refused" not in printed.err and "python -m generators" not in printed.out + printed.err
    assert "python -m check MODEL.onnx" in printed.out and not out.exists()


def test_the_generator_refuses_a_user_model_case_with_the_command_that_makes_it(capsys):
    assert generators(["write", "--case", "user_model"]) == 2
    assert "python -m check MODEL.onnx" in capsys.readouterr().err


def test_a_failing_check_cell_gets_a_bug_bundle(tmp_path, capsys, monkeypatch):
    """onnxruntime's default quantize_static puts an INT32 bias behind a DequantizeLinear: TensorRT-RTX's parser
    refuses it, a real failing cell of a user's model, and `python -m check --bug NAME` bundles it."""
    pytest.importorskip("tensorrt_rtx")
    folder = tmp_path / "m"
    folder.mkdir()
    model = quantize_static(float_convnet(folder / "float.onnx", blocks=1), folder / "int32_bias.onnx")
    args = ["--out", str(tmp_path / "b"), "--results", str(tmp_path / "r"), "--reports", str(tmp_path / "rep")]
    assert check([str(model), "--engine", "tensorrt-rtx", *args]) == 1
    capsys.readouterr()
    monkeypatch.setattr(matrix_cli, "REPO", tmp_path)  # bug-bundles/ beside the test's files, not the repository's
    assert check(["--bug", "int32_bias", *args]) == 0
    printed = capsys.readouterr().out
    [issue] = (tmp_path / "bug-bundles").glob("tensorrt-rtx_*/user_model__int32_bias*/ISSUE.md")
    for name in ("model.onnx", "inputs.npz", "expected.npz", "repro.py", "cell.json"):
        assert (issue.parent / name).is_file(), name
    assert "1 bug bundle written" in printed and "(fail, as observed before)" in printed  # the lint predicted it
    assert check(["--bug", "no_such_model", *args]) == 2
    assert "user models with cells: user_model/int32_bias-" in capsys.readouterr().err
