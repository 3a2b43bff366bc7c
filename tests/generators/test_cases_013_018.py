"""Cases 013-018: float16 scales, INT4 blocked weights and FP8 (opsets 19 and 21), two 2026 threads, the bias Add."""

from __future__ import annotations

import importlib
import sys
import types

import ml_dtypes
import numpy as np
import onnx
import pytest

from cases import CASE_MODULES, bundle_id, slug
from cases.common import NONZERO_ZERO_POINT
from cases.isa import isa
from generators import write
from generators.reference import expected_outputs
from generators.typed_qdq import blocked
from tests.generators.helpers import cases_from, float_values
from tests.generators.helpers import initializers as _initializers

NEW_MODULES = (
    "cases.fp16_scale_qdq",
    "cases.int4_blocked_weights",
    "cases.fp8_qdq",
    "cases.fp8_conv_stack",
    "cases.dynamic_quantize_asymmetric",
    "cases.bias_add_after_qdq",
)
CASES, VARIANTS = cases_from(NEW_MODULES)
IDS = [bundle_id(c, p) for c, p in VARIANTS]
SIZES = {
    "fp16_scale_qdq": 5,  # Conv and MatMul x 2 weight granularities, and #4832's DQ after the reshape chain
    "int4_blocked_weights": 16,  # 2 ops x (int4 x 3 block sizes + uint4 x 1) x 2 activation types
    "fp8_qdq": 6,  # 3 ops x 2 weight granularities
    "fp8_conv_stack": 4,  # 2 weight granularities x 2 activation types
    "dynamic_quantize_asymmetric": 4,  # 2 graphs x 2 option sets
    "bias_add_after_qdq": 8,  # 2 ops x 2 bias forms x output Q/DQ
}
OPSET_AND_IR = {
    "fp16_scale_qdq": (19, 9), "int4_blocked_weights": (21, 10), "fp8_qdq": (19, 9), "fp8_conv_stack": (19, 9),
    "dynamic_quantize_asymmetric": (13, 8), "bias_add_after_qdq": (13, 8),
}
# u8s8 MatMulInteger (quantize_dynamic's Linear): ORT's vpmaddubsw pair sums may saturate without VNNI.
MAY_SATURATE_WITHOUT_VNNI = {b for b in IDS if b.startswith("dynamic_quantize_asymmetric/graph=gather_add_matmul")}


@pytest.fixture(scope="module")
def rendered():
    return {bundle_id(c, p): write.render(c, p) for c, p in VARIANTS}


def _attrs(n: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}


def _node(model: onnx.ModelProto, op: str) -> onnx.NodeProto:
    (found,) = [n for n in model.graph.node if n.op_type == op]
    return found


def test_cases_are_registered_after_012_in_seed_order_with_their_citations():
    assert [m for m in CASE_MODULES if m in NEW_MODULES] == list(NEW_MODULES)
    assert CASE_MODULES.index(NEW_MODULES[0]) == CASE_MODULES.index("cases.transformer_qdq_pattern") + 1
    assert CASE_MODULES[-1] == "cases.user_model"
    assert [c.seed for c in CASES.values()] == [f"{n:03d}" for n in range(13, 13 + len(NEW_MODULES))]
    for module, case in zip(NEW_MODULES, CASES.values()):
        first_line = importlib.import_module(module).__doc__.splitlines()[0]
        if "#" in first_line:  # the thread or pull request the case reproduces first
            number = first_line.split("#")[1].split()[0].rstrip(":(),")
            assert case.links[0].endswith(number), (case.id, number)
        else:  # bias_add_after_qdq: onnxruntime's quantizer source
            assert first_line.split()[0] in case.links[0], case.id
        assert case.builder == f"generators.{case.id}:build"


@pytest.mark.parametrize("case_id", list(SIZES))
def test_sweeps_stay_small(case_id):
    assert len(list(CASES[case_id].variants())) == SIZES[case_id]


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_model_passes_the_full_checker_with_its_opset_and_ir(case, params):
    rep = write.build(case, params)
    onnx.checker.check_model(rep.model, full_check=True)
    assert [(o.domain, o.version) for o in rep.model.opset_import] == [("", OPSET_AND_IR[case.id][0])]
    assert rep.model.ir_version == OPSET_AND_IR[case.id][1]


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_targets_exist_and_convs_carry_kernel_shape(case, params):
    rep = write.build(case, params)
    names = {n.name for n in rep.model.graph.node}
    assert rep.target_nodes and set(rep.target_nodes) <= names
    if case.target_nodes:
        assert set(rep.target_nodes) <= set(case.target_nodes)
    for n in rep.model.graph.node:  # TensorRT 8.x's parser needs kernel_shape where weights come from a DQ
        if n.op_type == "Conv":
            assert "kernel_shape" in _attrs(n), n.name


