"""Builder for case 032 `two_conv_fanout_qdq`: the reduced detector graph, one Q/DQ activation into sibling Convs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
import onnx

from cases import bundle_id
from cases.two_conv_fanout_qdq import CASE
from generators.onnx_util import const, make_model, node, value_info
from generators.qdq_parts import (
    X_SCALE,
    activations,
    channel_scales,
    dequantized,
    float_op,
    int8_weights,
    pow2_scale,
    qdq_pair,
    weight_dq,
)
from generators.reproducer import Reproducer

# (channels in, channels out, height and width): the reduced detector's, and a small one.
SIZES = {"detector": (48, 24, 104), "small": (8, 4, 16)}
BIAS_SCALE = 2.0**-6  # the float bias (BatchNorm folded in) is whole multiples of this
CONSUMERS = {"one": 1, "two": 2, "three": 3}
REQUANTIZED = ("yes", "relu_qdq", "concat_qdq")  # the tails that end in Q/DQ

@dataclass(frozen=True)
class Sibling:
    """One Conv on the shared Q/DQ activation: its INT8 weights, their scale (per channel or a scalar), its bias."""

    w: np.ndarray
    scale: np.ndarray
    bias: np.ndarray
    kernel: int
    stride: int

    def attrs(self) -> dict:
        """The Conv's attributes: kernel_shape always (TensorRT 8.6.0 needs it on DQ weights), pads and strides."""
        attrs: dict = {"kernel_shape": [self.kernel, self.kernel]}
        if self.kernel > 1:
            attrs["pads"] = [self.kernel // 2] * 4
        if self.stride > 1:
            attrs["strides"] = [self.stride, self.stride]
        return attrs

    def channel_scales(self) -> np.ndarray:
        """The weight scale per output channel (a per-tensor scale repeated), as the merged Conv takes it."""
        return np.broadcast_to(self.scale, (self.w.shape[0],)).astype(np.float32)


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> sibling Convs (INT8 weights -> DQ, float bias) -> each one's tail; or the Convs merged and Split."""
    c_in, c_out, hw = SIZES[params["size"]]
    if params["rewrite"] != "none":  # the same network as its unrewritten twin: that twin's seed
        rng = np.random.default_rng(_seed(dict(params, rewrite="none")))
    x = activations(rng, (1, c_in, hw, hw))
    siblings = [_sibling(params, k, c_in, c_out, rng) for k in range(CONSUMERS[params["consumers"]])]
    floats = [float_op("Conv", [x, dequantized(s.w, s.scale, 0), s.bias], **s.attrs()) for s in siblings]
    nodes, inits = _activation(params["rewrite"], len(siblings))
    if params["rewrite"] == "merged":
        conv_nodes, conv_inits, targets = _merged(siblings, params["output_qdq"])
        tails = [_tail(params["output_qdq"], k, conv) for k, conv in enumerate(floats)]
        nodes, inits = nodes + conv_nodes + [n for t in tails for n in t.nodes], inits + conv_inits
        inits += [i for t in tails for i in t.inits]
    else:
        targets = []
        tails = []
        for k, (s, conv) in enumerate(zip(siblings, floats)):  # each Conv, then its tail: the first 8's order
            source = "x_dq" if params["rewrite"] == "none" else f"x_dq{k}"
            conv_nodes, conv_inits, target = _apart(s, k, params["output_qdq"], source)
            tails.append(_tail(params["output_qdq"], k, conv))
            nodes, inits = nodes + conv_nodes + tails[-1].nodes, inits + conv_inits + tails[-1].inits
            targets.append(target)
    if params["output_qdq"] == "concat_qdq":
        tails = [_concat(floats)]
        nodes, inits = nodes + tails[0].nodes, inits + tails[0].inits
    outputs = [t.output for t in tails if t.output is not None]
    steps = {t.output.name: t.step for t in tails if t.output is not None}
    model = make_model("two_conv_fanout_qdq", nodes, [value_info("x", np.float32, (1, c_in, hw, hw))], outputs,
                       inits)
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=tuple(targets),
        output_steps=steps,
        tolerance_steps=1.0 if params["output_qdq"] in REQUANTIZED else 2.0,
        trt={"int8": True},
        notes=_notes(params, siblings, c_in, c_out, hw),
    )


def _seed(params: dict) -> int:
    """The seed write.build gives a reproducer of this case."""
    from generators.write import rng_seed

    return rng_seed(bundle_id(CASE, params))


def _sibling(params: dict, k: int, c_in: int, c_out: int, rng: np.random.Generator) -> Sibling:
    """Conv k's weights, scale and bias, drawn in the first reproducers' order; the second one differs where asked."""
    kernel = 3 if params["kernel"] == "3x3" or (k == 1 and params["siblings"] == "other_kernel") else 1
    stride = 2 if k == 1 and params["siblings"] == "other_stride" else 1
    w = int8_weights(rng, (c_out, c_in, kernel, kernel))
    scale = channel_scales(rng, c_out)
    if params["weights"] == "per_tensor":
        scale = scale[0]
    bias = (rng.integers(-8, 9, size=c_out) * BIAS_SCALE).astype(np.float32)
    return Sibling(w, np.asarray(scale, np.float32), bias, kernel, stride)


