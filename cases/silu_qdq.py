"""INT8 Conv + SiLU, NVIDIA/TensorRT#3640 and #4555: 'Could not find any implementation for node ... PWN(Sigmoid, Mul)'.

YOLO's activation is SiLU, written by exporters as Sigmoid and Mul (x * Sigmoid(x)). Building it in INT8 fails on
TensorRT 8.x with no implementation for the fused pointwise node. Which Q/DQ placement does it, per version?

What the sources cover:
- implicit: #4555 (8.6.1, GeForce RTX 4060, 2025-08, open) builds a float yolov8n-seg with `trtexec --int8 --calib=none`
  (dummy ranges on every tensor) and fails at /model.22/proto/cv3/conv/Conv + PWN(PWN(Sigmoid), Mul); the reporter
  saw the same on "the higher version", while the Python API built it. #3640 (8.6.2, Jetson AGX Orin, closed) fails at
  the stem, /model.0/conv/Conv + PWN(PWN(Sigmoid), Mul), exporting a float YOLOv8 ONNX to an INT8 engine (implicit
  INT8), and saw it on JetPack 5.1.2 (TensorRT 8.5.2) before.
  ultralytics/ultralytics#21281 shows it with a MinMax calibrator on TensorRT 10.11 (x86, 2025-07). This form is the
  threads' graph: no Q/DQ, an INT8 build with `trtexec`'s dummy ranges, as #4555 runs it. TensorRT-RTX and TensorRT
  11 have no implicit INT8: their cells are not applicable.
- quantize_static: onnxruntime's `quantize_static` with TensorRT settings (symmetric INT8, per-channel weights) puts a
  Q/DQ after the Conv, after the Sigmoid and after the Mul. The project's YOLO-style model of that form
  (check/arch_models.py, yolo_csp_trt) failed to build on an H100 and an H200 (2026-11-24), fixed shape or a range
  profile alike: 8.6.0 names 'PWN(PWN(/model.0/act/Sigmoid), PWN(/model.0/act/Mul))', the stem's SiLU without its
  Conv; 8.5.3.1 skips every tactic ("Mismatch between node and runner quantizations") and ends in "Assertion engine
  != nullptr failed". Those observed cells are the source for the stem's Conv + SiLU here; this reproducer, observed
  on 8.5.1.7 to 8.6.0 (an H100 and an H200, 2026-11-24, equal cell for cell), fails at build on every one: 8.6.0 with no
  implementation for PWN(PWN(Sigmoid), PWN(Mul)), the 8.5 releases with "Assertion engine != nullptr failed" after the
  runner-quantization mismatches.
- no_sigmoid_qdq, output_qdq, conv_only: ours to observe. no_sigmoid_qdq is quantize_static's form without the
  Sigmoid's own Q/DQ (is that Q/DQ inside the SiLU the trigger?); output_qdq is a QAT export's (the next Conv's input
  Q/DQ after the Mul; #3385's "DQ > DwConv > BN > Swish > Q", seed 003, for a dense Conv); conv_only is TensorRT's
  recommended placement (Q/DQ on the Conv's inputs only, the SiLU left to fuse into its epilogue). Observed on 8.5.1.7
  to 8.6.0 (H100, H200): all three build with the Conv in INT8, so the Sigmoid's own Q/DQ is the trigger.
- implicit on an H100 or H200 builds on 8.5.1.7 to 8.6.0, the stem's 3-channel Conv in float: the threads' failures
  were on other GPUs (a GeForce RTX 4060, a Jetson AGX Orin) and on whole networks, so 8.5.2.2's cell reads "fixed"
  against #3640's Orin report, which names its hardware.

The reproducer is YOLOv8's stem at 1/10 the image size: x [1, 3, 64, 64] -> Q/DQ -> 3x3 Conv 3->16, stride 2, INT8
weights per output channel, a float bias -> SiLU -> y [1, 16, 32, 32], static shapes (the profile did not matter).
Scales are powers of two sized to the data; the target is the Conv.

TensorRT-RTX with no GPU (our runs, no source documents them: their cells say "undocumented"): 1.4 to 1.6 refuse every
explicit form at build, as they refuse every INT8 convolution (seed 013's cuDNN dtype check); 1.7.1.116 builds all four,
the Conv in INT8 for SM80 on and in float for SM75, as it builds the whole YOLO-style model. ONNX Runtime and OpenVINO
run every form within a step of the reference.
"""

from __future__ import annotations

