"""Real producer models: tiny float blocks built with onnx.helper, quantized by the tools users use.

Blocks (seeded, a few KB each): a MobileNet-like block with a depthwise Conv, a ResNet-like residual
block, and a small transformer block (MatMul, Add, Softmax, LayerNormalization). Each is quantized by
onnxruntime.quantization.quantize_static in QDQ format with a seeded CalibrationDataReader, under the
option sets in RECIPES (per-channel and per-tensor weights, int8 and uint8 activations, float bias).
Models are pinned to IR 8 so ONNX Runtime 1.16 and the TensorRT 8.x parsers read them.

NVIDIA ModelOpt (`--producer modelopt`, its own environment: `nox -s "producers(modelopt)"`) quantizes the
same blocks with its ONNX PTQ on the CPU, as `python -m modelopt.onnx.quantization --quantize_mode M` would:
INT8 and FP8 of every block, INT4 (AWQ, blocks of 128) of the transformer's MatMuls. Its output is kept as it
writes it (opset 19/21, float16 scales), since that is what its users bring.

    python -m check.producers --out DIR [--only NAME ...] [--producer onnxruntime|modelopt]
    python -m check.producers --archs --out DIR [--large] [--only NAME ...]   # check.arch_models: YOLO, OCR, BERT
    python -m check.producers --forms --out DIR [--floats DIR2]   # quantize_dynamic, QOperator, static x, fragile
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from core.cli import ArgumentParser

IR_VERSION = 8
CALIBRATION_SAMPLES = 8
SEED = 0


@dataclass(frozen=True)
class Recipe:
    """One quantize_static option set, as a user would write it."""

    name: str
    per_channel: bool
    activation: str  # "int8" (QInt8, quantize_static's default: asymmetric unless ActivationSymmetric) or "uint8"
    extra_options: Dict[str, Any] = field(default_factory=dict)
    note: str = ""


RECIPES = (
    Recipe("u8_per_tensor", False, "uint8", {}, "uint8 asymmetric activations (QUInt8, as many scripts ask)"),
    Recipe("s8_per_channel", True, "int8", {"ActivationSymmetric": True}, "symmetric int8, per-channel weights"),
    Recipe("s8_per_tensor", False, "int8", {"ActivationSymmetric": True}, "symmetric int8, per-tensor weights"),
    Recipe("s8_per_channel_float_bias", True, "int8", {"ActivationSymmetric": True, "QuantizeBias": False},
           "symmetric int8, per-channel weights, float bias (no INT32 DequantizeLinear)"),
    Recipe("s8_asym_per_tensor_float_bias", False, "int8", {"QuantizeBias": False},
           "quantize_static's default activations (int8, asymmetric: non-zero zero points), float bias"),
)


@dataclass(frozen=True)
class ModelOptRecipe:
    """One ModelOpt ONNX PTQ run: `python -m modelopt.onnx.quantization --quantize_mode MODE [ARGS]`."""

    mode: str  # --quantize_mode: int8, fp8, int4
    blocks: Tuple[str, ...]
    args: Tuple[str, ...] = ()
    note: str = ""


MODELOPT_RECIPES = (
    ModelOptRecipe("int8", ("mobilenet", "resnet", "transformer"), (),
                   "its defaults: entropy calibration, float16 scales and weights (high_precision_dtype fp16)"),
    ModelOptRecipe("fp8", ("mobilenet", "resnet", "transformer"), (), "its defaults (FP8 E4M3, float16 scales)"),
    ModelOptRecipe("int4", ("transformer",), ("--calibration_method", "awq_clip"),
                   "INT4 AWQ of the MatMul weights (its default block size, 128)"),
)
# ModelOpt's own default tries CUDA and TensorRT after the CPU; here calibration runs on the CPU only.
MODELOPT_ARGS = ("--calibration_eps", "cpu")


@dataclass(frozen=True)
class Block:
    """A float model builder and its input."""

    name: str
    build: Callable[[np.random.Generator], Any]  # -> onnx.ModelProto (float)
    input_shape: Sequence[int]
    opset: int


def _helper() -> Any:
    import onnx.helper

    return onnx.helper


def _init(name: str, array: np.ndarray) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(array), name)


def _model(nodes: List[Any], inits: List[Any], x_shape: Sequence[int], y_shape: Sequence[int], name: str,
           opset: int) -> Any:
    import onnx

    h = _helper()
    graph = h.make_graph(nodes, name, [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x_shape))],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, list(y_shape))], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="qdq-matrix.producers")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def _conv(h: Any, name: str, x: str, w: str, b: str, out: str, k: int, group: int = 1,
          kernel_shape: bool = True) -> Any:
    attrs: Dict[str, Any] = {"pads": [k // 2] * 4, "group": group}
    if kernel_shape:
        attrs["kernel_shape"] = [k, k]
    return h.make_node("Conv", [x, w, b], [out], name=name, **attrs)


def _weights(rng: np.random.Generator, *shape: int) -> np.ndarray:
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def _bias(rng: np.random.Generator, n: int) -> np.ndarray:
    return (rng.standard_normal(n) * 0.1).astype(np.float32)


def mobilenet_block(rng: np.random.Generator, kernel_shape: bool = True) -> Any:
    """x -> 1x1 Conv (expand) -> ReLU -> 3x3 depthwise Conv -> ReLU -> 1x1 Conv (project) -> y."""
    h = _helper()
    c, e = 8, 16
    inits = [_init("w_expand", _weights(rng, e, c, 1, 1)), _init("b_expand", _bias(rng, e)),
             _init("w_dw", _weights(rng, e, 1, 3, 3)), _init("b_dw", _bias(rng, e)),
             _init("w_project", _weights(rng, c, e, 1, 1)), _init("b_project", _bias(rng, c))]
    nodes = [_conv(h, "expand", "x", "w_expand", "b_expand", "expand_out", 1, kernel_shape=kernel_shape),
             h.make_node("Relu", ["expand_out"], ["expand_relu"], name="expand_relu"),
             _conv(h, "depthwise", "expand_relu", "w_dw", "b_dw", "dw_out", 3, group=e, kernel_shape=kernel_shape),
             h.make_node("Relu", ["dw_out"], ["dw_relu"], name="depthwise_relu"),
             _conv(h, "project", "dw_relu", "w_project", "b_project", "y", 1, kernel_shape=kernel_shape)]
    return _model(nodes, inits, (1, c, 16, 16), (1, c, 16, 16), "mobilenet_block", 13)


def resnet_block(rng: np.random.Generator) -> Any:
    """x -> 3x3 Conv -> ReLU -> 3x3 Conv -> Add(x) -> ReLU -> y."""
    h = _helper()
    c = 16
    inits = [_init("w_conv1", _weights(rng, c, c, 3, 3)), _init("b_conv1", _bias(rng, c)),
             _init("w_conv2", _weights(rng, c, c, 3, 3)), _init("b_conv2", _bias(rng, c))]
    nodes = [_conv(h, "conv1", "x", "w_conv1", "b_conv1", "conv1_out", 3),
             h.make_node("Relu", ["conv1_out"], ["conv1_relu"], name="conv1_relu"),
             _conv(h, "conv2", "conv1_relu", "w_conv2", "b_conv2", "conv2_out", 3),
             h.make_node("Add", ["conv2_out", "x"], ["residual"], name="residual_add"),
             h.make_node("Relu", ["residual"], ["y"], name="out_relu")]
    return _model(nodes, inits, (1, c, 8, 8), (1, c, 8, 8), "resnet_block", 13)


def transformer_block(rng: np.random.Generator) -> Any:
    """Pre-norm single-head attention and an MLP: LayerNormalization, MatMul, Add, Softmax, residual Adds."""
    h = _helper()
    t, d, f = 8, 32, 64
    ones, zeros = np.ones(d, np.float32), np.zeros(d, np.float32)
    # Not "<tensor>_scale": onnxruntime's quantizer names a tensor's activation scale that way, and an
    # initializer of the same name ("ln1_scale" beside tensor "ln1") is silently taken as that scale.
    inits = [_init("ln1_gamma", ones), _init("ln1_beta", zeros), _init("ln2_gamma", ones), _init("ln2_beta", zeros),
             _init("w_q", _weights(rng, d, d)), _init("w_k", _weights(rng, d, d)), _init("w_v", _weights(rng, d, d)),
             _init("w_o", _weights(rng, d, d)), _init("b_o", np.zeros(d, np.float32)),
             _init("w_fc1", _weights(rng, d, f)), _init("b_fc1", _bias(rng, f)),
             _init("w_fc2", _weights(rng, f, d)), _init("b_fc2", _bias(rng, d)),
             _init("inv_sqrt_d", np.array(1 / np.sqrt(d), np.float32))]
    mm = lambda name, a, b, out: h.make_node("MatMul", [a, b], [out], name=name)  # noqa: E731
    nodes = [h.make_node("LayerNormalization", ["x", "ln1_gamma", "ln1_beta"], ["ln1"], name="ln1", axis=-1),
             mm("q_proj", "ln1", "w_q", "q"), mm("k_proj", "ln1", "w_k", "k"), mm("v_proj", "ln1", "w_v", "v"),
             h.make_node("Transpose", ["k"], ["k_t"], name="k_transpose", perm=[0, 2, 1]),
             mm("scores", "q", "k_t", "scores"),
             h.make_node("Mul", ["scores", "inv_sqrt_d"], ["scaled"], name="scale"),
             h.make_node("Softmax", ["scaled"], ["attn"], name="softmax", axis=-1),
             mm("context", "attn", "v", "context"), mm("o_proj", "context", "w_o", "o"),
             h.make_node("Add", ["o", "b_o"], ["o_bias"], name="o_bias"),
             h.make_node("Add", ["x", "o_bias"], ["res1"], name="residual1"),
             h.make_node("LayerNormalization", ["res1", "ln2_gamma", "ln2_beta"], ["ln2"], name="ln2", axis=-1),
             mm("fc1", "ln2", "w_fc1", "fc1"), h.make_node("Add", ["fc1", "b_fc1"], ["fc1_bias"], name="fc1_bias"),
             h.make_node("Relu", ["fc1_bias"], ["fc1_relu"], name="fc1_relu"),
             mm("fc2", "fc1_relu", "w_fc2", "fc2"), h.make_node("Add", ["fc2", "b_fc2"], ["fc2_bias"], name="fc2_bias"),
             h.make_node("Add", ["res1", "fc2_bias"], ["y"], name="residual2")]
    return _model(nodes, inits, (1, t, d), (1, t, d), "transformer_block", 17)


BLOCKS = (
    Block("mobilenet", mobilenet_block, (1, 8, 16, 16), 13),
    Block("resnet", resnet_block, (1, 16, 8, 8), 13),
    Block("transformer", transformer_block, (1, 8, 32), 17),
)
# One extra: the depthwise block as onnx.helper users often write it, without kernel_shape (check.lint's 8.x rule).
NO_KERNEL_SHAPE = Block("mobilenet_no_kernel_shape", lambda rng: mobilenet_block(rng, kernel_shape=False),
                        (1, 8, 16, 16), 13)


class SeededReader:
    """A CalibrationDataReader over seeded standard-normal samples."""

    def __init__(self, shape: Sequence[int], seed: int = SEED, count: int = CALIBRATION_SAMPLES) -> None:
        rng = np.random.default_rng(seed)
        self._samples = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(count)])

    def get_next(self) -> Optional[Dict[str, np.ndarray]]:
        return next(self._samples, None)

    def rewind(self) -> None:  # some onnxruntime versions call it
        pass


@dataclass(frozen=True)
class Produced:
    """One quantized model written by a producer."""

    name: str
    path: str
    block: str
    producer: str
    recipe: str
    options: Dict[str, Any]
    nodes: int
    quantized_nodes: int
    versions: Dict[str, str]


def quantize_ort(float_model: Any, block: Block, recipe: Recipe, out: Path) -> Path:
    """onnxruntime.quantization.quantize_static in QDQ format; the result pinned to IR 8."""
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "float.onnx"
        onnx.save(float_model, str(src))
        quantize_static(
            str(src), str(out), SeededReader(block.input_shape), quant_format=QuantFormat.QDQ,
            per_channel=recipe.per_channel,
            activation_type=QuantType.QInt8 if recipe.activation == "int8" else QuantType.QUInt8,
            weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax,
            extra_options=dict(recipe.extra_options),
        )
    pin(out, block.opset)
    return out


def pin(path: Path, opset: int) -> None:
    """IR 8 and the block's own opset, so ONNX Runtime 1.16 and TensorRT 8.x read the model; checker-clean."""
    import onnx

    model = onnx.load(str(path))
    model.ir_version = IR_VERSION
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = opset
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def quantized_nodes(model: Any) -> int:
    """Compute nodes fed by a DequantizeLinear or feeding a QuantizeLinear."""
    dq = {o for n in model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    q_in = {i for n in model.graph.node if n.op_type == "QuantizeLinear" for i in n.input[:1]}
    return sum(1 for n in model.graph.node if n.op_type not in ("QuantizeLinear", "DequantizeLinear")
               and (any(i in dq for i in n.input) or any(o in q_in for o in n.output)))


def quantize_modelopt(float_model: Any, block: Block, recipe: ModelOptRecipe, out: Path) -> Tuple[str, str]:
    """ModelOpt's command line on the CPU, its output kept as written: (the command, "" or why nothing is quantized)."""
    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        src, data = Path(tmp) / f"{block.name}.onnx", Path(tmp) / f"{block.name}_calibration.npz"
        onnx.save(float_model, str(src))
        np.savez(data, x=calibration(block))
        command = ["-m", "modelopt.onnx.quantization", "--onnx_path", src.name, "--quantize_mode", recipe.mode,
                   "--calibration_data_path", data.name, *MODELOPT_ARGS, *recipe.args, "--output_path",
                   str(Path(out).resolve())]
        done = subprocess.run([sys.executable, *command], cwd=tmp, capture_output=True, text=True)
    shown = "python " + " ".join(command[:-1] + [out.name])
    said = [line.split(" - ")[-1].strip() for line in (done.stdout + done.stderr).splitlines()
            if ("Found" in line and "unsupported" in line) or "No node or node type is selected" in line]
    if done.returncode == 0 and out.is_file() and quantized_nodes(onnx.load(str(out))):
        return shown, ""
    out.unlink(missing_ok=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"ModelOpt failed on {block.name} ({recipe.mode}): {last}")
    return shown, "; ".join(dict.fromkeys(said)) or "ModelOpt quantized no node"


def calibration(block: Block, seed: int = SEED, count: int = CALIBRATION_SAMPLES) -> np.ndarray:
    """The same seeded standard-normal samples as SeededReader, stacked along the batch axis."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.standard_normal(block.input_shape).astype(np.float32) for _ in range(count)])


def plan(only: Sequence[str] = ()) -> Iterator[tuple]:
    """(model name, block, recipe) for every model produce() writes."""
    for block in BLOCKS:
        for recipe in RECIPES:
            yield f"ort_{block.name}_{recipe.name}", block, recipe
    yield f"ort_{NO_KERNEL_SHAPE.name}_s8_per_channel", NO_KERNEL_SHAPE, RECIPES[1]


def plan_modelopt() -> Iterator[tuple]:
    """(model name, block, recipe) for every model ModelOpt is asked for."""
    for recipe in MODELOPT_RECIPES:
        for block in BLOCKS:
            if block.name in recipe.blocks:
                yield f"mo_{block.name}_{recipe.mode}", block, recipe


def produce(out: Path, only: Sequence[str] = (), producer: str = "onnxruntime") -> List[Produced]:
    """Write every producer model under out (and manifest.json); `only` keeps names containing one of its words."""
    import onnx

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if producer == "modelopt":
        return produce_modelopt(out, only)
    import onnxruntime

    made = []
    for name, block, recipe in plan():
        if only and not any(word in name for word in only):
            continue
        path = out / f"{name}.onnx"
        quantize_ort(block.build(np.random.default_rng(SEED)), block, recipe, path)
        model = onnx.load(str(path))
        made.append(Produced(name, path.name, block.name, "onnxruntime.quantization.quantize_static", recipe.name,
                             {"quant_format": "QDQ", "per_channel": recipe.per_channel,
                              "activation_type": "QInt8" if recipe.activation == "int8" else "QUInt8",
                              "weight_type": "QInt8", "calibrate_method": "MinMax",
                              "extra_options": dict(recipe.extra_options)},
                             len(model.graph.node), quantized_nodes(model),
                             {"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__}))
    (out / "manifest.json").write_text(json.dumps([asdict(m) for m in made], indent=2) + "\n")
    return made


def produce_modelopt(out: Path, only: Sequence[str] = ()) -> List[Produced]:
    """ModelOpt's models under out; the manifest also lists each block ModelOpt left unquantized, and why."""
    import modelopt
    import onnx
    import onnxruntime

    made, skipped = [], []
    versions = {"nvidia-modelopt": modelopt.__version__, "onnx": onnx.__version__,
                "onnxruntime": onnxruntime.__version__}
    for name, block, recipe in plan_modelopt():
        if only and not any(word in name for word in only):
            continue
        path = out / f"{name}.onnx"
        command, why = quantize_modelopt(block.build(np.random.default_rng(SEED)), block, recipe, path)
        if why:
            skipped.append({"name": name, "command": command, "why": why})
            continue
        model = onnx.load(str(path))
        made.append(Produced(name, path.name, block.name, "python -m modelopt.onnx.quantization", recipe.mode,
                             {"command": command, "note": recipe.note}, len(model.graph.node), quantized_nodes(model),
                             versions))
    manifest = {"producer": "nvidia-modelopt", "versions": versions, "models": [asdict(m) for m in made],
                "not_quantized": skipped}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return made


def main(argv: Optional[List[str]] = None) -> int:
    parser = ArgumentParser(prog="python -m check.producers", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the .onnx files and manifest.json")
    parser.add_argument("--only", nargs="*", default=(), help="keep models whose name contains one of these")
    parser.add_argument("--producer", choices=("onnxruntime", "modelopt"), default="onnxruntime",
                        help="the quantizer: onnxruntime's quantize_static (default) or NVIDIA ModelOpt's ONNX PTQ")
    parser.add_argument("--archs", action="store_true",
                        help="write the real-architecture models instead (check.arch_models: YOLO-, PaddleOCR- and "
                             "BERT-style, float, quantize_static's defaults and TensorRT settings, dynamic dimensions)")
    parser.add_argument("--large", action="store_true", help="with --archs: also the ~300- and ~900-node backbones")
    parser.add_argument("--forms", action="store_true",
                        help="write one folder of the forms users bring instead (check.arch_models.FORMS): a "
                             "CRNN-style recognizer by quantize_dynamic and in the QOperator format, QDQ models with "
                             "dynamic and static x, a fragile calibration; for python -m check DIR --shape "
                             "x:1x3x48x320")
    parser.add_argument("--floats", type=Path, help="with --forms: write the float originals into this folder")
    args = parser.parse_args(argv)
    if (args.archs or args.forms) and args.producer != "onnxruntime":
        parser.error("--archs and --forms models are quantized by onnxruntime's quantizer only")
    if args.floats and not args.forms:
        parser.error("--floats goes with --forms")
    try:
        if args.forms:
            return write_forms(args.out, args.floats, args.only)
        if args.archs:
            return write_archs(args.out, args.only, args.large)
        made = produce(args.out, args.only, args.producer)
    except ImportError as e:
        needs = "nvidia-modelopt[onnx] and torch" if args.producer == "modelopt" else "onnx and onnxruntime"
        print(f"error: the {args.producer} producer needs {needs} ({e})", file=sys.stderr)
        return 2
    for m in made:
        print(f"{m.path}: {m.nodes} nodes, {m.quantized_nodes} quantized ({m.recipe})")
    return 0


def write_forms(out: Path, floats: Optional[Path], only: Sequence[str]) -> int:
    """check.arch_models's --forms folder, one line a model, printed as each is written."""
    from check import arch_models

    def show(m: arch_models.ArchModel) -> None:
        x = ", ".join(str(d) for d in m.inputs.get("x", []))
        print(f"{m.path}: {m.nodes} nodes, x [{x}]: {m.note}", flush=True)

    arch_models.write_forms(out, floats, only, progress=show)
    print(f"wrote {Path(out) / 'manifest.json'}" + (f"; float originals in {floats}" if floats else ""))
    return 0


def write_archs(out: Path, only: Sequence[str], large: bool) -> int:
    """check.arch_models's folder, one line a model, printed as each is written."""
    from check import arch_models, archs

    def show(m: arch_models.ArchModel) -> None:
        dynamic = sorted({d for dims in m.inputs.values() for d in dims if isinstance(d, str)})
        print(f"{m.path}: {m.nodes} nodes, {m.compute_nodes_with_dq} of {m.compute_nodes} compute nodes with "
              f"dequantized inputs, opset {m.opset}, dynamic {', '.join(dynamic) or 'none'}", flush=True)

    arch_models.write_models(out, archs.ARCHS + (archs.LARGE if large else ()), only=only, progress=show)
    print(f"wrote {Path(out) / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
