"""chooseHigherPrecision on TensorRT 8.6.0, found here: reports/observed/nvidia-h100/reduce-choosehigherprecision/.

One Q/DQ activation read by two 1x1 Convs whose outputs are quantized again. Found by this project, not yet reported
upstream (its bug bundle is what to file). The YOLOX-style detector of the `ddddocr` 1.6.1 wheel, quantized by
onnxruntime's `quantize_static` in TensorRT settings (Q/DQ on the Conv inputs, symmetric int8, per-channel weights,
float bias), parses on TensorRT 8.6.0 and fails at build with "[graphOptimizer.cpp::chooseHigherPrecision::7079] Error
Code 2: Internal Error (Assertion dt1 == DataType::kFLOAT || dt1 == DataType::kHALF failed.)"; 8.5.3.1 logs the same
assertion (chooseHigherPrecision::6867) and ends with "Assertion engine != nullptr failed" (an H100, 2026-11-27).
`python -m check.reduce` on the H100 cut the 655-node graph to 10 nodes in 14 builds: one int8 activation [1, 48, 104,
104] -> Q/DQ, read by two 1x1 Convs (48 -> 24, per-channel int8 weights, a float bias) -- the split at the head of a CSP
block -- each Conv's output quantized again (Q/DQ) and a graph output. Seed 024's SiLU forms do not trigger it: there is
no Sigmoid here at all.

The sweep asks what the failure needs: both Convs (`consumers`), the requantized outputs (`output_qdq`), and the
detector's size or a small one (`size`). The reproducers carry seeded weights, not the detector's. Observed on an H100
(2026-11-27, reports/observed/nvidia-h100/seed-032/): with both Convs *and* requantized outputs the build fails on 8.6.0
and 8.5.3.1 with the chooseHigherPrecision assertion (8.5.3.1 then "Assertion engine != nullptr"), at both sizes; with
one Conv, or float outputs, every form builds with its Convs in INT8. The weights and the size do not matter; the
fan-out into two requantized Convs does. Every expectation is a baseline: no upstream source documents it yet.

Its extent (issue 44), observed on an H200 on every 8.x version (2026-11-28,
reports/observed/nvidia-h200/round-2026-11-28/: all 37 reproducers on 8.5.1.7, 8.5.2.2, 8.5.3.1 and 8.6.0, the same
outcome on each). The sweep varies one axis at a
time from the first 8 reproducers (FORMS; the axes added since are left out of the ids at their first value,
`Case.defaults`): what follows each Conv (`output_qdq`: `yes` Q/DQ, `no` the Conv writes a float graph output,
`identity` an Identity then the graph output, `relu_qdq` a Relu then Q/DQ, `concat_qdq` the outputs concatenated then
Q/DQ), the `kernel` (1x1, or 3x3 with pads 1; `kernel_shape` is always set, as TensorRT 8.6.0 needs for a Conv whose
weights come from a DequantizeLinear), the `consumers` (one, two or three Convs), the `weights` (per-channel or
per-tensor scales), the `size`, and `siblings` that differ (`other_kernel`: the second Conv 3x3; `other_stride`: its
stride 2). What triggers it, as the cells show: two or three sibling Convs with the same kernel and stride on one
Q/DQ activation whose outputs end alike in a typed node (a Q/DQ, a Relu then a Q/DQ, an Identity, or one Concat then
a Q/DQ), whatever the kernel (1x1, 3x3), the weights' scales (per-channel, per-tensor) and the size: 11 of 11 such
forms fail to build on every 8.x version. Each Conv writing a float graph output itself builds (two or three Convs:
"float outputs build" holds only there, an Identity after each Conv does not save it), one Conv builds, and siblings
of another kernel or stride build.

The way around it, proven on every 8.x version (the same cells): `rewrite=merged` builds the same network with the
sibling Convs merged into one Conv (weights, per-channel scales and biases concatenated; a per-tensor weight scale
repeated per channel) and a Split, each half's tail as before. All 11 merged forms build and run with the merged Conv in
INT8 on 8.5.1.7, 8.5.2.2, 8.5.3.1 and 8.6.0, and their reference outputs are bit-identical to the unmerged forms'
(tests/cases/per_case/test_two_conv_fanout_qdq.py). `check` offers it for a user's model that matches the pattern
(check/rewrite.py): it writes the merged model, shows its outputs equal the original's on the reference and names these
cells; on the ddddocr detector itself (an H200, reports/observed/nvidia-h200/check-ddddocr-2026-11-28/) the quantized
model fails on 8.5.3.1 and 8.6.0 and its merged rewrite builds on 8.6.0. Not a way around it (an independent check on
8.6.0, issue 44, and this project's H200 records, reports/observed/nvidia-h200/builder-settings-2026-11-28/, on every
8.x version): FP16, DIRECT_IO, builder optimization levels 0 to 5 (8.6.0), and a DequantizeLinear or Q/DQ pair copied
per Conv (TensorRT merges the copies back). The copies are reproducers, `rewrite=dq_copies` and `rewrite=qdq_copies` on
the trigger forms (the twin's seed, its reference outputs bit for bit), observed on an H200 on every 8.x version
(2026-11-28, reports/observed/nvidia-h200/round-2026-11-28b/): 16 of 16 fail to build with the same assertion, as their
unedited twins do. The record: docs/findings.md, seed 032.

The pattern (the lint's rule, `match_fanout`): two or more sibling Convs with INT8 weights reading one Q/DQ
activation (or copies of its DequantizeLinear or Q/DQ pair, with the same scale and zero point), with the same
kernel and stride (their output channels may differ), whose outputs end in the same kind of typed node. It declines
the sweep's controls (one Conv, float outputs, siblings that differ, the merged form) and says which of the case's axes
the user's graph decides (tail, consumers, kernel, weights, copies), so that its prediction is the expectation of the
reproducer that matches the graph.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from cases.base import Case, Expectation, Signature
from cases.pattern import Graph, Match, Pattern, activation_dq, attr, constant_dq, node_name, quantized_after
from cases.silu_qdq import QDQ_PLACEMENT
from core.engines import pin_group

DDDDOCR = "https://pypi.org/project/ddddocr/1.6.1/"  # the wheel that ships the detector it was reduced from
# Observed (a baseline): the reduced detector graph, and then these reproducers, on TensorRT 8.5.3.1 and 8.6.0, an H100.
OBSERVED = "reports/observed/nvidia-h100/reduce-choosehigherprecision/tensorrt-{}.jsonl"
OBSERVED_REPRO = "reports/observed/nvidia-h100/seed-032/trt-{}.jsonl"
OBSERVED_EARLIER = "reports/observed/nvidia-h100/seeds-026-032-x4/trt-{}.jsonl"  # 8.5.1.7, 8.5.2.2: a 4x H100 host
# The axes added for issue 44, at the value the first 8 reproducers had: their ids leave them out.
ADDED = {"kernel": "1x1", "weights": "per_channel", "siblings": "alike", "rewrite": "none"}
FIRST = {k: (v,) for k, v in ADDED.items()}  # the first 8 reproducers' region: what their baselines observed
TRIGGER = {"consumers": ("two",), "output_qdq": ("yes",), **FIRST}  # both Convs read the one Q/DQ, both requantized
ONE = {"consumers": ("one",), "output_qdq": ("yes", "no"), **FIRST}
FLOAT = {"consumers": ("two", "one"), "output_qdq": ("no",), **FIRST}
TRIGGERS = ("yes", "identity", "relu_qdq", "concat_qdq")  # the tails seen to fail with sibling Convs
COPIES = ("dq_copies", "qdq_copies")  # the shared activation's DequantizeLinear, or its Q/DQ pair, copied per Conv
# The reproducers: each line a product of the values it names, every added axis it does not name at its ADDED value.
FORMS = (
    {"consumers": ("two", "one"), "output_qdq": ("yes", "no"), "size": ("detector", "small")},  # the first 8
    {"consumers": ("two",), "output_qdq": ("identity", "relu_qdq", "concat_qdq"), "size": ("detector", "small")},
    {"consumers": ("one",), "output_qdq": ("identity", "relu_qdq"), "size": ("small",)},
    {"consumers": ("two",), "output_qdq": ("yes", "no"), "size": ("small",), "kernel": ("3x3",)},
    {"consumers": ("three",), "output_qdq": ("yes", "no"), "size": ("small",)},
    {"consumers": ("two",), "output_qdq": ("yes", "no"), "size": ("small",), "weights": ("per_tensor",)},
    {"consumers": ("two",), "output_qdq": ("yes", "identity"), "size": ("small",),
     "siblings": ("other_kernel", "other_stride")},
    # The way around it, for the trigger forms above.
    {"consumers": ("two",), "output_qdq": TRIGGERS, "size": ("detector", "small"), "rewrite": ("merged",)},
    {"consumers": ("two",), "output_qdq": ("yes",), "size": ("small",), "kernel": ("3x3",), "rewrite": ("merged",)},
    {"consumers": ("three",), "output_qdq": ("yes",), "size": ("small",), "rewrite": ("merged",)},
    {"consumers": ("two",), "output_qdq": ("yes",), "size": ("small",), "weights": ("per_tensor",),
     "rewrite": ("merged",)},
    # What the field tried and TensorRT reportedly merges back (issue 44): a copy of the shared DequantizeLinear, or of
    # the Q/DQ pair, per Conv; on the trigger forms, small (the size does not matter) and the reduced detector's.
    {"consumers": ("two",), "output_qdq": ("yes",), "size": ("detector",), "rewrite": COPIES},
    {"consumers": ("two",), "output_qdq": TRIGGERS, "size": ("small",), "rewrite": COPIES},
    {"consumers": ("two",), "output_qdq": ("yes",), "size": ("small",), "kernel": ("3x3",), "rewrite": COPIES},
    {"consumers": ("three",), "output_qdq": ("yes",), "size": ("small",), "rewrite": COPIES},
    {"consumers": ("two",), "output_qdq": ("yes",), "size": ("small",), "weights": ("per_tensor",),
     "rewrite": COPIES},
)
H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"
OBSERVED_SWEEP = "reports/observed/nvidia-h200/round-2026-11-28/trt-{}.jsonl"  # all 37, every 8.x version, an H200
OBSERVED_COPIES = "reports/observed/nvidia-h200/round-2026-11-28b/trt-{}.jsonl"  # the 16 copy forms, every 8.x version
ALIKE = {"siblings": ("alike",), "rewrite": ("none",)}
SWEEP_FAILS = {"consumers": ("two", "three"), "output_qdq": TRIGGERS, **ALIKE}  # sibling Convs with typed tails
SWEEP_BUILDS = ({"consumers": ("one",), **ALIKE}, {"output_qdq": ("no",), **ALIKE},
                {"siblings": ("other_kernel", "other_stride")}, {"rewrite": ("merged",)})
BUILDS_WHY = ("one Conv: it builds in INT8 and matches", "float outputs each Conv writes itself: they build in INT8",
              "siblings of another kernel or stride: they build in INT8",
              "the way around it, the sibling Convs merged into one Conv and a Split: it builds in INT8")

CHOOSE_HIGHER_PRECISION = Signature(
    name="choose_higher_precision",
    # 8.6.0: "[graphOptimizer.cpp::chooseHigherPrecision::7079] Error Code 2: Internal Error (Assertion dt1 ==
    # DataType::kFLOAT || dt1 == DataType::kHALF failed. )"
    pattern=r"chooseHigherPrecision[^\n]*Assertion dt1 == DataType::kFLOAT \|\| dt1 == DataType::kHALF failed",
    kind="error",
    short="chooseHigherPrecision assertion",
    source=OBSERVED_REPRO.format("8.6.0"),
    basis="baseline",
)
# No signature for 8.5.x's last words, "[builder.cpp::buildSerializedNetwork::751] Error Code 2: Internal Error
# (Assertion engine != nullptr failed. )": 8.5 ends every failed build so, whatever failed (the observed cells of eight
# other cases say it), and each of this case's failing 8.5 cells prints the chooseHigherPrecision assertion first.


def _swept(params: dict) -> bool:
    """Whether a combination is one of FORMS."""
    return any(all(params[k] in form.get(k, (ADDED.get(k),)) for k in params) for form in FORMS)


def _earlier(version: str) -> tuple:
    """The baselines of an 8.5 release that a 4x H100 host observed (seeds-026-032-x4/): as on 8.5.3.1."""
    source = OBSERVED_EARLIER.format(version)
    return (
        Expectation(
            "tensorrt", f"=={version}", "fail", source, stage="build", signature=CHOOSE_HIGHER_PRECISION.name,
            where=TRIGGER, hardware=H100, basis="baseline",
            note="observed at both sizes, as on 8.5.3.1: the log's chooseHigherPrecision assertion, then "
            "'Assertion engine != nullptr failed' as the error",
        ),
        Expectation(
            "tensorrt", f"=={version}", "int8", source, where=ONE, hardware=H100,
            basis="baseline", note="one Conv: it builds in INT8 and matches, requantized or not",
        ),
        Expectation(
            "tensorrt", f"=={version}", "int8", source, where=FLOAT, hardware=H100,
            basis="baseline", note="float outputs: both Convs build in INT8 and match",
        ),
    )


def _sweep(version: str) -> tuple:
    """The H200 baselines of one 8.x version over the whole sweep (round-2026-11-28/): what fails and what builds."""
    source = OBSERVED_SWEEP.format(version)
    return (
        Expectation("tensorrt", f"=={version}", "fail", source, stage="build", signature=CHOOSE_HIGHER_PRECISION.name,
                    where=SWEEP_FAILS, hardware=H200, basis="baseline",
                    note="sibling Convs on one Q/DQ activation whose outputs end alike in a typed node (Q/DQ, Relu "
                    "then Q/DQ, Identity, Concat then Q/DQ): 11 of 11 forms fail to build"),
        *(Expectation("tensorrt", f"=={version}", "int8", source, where=where, hardware=H200, basis="baseline",
                      note=why) for where, why in zip(SWEEP_BUILDS, BUILDS_WHY)),
        Expectation("tensorrt", f"=={version}", "fail", OBSERVED_COPIES.format(version), stage="build",
                    signature=CHOOSE_HIGHER_PRECISION.name, where={"rewrite": COPIES}, hardware=H200,
                    basis="baseline", note="the shared DequantizeLinear, or its Q/DQ pair, copied per Conv: TensorRT "
                    "merges the copies back, and 16 of 16 forms fail to build as their unedited twins do"),
    )


FIX_MERGE = ("merge the sibling Convs into one Conv (their weights, per-channel scales and biases concatenated on the "
             "output channels) followed by a Split: it builds in INT8 on TensorRT 8.5.1.7, 8.5.2.2, 8.5.3.1 and 8.6.0 "
             "(reports/observed/nvidia-h200/round-2026-11-28/, every rewrite=merged reproducer)")


def _tail(g: Graph, conv: Any) -> str:
    """What a Conv's output ends in: "qdq" (a Q/DQ), "relu_qdq" (a Relu, then a Q/DQ), "identity", "concat_qdq" (a
    Concat, then a Q/DQ), else "" (a float graph output, or anything else)."""
    users = g.users(conv.output[0])
    if len(users) != 1:
        return ""
    if users[0].op_type == "QuantizeLinear":
        return "qdq"
    if users[0].op_type == "Identity":
        return "identity"
    if users[0].op_type == "Relu" and quantized_after(g, users[0].output[0]) is not None:
        return "relu_qdq"
    if users[0].op_type == "Concat" and quantized_after(g, users[0].output[0]) is not None:
        return "concat_qdq"
    return ""


def _same_constants(g: Graph, a: Any, b: Any) -> bool:
    """Whether two Q/DQ nodes read the same scale and zero point (the same tensors, or constants of equal value)."""
    if len(a.input) != len(b.input):
        return False
    for x, y in zip(a.input[1:], b.input[1:]):
        if x != y and not (x in g.const and y in g.const and g.const[x].tolist() == g.const[y].tolist()):
            return False
    return True


def _copies(g: Graph, dq: Any) -> Tuple[List[Any], str]:
    """The activation DequantizeLinears that compute what `dq` does: it and its copies on the same QuantizeLinear
    ("dq_copies"), or on copies of that QuantizeLinear, reading the same tensor ("qdq_copies"); "none": it alone."""
    q = g.producer[dq.input[0]]
    quantizers = [u for u in g.users(q.input[0]) if u.op_type == "QuantizeLinear" and _same_constants(g, u, q)]
    dqs = [u for qq in quantizers for u in g.users(qq.output[0])
           if u.op_type == "DequantizeLinear" and _same_constants(g, u, dq)]
    return dqs, "qdq_copies" if len(quantizers) > 1 else "dq_copies" if len(dqs) > 1 else "none"


def _siblings(g: Graph, dqs: List[Any]) -> Dict[Tuple[Any, ...], List[Any]]:
    """The INT8-weight Convs reading one activation DequantizeLinear (or its copies), by kernel, stride and tail."""
    groups: Dict[Tuple[Any, ...], List[Any]] = {}
    for conv in (c for dq in dqs for c in g.users(dq.output[0]) if c.input[0] == dq.output[0]):
        if conv.op_type != "Conv" or len(conv.input) < 2:
            continue
        w = constant_dq(g, conv.input[1])
        tail = _tail(g, conv)
        if w is None or g.dtype(w.input[0]) != "int8" or not tail:
            continue
        kernel = attr(conv, "kernel_shape") or list(g.const[w.input[0]].shape[2:])
        strides = attr(conv, "strides") or [1] * len(kernel)
        groups.setdefault((tuple(kernel), tuple(strides), tail), []).append(conv)
    return groups


def match_fanout(g: Graph, conv: Any) -> List[Match]:
    """A Conv with one or more siblings of its kernel, stride and tail on the same Q/DQ activation."""
    dq = activation_dq(g, conv.input[0]) if conv.input else None
    if dq is None or g.op(dq.input[0]) != "QuantizeLinear":
        return []
    dqs, copies = _copies(g, dq)
    for (kernel, strides, tail), convs in _siblings(g, dqs).items():
        if conv in convs and len(convs) > 1:
            others = ", ".join(node_name(c) for c in convs if c is not conv)
            shared = dq.output[0] + {"none": "", "dq_copies": " (its DequantizeLinear copied per Conv)",
                                     "qdq_copies": " (its Q/DQ pair copied per Conv)"}[copies]
            note = (f"{len(convs)} sibling Convs on {shared} (kernel {list(kernel)}, stride {list(strides)}, "
                    f"each ending in {tail.replace('_', ' then ')}; with {others})")
            return [Match(node_name(conv), _decided(g, convs, kernel, tail, copies), target="node_of_c0", note=note)]
    return []


def _decided(g: Graph, convs: List[Any], kernel: Tuple[Any, ...], tail: str, copies: str) -> Dict[str, str]:
    """The case's axes a user's sibling Convs decide: their tail and number, whether they read copies of the one Q/DQ,
    and the kernel and weight scales where the sweep has them (an axis the graph cannot tell is left out, and every
    reproducer of it speaks)."""
    decided = {"output_qdq": "yes" if tail == "qdq" else tail, "siblings": "alike", "rewrite": copies}
    if len(convs) in (2, 3):
        decided["consumers"] = "two" if len(convs) == 2 else "three"
    if list(kernel) in ([1, 1], [3, 3]):
        decided["kernel"] = f"{kernel[0]}x{kernel[1]}"
    scales = [g.const.get(constant_dq(g, c.input[1]).input[1]) for c in convs]
    if all(s is not None for s in scales):
        decided["weights"] = "per_tensor" if all(s.size == 1 for s in scales) else "per_channel"
    return decided


PATTERN = Pattern(
    rules={"two_conv_fanout_qdq": "sibling INT8 Convs on one Q/DQ activation, requantized"},
    ops=("Conv",),
    match=match_fanout,
    fix=FIX_MERGE,
    controls=({"consumers": ("one",)}, {"output_qdq": ("no",)}, {"siblings": ("other_kernel", "other_stride")},
              {"rewrite": ("merged",)}),
)

CASE = Case(
    id="two_conv_fanout_qdq",
    seed="032",
    title="Sibling INT8 Convs on one Q/DQ activation with typed outputs: TensorRT 8.5-8.6.0's chooseHigherPrecision",
    links=(DDDDOCR, QDQ_PLACEMENT),
    axes={
        "consumers": ("two", "one", "three"),
        "output_qdq": ("yes", "no", "identity", "relu_qdq", "concat_qdq"),
        "size": ("detector", "small"),
        "kernel": ("1x1", "3x3"),
        "weights": ("per_channel", "per_tensor"),
        "siblings": ("alike", "other_kernel", "other_stride"),
        "rewrite": ("none", "merged", "dq_copies", "qdq_copies"),
    },
    target_nodes=("node_of_y0", "node_of_c0", "node_of_y1", "node_of_c1", "node_of_c2", "node_of_y2", "node_of_m"),
    signatures=(CHOOSE_HIGHER_PRECISION,),
    expectations=(
        Expectation(
            "tensorrt", "==8.6.0", "fail", OBSERVED_REPRO.format("8.6.0"), stage="build",
            signature=CHOOSE_HIGHER_PRECISION.name, where=TRIGGER, hardware=H100, basis="baseline",
            note="observed at both sizes (as on the reduced detector graph, reduce-choosehigherprecision/)",
        ),
        Expectation(
            "tensorrt", "==8.5.3.1", "fail", OBSERVED_REPRO.format("8.5.3.1"), stage="build",
            signature=CHOOSE_HIGHER_PRECISION.name, where=TRIGGER, hardware=H100, basis="baseline",
            note="observed at both sizes: the log's chooseHigherPrecision assertion (line 6867), then "
            "'Assertion engine != nullptr failed' as the error",
        ),
        Expectation(
            "tensorrt", "==8.6.0", "int8", OBSERVED_REPRO.format("8.6.0"), where=ONE,
            hardware=H100, basis="baseline", note="one Conv: it builds in INT8 and matches, requantized or not",
        ),
        Expectation(
            "tensorrt", "==8.6.0", "int8", OBSERVED_REPRO.format("8.6.0"), where=FLOAT,
            hardware=H100, basis="baseline", note="float outputs: both Convs build in INT8 and match",
        ),
        Expectation(
            "tensorrt", "==8.5.3.1", "int8", OBSERVED_REPRO.format("8.5.3.1"), where=ONE,
            hardware=H100, basis="baseline", note="one Conv: it builds in INT8 and matches, requantized or not",
        ),
        Expectation(
            "tensorrt", "==8.5.3.1", "int8", OBSERVED_REPRO.format("8.5.3.1"), where=FLOAT,
            hardware=H100, basis="baseline", note="float outputs: both Convs build in INT8 and match",
        ),
        *_earlier("8.5.1.7"),
        *_earlier("8.5.2.2"),
        *(e for v in pin_group("trt").versions for e in _sweep(v)),  # every 8.x version PyPI ships whole
    ),
    builder="generators.two_conv_fanout_qdq:build",
    valid=_swept,
    defaults=ADDED,
    pattern=PATTERN,
)
