"""A chain of quantized 1x1 Convs of any length: the model of the scaling benchmark and of the linearity test.

Each block is four nodes, as a QDQ exporter writes a quantized convolution: QuantizeLinear -> DequantizeLinear of
the activation, DequantizeLinear of per-channel int8 weights (axis 0), Conv 1x1. Opset 13, IR 8, named nodes. The
weights are the identity times 64 at a scale of 1/64 with a seeded step of noise, so a chain of thousands of
blocks keeps its activations in range. Nothing is built at import.

    python -m check.chain --nodes 20000 --out chain-20000.onnx
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, List, Optional, Sequence

import numpy as np

from core.cli import ArgumentParser

NODES_PER_BLOCK = 4
CHANNELS, SIDE = 4, 8  # x [1, 4, 8, 8]
OPSET, IR_VERSION = 13, 8


def chain_model(nodes: int, channels: int = CHANNELS, side: int = SIDE, seed: int = 0) -> Any:
    """The ModelProto of a chain of nodes // 4 quantized 1x1 Convs (at least one), input x [1, channels, side,
    side], output y."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    blocks = max(1, nodes // NODES_PER_BLOCK)
    eye = np.eye(channels, dtype=np.int16)[:, :, None, None] * 64
    inits = [numpy_helper.from_array(np.array(1 / 32, np.float32), "s_x"),
             numpy_helper.from_array(np.array(0, np.int8), "z_x"),
             numpy_helper.from_array(np.full(channels, 1 / 64, np.float32), "s_w"),
             numpy_helper.from_array(np.zeros(channels, np.int8), "z_w")]
    made: List[Any] = []
    prev = "x"
    for i in range(blocks):
        w = (eye + rng.integers(-1, 2, size=eye.shape)).astype(np.int8)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        made += [helper.make_node("QuantizeLinear", [prev, "s_x", "z_x"], [f"q{i}"], name=f"block{i}/q"),
                 helper.make_node("DequantizeLinear", [f"q{i}", "s_x", "z_x"], [f"dq{i}"], name=f"block{i}/dq"),
                 helper.make_node("DequantizeLinear", [f"w{i}", "s_w", "z_w"], [f"wdq{i}"], name=f"block{i}/dq_w",
                                  axis=0),
                 helper.make_node("Conv", [f"dq{i}", f"wdq{i}"], ["y" if i == blocks - 1 else f"c{i}"],
                                  name=f"block{i}/conv", kernel_shape=[1, 1])]
        prev = f"c{i}"
    shape = [1, channels, side, side]
    graph = helper.make_graph(made, f"chain_{blocks * NODES_PER_BLOCK}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="qdq-matrix.chain")
    model.ir_version = IR_VERSION
    return model


def write_chain(path: Path, nodes: int, seed: int = 0) -> Path:
    """chain_model(nodes) saved at path; returns path."""
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(chain_model(nodes, seed=seed), str(path))
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = ArgumentParser(prog="python -m check.chain", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, required=True, help="nodes in the graph (a multiple of 4)")
    parser.add_argument("--out", required=True, help="the .onnx file to write")
    args = parser.parse_args(argv)
    print(write_chain(Path(args.out), args.nodes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