def _activation(rewrite: str, count: int) -> Tuple[List[onnx.NodeProto], List[onnx.TensorProto]]:
    """x -> Q/DQ -> x_dq; with copies, x_dq<k> per Conv: a DequantizeLinear per Conv on the one QuantizeLinear
    ("dq_copies"), or a Q/DQ pair per Conv ("qdq_copies"), every copy with the same scale and zero point."""
    if rewrite == "qdq_copies":
        pairs = [qdq_pair("x", X_SCALE, f"x{k}", output=f"x_dq{k}") for k in range(count)]
        return [n for p in pairs for n in p[0]], [i for p in pairs for i in p[1]]
    nodes, inits = qdq_pair("x", X_SCALE, "x")
    if rewrite == "dq_copies":
        nodes = nodes[:1] + [node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], [f"x_dq{k}"])
                             for k in range(count)]
    return nodes, inits


def _apart(s: Sibling, k: int, tail: str, source: str) -> Tuple[List[onnx.NodeProto], List[onnx.TensorProto], str]:
    """Conv k on `source` (x_dq, or its copy) with its own weights: it writes c<k>, or y<k> itself where its output is
    a float graph output."""
    nodes, inits = weight_dq(f"w{k}", s.w, s.scale, axis=0)
    out = f"y{k}" if tail == "no" else f"c{k}"
    nodes = nodes + [node("Conv", [source, f"w{k}_dq", f"b{k}"], [out], **s.attrs())]
    return nodes, inits + [const(f"b{k}", s.bias)], f"node_of_{out}"


def _merged(siblings: List[Sibling], tail: str) -> Tuple[List[onnx.NodeProto], List[onnx.TensorProto], List[str]]:
    """The way around it: one Conv m with the siblings' weights, per-channel scales and biases concatenated, then a
    Split back into c0, c1, ... (y0, y1, ... where the outputs are float graph outputs)."""
    w = np.concatenate([s.w for s in siblings])
    scale = np.concatenate([s.channel_scales() for s in siblings])
    bias = np.concatenate([s.bias for s in siblings])
    nodes, inits = weight_dq("w", w, scale, axis=0)
    inits = inits + [const("b", bias), const("split", np.array([s.w.shape[0] for s in siblings], np.int64))]
    nodes = nodes + [
        node("Conv", ["x_dq", "w_dq", "b"], ["m"], **siblings[0].attrs()),
        node("Split", ["m", "split"], [f"{'y' if tail == 'no' else 'c'}{k}" for k in range(len(siblings))], axis=1),
    ]
    return nodes, inits, ["node_of_m"]


@dataclass(frozen=True)
class Tail:
    """What follows one Conv output (or all of them, concatenated): its nodes, initializers, graph output and step."""

    nodes: List[onnx.NodeProto]
    inits: List[onnx.TensorProto]
    output: Optional[onnx.ValueInfoProto]
    step: Optional[float]


def _tail(tail: str, k: int, conv: np.ndarray) -> Tail:
    """What follows Conv output c<k> (its float value `conv`) up to graph output y<k>; nothing where c<k> is y<k>."""
    out = value_info(f"y{k}", np.float32, conv.shape)
    if tail == "concat_qdq":
        return Tail([], [], None, None)
    if tail == "no":
        return Tail([], [], out, None)
    if tail == "identity":
        return Tail([node("Identity", [f"c{k}"], [f"y{k}"])], [], out, None)
    if tail == "relu_qdq":
        step = float(pow2_scale(float(np.max(np.maximum(conv, 0)))))
        pair, inits = qdq_pair(f"r{k}", step, f"r{k}", output=f"y{k}")
        return Tail([node("Relu", [f"c{k}"], [f"r{k}"])] + pair, inits, out, step)
    step = float(pow2_scale(float(np.max(np.abs(conv)))))
    pair, inits = qdq_pair(f"c{k}", step, f"c{k}", output=f"y{k}")
    return Tail(pair, inits, out, step)


def _concat(floats: List[np.ndarray]) -> Tail:
    """The Conv outputs concatenated along the channels, then Q/DQ: one graph output y."""
    joined = np.concatenate(floats, axis=1)
    step = float(pow2_scale(float(np.max(np.abs(joined)))))
    pair, inits = qdq_pair("c", step, "c", output="y")
    concat = node("Concat", [f"c{k}" for k in range(len(floats))], ["c"], axis=1)
    return Tail([concat] + pair, inits, value_info("y", np.float32, joined.shape), step)


def _notes(params: dict, siblings: List[Sibling], c_in: int, c_out: int, hw: int) -> str:
    """One line: the Convs, their input, their tail and the rewrite."""
    kernels = "/".join(dict.fromkeys(f"{s.kernel}x{s.kernel}" + (f" stride {s.stride}" if s.stride > 1 else "")
                                     for s in siblings))
    scales = "per-tensor" if params["weights"] == "per_tensor" else "per-channel"
    tail = {"yes": "each output quantized again", "no": "float outputs written by the Convs",
            "identity": "each output through an Identity", "relu_qdq": "each output through Relu then Q/DQ",
            "concat_qdq": "the outputs concatenated then Q/DQ"}[params["output_qdq"]]
    merged = {"none": "", "merged": "; the Convs merged into one and Split",
              "dq_copies": "; its DequantizeLinear copied per Conv", "qdq_copies": "; its Q/DQ pair copied per Conv"}[
        params["rewrite"]]
    convs = f"{len(siblings)} {kernels} Conv {c_in}->{c_out} ({scales} weights)"
    return f"{convs} on one Q/DQ input {hw}x{hw}; {tail}{merged}"