from typing import Any, List, Optional

from cases.base import Case, Expectation, Signature
from cases.pattern import Graph, Match, Pattern, attr, matches, quantized_after, through_qdq

ISSUE_3640 = "https://github.com/NVIDIA/TensorRT/issues/3640"
ISSUE_4555 = "https://github.com/NVIDIA/TensorRT/issues/4555"
ULTRALYTICS_21281 = "https://github.com/ultralytics/ultralytics/issues/21281"
QDQ_PLACEMENT = "https://docs.nvidia.com/deeplearning/tensorrt/developer-guide/index.html#qdq-placement-recs"

# Baselines (our own observed cells, not documentation): the YOLO-style model quantized with TensorRT settings, fixed
# shape and a range profile, on an H200 (the H100's cells, with the range profile, say the same).
OBSERVED_86 = "reports/observed/nvidia-h200/check-archs/tensorrt-8.6.0.jsonl"
OBSERVED_85 = "reports/observed/nvidia-h200/check-archs/tensorrt-8.5.3.1.jsonl"
# This reproducer on TensorRT 8.5.1.7-8.6.0, an H100 (the H200's cells in nvidia-h200/seeds-024-025/ are the same).
OBSERVED_REPRO = "reports/observed/nvidia-h100/seeds-024-025/trt-{}.jsonl"

SILU_NO_IMPLEMENTATION = Signature(
    name="silu_no_implementation",
    # #3640 (8.6.2): "Error Code 10: Internal Error (Could not find any implementation for node /model.0/conv/Conv +
    # PWN(PWN(/model.0/act/Sigmoid), /model.0/act/Mul).)"; 8.6.0 on quantize_static's form names the pointwise node
    # alone, "PWN(PWN(/model.0/act/Sigmoid), PWN(/model.0/act/Mul))". Our Sigmoid node is node_of_sigmoid.
    pattern=r"Could not find any implementation for node [^\n]*PWN\(PWN\([^()\n]*[Ss]igmoid",
    kind="error",
    short="no INT8 SiLU implementation",
    source=ISSUE_3640,
)
RUNNER_QUANTIZATION_MISMATCH = Signature(
    name="runner_quantization_mismatch",
    # 8.5.3.1 on quantize_static's form: every tactic of the SiLU is skipped with "Assertion t.size() >= s.size()
    # failed. Mismatch between node and runner quantizations", then "Assertion engine != nullptr failed."
    pattern=r"Mismatch between node and runner quantizations",
    kind="error",
    short="node and runner quantizations differ",
    source=OBSERVED_85,
    basis="baseline",
)

# Where each explicit form puts a Q/DQ: (after the Conv, after the Sigmoid, after the Mul). The generator builds from
# it; the lint reads a model's SiLU back into a form with it.
QDQ_AFTER = {
    "quantize_static": (True, True, True),
    "no_sigmoid_qdq": (True, False, True),
    "output_qdq": (False, False, True),
    "conv_only": (False, False, False),
}
FORMS = ("implicit", *QDQ_AFTER)


def silu_form(g: Graph, conv: Any) -> Optional[str]:
    """The form of a dense Conv (a grouped one is seed 003's) with DequantizeLinear weights whose output is a SiLU, by
    where its Q/DQ sit; None otherwise (the implicit form has no Q/DQ: a float model's rule speaks for it)."""
    if conv.op_type != "Conv" or len(conv.input) < 2 or g.op(conv.input[1]) != "DequantizeLinear" \
            or attr(conv, "group", 1) != 1:
        return None
    x, after_conv = through_qdq(g, conv.output[0])
    sigmoid = next((u for u in g.users(x) if u.op_type == "Sigmoid"), None)
    if sigmoid is None:
        return None
    gate, after_sigmoid = through_qdq(g, sigmoid.output[0])
    mul = next((u for u in g.users(x) if u.op_type == "Mul" and gate in u.input), None)
    if mul is None:
        return None
    after_mul = quantized_after(g, mul.output[0]) is not None
    return next((f for f, where in QDQ_AFTER.items() if where == (after_conv, after_sigmoid, after_mul)), None)


def match_silu(g: Graph, n: Any) -> List[Match]:
    """A quantized Conv and its SiLU (Sigmoid(x) * x), by where the Q/DQ around the SiLU sit."""
    form = silu_form(g, n)
    return [] if form is None else matches(n, {"form": form}, target="node_of_conv")


