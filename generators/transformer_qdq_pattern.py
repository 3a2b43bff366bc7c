"""Builder for case 012 `transformer_qdq_pattern`: one attention block with ModelOpt-style Q/DQ placement."""

from __future__ import annotations

from typing import Dict

import numpy as np

from generators.onnx_util import const, make_model, node, value_info
from generators.qdq_parts import X_SCALE, activations, channel_scales, dequantized, int8_weights, qdq_pair, weight_dq
from generators.reproducer import Reproducer

SEQ, HIDDEN, HEADS = 8, 32, 2
HEAD = HIDDEN // HEADS
ATTENTION_SCALE = 0.25  # 1 / sqrt(HEAD), exact
PROBS_SCALE = 1.0 / 127.0  # softmax output: calibrated amax 1.0, as pytorch-quantization and ModelOpt give it
EPS = 1e-5
HEADS_SHAPE = np.array([1, SEQ, HEADS, HEAD], dtype=np.int64)
TOKENS_SHAPE = np.array([1, SEQ, HIDDEN], dtype=np.int64)
PERMS = {"q": [0, 2, 1, 3], "k": [0, 2, 3, 1], "v": [0, 2, 1, 3]}  # k is laid out as K^T for Q.K^T


def three_scale(peak: float) -> np.float32:
    """3 * 2^j with peak at or below 100 steps: a value on a power-of-two grid is never a rounding tie at it."""
    return np.float32(3.0 * 2.0 ** np.ceil(np.log2(max(peak, 1e-6) / 300.0)))


def _fake_quant(x: np.ndarray, scale: float) -> np.ndarray:
    return np.clip(np.rint(x / scale), -128, 127) * scale


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def build(params: dict, rng: np.random.Generator) -> Reproducer:
    """x -> Q/DQ -> Q/K/V MatMuls -> [Q/DQ] BMM1 -> Softmax -> [Q/DQ] BMM2 -> Q/DQ -> out MatMul -> + x -> LayerNorm."""
    bmm_qdq = params["bmm_inputs"] == "both"
    x = activations(rng, (1, SEQ, HIDDEN))
    weights = {p: (int8_weights(rng, (HIDDEN, HIDDEN)), channel_scales(rng, HIDDEN)) for p in ("q", "k", "v", "o")}
    # The builder's own float64 forward pass sizes the activation scales; the expected outputs come from the reference.
    w = {p: dequantized(wq, s, 1) for p, (wq, s) in weights.items()}
    heads = {p: np.transpose((x @ w[p]).reshape(HEADS_SHAPE), PERMS[p]) for p in ("q", "k", "v")}
    scales: Dict[str, np.float32] = {p: three_scale(float(np.max(np.abs(t)))) for p, t in heads.items()}
    if bmm_qdq:
        heads = {p: _fake_quant(t, scales[p]) for p, t in heads.items()}
    probs = _softmax(ATTENTION_SCALE * (heads["q"] @ heads["k"]))
    if params["softmax_qdq"]:
        probs = _fake_quant(probs, PROBS_SCALE)
    ctx = np.transpose(probs @ heads["v"], (0, 2, 1, 3)).reshape(TOKENS_SHAPE)
    ctx_scale = three_scale(float(np.max(np.abs(ctx))))

    nodes, inits = qdq_pair("x", X_SCALE, "x")
    inits += [const("heads_shape", HEADS_SHAPE), const("tokens_shape", TOKENS_SHAPE),
              const("attention_scale", np.float32(ATTENTION_SCALE)), const("eps", np.float32(EPS))]
    for p, (wq, s) in weights.items():
        w_nodes, w_inits = weight_dq(f"w{p}", wq, s, axis=1)
        nodes, inits = nodes + w_nodes, inits + w_inits
    bmm_in = {}
    for p in ("q", "k", "v"):
        nodes += [
            node("MatMul", ["x_dq", f"w{p}_dq"], [f"{p}_lin"]),
            node("Reshape", [f"{p}_lin", "heads_shape"], [f"{p}_heads"]),
            node("Transpose", [f"{p}_heads"], [f"{p}_t"], perm=PERMS[p]),
        ]
        bmm_in[p] = f"{p}_t"
        if bmm_qdq:  # Q/DQ right at the BMM's input, after the Transpose, as the placement recommendations ask
            q_nodes, q_inits = qdq_pair(f"{p}_t", scales[p], f"{p}h")
            nodes, inits, bmm_in[p] = nodes + q_nodes, inits + q_inits, f"{p}h_dq"
    nodes += [
        node("MatMul", [bmm_in["q"], bmm_in["k"]], ["scores"]),
        node("Mul", ["scores", "attention_scale"], ["scaled"]),
        node("Softmax", ["scaled"], ["probs"], axis=-1),
    ]
    probs_in = "probs"
    if params["softmax_qdq"]:
        p_nodes, p_inits = qdq_pair("probs", PROBS_SCALE, "probs")
        nodes, inits, probs_in = nodes + p_nodes, inits + p_inits, "probs_dq"
    c_nodes, c_inits = qdq_pair("ctx_tokens", ctx_scale, "ctx")
    nodes += [
        node("MatMul", [probs_in, bmm_in["v"]], ["ctx"]),
        node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        node("Reshape", ["ctx_t", "tokens_shape"], ["ctx_tokens"]),
    ] + c_nodes + [
        node("MatMul", ["ctx_dq", "wo_dq"], ["attn_out"]),
        # Residual Add and LayerNorm (opset-13 export: ReduceMean, Sub, Mul, Sqrt, Div) stay in float.
        node("Add", ["attn_out", "x"], ["h"]),
        node("ReduceMean", ["h"], ["h_mean"], axes=[-1], keepdims=1),
        node("Sub", ["h", "h_mean"], ["h_centred"]),
        node("Mul", ["h_centred", "h_centred"], ["h_sq"]),
        node("ReduceMean", ["h_sq"], ["h_var"], axes=[-1], keepdims=1),
        node("Add", ["h_var", "eps"], ["h_var_eps"]),
        node("Sqrt", ["h_var_eps"], ["h_std"]),
        node("Div", ["h_centred", "h_std"], ["y"]),
    ]
    inits += c_inits
    model = make_model(
        "transformer_qdq_pattern", nodes, [value_info("x", np.float32, x.shape)],
        [value_info("y", np.float32, x.shape)], inits,
    )
    return Reproducer(
        model=model,
        inputs={"x": x},
        target_nodes=("node_of_scores", "node_of_ctx"),
        output_steps={"y": None},
        trt={"int8": True},
        notes=(f"attention block, seq {SEQ}, hidden {HIDDEN}, {HEADS} heads; BMM input Q/DQ: {params['bmm_inputs']}, "
               f"softmax output Q/DQ: {'yes' if params['softmax_qdq'] else 'no'}; residual Add and LayerNorm in float"),
    )
