"""check.reduce: bisection over Q/DQ-whole units, its run count, a real ONNX Runtime failure, and the bug bundle."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from check.reduce import ReduceError, bug_bundle, main, reduce_model, units
from core.words import first_line, mask_numbers


def ort_session_oracle(path: Path) -> str:
    """An oracle of ONNX Runtime alone (CPU): the first line of session creation's error, numbers masked, or ""."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # ONNX Runtime raises its own Fail/NotImplemented types
        return "load fails: " + mask_numbers(first_line(str(e)).replace(str(path), "<path>"))
    return ""


def _save(nodes, inits, path: Path, shape=(1, 4, 4, 4), extra_opsets=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), *extra_opsets])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _relu_chain(path: Path, n: int) -> Path:
    names = ["x"] + [f"t{i}" for i in range(n - 1)] + ["y"]
    return _save([helper.make_node("Relu", [names[i]], [names[i + 1]], name=f"n{i}") for i in range(n)], [], path)


def _counting(failing: str):
    calls = []

    def oracle(path: Path) -> str:
        calls.append(path)
        return "boom" if failing in {n.name for n in onnx.load(str(path)).graph.node} else ""

    return oracle, calls


@pytest.mark.parametrize("n,failing", [(64, "n37"), (50, "n0"), (50, "n49"), (7, "n3")])
def test_one_failing_node_is_found_in_about_2_log2_n_runs(tmp_path, n, failing):
    oracle, calls = _counting(failing)
    result = reduce_model(_relu_chain(tmp_path / "m.onnx", n), oracle, tmp_path / "out")
    assert result.nodes == (failing,)
    assert result.runs == len(calls) <= 2 * math.ceil(math.log2(n)) + 1 == result.budget
    assert (tmp_path / "out" / "reduced.onnx").is_file() and (tmp_path / "out" / "reduction.json").is_file()


def _qdq_chain(path: Path) -> Path:
    """Relu x4 -> Q -> DQ -> Conv(DQ weights) -> Relu x4."""
    inits = [numpy_helper.from_array(np.float32(0.05), "s"), numpy_helper.from_array(np.int8(0), "z"),
             numpy_helper.from_array(np.ones((4, 4, 1, 1), np.int8), "w")]
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"a{i}"], [f"a{i + 1}"], name=f"pre{i}") for i in range(4)]
    nodes += [helper.make_node("QuantizeLinear", ["a4", "s", "z"], ["q"], name="q"),
              helper.make_node("DequantizeLinear", ["q", "s", "z"], ["dq"], name="dq"),
              helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wd"], name="dq_w"),
              helper.make_node("Conv", ["dq", "wd"], ["b0"], name="conv", kernel_shape=[1, 1])]
    nodes += [helper.make_node("Relu", [f"b{i}"], ["y" if i == 3 else f"b{i + 1}"], name=f"post{i}") for i in range(4)]
    return _save(nodes, inits, path)


def test_q_dq_pairs_and_weight_dequantize_stay_whole(tmp_path):
    model = onnx.load(str(_qdq_chain(tmp_path / "m.onnx")))
    names = [n.name for n in model.graph.node]
    grouped = [{names[i] for i in u} for u in units(model)]
    assert {"q", "dq"} in grouped and {"dq_w", "conv"} in grouped
    oracle, _ = _counting("dq")
    assert set(reduce_model(tmp_path / "m.onnx", oracle, tmp_path / "out").nodes) == {"q", "dq"}
    oracle, _ = _counting("conv")
    assert set(reduce_model(tmp_path / "m.onnx", oracle, tmp_path / "out2").nodes) == {"dq_w", "conv"}


def _plugin_chain(path: Path, before: int = 20, after: int = 20) -> Path:
    """A 45-node float chain around a custom op (a TensorRT plugin) that ONNX Runtime has no kernel for."""
    inits = [numpy_helper.from_array(np.float32(1.01), "k")]
    nodes = [helper.make_node("Mul", ["x" if i == 0 else f"a{i}", "k"], [f"a{i + 1}"], name=f"pre{i}")
             for i in range(before)]
    nodes.append(helper.make_node("Int8Identity", [f"a{before}"], ["b0"], name="plugin", domain="qdq_matrix"))
    nodes += [helper.make_node("Mul", [f"b{i}", "k"], ["y" if i == after - 1 else f"b{i + 1}"], name=f"post{i}")
              for i in range(after)]
    return _save(nodes, inits, path, extra_opsets=[helper.make_opsetid("qdq_matrix", 1)])


