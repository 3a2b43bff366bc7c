"""Hostile and careless input to python -m check: links out of the model's folder, numbers that are not numbers,
models that would overwrite each other's bundle, cells and report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import onnx
import pytest

from check.__main__ import main
from tests.check.models import qdq_conv


def _out(root: Path) -> list:
    return ["--out", str(root / "b"), "--results", str(root / "r"), "--reports", str(root / "rep"),
            "--engine", "onnxruntime"]


def _with_external_data(folder: Path, name: str = "ext") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model = onnx.load(str(qdq_conv(folder / "plain.onnx")))
    onnx.save(model, str(folder / f"{name}.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location=f"{name}.data", size_threshold=0)
    (folder / "plain.onnx").unlink()
    return folder / f"{name}.onnx"


@pytest.mark.parametrize("target", ["/etc/passwd", "outside"])
def test_an_external_data_file_linked_out_of_the_models_folder_is_refused(target, tmp_path, capsys):
    model = _with_external_data(tmp_path / "m")
    data = model.parent / "ext.data"
    if target == "outside":  # a real weights file, one folder up: still not beside the model
        target = str(tmp_path / "ext.data")
        os.replace(data, target)
    else:
        data.unlink()
    data.symlink_to(target)
    status = main([str(model), *_out(tmp_path)])
    printed = capsys.readouterr().out
    assert status == 4, "this model cannot be used; a folder's other models would still run"
    assert "external data file 'ext.data' is a link to a file outside the model's folder; refused" in printed
    assert not list((tmp_path / "b").rglob("ext.data")), "nothing was copied into a bundle"
    assert not (tmp_path / "r").exists(), "no engine ran"


def test_a_link_inside_the_models_folder_is_a_regular_file_beside_it(tmp_path, capsys):
    model = _with_external_data(tmp_path / "m")
    os.replace(model.parent / "ext.data", model.parent / "weights.bin")
    (model.parent / "ext.data").symlink_to("weights.bin")
    assert main([str(model), *_out(tmp_path)]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("flag, value", [("--tolerance", v) for v in ("nan", "inf", "-inf", "-5", "0", "x")]
                         + [("--seed", v) for v in ("-5", "1.5", "x")])
def test_numeric_flags_that_are_not_finite_positive_numbers_exit_2(flag, value, tmp_path, capsys):
    model = qdq_conv(tmp_path / "conv.onnx")
    with pytest.raises(SystemExit) as stopped:
        main([str(model), f"{flag}={value}", *_out(tmp_path)])
    assert stopped.value.code == 2
    assert flag in capsys.readouterr().err and not (tmp_path / "b").exists()


@pytest.mark.slow
def test_models_of_one_name_or_one_slug_never_overwrite_each_other(tmp_path, capsys):
    """A/model.onnx and B/model.onnx differ; `net ü.onnx` and `net ö.onnx` are the same bytes under two names:
    four bundles, four cell sets, four reports; the same file checked again keeps its id."""
    for folder in ("A", "B", "C"):
        (tmp_path / folder).mkdir()
    a = qdq_conv(tmp_path / "A" / "model.onnx")
    b = qdq_conv(tmp_path / "B" / "model.onnx", unnamed=False)
    u = qdq_conv(tmp_path / "C" / "net ü.onnx")
    o = tmp_path / "C" / "net ö.onnx"
    o.write_bytes(u.read_bytes())
    for models in ([a], [b], [u, o]):  # A and B one after the other, as in the report; ü and ö in one run
        assert main([*map(str, models), *_out(tmp_path)]) == 0
    capsys.readouterr()
    bundles = sorted(p.name for p in (tmp_path / "b" / "user_model").iterdir() if not p.name.startswith("."))
    assert len(bundles) == 4 and len({n.rsplit("-", 1)[0] for n in bundles}) == 2  # model-<id> and net_-<id>
    assert len(list((tmp_path / "rep").glob("*.json"))) == 4
    cells = [json.loads(line)["bundle"] for f in (tmp_path / "r").rglob("*.jsonl")
             for line in f.read_text().splitlines()
             if '"kind": "session"' not in line]
    assert sorted(cells) == sorted(f"user_model/{n}" for n in bundles), "one cell per model, none replaced"
    models = {json.loads(p.read_text())["model"] for p in (tmp_path / "rep").glob("*.json")}
    assert models == {"model.onnx", "net ü.onnx", "net ö.onnx"}
    assert main([str(a), "--prepare-only", *_out(tmp_path)]) == 0
    again = sorted(p.name for p in (tmp_path / "b" / "user_model").iterdir() if not p.name.startswith("."))
    assert again == bundles, "the same model keeps its id across runs"
