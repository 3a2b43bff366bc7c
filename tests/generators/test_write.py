"""Writing bundles: layout, determinism, caching, atomic writes, checker refusals, the ORT cross-check, the CLI."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

import cases
from cases.base import Case
from generators import write
from generators.__main__ import main
from generators.bundle import iter_bundles, load_bundle
from generators.onnx_util import make_model, node, value_info
from generators.reproducer import Reproducer

MINE = ("cases.q_output_type", "cases.instancenorm_int8", "cases.dynamic_quantize")


@pytest.fixture
def my_cases(monkeypatch):
    """The catalogue restricted to seeds 000-002, so these tests do not wait on the other cases."""
    monkeypatch.setattr(cases, "CASE_MODULES", MINE)


def _q_dq():
    from cases.q_output_type import CASE

    return CASE, {"variant": "q_dq_chain", "activation": "int8", "plugin": "none"}


def test_bundle_holds_the_documented_layout(tmp_path):
    case, params = _q_dq()
    bundle = load_bundle(write.write_bundle(case, params, tmp_path).path)
    assert bundle.id == "q_output_type/variant=q_dq_chain+activation=int8+plugin=none"
    meta = bundle.meta
    for key in ("bundle", "case", "seed", "title", "links", "params", "rng_seed", "digest", "generator_version",
                "opset", "ir_version", "target_nodes", "inputs", "outputs", "tolerance_steps", "trt",
                "intentionally_invalid", "checker", "reference", "cross_check"):
        assert key in meta, key
    assert meta["seed"] == "000" and meta["opset"] == 13 and meta["ir_version"] == 8
    assert meta["inputs"] == {"x": {"dtype": "float32", "shape": [1, 4, 2, 2]}}
    assert meta["outputs"]["y"]["step"] == pytest.approx(1 / 32)
    assert meta["checker"] == "passed" and meta["reference"] == "onnx.reference"
    assert meta["cross_check"]["onnxruntime"]["status"] == "agree"
    assert set(bundle.expected()) == {"y"} and set(bundle.inputs()) == {"x"}


def test_digest_covers_model_and_arrays_not_npz_bytes(tmp_path):
    case, params = _q_dq()
    bundle = load_bundle(write.write_bundle(case, params, tmp_path).path)
    recomputed = write.digest(bundle.model_path.read_bytes(), bundle.inputs(), bundle.expected())
    assert recomputed == bundle.meta["digest"]
    changed = {k: v + 1 for k, v in bundle.inputs().items()}
    assert write.digest(bundle.model_path.read_bytes(), changed, bundle.expected()) != recomputed


def test_two_runs_give_identical_models_and_digests(tmp_path, my_cases):
    first = write.write_all(root=tmp_path / "a")
    second = write.write_all(root=tmp_path / "b")
    assert len(first) == len(second) == 19  # q_output_type 10, instancenorm_int8 4, dynamic_quantize 5
    for a, b in zip(first, second):
        assert (a / "model.onnx").read_bytes() == (b / "model.onnx").read_bytes()
        assert load_bundle(a).meta["digest"] == load_bundle(b).meta["digest"]


def test_second_write_reuses_the_bundle(tmp_path):
    case, params = _q_dq()
    seen = []
    write.write_all(["q_output_type"], {"variant": ["q_dq_chain"]}, tmp_path, lambda *a: seen.append(a))
    write.write_all(["q_output_type"], {"variant": ["q_dq_chain"]}, tmp_path, lambda *a: seen.append(a))
    assert [s[3] for s in seen] == ["written", "written", "cached", "cached"]
    assert seen[0][:3] == (1, 2, "q_output_type/variant=q_dq_chain+activation=int8+plugin=none")


def test_stale_cache_key_rebuilds(tmp_path):
    case, params = _q_dq()
    path = write.write_bundle(case, params, tmp_path).path
    meta = json.loads((path / "case.json").read_text())
    meta["cache_key"] = "stale"
    (path / "case.json").write_text(json.dumps(meta))
    assert write.write_bundle(case, params, tmp_path).status == "written"
    assert load_bundle(path).meta["cache_key"] == write.cache_key(case, params)


def test_crash_mid_write_leaves_no_bundle(tmp_path, monkeypatch):
    case, params = _q_dq()

    def crash(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(write.np, "savez", crash)
    with pytest.raises(RuntimeError, match="disk full"):
        write.write_bundle(case, params, tmp_path)
    assert list(iter_bundles(tmp_path)) == []
    assert [p.name for p in (tmp_path / "q_output_type").iterdir()] == [".staging"]
    assert list((tmp_path / "q_output_type" / ".staging").iterdir()) == []


def _duplicate_output_model(params: dict, rng: np.random.Generator) -> Reproducer:
    # Two nodes write the same tensor: the checker refuses the model.
    nodes = [node("Relu", ["x"], ["y"]), node("Neg", ["x"], ["y"])]
    model = make_model("bad", nodes, [value_info("x", np.float32, [2])], [value_info("y", np.float32, [2])])
    invalid = "two nodes write y" if params["marked"] else ""
    return Reproducer(model, {"x": np.ones(2, np.float32)}, (), intentionally_invalid=invalid,
                      reference=lambda inputs: {"y": np.zeros(2, np.float32)})


def _bad_case() -> Case:
    return Case(
        id="bad_model", seed="999", title="refused by the checker", links=(), axes={"marked": (False, True)},
        target_nodes=(), signatures=(), expectations=(), builder=f"{__name__}:_duplicate_output_model",
    )


def test_unmarked_invalid_model_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="bad_model/marked=no: onnx.checker refused"):
        write.write_bundle(_bad_case(), {"marked": False}, tmp_path)


def test_marked_invalid_model_records_the_refusal(tmp_path):
    meta = load_bundle(write.write_bundle(_bad_case(), {"marked": True}, tmp_path).path).meta
    assert meta["checker"].startswith("refused: ")
    assert meta["intentionally_invalid"] == "two nodes write y"


def test_cli_list_prints_ids_and_a_count(my_cases, capsys):
    assert main(["list", "--case", "instancenorm_int8"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "instancenorm_int8/native_instancenorm=no+int8_ranges=none",
        "instancenorm_int8/native_instancenorm=no+int8_ranges=trtexec",
        "instancenorm_int8/native_instancenorm=yes+int8_ranges=none",
        "instancenorm_int8/native_instancenorm=yes+int8_ranges=trtexec",
        "4 bundles",
    ]


def test_cli_param_filters_the_sweep(my_cases, capsys):
    assert main(["list", "--param", "native_instancenorm=yes", "--param", "int8_ranges=none"]) == 0
    assert capsys.readouterr().out.splitlines() == ["instancenorm_int8/native_instancenorm=yes+int8_ranges=none",
                                                    "1 bundles"]


def test_cli_write_reports_progress_and_summary(my_cases, tmp_path, capsys):
    argv = ["write", "--case", "dynamic_quantize", "--param", "variant=dql_alone", "--out", str(tmp_path)]
    assert main(argv) == 0 and main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[1/1] dynamic_quantize/variant=dql_alone written"
    assert lines[2] == "[1/1] dynamic_quantize/variant=dql_alone cached"
    assert lines[3].endswith("0 written, 1 cached")


@pytest.mark.parametrize(
    "argv, named",
    [
        (["list", "--case", "no_such_case"], "no_such_case"),
        (["write", "--case", "q_output_type", "--param", "variant=bogus"], "bogus"),
        (["list", "--param", "cpg=4"], "cpg"),
    ],
)
def test_cli_rejects_unknown_names_with_exit_2(my_cases, capsys, argv, named):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and named in err


def test_a_full_write_prunes_bundles_the_catalogue_no_longer_has(tmp_path, my_cases):
    stale = tmp_path / "instancenorm_int8" / "native_instancenorm=no"
    stale.mkdir(parents=True)
    (stale / "case.json").write_text("{}")
    write.write_all(root=tmp_path)
    assert not stale.exists()
    assert (tmp_path / "instancenorm_int8" / "native_instancenorm=no+int8_ranges=none" / "case.json").is_file()


def test_a_full_write_shares_the_catalogue_with_the_conformance_writers_process(tmp_path, my_cases, monkeypatch,
                                                                                capsys):
    """`write` of the whole catalogue: the process beside it, once the conformance bundles are written, takes catalogue
    bundles from the same list, so that both end together; each bundle is written once and said once, in order."""
    import os
    import time

    from cases import bundle_id
    from generators import __main__ as cli

    main_process, helped, real = os.getpid(), tmp_path / "helped", write.write_bundle
    deadline = time.monotonic() + 30  # the main process waits for the helper's first bundle (it never came, before)

    def write_bundle(case, params, root=None):
        while os.getpid() == main_process and not helped.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        written = real(case, params, root)
        if os.getpid() != main_process:
            with open(helped, "a", encoding="utf-8") as f:
                f.write(bundle_id(case, params) + "\n")
        return written

    monkeypatch.setattr(write, "write_bundle", write_bundle)
    monkeypatch.setattr(cli, "_conformance_main", lambda argv: 0)  # the conformance bundles: not this test's
    assert main(["write", "--out", str(tmp_path / "b")]) == 0
    ids = [bundle_id(c, p) for c, p in write.select()]
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ")[0] for line in lines[:-1]] == [f"[{k}/19]" for k in range(1, 20)]
    assert sorted(line.split(" ")[1] for line in lines[:-1]) == sorted(ids)
    assert lines[-1].endswith(": 19 written, 0 cached")
    assert helped.exists() and set(helped.read_text().split()) < set(ids)
    assert sorted(b.id for b in iter_bundles(tmp_path / "b")) == sorted(ids)


def test_a_builder_error_in_the_process_beside_fails_the_write_with_its_traceback(tmp_path, my_cases, monkeypatch,
                                                                                  capsys):
    import os
    import time

    from generators import __main__ as cli

    main_process, tried, real = os.getpid(), tmp_path / "tried", write.write_bundle
    deadline = time.monotonic() + 30  # the main process waits for the helper's first bundle

    def write_bundle(case, params, root=None):
        if os.getpid() != main_process:
            tried.touch()
            raise RuntimeError("a builder's bug")
        while not tried.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return real(case, params, root)

    monkeypatch.setattr(write, "write_bundle", write_bundle)
    monkeypatch.setattr(cli, "_conformance_main", lambda argv: 0)
    assert main(["write", "--out", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "RuntimeError: a builder's bug" in err


def test_an_edit_to_a_shared_generators_module_rebuilds(tmp_path, monkeypatch):
    """resize_qdq's builder imports qdq_parts: an edit there changes its cache key, and the bundle is rebuilt."""
    import shutil

    from cases.resize_qdq import CASE

    params = next(iter(CASE.variants()))
    copy = tmp_path / "generators"
    shutil.copytree(write.GENERATORS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(write, "GENERATORS", copy)
    write._source_digest.cache_clear()
    before = write.cache_key(CASE, params)
    assert write.write_bundle(CASE, params, tmp_path / "b").status == "written"
    assert write.write_bundle(CASE, params, tmp_path / "b").status == "cached"
    with open(copy / "qdq_parts.py", "a", encoding="utf-8") as f:
        f.write("\n# an edit\n")
    write._source_digest.cache_clear()
    try:
        assert write.cache_key(CASE, params) != before
        assert write.write_bundle(CASE, params, tmp_path / "b").status == "written"
    finally:
        write._source_digest.cache_clear()


def test_cache_key_names_the_onnx_and_numpy_that_built_it(monkeypatch):
    case, params = _q_dq()
    before = write.cache_key(case, params)
    assert set(write.builder_libraries()) >= {"onnx", "numpy"}
    monkeypatch.setattr(write.np, "__version__", "0.0.0-other")
    assert write.cache_key(case, params) != before


def test_an_unwritable_bundle_folder_is_one_line_and_exit_2(tmp_path, capsys, my_cases):
    """A file where the bundle folder should be (root ignores permissions, not file types)."""
    blocked = tmp_path / "bundles"
    blocked.write_text("not a folder\n")
    assert main(["write", "--case", "q_output_type", "--out", str(blocked)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write bundles in ") and "Not a directory" in err and len(err.splitlines()) == 1


def test_an_onnxruntime_that_cannot_load_the_model_is_recorded_as_cannot_run(monkeypatch):
    """ONNX Runtime 1.16 reads IR 9 at most (measured on 1.16.3 with the int4 bundles: "Unsupported model IR version:
    10, max supported IR version: 9"): the cross-check says so; the expected outputs still come from the reference."""
    from cases.int4_blocked_weights import CASE

    message = "Unsupported model IR version: 10, max supported IR version: 9"

    def refuse(*_args, **_kwargs):
        raise RuntimeError(f"[ONNXRuntimeError] : 1 : FAIL : {message}\nmore")

    fake = types.SimpleNamespace(
        __version__="1.16.3", InferenceSession=refuse,
        SessionOptions=lambda: types.SimpleNamespace(add_session_config_entry=lambda key, value: None),
        GraphOptimizationLevel=types.SimpleNamespace(ORT_DISABLE_ALL=0),
    )
    monkeypatch.setitem(sys.modules, "onnxruntime", fake)
    meta = write.render(CASE, next(iter(CASE.variants())))["case.json"]
    check = meta["cross_check"]["onnxruntime"]
    assert check["status"] == "cannot run" and message in check["detail"] and check["version"] == "1.16.3"
    assert meta["reference"] == "onnx.reference"
