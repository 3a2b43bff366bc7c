"""Hostile and careless input to python -m check: links out of the model's folder, numbers that are not numbers,
models that would overwrite each other's bundle, cells and report."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from check.__main__ import main
from tests.check.models import qdq_conv

REPO = Path(__file__).resolve().parents[2]


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


def _bomb(path: Path, side: int = 20000) -> Path:
    """One Conv whose input declares 1x3x<side>x<side> float32: 4.5 GiB of input at 20000, a few bytes of weights."""
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], "bomb",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, side, side])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, side, side])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _limited(gib: int) -> None:
    """In the child, before it runs: an address space of `gib` GiB, so an allocation past it fails at once."""
    resource.setrlimit(resource.RLIMIT_AS, (gib << 30, gib << 30))


def test_a_memory_bomb_beside_a_good_model_is_refused_by_its_size_and_the_good_model_is_checked(tmp_path):
    """A model whose input alone needs 4.5 GiB is refused before any input, reference or engine is made, under an
    address space of 6 GiB that its generated input would overrun (numpy draws it in float64 first); the model beside
    it is checked and reported, and the run says exit status 4."""
    folder = tmp_path / "models"
    folder.mkdir()
    _bomb(folder / "bomb.onnx")
    qdq_conv(folder / "good.onnx")
    env = {**os.environ, "PYTHONPATH": str(REPO), "MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1"}
    env.pop("QDQ_MAX_INPUT_BYTES", None)
    done = subprocess.run([sys.executable, "-m", "check", str(folder), *_out(tmp_path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600, preexec_fn=lambda: _limited(6))
    said = done.stdout + done.stderr
    assert done.returncode == 4, said
    reason = "inputs need 4.47 GiB (x: 1x3x20000x20000 float32), over the 2 GiB budget (--max-input-bytes"
    assert reason in done.stdout, said
    assert "MemoryError" not in said
    reports = {json.loads(p.read_text())["model"]: json.loads(p.read_text()) for p in (tmp_path / "rep").glob("*.json")}
    assert reports["bomb.onnx"]["status"] == "unusable" and reason in reports["bomb.onnx"]["reason"]
    (column,) = reports["good.onnx"]["columns"]
    assert column["status"] == "pass", column
    assert not list((tmp_path / "b").rglob("bomb*")), "no bundle, so no engine worker ever sees the bomb"


@pytest.mark.parametrize("flags, reason", [
    (["--max-model-bytes", "100"], "weights need 121 bytes (w_q: 4x3x3x3 int8, s_x: scalar float32, s_w: scalar "
                                   "float32 and 2 more), over the 100 bytes budget (--max-model-bytes"),
    (["--max-input-bytes", "1000"], "the tensor c: 1x4x8x8 float32 computed from these inputs needs 1 KiB, over the "
                                    "1000 bytes budget (--max-input-bytes or $QDQ_MAX_INPUT_BYTES); its inputs' shapes "
                                    "are fixed, so only a larger --max-input-bytes lets it through"),
    (["--max-input-bytes", "1000", "--shape", "x:1x3x8x8"], "computed from these inputs needs 1 KiB, over the 1000 "
                                                            "bytes budget (--max-input-bytes or $QDQ_MAX_INPUT_BYTES); "
                                                            "give a smaller shape with --shape"),
    (["--max-input-bytes", "700"], "inputs need 768 bytes (x: 1x3x8x8 float32), over the 700 bytes budget"),
    (["--max-input-bytes", "1000", "--shape", "x:1x3x8x8,2x3x8x8,4x3x8x8"],
     "inputs need 1.5 KiB (x: 2x3x8x8 float32)"),
])
def test_the_budgets_are_settable_and_the_reason_says_the_size(flags, reason, tmp_path, capsys):
    """Weights, inputs at the opt shape (--shape's opt counts) and the largest computed tensor each have their line."""
    model = qdq_conv(tmp_path / "conv.onnx", dynamic_batch="--shape" in flags)  # --shape: its batch is open
    assert main([str(model), *flags, *_out(tmp_path)]) == 4
    printed = capsys.readouterr().out
    assert reason in printed, printed
    assert not (tmp_path / "r").exists(), "no engine ran"


def test_an_inputs_file_is_sized_from_its_headers_and_the_environment_sets_the_budget(tmp_path, capsys, monkeypatch):
    model = qdq_conv(tmp_path / "conv.onnx")
    np.savez_compressed(tmp_path / "conv.npz", x=np.zeros((1, 3, 8, 8), np.float32))
    monkeypatch.setenv("QDQ_MAX_INPUT_BYTES", "0.5KiB")
    assert main([str(model), *_out(tmp_path)]) == 4
    printed = capsys.readouterr().out
    assert "the inputs in conv.npz need 768 bytes (x: 1x3x8x8 float32), over the 512 bytes budget" in printed, printed
    monkeypatch.setenv("QDQ_MAX_INPUT_BYTES", "lots")
    assert main([str(model), *_out(tmp_path)]) == 2, "a budget that is not a size is a usage error"
    assert "$QDQ_MAX_INPUT_BYTES: 'lots' is not a size" in capsys.readouterr().err


def _heavy(path: Path, side: int = 12288) -> Path:
    """One MatMul of an int8 weight (side x side, external data) behind a per-channel DequantizeLinear: 151 MB of
    weights whose float values (604 MB) the reference computes when it runs."""
    from onnx import TensorProto, helper, numpy_helper

    weight = (np.arange(side * side, dtype=np.int64) % 251 - 125).astype(np.int8).reshape(side, side)
    inits = [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.full(side, 0.01, np.float32), "s"),
             numpy_helper.from_array(np.zeros(side, np.int8), "z")]
    nodes = [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["w_dq"], name="w_dq", axis=1),
             helper.make_node("MatMul", ["x", "w_dq"], ["y"], name="matmul")]
    graph = helper.make_graph(nodes, "heavy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, side])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, side])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(path), save_as_external_data=True, location=f"{path.stem}.data", size_threshold=1024)
    return path


def test_a_model_whose_preparation_is_over_the_address_space_is_out_of_memory_and_the_next_is_checked(tmp_path):
    """Under an address space of 600 MiB (RLIMIT_AS), a model within the size budget whose reference needs more (its
    weight's float values alone are 604 MB) is "unusable: out of memory", never a crash or a reference that "cannot run
    it"; the model after it in the folder is checked and reported, and the run says exit status 4."""
    folder = tmp_path / "models"
    folder.mkdir()
    _heavy(folder / "a_heavy.onnx")
    qdq_conv(folder / "b_good.onnx")
    env = {**os.environ, "PYTHONPATH": str(REPO), "MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "check", str(folder), *_out(tmp_path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (600 << 20,) * 2))
    said = done.stdout + done.stderr
    assert done.returncode == 4, said
    heavy = next(line for line in done.stdout.splitlines() if line.strip().startswith(str(folder / "a_heavy.onnx")))
    assert "unusable: out of memory while preparing it" in heavy, said
    reports = {json.loads(p.read_text())["model"]: json.loads(p.read_text()) for p in (tmp_path / "rep").glob("*.json")}
    assert reports["a_heavy.onnx"]["status"] == "unusable"
    (column,) = reports["b_good.onnx"]["columns"]
    assert column["status"] == "pass", column


def test_a_model_whose_preparation_crashes_is_unusable_and_the_next_is_checked(tmp_path, monkeypatch, capsys):
    """A segfault while one model's bundle is made (protobuf's or an engine's C++) costs that model: "crashed while
    preparing: SIGSEGV", exit status 4, and the model after it in the folder still gets its bundle."""
    import signal

    import check.bundle

    real = check.bundle.bundle_from_model

    def segfault(model, *args, **kwargs):
        if Path(model).name == "a_crash.onnx":
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(check.bundle, "bundle_from_model", segfault)
    folder = tmp_path / "models"
    folder.mkdir()
    qdq_conv(folder / "a_crash.onnx")
    qdq_conv(folder / "b_good.onnx")
    status = main([str(folder), *_out(tmp_path)[:6], "--prepare-only"])
    said = capsys.readouterr().out
    assert status == 4, said
    assert f"{folder / 'a_crash.onnx'}: unusable: crashed while preparing: SIGSEGV" in said
    assert f"{folder / 'b_good.onnx'}: Q/DQ; bundle ready, no engine run" in said
