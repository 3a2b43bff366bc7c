"""Builder for case 017 `dynamic_quantize_asymmetric`: an embedding Gather through onnxruntime's quantize_dynamic."""

from __future__ import annotations

import numpy as np

from generators.dynamic_quantize import quantize_dynamic
from generators.onnx_util import const, make_model, node, value_info
from generators.reproducer import Reproducer

VOCAB, TOKENS, HIDDEN, OUT = 32, 6, 16, 8
# #4698's call: quantize_dynamic(..., extra_options={"WeightSymmetric": True, "ActivationSymmetric": True}).
OPTIONS = {"default": {}, "symmetric": {"WeightSymmetric": True, "ActivationSymmetric": True}}
TRT = {"int8": True}


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """One variant: the float graph, quantized with #4698's options or onnxruntime's defaults."""
    float_model, ids = _GRAPHS[params["graph"]](rng)
    model = quantize_dynamic(float_model, OPTIONS[params["options"]])
    # The quantized table's Gather and the DequantizeLinear after it (#4698's failing node).
    targets = tuple(n.name for n in model.graph.node if n.op_type in ("Gather", "DequantizeLinear"))
    return Reproducer(model, {"ids": ids}, targets, trt=TRT,
                      notes=f"onnxruntime.quantization.quantize_dynamic (weight_type QInt8, extra_options "
                      f"{OPTIONS[params['options']]}) of an embedding Gather ({params['graph']})")


def _embedding(rng: np.random.Generator, output: str) -> tuple:
    """Token ids, and Gather(table, ids) + positions -> `output` as nodes and initializers."""
    ids = rng.integers(0, VOCAB, size=(1, TOKENS)).astype(np.int64)
    table = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)
    positions = (0.1 * rng.standard_normal((TOKENS, HIDDEN))).astype(np.float32)
    nodes = [node("Gather", ["table", "ids"], ["tok"]), node("Add", ["tok", "positions"], [output])]
    return ids, nodes, [const("table", table), const("positions", positions)]


def _gather_add(rng: np.random.Generator) -> tuple:
    """ids -> Gather(table) -> Add(positions) -> y: the table is quantized, a DQ brings it back before the Add."""
    ids, nodes, inits = _embedding(rng, "y")
    model = make_model("embedding", nodes, [value_info("ids", np.int64, ids.shape)],
                       [value_info("y", np.float32, (1, TOKENS, HIDDEN))], inits)
    return model, ids


def _gather_add_matmul(rng: np.random.Generator) -> tuple:
    """ids -> Gather(table) -> Add(positions) -> MatMul(w) -> y: an embedding and the first Linear after it."""
    ids, nodes, inits = _embedding(rng, "emb")
    w = (rng.standard_normal((HIDDEN, OUT)) / np.sqrt(HIDDEN)).astype(np.float32)
    nodes.append(node("MatMul", ["emb", "w"], ["y"]))
    model = make_model("embedding_linear", nodes, [value_info("ids", np.int64, ids.shape)],
                       [value_info("y", np.float32, (1, TOKENS, OUT))], inits + [const("w", w)])
    return model, ids


_GRAPHS = {"gather_add": _gather_add, "gather_add_matmul": _gather_add_matmul}

