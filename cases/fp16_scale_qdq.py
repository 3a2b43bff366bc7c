"""NVIDIA/TensorRT#4832 and ONNX DequantizeLinear-19: INT8 Q/DQ whose scales are float16, on float16 activations.

#4832 (TensorRT 10.16.2.10, trtexec --stronglyTyped, a ModelOpt 0.44.0 INT8 PTQ model): on Jetson Orin (SM 8.7) the
build fails in Myelin with "Could not infer output types for operation: ...: dequantize: Dequantized input0-(f32[...])
| input0 reshape out_transpose_out reshape out slice_U28 out-(i8[]), ... scale weightsHalf-0.35498H:(f16[])" and "No
matching rules found for input operand types"; the byte-identical model builds on Thor (SM 11.0) with the same
version. So the version alone does not decide the outcome: the expectations name the GPU architecture (`when={"gpu":
...}`, a GPU cell's compute capability), a failure at build for SM87 and a build for SM110, for #4832's pattern (the
thread's failing node; its model is a whole ModelOpt network), and the report's "Across GPU architectures" says them
beside TensorRT-RTX's per-target builds. No other GPU is documented: an H100 or H200 cell (SM90) has no expectation.
ONNX DequantizeLinear-19 allows a float16 x_scale ("'x_scale' determines the output type");
QuantizeLinear-19 takes a scale of the input's type, so a float16 scale means float16 activations.

No TensorRT-RTX document speaks of float16 scales. What the RTX versions do is for the cells to say: 1.4 to 1.6
refuse every INT8 convolution in Myelin's cuDNN backend (RTX_CONV_DTYPE_CHECK), float16 scales or not.
onnx-tensorrt's 8.x tables list DequantizeLinear for INT8 and say nothing of the scale's type; they stop at opset 17
without saying that a later opset fails to parse: no 8.x expectation either.

The sweep: a Conv and a MatMul on float16 activations with INT8 weights (per tensor, or per output channel), every
scale float16; and #4832's pattern, an INT8 activation through Reshape/Transpose/Reshape/Slice into a DQ with a
scalar float16 scale whose output a Cast makes float32. Targets: the Conv or MatMul, or that DQ.

TensorRT 8.5.1.7 to 8.6.0 fail every form on an H100 and an H200 alike, but not always at one stage: a run may
refuse one at parse ("Scale coefficients must all be positive", every scale being positive) that another run fails at
build, as seed 029's float16 scale does (reports/observed/nvidia-h100/fp16-repeat/README.md). The upgrade answer says
such a pair "runs disagree", never an error the upgrade changed.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Params, Signature
from cases.common import DEQUANTIZE_LINEAR
from cases.pattern import (
    Graph,
    Match,
    Pattern,
    activation_dq,
    compute_with_weights,
    matches,
    scale_size,
    zero_point_type,
)

ISSUE_4832 = "https://github.com/NVIDIA/TensorRT/issues/4832"

MYELIN_DEQUANTIZE_TYPES = Signature(
    name="myelin_dequantize_output_type",
    # #4832: "[type.cpp:186: infer_type] Could not infer output types for operation: 291: dequantize: ..."
    pattern=r"Could not infer output types for operation: .*dequantize",
    kind="error",
    source=ISSUE_4832,
    short="Myelin cannot type a dequantize",
)


CHAIN = {"graph": ("dq_cast_after_reshape_slice",), "weights": ("none",)}


def _weights_fit_graph(params: Params) -> bool:
    """The Conv and MatMul have weights; #4832's DQ after the reshape chain has none."""
    return (params["graph"] == "dq_cast_after_reshape_slice") == (params["weights"] == "none")



def match_fp16_scale(g: Graph, n: Any) -> List[Match]:
    """INT8 Q/DQ with float16 scales: into a Conv or MatMul (and its weights), or #4832's DQ after Reshape/Slice."""
    if n.op_type == "DequantizeLinear":
        if g.dtype(n.input[1]) != "float16" or g.op(n.input[0]) not in ("Slice", "Reshape", "Transpose") \
                or not any(u.op_type == "Cast" for u in g.users(n.output[0])):
            return []
        return matches(n, {"graph": "dq_cast_after_reshape_slice", "weights": "none"}, target="node_of_x_dq")
    x = activation_dq(g, n.input[0])
    if x is None or g.dtype(x.input[1]) != "float16" or zero_point_type(g, x) != "int8":
        return []
    w = compute_with_weights(g, n)
    weights = "none" if w is None else "per_channel" if scale_size(g, w) > 1 else "per_tensor"
    return matches(n, {"graph": n.op_type.lower(), "weights": weights}, target="node_of_y")


PATTERN = Pattern(rules={"fp16_scale_qdq": "INT8 Q/DQ with float16 scales"}, ops=("Conv", "MatMul", "DequantizeLinear"),
                  match=match_fp16_scale,
                  also_matches=("qdq_scale_dtype_mismatch",))


CASE = Case(
    id="fp16_scale_qdq",
    seed="013",
    title="INT8 Q/DQ with float16 scales on float16 activations (opset 19): Conv, MatMul, #4832's DQ",
    links=(ISSUE_4832, DEQUANTIZE_LINEAR),
    axes={
        "graph": ("conv", "matmul", "dq_cast_after_reshape_slice"),
        "weights": ("per_tensor", "per_channel", "none"),
    },
    target_nodes=("node_of_y", "node_of_x_dq"),
    signatures=(MYELIN_DEQUANTIZE_TYPES,),
    expectations=(
        Expectation(
            "tensorrt", "==10.16.*", "fail", ISSUE_4832, stage="build", signature=MYELIN_DEQUANTIZE_TYPES.name,
            where=CHAIN, when={"gpu": ("SM87",)}, hardware="Jetson Orin, L4T R39.2",
            note="10.16.2.10, trtexec --stronglyTyped: every tactic skipped, 'Could not infer output types for "
            "operation: ... dequantize ... No matching rules found for input operand types' (the thread's model)",
        ),
        Expectation(
            "tensorrt", "==10.16.*", "pass", ISSUE_4832, where=CHAIN, when={"gpu": ("SM110",)},
            hardware="Jetson Thor, L4T R39.2",
            note="the byte-identical model builds in 123 s with the same 10.16.2.10; the thread says nothing of its "
            "outputs",
        ),
    ),
    builder="generators.fp16_scale_qdq:build",
    arch_dependent=True,
    valid=_weights_fit_graph,
    opset=19,
    pattern=PATTERN,
)