@pytest.mark.parametrize("case,params", VARIANTS, ids=IDS)
def test_two_builds_are_byte_identical(case, params):
    a, b = write.build(case, params), write.build(case, params)
    assert a.model.SerializeToString() == b.model.SerializeToString()
    assert all(a.inputs[n].tobytes() == b.inputs[n].tobytes() for n in a.inputs)


@pytest.mark.parametrize("bundle", IDS)
def test_reference_is_onnx_reference_and_onnxruntime_agrees(rendered, bundle):
    """Every new model runs on onnx.reference (opset 19/21 Q/DQ with float16 scales, FP8 and blocked INT4 are its
    own kernels) and ONNX Runtime, optimizations off, agrees within a step; the record names the CPU's INT8 level."""
    meta = rendered[bundle]["case.json"]
    check = meta["cross_check"]["onnxruntime"]
    assert meta["reference"] == "onnx.reference" and meta["checker"] == "passed"
    assert check["isa"] == isa().label
    if bundle in MAY_SATURATE_WITHOUT_VNNI and not isa().vnni:
        assert check["status"] in ("agree", "disagree"), check["detail"]
        if check["status"] == "disagree":  # kept, with ORT's documented fix beside it
            assert check["x64quantprecision"]["status"] == "agree", check["detail"]
    else:
        assert check["status"] == "agree", check["detail"]


def test_an_onnxruntime_that_cannot_load_the_model_is_recorded_as_cannot_run(monkeypatch):
    """ONNX Runtime 1.16 reads IR 9 at most (measured on 1.16.3 with the int4 bundles: "Unsupported model IR version:
    10, max supported IR version: 9"): the cross-check says so; the expected outputs still come from the reference."""
    message = "Unsupported model IR version: 10, max supported IR version: 9"

    def refuse(*_args, **_kwargs):
        raise RuntimeError(f"[ONNXRuntimeError] : 1 : FAIL : {message}\nmore")

    fake = types.SimpleNamespace(
        __version__="1.16.3", InferenceSession=refuse, SessionOptions=types.SimpleNamespace,
        GraphOptimizationLevel=types.SimpleNamespace(ORT_DISABLE_ALL=0),
    )
    monkeypatch.setitem(sys.modules, "onnxruntime", fake)
    case = CASES["int4_blocked_weights"]
    meta = write.render(case, next(iter(case.variants())))["case.json"]
    check = meta["cross_check"]["onnxruntime"]
    assert check["status"] == "cannot run" and message in check["detail"] and check["version"] == "1.16.3"
    assert meta["reference"] == "onnx.reference"


