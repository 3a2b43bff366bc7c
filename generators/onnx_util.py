"""Small builders over onnx.helper shared by the case generators."""

from __future__ import annotations

from typing import Dict, Iterable, Optional, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# IR 8 is read by TensorRT 8.5 and ONNX Runtime 1.16 (which rejects IR 10); opsets up to 18 fit IR 8.
# Opset 23 (FLOAT4E2M1 in Q/DQ, a scale type apart from the data type) needs IR 11; opset 24 (FLOAT8E8M0) IR 12.
IR_VERSION_FOR_OPSET = {13: 8, 17: 8, 18: 8, 19: 9, 21: 10, 23: 11, 24: 12}
PRODUCER = "qdq-matrix"

NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
}


def ir_version_for(opset: int) -> int:
    """The IR version pinned for an opset: the oldest that can carry it."""
    if opset not in IR_VERSION_FOR_OPSET:
        raise ValueError(f"no IR version pinned for opset {opset}; add it to IR_VERSION_FOR_OPSET")
    return IR_VERSION_FOR_OPSET[opset]


def const(name: str, value: np.ndarray) -> onnx.TensorProto:
    """An initializer from a numpy array (its dtype is kept)."""
    return numpy_helper.from_array(np.asarray(value), name=name)


def value_info(name: str, dtype: np.dtype, shape: Sequence[Optional[int]]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, NP_TO_ONNX[np.dtype(dtype)], list(shape))


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "", **attrs) -> onnx.NodeProto:
    """A node named after its first output, so targets and engine layers can be matched by name."""
    return helper.make_node(op, list(inputs), list(outputs), name=f"node_of_{outputs[0]}", domain=domain, **attrs)


def make_model(
    name: str,
    nodes: Iterable[onnx.NodeProto],
    inputs: Iterable[onnx.ValueInfoProto],
    outputs: Iterable[onnx.ValueInfoProto],
    initializers: Iterable[onnx.TensorProto] = (),
    opset: int = 13,
    extra_opsets: Optional[Dict[str, int]] = None,
) -> onnx.ModelProto:
    """A model with a pinned IR version and opset, and no fields that vary from run to run."""
    graph = helper.make_graph(list(nodes), name, list(inputs), list(outputs), initializer=list(initializers))
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid(d, v) for d, v in sorted((extra_opsets or {}).items())]
    model = helper.make_model(graph, opset_imports=imports, producer_name=PRODUCER, producer_version="1")
    model.ir_version = ir_version_for(opset)
    return model


def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int = 1) -> np.ndarray:
    """QuantizeLinear in numpy: round half to even, saturate to the zero point's type."""
    zp = np.asarray(zero_point)
    s = np.asarray(scale, dtype=np.float32)
    if s.ndim == 1 and x.ndim > 1:
        shape = [1] * x.ndim
        shape[axis] = -1
        s, zp = s.reshape(shape), zp.reshape(shape)
    info = np.iinfo(zp.dtype)
    q = np.rint(x.astype(np.float32) / s) + zp.astype(np.int32)
    return np.clip(q, info.min, info.max).astype(zp.dtype)


def dequantize(q: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int = 1) -> np.ndarray:
    """DequantizeLinear in numpy (opset 13 semantics, per-tensor or per-axis)."""
    zp = np.asarray(zero_point)
    s = np.asarray(scale, dtype=np.float32)
    if s.ndim == 1 and q.ndim > 1:
        shape = [1] * q.ndim
        shape[axis] = -1
        s, zp = s.reshape(shape), zp.reshape(shape)
    return ((q.astype(np.int32) - zp.astype(np.int32)) * s).astype(np.float32)
