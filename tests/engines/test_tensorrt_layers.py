"""Per-node precision from TensorRT's own layer listings: real TensorRT-RTX build logs, the real 8.5.3.1 inspector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.tensorrt import layers as L

DATA = Path(__file__).resolve().parent.parent / "data" / "trt"
BUILDS = json.loads((DATA / "rtx-build-logs.json").read_text())["builds"]
INSPECTOR_85 = json.loads((DATA / "inspector-8.5.3.1-h200.json").read_text())["models"]


def _rtx(key: str) -> list:
    return L.from_build_log(BUILDS[key]["layers_message"])


def test_every_layer_line_of_a_real_rtx_listing_is_read():
    message = BUILDS["1.7.1.116 grouped_conv/cpg=1+weights=per_channel+activation=int8+output_qdq=yes+epilogue=none"][
        "layers_message"]
    layers = L.from_build_log(message)
    assert len(layers) == message.count("\nName: ") == 3
    conv = layers[1]
    assert (conv.name, conv.type, conv.tactic) == ("node_of_conv_myl0_1", "correlation", "__myelin_CASK_STUB")
    assert [t.dtype for t in conv.inputs] == ["int8"] and conv.weights == ["int8"] and conv.outputs[0].dtype == "fp32"
    assert conv.inputs[0].size == 192 * 8 * 8 and conv.inputs[0].format == "(NHWC) Channel major format"
    assert conv.metadata == ["node_of_conv", "node_of_x_dq", "node_of_w_dq"]


def test_the_14_layout_reads_the_same():
    layers = _rtx("1.4.0.76 instancenorm_int8 float build")
    assert [(lay.type, lay.metadata) for lay in layers][:2] == [("kgen", []), ("correlation", ["node_of_conv"])]
    assert layers[1].inputs[0].dtype == "fp32" and not layers[1].weights  # 1.4 lists no Constants
    found = L.attribute(layers, {"node_of_conv": "Conv", "node_of_norm": "InstanceNormalization"})
    assert found["node_of_conv"]["precision"] == "float" and found["node_of_conv"]["layer_type"] == "correlation"


@pytest.mark.parametrize("key, node, op, layer, precision", [
    # the layer that performs the op, never the generated kernel beside it that also lists the node
    ("1.7.1.116 grouped_conv/cpg=1+weights=per_channel+activation=int8+output_qdq=yes+epilogue=none",
     "node_of_conv", "Conv", "node_of_conv_myl0_1", "int8"),
    ("1.7.1.116 matmul_per_channel/op=matmul+weights=per_channel+output_qdq=yes", "node_of_mm", "MatMul",
     "node_of_mm_myl0_1", "int8"),
    ("1.5.0.114 matmul_per_channel/op=matmul+weights=per_channel+output_qdq=yes", "node_of_mm", "MatMul",
     "node_of_mm_myl0_1", "int8"),
    # ConvTranspose with Q/DQ on 1.7: a float deconvolution
    ("1.7.1.116 convtranspose_q_fusion/op=conv_transpose+follower=q", "node_of_up", "ConvTranspose",
     "node_of_up_myl0_2", "float"),
    # inside the fused attention kernel: it reads and writes INT8, but the listing gives the kernel's types only
    ("1.7.1.116 transformer_qdq_pattern/bmm_inputs=both+softmax_qdq=yes", "node_of_ctx", "MatMul",
     "_gemm_mha_v2_myl0_5", "unknown"),
])
def test_the_computing_layer_is_chosen_through_metadata(key, node, op, layer, precision):
    entry = L.attribute(_rtx(key), {node: op})[node]
    assert (entry["layer"], entry["precision"], entry["via"]) == (layer, precision, "metadata")
    assert entry["evidence"].startswith(f"layer '{layer}' ")


def test_a_node_inside_a_float_generated_kernel_is_unknown_and_said_plainly():
    key = "1.7.1.116 concat_requant/scales=different+output_qdq=no+consumer=none"
    entry = L.attribute(_rtx(key), {"node_of_y": "Concat"})["node_of_y"]
    assert entry["precision"] == "unknown" and entry["layer_type"] == "kgen"
    assert "fuses it with node_of_a_q, node_of_b_q" in entry["evidence"]
    assert "only the kernel's own input and output types" in entry["evidence"]


def test_a_node_no_layer_lists_is_unknown_not_a_neighbours_precision():
    key = "1.7.1.116 grouped_conv/cpg=1+weights=per_channel+activation=int8+output_qdq=yes+epilogue=none"
    entry = L.attribute(_rtx(key), {"node_of_elsewhere": "Conv"})["node_of_elsewhere"]
    assert entry["precision"] == "unknown" and "no engine layer lists node_of_elsewhere" in entry["evidence"]


def test_85_inspector_reads_through_name_components():
    inspector = INSPECTOR_85["conv_dense.onnx"]["engine inspector JSON (get_engine_information, DETAILED)"]
    found = L.attribute(L.from_inspector(inspector), {"node_of_c": "Conv", "node_of_xq": "QuantizeLinear"})
    assert (found["node_of_c"]["layer"], found["node_of_c"]["precision"]) == ("wq + node_of_c", "int8")
    assert found["node_of_c"]["via"] == "name component" and found["node_of_c"]["weights"] == ["int8"]
    assert found["node_of_xq"]["layer_type"] == "Reformat" and found["node_of_xq"]["precision"] == "int8"


@pytest.mark.parametrize("name", ["conv[0]", "conv]1", "x]y[z", "two\nlines", "n\n[7]", "a + b", "[ONNX Layer: c]",
                                  "[click](javascript:alert(3))"])
def test_a_node_name_is_matched_as_a_name_whatever_it_holds(name):
    """The engine writes a node's name as it is into its layer's name and metadata (measured on 1.7.1.116 with these
    names: tests/faults/test_node_name_faults.py); brackets, a line break or " + " in it change nothing."""
    key = "1.7.1.116 grouped_conv/cpg=1+weights=per_channel+activation=int8+output_qdq=yes+epilogue=none"
    message = BUILDS[key]["layers_message"].replace("node_of_conv", name)
    layers = L.from_build_log(message)
    assert len(layers) == 3 and layers[1].metadata == [name, "node_of_x_dq", "node_of_w_dq"]
    entry = L.attribute(layers, {name: "Conv"})[name]
    assert (entry["layer"], entry["precision"], entry["via"]) == (f"{name}_myl0_1", "int8", "metadata")
    meta = f"[ONNX Layer: {name}]\x1f[ONNX Layer: relu]"  # 8.6's separator between entries
    assert L.onnx_layers(meta) == [name, "relu"] and L.onnx_layers(meta.replace("\x1f", "\x1e")) == [name, "relu"]
    inspector = INSPECTOR_85["conv_dense.onnx"]["engine inspector JSON (get_engine_information, DETAILED)"]
    renamed = json.loads(json.dumps(inspector).replace("node_of_c", json.dumps(name)[1:-1]))
    found = L.attribute(L.from_inspector(renamed), {name: "Conv"})[name]  # 8.5: no metadata, a fused layer's name
    assert (found["layer"], found["precision"], found["via"]) == (f"wq + {name}", "int8", "name component")


def test_a_helper_layer_is_never_the_evidence_for_a_compute_node():
    """TensorRT 8.6 gives a parser-inserted reshape the metadata of the MatMul it feeds (seen on an H100): the shape
    of that listing, with a float convolution so that the helper's Int8 would be the wrong answer."""
    meta = "[ONNX Layer: node_of_y]"
    listing = {"Layers": [
        {"Name": "reshape_before_node_of_y", "LayerType": "NoOp", "Metadata": meta,
         "Inputs": [{"Name": "x", "Format/Datatype": "Row major Int8 format"}],
         "Outputs": [{"Name": "r", "Format/Datatype": "Row major Int8 format"}], "TacticValue": "0x0"},
        {"Name": "w_quantized + transpose_before_node_of_y + node_of_y", "LayerType": "CaskConvolution",
         "Metadata": meta, "Inputs": [{"Name": "r", "Format/Datatype": "Channel major FP32 format"}],
         "Weights": {"Type": "Float", "Count": 8},
         "Outputs": [{"Name": "y", "Format/Datatype": "Channel major FP32 format"}], "TacticValue": "0x1"},
    ]}
    entry = L.attribute(L.from_inspector(listing), {"node_of_y": "MatMul"})["node_of_y"]
    assert entry["layer_type"] == "CaskConvolution" and entry["precision"] == "float"
    only_helper = {"Layers": listing["Layers"][:1]}
    entry = L.attribute(L.from_inspector(only_helper), {"node_of_y": "MatMul"})["node_of_y"]
    assert entry["precision"] == "unknown" and entry["candidates"] == ["reshape_before_node_of_y"]