@pytest.mark.parametrize("params", list(CASES["fp16_scale_qdq"].variants()), ids=slug)
def test_fp16_scales_are_float16_and_type_their_dq_outputs(params):
    rep = write.build(CASES["fp16_scale_qdq"], params)
    init = _initializers(rep.model)
    scales = {n: a for n, a in init.items() if n.endswith("_scale")}
    assert scales and all(a.dtype == np.float16 for a in scales.values())
    assert rep.inputs["x"].dtype == np.float16
    assert all(a.dtype == np.int8 and not a.any() for n, a in init.items() if n.endswith("zero_point"))
    if params["graph"] == "dq_cast_after_reshape_slice":
        chain = [n.op_type for n in rep.model.graph.node]
        assert chain == ["QuantizeLinear", "Reshape", "Transpose", "Reshape", "Slice", "DequantizeLinear", "Cast"]
        assert init["x_scale"].shape == ()
        assert rep.model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    else:
        dq = next(n for n in rep.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w")
        per_channel = params["weights"] == "per_channel"
        assert (init["w_scale"].ndim == 1) is per_channel and ("axis" in _attrs(dq)) is per_channel


@pytest.mark.parametrize("params", list(CASES["int4_blocked_weights"].variants()), ids=slug)
def test_int4_weights_are_blocked_along_k_and_the_reference_matches_numpy(params):
    """The DQ is blocked on the K axis with the swept block size; onnx.reference's output equals a numpy
    x @ dequantized(w) with every block scale (and uint4 zero point) repeated block_size times."""
    rep = write.build(CASES["int4_blocked_weights"], params)
    init = _initializers(rep.model)
    dq = _node(rep.model, "DequantizeLinear")
    gemm, block = params["op"] == "gemm", params["block_size"]
    axis = 1 if gemm else 0
    assert _attrs(dq) == {"axis": axis, "block_size": block}
    w = init["w"]
    assert w.dtype == (ml_dtypes.int4 if params["weights"] == "int4" else ml_dtypes.uint4)
    assert init["w_scale"].shape[axis] == w.shape[axis] // block
    assert init["w_scale"].dtype == np.dtype(params["activation"])
    zero_point = init.get("w_zero_point")
    assert (zero_point is None) is (params["weights"] == "int4")
    values = float_values(w) - (float_values(blocked(zero_point, axis, block)) if zero_point is not None else 0)
    dense = values * blocked(init["w_scale"], axis, block).astype(np.float64)
    want = rep.inputs["x"].astype(np.float64) @ (dense.T if gemm else dense)
    got = expected_outputs(rep)[0]["y"].astype(np.float64)
    assert np.max(np.abs(got - want)) <= 2.0**-10 * max(1.0, float(np.max(np.abs(want))))


@pytest.mark.parametrize("params", list(CASES["fp8_qdq"].variants()), ids=slug)
def test_fp8_q_dq_carry_float8e4m3fn_and_exact_values(params):
    rep = write.build(CASES["fp8_qdq"], params)
    init = _initializers(rep.model)
    fp8 = np.dtype(ml_dtypes.float8_e4m3fn)
    assert init["w"].dtype == fp8 and init["x_zero_point"].dtype == fp8 and init["w_zero_point"].dtype == fp8
    assert np.array_equal(float_values(init["w"]), np.rint(float_values(init["w"])))  # whole numbers: exact in E4M3
    assert np.all(np.abs(rep.inputs["x"] / init["x_scale"]) <= 8)  # x / scale is a whole number <= 8: exact too
    per_channel = params["weights"] == "per_channel"
    assert (init["w_scale"].ndim == 1) is per_channel


@pytest.mark.parametrize("params", list(CASES["fp8_conv_stack"].variants()), ids=slug)
def test_fp8_conv_stack_has_the_threads_channels_and_unsaturated_scales(params):
    rep = write.build(CASES["fp8_conv_stack"], params)
    init = _initializers(rep.model)
    convs = [n for n in rep.model.graph.node if n.op_type == "Conv"]
    assert [init[n.input[1].removesuffix("_dq")].shape[:2] for n in convs] == [(64, 3), (64, 64), (3, 64)]
    assert [n.name for n in convs] == list(rep.target_nodes)
    assert [n.op_type for n in rep.model.graph.node].count("Relu") == 2
    dtype = np.dtype(params["activation"])
    assert all(init[f"a{k}_scale"].dtype == dtype for k in (1, 2, 3)) and rep.inputs["x"].dtype == dtype


@pytest.mark.parametrize("params", list(CASES["dynamic_quantize_asymmetric"].variants()), ids=slug)
def test_quantize_dynamic_writes_a_uint8_gather_dq_with_a_nonzero_zero_point(params):
    """#4698: even with WeightSymmetric and ActivationSymmetric, the Gather's table is uint8 with zero point 128."""
    rep = write.build(CASES["dynamic_quantize_asymmetric"], params)
    dq = next(n for n in rep.model.graph.node if n.name in rep.target_nodes and n.op_type == "DequantizeLinear")
    gather = next(n for n in rep.model.graph.node if n.op_type == "Gather")
    assert dq.input[0] == gather.output[0] and rep.model.producer_name == "onnx.quantize"
    zero_point = _initializers(rep.model)[dq.input[2]]
    assert zero_point.dtype == np.uint8 and zero_point != 0
    if params["options"] == "symmetric":
        assert zero_point == 128
    ops = {n.op_type for n in rep.model.graph.node}
    assert ("MatMulInteger" in ops) is (params["graph"] == "gather_add_matmul")


def test_4698_is_the_zero_point_rule_on_tensorrt_and_seed_002s_saturation_on_onnxruntime():
    case = CASES["dynamic_quantize_asymmetric"]
    trt = [e for e in case.expectations if e.engine == "tensorrt"]
    assert all(e.outcome == "fail" and not e.where for e in trt)
    assert {e.signature for e in trt} == {NONZERO_ZERO_POINT.name, None}
    assert {e.engine for e in case.expectations} == {"tensorrt", "onnxruntime"}
    saturating = {"graph": "gather_add_matmul", "options": "symmetric"}
    assert case.expectation_for("onnxruntime", "1.32.0", saturating, {"isa": "avx2"}).outcome == "fail"
    assert case.expectation_for("onnxruntime", "1.32.0", saturating, {"isa": "avx512_vnni"}).outcome == "pass"
    fixed = case.expectation_for("onnxruntime", "1.32.0", saturating, {"isa": "avx2", "x64quantprecision": "1"})
    assert fixed.outcome == "pass"
    assert case.expectation_for("onnxruntime", "1.32.0", {"graph": "gather_add_matmul", "options": "default"},
                                {"isa": "avx2"}) is None  # within a step on AVX2: no saturation to document
    text = ("Assertion failed: shiftIsAllZeros(zeroPoint): Non-zero zero point is not supported. Please set "
            "kENABLE_UINT8_AND_ASYMMETRIC_QUANTIZATION_DLAto enable asymmetric quantization if it is on DLA.")
    assert NONZERO_ZERO_POINT.search(text)  # #4698's words


@pytest.mark.parametrize("params", list(CASES["bias_add_after_qdq"].variants()), ids=slug)
def test_bias_add_follows_the_op_as_a_float_constant_or_onnxruntimes_int8_dq(params):
    rep = write.build(CASES["bias_add_after_qdq"], params)
    producers = {o: n for n in rep.model.graph.node for o in n.output}
    add = _node(rep.model, "Add")
    op = producers[add.input[0]]
    assert rep.target_nodes == ("node_of_mm", add.name)
    if params["bias"] == "float":
        assert op.name == "node_of_mm" and add.input[1] not in producers
        assert _initializers(rep.model)[add.input[1]].dtype == np.float32
    else:  # the op's output through Q/DQ, the bias an INT8 initializer -> DQ, as quantize_static writes a bias Add
        assert op.op_type == "DequantizeLinear" and producers[op.input[0]].input[0] == "mm"
        bias_dq = producers[add.input[1]]
        assert bias_dq.op_type == "DequantizeLinear" and _initializers(rep.model)[bias_dq.input[0]].dtype == np.int8
    readers = [n.op_type for n in rep.model.graph.node if add.output[0] in n.input]
    assert readers == (["QuantizeLinear"] if params["output_qdq"] else [])


def test_architecture_expectations_name_a_target_and_cite_the_rtx_pages():
    """INT4 WoQ GEMM: not on SM75; FP8 GEMM: SM89 and later; nothing for the default target or for convolutions."""
    for case_id in ("int4_blocked_weights", "fp8_qdq"):
        rtx = [e for e in CASES[case_id].expectations if e.engine == "tensorrt-rtx"]
        assert rtx and all(e.when.get("target") and "default" not in e.when["target"] for e in rtx)
        assert all(e.source.startswith("https://docs.nvidia.com/deeplearning/tensorrt-rtx/") for e in rtx)
    fp8_rtx = [e for e in CASES["fp8_qdq"].expectations if e.engine == "tensorrt-rtx"]
    assert {e.when["target"] for e in fp8_rtx if e.outcome == "fail"} == {("SM75", "SM80", "SM86")}
    assert all(e.where == {"op": ("matmul", "gemm")} for e in fp8_rtx)
    int4 = CASES["int4_blocked_weights"]
    sm75 = int4.expectation_for("tensorrt-rtx", "1.7.1.116", next(iter(int4.variants())), {"target": "SM75"})
    assert sm75 is not None and sm75.outcome == "fail"
    assert int4.expectation_for("tensorrt-rtx", "1.7.1.116", next(iter(int4.variants())), {"target": "default"}) is None


def test_the_rtx_35_crash_is_a_run_time_expectation_for_the_default_target():
    case = CASES["fp8_conv_stack"]
    params = next(iter(case.variants()))
    crash = case.expectation_for("tensorrt-rtx", "1.5.0.114", params, {"target": "default"})
    assert crash is not None and crash.stage == "run" and crash.source.endswith("TensorRT-RTX/issues/35")
    assert case.expectation_for("tensorrt-rtx", "1.5.0.114", params, {"target": "SM86"}) is None
    assert case.expectation_for("tensorrt-rtx", "1.7.1.116", params, {"target": "default"}) is None


def test_no_tensorrt_expectation_where_no_source_says():
    """#4832 fails on SM 8.7 and builds on SM 11.0 with the same version (a signature, no expectation); nothing
    documents the bias Add."""
    assert CASES["fp16_scale_qdq"].expectations == ()
    assert CASES["bias_add_after_qdq"].expectations == () and CASES["bias_add_after_qdq"].signatures == ()
