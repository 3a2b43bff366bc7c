"""Every engine's per-node evidence has the same fields, so that reports read fields, never sentences."""

from __future__ import annotations

import pytest

from engines import get_engine
from tests.engines.qdq_models import qdq_conv

FIELDS = {"precision", "evidence", "layer", "layer_type", "inputs", "weights", "outputs", "tactic", "via"}


@pytest.mark.parametrize("engine", ["onnxruntime", "openvino"])
def test_cpu_engines_fill_the_fields(tmp_path, engine):
    pytest.importorskip(engine)
    obs = get_engine(engine).run(qdq_conv(tmp_path / engine))
    entry = obs.precision["node_of_c"]
    assert FIELDS <= set(entry), sorted(FIELDS - set(entry))
    assert entry["layer"] and entry["layer_type"] and entry["via"]
    assert entry["precision"] in ("int8", "float") and all(isinstance(d, str) for d in entry["inputs"])


def test_tensorrt_family_fills_the_fields():
    """TensorRT and TensorRT-RTX share engines/tensorrt/layers.py; its entries carry the fields."""
    from engines.tensorrt import layers

    layer = layers.Layer("c", "CaskConvolution", [layers.Tensor("x", "int8")], ["int8"], [layers.Tensor("y", "int8")],
                         tactic="0x1", metadata=["node_of_c"])
    entry = layers.attribute([layer], {"node_of_c": "Conv"})["node_of_c"]
    assert FIELDS <= set(entry) and entry["via"] == "metadata" and entry["precision"] == "int8"