def test_a_stored_cell_is_re_derived_from_its_listing_without_an_engine(tmp_path):
    """A cell keeps its listing packed; a wrong attribution stored in it is corrected from committed data alone."""
    from core.cell import Cell
    from engines.tensorrt import pack_listing
    from engines.tensorrt.rederive import process

    key = "1.7.1.116 matmul_per_channel/op=matmul+weights=per_channel+output_qdq=yes"
    stale = {"precision": "int8", "evidence": "layer '__myl_MulMinMaxRounCast_myl0_0' kgen: a neighbour"}
    cell = Cell(bundle="matmul_per_channel/op=matmul+weights=per_channel+output_qdq=yes", case="matmul_per_channel",
                params={}, digest="d", engine="tensorrt-rtx", engine_version="1.7.1.116", hardware="no GPU",
                status="built", verdict="undocumented", last_stage="build", precision={"node_of_mm": stale}, fused=True,
                listing=pack_listing("build log Layers:", BUILDS[key]["layers_message"]))
    path = tmp_path / "cells.jsonl"
    path.write_text(cell.to_json() + "\n")
    counts = process(path, tmp_path / "no-bundles", write=True)  # no bundle: attributed without op types
    assert counts["listed"] == 1 and counts["evidence"] == 1
    entry = json.loads(path.read_text())["precision"]["node_of_mm"]
    assert (entry["layer"], entry["layer_type"], entry["via"]) == ("node_of_mm_myl0_1", "gemm", "metadata")


def test_real_86_listing_the_matmul_is_its_convolution_not_the_reshape_noop_beside_it():
    """TensorRT 8.6.0 on an H100: reshape_before_node_of_mm (NoOp) carries the MatMul's metadata too; the MatMul is
    the CaskConvolution 8.x turns it into."""
    sample = json.loads((DATA / "inspector-8.6.0-h100.json").read_text())["models"]
    [(bundle, model)] = sample.items()
    layers = L.from_inspector(model["engine inspector JSON"])
    assert any(lay.type == "NoOp" and "node_of_mm" in lay.metadata for lay in layers)  # the trap is in the data
    found = L.attribute(layers, model["target_ops"])
    mm = found["node_of_mm"]
    assert mm["layer_type"] == "CaskConvolution" and mm["via"] == "metadata" and mm["precision"] == "int8"
    assert mm["layer"].endswith("+ node_of_mm") and "NoOp" not in mm["evidence"]
    assert found["node_of_x_q"]["layer_type"] == "Reformat" and found["node_of_x_q"]["via"] == "name component"
