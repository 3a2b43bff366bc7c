"""Builder for case 031 `float_qdq_types`: FP8 and FP4 Q/DQ, and FP4 weights with E8M0 block scales (opset 24)."""

from __future__ import annotations

import numpy as np
import onnx

from generators.onnx_util import const, make_model, node, value_info
from generators.reproducer import Reproducer
from generators.typed_qdq import E8M0, FP4_E2M1, FP8_E4M3, fp4_values, typed_qdq

OPSET = 24  # DequantizeLinear-24: float8e8m0 scales; the FP8 and FP4 forms are valid at it too (one opset a case)
SHAPE = (1, 8, 64)
SEQ, K, N = 8, 64, 16
BLOCK = 32  # the MX block along K
X_SCALE = np.float32(2.0**-4)
TRT = {"strongly_typed": True, "int8": False, "fp16": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the form."""
    return _FORMS[params["form"]](rng)


def _qdq(rng: np.random.Generator, dtype: np.dtype, name: str, values: np.ndarray, kind: str) -> Reproducer:
    """x -> Q/DQ (float32 scale, a zero point of the quantized type) -> y."""
    x = (values.astype(np.float32) * X_SCALE).astype(np.float32)
    nodes, inits = typed_qdq("x", np.array(X_SCALE, np.float32), np.array(0, dtype), "x", output="y")
    model = make_model(name, nodes, [value_info("x", np.float32, x.shape)], [value_info("y", np.float32, x.shape)],
                       inits, opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), output_steps={"y": float(X_SCALE)}, trt=TRT,
                      notes=f"{kind} Q/DQ per tensor of {x.size} float32 values, exact in the format")


def _fp8(rng: np.random.Generator) -> Reproducer:
    """FP8 E4M3: whole numbers up to 16 steps are exact (3 mantissa bits)."""
    return _qdq(rng, FP8_E4M3, "fp8_e4m3_qdq", rng.integers(-16, 17, size=SHAPE), "FP8 E4M3")


def _fp4(rng: np.random.Generator) -> Reproducer:
    """FP4 E2M1: values on its grid (|v| <= 6)."""
    return _qdq(rng, FP4_E2M1, "fp4_e2m1_qdq", fp4_values(rng, SHAPE).astype(np.float32), "FP4 E2M1")


def _fp4_e8m0_matmul(rng: np.random.Generator) -> Reproducer:
    """x[1, 8, 64] -> MatMul(x, DQ(FP4 w[64, 16], E8M0 scales per block of 32 along K, output float32)) -> y."""
    x = (rng.integers(-7, 8, size=(1, SEQ, K)) * 2.0**-3).astype(np.float32)
    w = fp4_values(rng, (K, N))
    scale = (2.0 ** -rng.integers(3, 6, size=(K // BLOCK, N))).astype(np.float32).astype(E8M0)
    nodes = [node("DequantizeLinear", ["w", "w_scale"], ["w_dq"], axis=0, block_size=BLOCK,
                  output_dtype=onnx.TensorProto.FLOAT),
             node("MatMul", ["x", "w_dq"], ["y"])]
    model = make_model("fp4_e8m0_matmul", nodes, [value_info("x", np.float32, x.shape)],
                       [value_info("y", np.float32, (1, SEQ, N))], [const("w", w), const("w_scale", scale)],
                       opset=OPSET)
    return Reproducer(model, {"x": x}, ("node_of_y",), trt=TRT,
                      notes=f"MatMul {K}->{N}, FP4 E2M1 weights with float8e8m0 scales per block of {BLOCK} along K")


_FORMS = {"fp8_e4m3_qdq": _fp8, "fp4_e2m1_qdq": _fp4, "fp4_e8m0_matmul": _fp4_e8m0_matmul}
