"""Builder for case 027 `qlinear_rounding_ties`: INT8 Q/DQ Conv, Add and AveragePool whose outputs land on ties."""

from __future__ import annotations

import numpy as np

from generators.onnx_util import make_model, node, value_info
from generators.qdq_parts import X_SCALE, qdq_pair, weight_dq
from generators.reproducer import Reproducer

SIDE = 16  # a 16x16 plane holds every int8 value once
W_SCALE = 2.0**-4
CONV_WEIGHTS = np.arange(6, 14, dtype=np.int8)  # one per output channel: |x| * 13 / 14 <= 118, inside int8
POOL = 3
# The output scale, in units of the float result: r, even and not a power of two (1/r is inexact in float32).
RATIO = {"conv": 14, "add": 6, "avgpool": 10}
TOLERANCE_STEPS = 0.5  # a tie rounded the other way is off by one step
TRT = {"int8": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the operator between the Q/DQ pairs."""
    return _OPS[params["op"]](rng)


def every_int8(rng: np.random.Generator) -> np.ndarray:
    """[1, 1, 16, 16] float32: -127..127 and 0 once each, shuffled, times X_SCALE (exact under its Q/DQ)."""
    values = rng.permutation(np.concatenate([np.arange(-127, 128), [0]]))
    return (values.reshape(1, 1, SIDE, SIDE) * X_SCALE).astype(np.float32)


def output_scale(op: str) -> np.float32:
    """The output Q's scale: RATIO units of the float result (x_scale * w_scale, x_scale, or x_scale / 9)."""
    unit = {"conv": X_SCALE * W_SCALE, "add": X_SCALE, "avgpool": X_SCALE / POOL**2}[op]
    return np.float32(RATIO[op] * unit)


def _finish(name: str, nodes: list, inits: list, feeds: dict, op: str, out_shape: tuple, notes: str) -> Reproducer:
    """c -> Q/DQ (the output scale) -> y, and the model around it."""
    scale = output_scale(op)
    out_nodes, out_inits = qdq_pair("c", float(scale), "y", output="y")
    model = make_model(name, nodes + out_nodes, [value_info(n, np.float32, a.shape) for n, a in feeds.items()],
                       [value_info("y", np.float32, out_shape)], inits + out_inits)
    return Reproducer(model, feeds, ("node_of_c",), output_steps={"y": float(scale)}, tolerance_steps=TOLERANCE_STEPS,
                      trt=TRT, notes=notes + f"; output scale {RATIO[op]} units of the float result")


def _conv(rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> Conv 1x1, 1 -> 8 (INT8 weights 6..13 -> DQ) -> Q/DQ -> y."""
    x = every_int8(rng)
    nodes, inits = qdq_pair("x", X_SCALE, "x")
    w_nodes, w_inits = weight_dq("w", CONV_WEIGHTS.reshape(-1, 1, 1, 1), np.float32(W_SCALE))
    nodes += w_nodes + [node("Conv", ["x_dq", "w_dq"], ["c"], kernel_shape=[1, 1])]
    return _finish("qlinear_ties_conv", nodes, inits + w_inits, {"x": x}, "conv", (1, len(CONV_WEIGHTS), SIDE, SIDE),
                   "1x1 Conv 1->8 on every int8 value, weights 6..13")


def _add(rng: np.random.Generator) -> Reproducer:
    """a, b -> Q/DQ each -> Add -> Q/DQ -> y."""
    a, b = every_int8(rng), every_int8(rng)
    nodes, inits = qdq_pair("a", X_SCALE, "a")
    more_nodes, more_inits = qdq_pair("b", X_SCALE, "b")
    nodes += more_nodes + [node("Add", ["a_dq", "b_dq"], ["c"])]
    return _finish("qlinear_ties_add", nodes, inits + more_inits, {"a": a, "b": b}, "add", (1, 1, SIDE, SIDE),
                   "Add of two planes of every int8 value, shuffled apart")


def _avgpool(rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> AveragePool 3x3 -> Q/DQ -> y."""
    x = every_int8(rng)
    nodes, inits = qdq_pair("x", X_SCALE, "x")
    nodes.append(node("AveragePool", ["x_dq"], ["c"], kernel_shape=[POOL, POOL]))
    side = SIDE - POOL + 1
    return _finish("qlinear_ties_avgpool", nodes, inits, {"x": x}, "avgpool", (1, 1, side, side),
                   "AveragePool 3x3 (stride 1) over every int8 value")


_OPS = {"conv": _conv, "add": _add, "avgpool": _avgpool}
