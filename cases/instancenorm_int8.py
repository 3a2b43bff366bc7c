"""NVIDIA/TensorRT#3659, #3603: InstanceNormalization and INT64 weights in an INT8 build without scales.

#3659 builds an INT8 engine from a model with InstanceNormalization, which needs the ONNX parser flag
NATIVE_INSTANCENORM, and gets "Missing scale and zero-point for tensor ..., expect fall back to
non-int8 implementation" for many tensors. Without that flag the parser imports InstanceNormalization
as the InstanceNormalization_TRT plugin, which calls cuDNN; with it, TensorRT uses its native
normalization layer. The flag is off by default in TensorRT 8.6 and on from 10.0, so the reproducer
sets it explicitly both ways (Reproducer.trt["parser_flags"]).

The reproducer: Conv -> InstanceNormalization -> Slice, where the Slice's `ends` is an INT64
initializer holding INT64_MAX (what exporters write for "to the end"), outside INT32 range, so
TensorRT 8.x warns that it casts INT64 weights down to INT32. It is built with the INT8 flag, no
calibrator and no Q/DQ nodes, so no tensor has a scale. The `int8_ranges` axis says what stands in for
scales: "none" (the Python API as is; TensorRT 8.5/8.6 then fail the build with "Calibration failure",
seen on an H200) or "trtexec" (the dummy dynamic ranges `trtexec --int8` sets without a calibration
cache: +-2 on layer inputs, +-4 on layer outputs), the way most reporters build.

No thread states an outcome for #3659's model together with a TensorRT version; the one expectation
is the sampleINT8API README's rule that an INT8 build needs a calibrator or a dynamic range for
every tensor (so int8_ranges="none" fails to build).
"""

from __future__ import annotations

from typing import Any, List

from cases.base import Case, Expectation, Signature
from cases.pattern import Graph, Match, Pattern, matches

ISSUE_3659 = "https://github.com/NVIDIA/TensorRT/issues/3659"
ISSUE_3603 = "https://github.com/NVIDIA/TensorRT/issues/3603"
# "you need to provide TensorRT with the dynamic range for each network tensor ... One way ... is
# the TensorRT INT8 calibrator": with neither, an INT8 build has nothing to quantize with.
SAMPLE_INT8_API = "https://github.com/NVIDIA/TensorRT/tree/main/samples/sampleINT8API"
# Shows the clamping warning verbatim next to the INT64 one.
ISSUE_2966 = "https://github.com/NVIDIA/TensorRT/issues/2966"
# "TensorRT 11.x removes all weak typing APIs": BuilderFlag.INT8 and the INT8 calibrator are gone.
MIGRATION_11 = "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html"


def match_instancenorm(g: Graph, n: Any) -> List[Match]:
    """An InstanceNormalization in a model with no Q/DQ: an INT8 build would have no scales for it (#3659)."""
    return [] if g.quantized else matches(n, {}, target="node_of_norm")


PATTERN = Pattern(
    rules={"instancenorm_int8": "InstanceNormalization in an INT8 build without scales"},
    ops=("InstanceNormalization",),
    match=match_instancenorm,
)


CASE = Case(
    id="instancenorm_int8",
    seed="001",
    title="InstanceNormalization with INT64 weights in an INT8 build without scales",
    links=(ISSUE_3659, ISSUE_3603, MIGRATION_11),
    axes={"native_instancenorm": (False, True), "int8_ranges": ("none", "trtexec")},
    target_nodes=("node_of_conv", "node_of_norm"),
    # No signature for the INT64 warning ("Your ONNX model has been generated with INT64 weights ... Attempting to cast
    # down to INT32"): 8.x prints it for any model with an INT64 initializer, a Reshape's shape among them (the
    # observed cells of six other cases show it, passing or failing); the clamping one says this case's part.
    signatures=(
        Signature(
            "int32_clamped",
            r"One or more weights outside the range of INT32 was clamped",
            "warning",
            ISSUE_2966,
            short="INT32 values clamped",
        ),
        Signature("missing_scale", r"Missing scale and zero-point for tensor", "warning", ISSUE_3659,
                  short="missing scale and zero point"),
    ),
    expectations=(
        # Not beyond 10.x: TensorRT 11.0 removed BuilderFlag.INT8 and the INT8 calibrator (MIGRATION_11), so on 11.x
        # both int8_ranges variants are 'not applicable' cells (engines/tensorrt/worker.py, removed_in_11).
        Expectation(
            "tensorrt", ">=8.0,<11.0", "fail", SAMPLE_INT8_API, stage="build", where={"int8_ranges": ("none",)},
            note="INT8 with no calibrator and no per-tensor dynamic range: the build has no scales to use",
        ),
    ),
    builder="generators.instancenorm_int8:build",
    pattern=PATTERN,
)