PATTERN = Pattern(rules={"silu_qdq": "Q/DQ inside a SiLU after an INT8 Conv"}, ops=("Conv",), match=match_silu,
                  controls=({"form": ("implicit",)},))


CASE = Case(
    id="silu_qdq",
    seed="024",
    title="INT8 Conv + SiLU (Sigmoid * Mul): Q/DQ where quantize_static, a QAT export or TensorRT put it, or implicit",
    links=(ISSUE_3640, ISSUE_4555, ULTRALYTICS_21281, QDQ_PLACEMENT),
    axes={"form": FORMS},
    target_nodes=("node_of_conv",),
    signatures=(SILU_NO_IMPLEMENTATION, RUNNER_QUANTIZATION_MISMATCH),
    expectations=(
        Expectation(
            "tensorrt", ">=8.6.1,<8.7", "fail", ISSUE_4555, stage="build", signature=SILU_NO_IMPLEMENTATION.name,
            where={"form": ("implicit",)}, hardware="GeForce RTX 4060",
            note="trtexec --int8 --calib=none on a float yolov8n-seg with a shape range (8.6.1; 'the higher version' "
            "too, unnamed; the reporter's Python API build succeeded); #3640 saw it on 8.6.2 (Jetson AGX Orin) at the "
            "stem's Conv + SiLU",
        ),
        Expectation(
            "tensorrt", "==8.5.2.*", "fail", ISSUE_3640, stage="build", where={"form": ("implicit",)},
            hardware="Jetson AGX Orin",
            note="the reporter: 'I also tried this previously on JetPack 5.1.2 and it failed with the same issue' "
            "(JetPack 5.1.2 ships TensorRT 8.5.2); implicit INT8 of a float YOLOv8 model",
        ),
        Expectation(
            "tensorrt", "==10.11.*", "fail", ULTRALYTICS_21281, stage="build", signature=SILU_NO_IMPLEMENTATION.name,
            where={"form": ("implicit",)},
            note="ultralytics' INT8 export (MinMax calibrator) of yolo11n-seg on an x86 GPU: 'Could not find any "
            "implementation for node /model.23/proto/cv3/conv/Conv + PWN(PWN(Sigmoid), PWN(Mul))'",
        ),
        Expectation(
            "tensorrt", "==8.6.0", "fail", OBSERVED_86, stage="build", signature=SILU_NO_IMPLEMENTATION.name,
            where={"form": ("quantize_static",)}, hardware="NVIDIA H100 and H200", basis="baseline",
            note="observed on the YOLO-style model quantized by quantize_static with TensorRT settings, fixed shape "
            "and a range profile: no implementation for the stem's PWN(PWN(Sigmoid), PWN(Mul))",
        ),
        Expectation(
            "tensorrt", "==8.5.3.1", "fail", OBSERVED_85, stage="build", signature=RUNNER_QUANTIZATION_MISMATCH.name,
            where={"form": ("quantize_static",)}, hardware="NVIDIA H100 and H200", basis="baseline",
            note="observed on the same model: every tactic skipped ('Mismatch between node and runner "
            "quantizations'), then 'Assertion engine != nullptr failed'",
        ),
        Expectation(
            "tensorrt", ">=8.5.1,<8.5.3", "fail", OBSERVED_REPRO.format("8.5.2.2"), stage="build",
            signature=RUNNER_QUANTIZATION_MISMATCH.name, where={"form": ("quantize_static",)},
            hardware="NVIDIA H100 and H200", basis="baseline",
            note="observed on 8.5.1.7 and 8.5.2.2 (this reproducer, H100 and H200): 'Mismatch between node and runner "
            "quantizations' on the SiLU's tactics, then 'Assertion engine != nullptr failed'",
        ),
        Expectation(
            "tensorrt", ">=8.5,<8.7", "int8", OBSERVED_REPRO.format("8.6.0"), hardware="NVIDIA H100 and H200",
            basis="baseline",
            where={"form": ("no_sigmoid_qdq", "output_qdq", "conv_only")},
            note="observed on 8.5.1.7, 8.5.2.2, 8.5.3.1 and 8.6.0 (the folder's four files, H100 and H200): without "
            "a Q/DQ on the Sigmoid's output every form builds with the Conv in INT8",
        ),
    ),
    builder="generators.silu_qdq:build",
    arch_dependent=True,  # TensorRT-RTX 1.7 builds its INT8 Conv in float for SM75, in INT8 for SM80 on
    pattern=PATTERN,
)
