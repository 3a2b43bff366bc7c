"""NVIDIA/TensorRT#1992, #1144, #3270: a residual Add runs in INT8 only with Q/DQ on the residual branch.

#1992 (a ResNet block in an explicitly quantized model): asked whether the identity branch needs its own Q/DQ, a
maintainer answers "you need to add Q/DQ pair in the residual add branch to get the best performance by running it
in INT8. If not, the "Add" will have to perform in FP16/FP32". #1144 shows the Add left in FP32 with Q/DQ from
pytorch-quantization; #3270 asks the same for the TensorFlow toolkit's residual case. No thread states a TensorRT
version, so there is no expectation: the sweep records what 8.5/8.6 do.

The sweep: what the Add's second input is (the float block input, the Conv's own input DQ shared with it, or a Q/DQ
of its own at another scale) and whether a Q/DQ follows the Add. The target is the Add node (TensorRT fuses it into
the Conv as its epilogue when it can: the Conv layer is then named after both).
"""

from __future__ import annotations

from cases.base import Case

ISSUE_1992 = "https://github.com/NVIDIA/TensorRT/issues/1992"
ISSUE_1144 = "https://github.com/NVIDIA/TensorRT/issues/1144"
ISSUE_3270 = "https://github.com/NVIDIA/TensorRT/issues/3270"

CASE = Case(
    id="residual_add_qdq",
    seed="009",
    title="Residual Add after a Q/DQ Conv: Q/DQ on the residual branch or not, and after the Add",
    links=(ISSUE_1992, ISSUE_1144, ISSUE_3270),
    axes={"residual": ("float", "shared_qdq", "own_qdq"), "output_qdq": (True, False)},
    # The Add node: node_of_sum, or node_of_y where it produces the graph output.
    target_nodes=("node_of_sum", "node_of_y"),
    signatures=(),
    expectations=(),
    builder="generators.residual_add_qdq:build",
)