def test_a_real_onnxruntime_failure_reduces_to_the_node_it_refuses(tmp_path):
    result = reduce_model(_plugin_chain(tmp_path / "m.onnx"), ort_session_oracle, tmp_path / "out")
    assert result.nodes == ("plugin",)
    assert "Int8Identity(-N)" in result.signature  # numbers are masked, the op's own name kept ...
    assert "is not a registered function/op" in result.signature  # ... and the message
    assert result.runs <= result.budget


def test_a_model_that_does_not_show_the_signature_is_refused(tmp_path):
    with pytest.raises(ReduceError, match="nothing to reduce"):
        reduce_model(_relu_chain(tmp_path / "m.onnx", 5), ort_session_oracle, tmp_path / "out")


def test_the_reduced_model_becomes_a_bug_bundle_through_matrix_bugbundle(tmp_path):
    oracle, _ = _counting("conv")
    result = reduce_model(_qdq_chain(tmp_path / "m.onnx"), oracle, tmp_path / "out")
    folder = bug_bundle(Path(result.model), "onnxruntime", tmp_path / "out")
    for name in ("repro.py", "ISSUE.md", "model.onnx", "inputs.npz", "expected.npz", "log.txt"):
        assert (folder / name).is_file(), name
    assert "onnxruntime" in (folder / "repro.py").read_text()


def test_cli_refuses_bad_input(tmp_path, capsys):
    assert main([str(tmp_path / "missing.onnx"), "--engine", "onnxruntime", "--out", str(tmp_path / "o")]) == 2
    model = _relu_chain(tmp_path / "m.onnx", 3)
    assert main([str(model), "--engine", "nosuchengine", "--out", str(tmp_path / "o")]) == 2
    assert "unknown engine" in capsys.readouterr().err



def test_a_real_tensorrt_rtx_parse_failure_reduces_on_a_machine_without_a_gpu(tmp_path, capsys):
    """TensorRT-RTX parses and builds with no GPU, so it can be a reduction's oracle on any machine."""
    pytest.importorskip("tensorrt_rtx")
    from tests.check.models import float_convnet, quantize_static

    model = quantize_static(float_convnet(tmp_path / "float.onnx", blocks=2), tmp_path / "int32_bias.onnx",
                            symmetric=True)  # quantize_static's default INT32 bias through DequantizeLinear
    assert main([str(model), "--engine", "tensorrt-rtx", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "showing " in printed and "bug bundle:" in printed, printed
    reduced = onnx.load(str(next((tmp_path / "out").glob("reduced*.onnx"))))
    ops = [n.op_type for n in reduced.graph.node]
    assert "DequantizeLinear" in ops and len(ops) < len(onnx.load(str(model)).graph.node)


def test_a_signature_pattern_is_a_field_and_a_signature_is_only_itself(tmp_path):
    """What a reduction keeps is a signature, or a regular expression given as its own argument: a signature that
    reads like a pattern ("re:...") is text to match exactly, never parsed back into one."""
    def oracle(path: Path) -> str:
        names = {n.name for n in onnx.load(str(path)).graph.node}
        return f"fail at build: no implementation for n{len(names)}" if "n5" in names else ""

    result = reduce_model(_relu_chain(tmp_path / "m.onnx", 9), oracle, tmp_path / "out",
                          pattern=r"no implementation for n\d+")
    assert result.nodes == ("n5",) and result.pattern == r"no implementation for n\d+"
    assert result.signature == "fail at build: no implementation for n9"  # what the full model showed
    with pytest.raises(ReduceError, match="does not show the signature 're:no implementation'"):
        reduce_model(tmp_path / "m.onnx", oracle, tmp_path / "out2", signature="re:no implementation")
