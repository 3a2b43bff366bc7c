"""onnx/onnx#5812 (opset 21 blocked quantization) and TensorRT-RTX's support matrix: weight-only INT4 MatMul and Gemm.

ONNX opset 21 (onnx 1.16: "Support blocked quantization. Support int4, uint4"; IR 10 adds the INT4 and UINT4 types):
DequantizeLinear-21 takes int4/uint4 input and a `block_size`, with a scale of the input's rank,
`(D0, ..., ceil(Di/B), ..., Dn)` along `axis`. TensorRT-RTX "supports the reduced-precision data types INT4, INT8, FP4,
and FP8" (Work With Quantized Types), and its support matrix has a column "INT4 WoQ GEMM": Yes on 12.0, 8.9 and 8.6,
No on 7.5 (Turing) in the 1.0, 1.1, 1.4 and 1.5 tables and on the unversioned page. The 1.6 and 1.7 tables were not
read; the unversioned page, which the quantized-types page sends readers to, says the same, so the expectations
cover every version. 8.0 has no row: SM80 has no expectation, nor has the default target (a set of architectures).
The matrix speaks of INT4; uint4 with a zero point is not INT4, so those rows are for int4 weights only.

TensorRT (not RTX): onnx-tensorrt's 8.0 to 8.6 tables list DequantizeLinear for INT8 only and the parser's data types
as DOUBLE, FLOAT32, FLOAT16, INT8 and BOOL, so a 4-bit DequantizeLinear is outside what 8.x parses; the 10.x tables
add INT4 but say "`x_zero_point` must be zero", so uint4 with its zero point of 6 to 9 fails there too.
ONNX Runtime 1.16 rejects IR 10 models: an honest "fail" of that column, not a bug of the reproducer.

The sweep: MatMul (x[1, 4, 256] @ w[256, 32], blocks along axis 0) or Gemm transB=1 (w[32, 256], blocks along axis 1),
int4 (no zero point) or uint4 (a zero point per block), block size 32/64/128 (uint4 at 64 only), float16 or float32
activations (the scale's type, so the DQ's output type). Weight-only: no Q on the activations. Target: the MatMul/Gemm.
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Params
from cases.common import (
    NONZERO_ZERO_POINT,
    OPERATORS_MD_8_6,
    RTX_QUANTIZED_TYPES,
    RTX_SUPPORT_MATRIX,
    nonzero_zero_point_by_version,
)
from cases.pattern import Graph, Match, Pattern, attr, matches, weight_dequantize

ONNX_5812 = "https://github.com/onnx/onnx/pull/5812"
# onnx-tensorrt's 8.6-GA operator table (the 8.0, 8.2, 8.4 and 8.5 tables say the same).

SUPPORT_MATRIX_NOTE = ("support matrix, 'INT4 WoQ GEMM': Yes on 12.0 (and 12.1 from 1.5), 8.9 and 8.6, No on 7.5 "
                       "Turing (tables 1.0, 1.1, 1.4, 1.5 and the unversioned page)")


def _uint4_once(params: Params) -> bool:
    """uint4 is about its zero point, not the block size: one block size is enough."""
    return params["weights"] == "int4" or params["block_size"] == 64



def match_int4(g: Graph, n: Any) -> List[Match]:
    """A MatMul/Gemm with INT4 or UINT4 weights through DequantizeLinear (the support matrix per target)."""
    dq = weight_dequantize(g, n.input[1]) if len(n.input) > 1 else None
    kind = g.dtype(dq.input[0]) if dq is not None else ""
    if kind not in ("int4", "uint4"):
        return []
    block = attr(dq, "block_size", 0)
    params = {"op": n.op_type.lower(), "weights": kind}
    params.update({"block_size": block} if block in CASE.axes["block_size"] else {})
    return matches(n, params, target="node_of_y")


PATTERN = Pattern(rules={"int4_gemm": "INT4 weight-only GEMM"}, ops=("MatMul", "Gemm"), match=match_int4,
                  also_matches=("int4_matmulnbits_fusion",))


CASE = Case(
    id="int4_blocked_weights",
    seed="014",
    title="Weight-only INT4/UINT4 MatMul and Gemm, blocked along K (DequantizeLinear-21 block_size)",
    links=(ONNX_5812, RTX_SUPPORT_MATRIX, RTX_QUANTIZED_TYPES, OPERATORS_MD_8_6),
    axes={
        "op": ("matmul", "gemm"),
        "weights": ("int4", "uint4"),
        "block_size": (32, 64, 128),
        "activation": ("float16", "float32"),
    },
    target_nodes=("node_of_y",),
    signatures=(NONZERO_ZERO_POINT,),
    expectations=(
        Expectation(
            "tensorrt-rtx", "", "fail", RTX_SUPPORT_MATRIX, stage="build", where={"weights": ("int4",)},
            when={"target": ("SM75",)},
            note=SUPPORT_MATRIX_NOTE,
        ),
        Expectation(
            "tensorrt-rtx", "", "pass", RTX_SUPPORT_MATRIX, where={"weights": ("int4",)},
            when={"target": ("SM86", "SM89", "SM120", "SM121")}, note=SUPPORT_MATRIX_NOTE,
        ),
        Expectation(
            "tensorrt", ">=8.0,<9.0", "fail", OPERATORS_MD_8_6, stage="load",
            note="8.0 to 8.6 operators.md: DequantizeLinear 'INT8'; data types DOUBLE, FLOAT32, FLOAT16, INT8, BOOL "
            "(no INT4 or UINT4); 8.1 and 8.3 lie between tables that agree",
        ),
        *nonzero_zero_point_by_version({"weights": ("uint4",)}),
    ),
    builder="generators.int4_blocked_weights:build",
    arch_dependent=True,
    valid=_uint4_once,
    opset=21,
    pattern=PATTERN,
)
