"""check.archs's graphs quantized as users quantize them, written as a folder of models with a manifest.

Each architecture is written three ways, with its dynamic dimensions kept:

- `<arch>_float.onnx`: the float graph;
- `<arch>_ort_default.onnx`: `onnxruntime.quantization.quantize_static(float, out, reader)` and nothing else, the
  call a new user writes first (QDQ, int8 asymmetric activations, per-tensor int8 weights, INT32 bias);
- `<arch>_trt.onnx`: the settings TensorRT asks for: QDQ, int8 symmetric activations and weights, per-channel
  weights, bias left in float (`QuantizeBias: False`).

Calibration data are seeded and valid (check.archs.feeds) at the concrete sizes the architecture names.
`manifest.json` lists every file with its sha256, node counts, opset, dynamic dimensions and the quantizer's
options and version.

`--forms` writes instead one folder of the forms users bring, for `python -m check DIR --shape x:1x3x48x320` (FORMS):
a CRNN-style recognizer (`ocr_rec`, x [batch, 3, 48, width]) quantized by `quantize_dynamic` and in the QOperator
format, the same in QDQ with TensorRT's settings, a classifier exported at a fixed x [1, 3, 224, 224], and a fragile
model: TensorRT's settings (int8 symmetric, which ONNX Runtime computes alike on AVX2, VNNI and AMX) calibrated on one
sample twenty times the data's range, so its activations take a few steps each and every integer kernel's rounding
shows. `--floats DIR2` writes the float originals
there (each model's `float_model` in the manifest), for `--float-model`.

    python -m check.producers --archs --out DIR [--only yolo] [--large]    # or: nox -s producers -- --archs ...
    python -m check.producers --forms --out DIR [--floats DIR2]
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

from check import archs

CALIBRATION_SAMPLES = 8
SEED = 0
COMPUTE_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")
DEQUANTIZE = "DequantizeLinear"


@dataclass(frozen=True)
class Variant:
    """One way of writing a model: float, or quantize_static with these keyword arguments."""

    name: str
    quantize: Optional[Dict[str, Any]]  # None: the float model; else quantize_static's keywords beyond the reader
    note: str


TRT_OPTIONS = {"quant_format": "QDQ", "activation_type": "QInt8", "weight_type": "QInt8", "per_channel": True,
               "extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True, "QuantizeBias": False}}
VARIANTS = (
    Variant("float", None, "the float graph, no Q/DQ"),
    Variant("ort_default", {}, "quantize_static at its defaults: int8 asymmetric activations, INT32 bias"),
    Variant("trt", TRT_OPTIONS, "TensorRT's settings: symmetric int8, per-channel weights, float bias"),
)


@dataclass(frozen=True)
class ArchModel:
    """One model file written by write_models, as manifest.json lists it."""

    name: str
    path: str
    sha256: str
    arch: str
    variant: str
    resembles: str
    note: str
    opset: int
    nodes: int
    qdq_nodes: int
    compute_nodes: int
    compute_nodes_with_dq: int
    inputs: Dict[str, List[Any]]  # name -> dims, a string for a dynamic one
    calibration: Dict[str, int]
    quantizer: Dict[str, Any] = field(default_factory=dict)  # call and versions; empty for a float model
    seed: int = SEED
    float_model: str = ""  # --forms: the float original's file name in the --floats folder, where one was written


class SeededReader:
    """onnxruntime's CalibrationDataReader protocol over seeded, valid samples of one architecture (float inputs
    times `scale`: far from 1, a calibration far from the data's range)."""

    def __init__(self, model: Any, sizes: Dict[str, int], seed: int = SEED, count: int = CALIBRATION_SAMPLES,
                 scale: float = 1.0) -> None:
        rng = np.random.default_rng(seed + 1)
        samples = [archs.feeds(model, rng, sizes) for _ in range(count)]
        self._samples = iter([{k: v * np.float32(scale) if v.dtype.kind == "f" else v for k, v in s.items()}
                              for s in samples])

    def get_next(self) -> Optional[Dict[str, np.ndarray]]:
        return next(self._samples, None)

    def rewind(self) -> None:  # some onnxruntime versions call it
        pass


def quantize(model: Any, sizes: Dict[str, int], options: Dict[str, Any], out: Path, seed: int = SEED,
             samples: int = CALIBRATION_SAMPLES, scale: float = 1.0) -> Path:
    """onnxruntime.quantization.quantize_static on a float ModelProto, with the options named by their strings."""
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    enums = {"quant_format": QuantFormat, "activation_type": QuantType, "weight_type": QuantType,
             "calibrate_method": CalibrationMethod}
    kwargs = {k: enums[k][v] if k in enums else v for k, v in options.items()}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "float.onnx"
        onnx.save(model, str(src))
        quantize_static(str(src), str(out), SeededReader(model, sizes, seed, samples, scale), **kwargs)
    return out


def compute_nodes(model: Any) -> List[Any]:
    """Conv, ConvTranspose, MatMul and Gemm nodes: the nodes that carry weights or multiply activations."""
    return [n for n in model.graph.node if n.op_type in COMPUTE_OPS]


def dequantized_inputs(model: Any, node: Any) -> bool:
    """Whether the node's data and weight inputs (its first two) both come from a DequantizeLinear."""
    producers = {o: n.op_type for n in model.graph.node for o in n.output}
    return all(producers.get(i) == DEQUANTIZE for i in node.input[:2])


def describe(model: Any) -> Dict[str, Any]:
    """Node counts, opset and dynamic inputs of a model, as the manifest records them."""
    compute = compute_nodes(model)
    return {
        "opset": next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
        "nodes": len(model.graph.node),
        "qdq_nodes": sum(n.op_type in ("QuantizeLinear", DEQUANTIZE) for n in model.graph.node),
        "compute_nodes": len(compute),
        "compute_nodes_with_dq": sum(dequantized_inputs(model, n) for n in compute),
        "inputs": {i.name: list(i.dims) for i in archs.graph_inputs(model)},
    }


def plan(arch_list: Sequence[archs.Arch] = archs.ARCHS, variants: Sequence[Variant] = VARIANTS,
         only: Sequence[str] = ()) -> Iterator[tuple]:
    """(file stem, arch, variant) for every model write_models writes; `only` keeps stems containing a word."""
    for arch in arch_list:
        for variant in variants:
            stem = f"{arch.name}_{variant.name}"
            if not only or any(word in stem for word in only):
                yield stem, arch, variant


def write_models(out: Path, arch_list: Sequence[archs.Arch] = archs.ARCHS, variants: Sequence[Variant] = VARIANTS,
                 only: Sequence[str] = (), seed: int = SEED,
                 progress: Optional[Callable[[ArchModel], None]] = None) -> List[ArchModel]:
    """Write each (architecture, variant) model under out, and manifest.json; the records, in plan order."""
    import onnx

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for stem, arch, variant in plan(arch_list, variants, only):
        path = out / f"{stem}.onnx"
        model = archs.build(arch, seed)
        if variant.quantize is None:
            onnx.save(model, str(path))
        else:
            quantize(model, arch.calibration, variant.quantize, path, seed)
        made.append(_record(stem, path, arch, variant, seed))
        if progress is not None:
            progress(made[-1])
    (out / "manifest.json").write_text(json.dumps([asdict(m) for m in made], indent=2) + "\n")
    return made


def _record(stem: str, path: Path, arch: archs.Arch, variant: Variant, seed: int) -> ArchModel:
    import onnx

    quantizer: Dict[str, Any] = {}
    if variant.quantize is not None:
        import onnxruntime

        quantizer = {"call": "onnxruntime.quantization.quantize_static", "options": variant.quantize,
                     "calibration_samples": CALIBRATION_SAMPLES, "onnxruntime": onnxruntime.__version__,
                     "onnx": onnx.__version__}
    return ArchModel(stem, path.name, hashlib.sha256(path.read_bytes()).hexdigest(), arch.name, variant.name,
                     arch.resembles, variant.note, calibration=dict(arch.calibration), quantizer=quantizer, seed=seed,
                     **describe(onnx.load(str(path))))


@dataclass(frozen=True)
class FormVariant:
    """One model of the --forms folder: an architecture, the quantizer call and its options, the calibration."""

    name: str  # file stem
    arch: str  # check.archs name
    call: str  # "quantize_dynamic" or "quantize_static"
    options: Dict[str, Any]
    note: str
    samples: int = CALIBRATION_SAMPLES  # calibration samples (quantize_static)
    scale: float = 1.0  # their float inputs times this: far from 1, far from the data's range


# The fragile model's calibration: one sample at twenty times the data's range (measured on ocr_rec, ONNX Runtime 1.32:
# -3 dB SQNR against the float model, and about 4 dB between ONNX Runtime's integer kernels and the simulated
# reference, where the same model calibrated on 8 valid samples has 12 dB and 20 dB).
FRAGILE_SAMPLES, FRAGILE_SCALE = 1, 20.0
FORMS = (
    FormVariant("ocr_rec_dynamic", "ocr_rec", "quantize_dynamic", {},
                "quantize_dynamic at its defaults: DynamicQuantizeLinear, ConvInteger and MatMulInteger (seed 002's "
                "form)"),
    FormVariant("ocr_rec_qoperator", "ocr_rec", "quantize_static", {"quant_format": "QOperator"},
                "quantize_static in the QOperator format: QLinearConv, QLinearMatMul and com.microsoft QLinear* ops"),
    FormVariant("ocr_rec_trt", "ocr_rec", "quantize_static", TRT_OPTIONS,
                "QDQ with TensorRT's settings"),
    FormVariant("mobilenet_cls_trt", "mobilenet_cls", "quantize_static", TRT_OPTIONS,
                "QDQ with TensorRT's settings, exported at a fixed input shape"),
    FormVariant("ocr_rec_fragile", "ocr_rec", "quantize_static", TRT_OPTIONS,
                f"TensorRT's settings calibrated on {FRAGILE_SAMPLES} sample at {FRAGILE_SCALE:g} times the data's "
                "range: its activations take a few steps each (quantization loss against the float model)",
                samples=FRAGILE_SAMPLES, scale=FRAGILE_SCALE),
)


def write_forms(out: Path, floats: Optional[Path] = None, only: Sequence[str] = (), seed: int = SEED,
                progress: Optional[Callable[[ArchModel], None]] = None) -> List[ArchModel]:
    """Write the FORMS models under out (and manifest.json); with `floats`, each architecture's float original there.
    The records, in FORMS order."""
    import onnx

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for form in FORMS:
        if only and not any(word in form.name for word in only):
            continue
        arch = archs.by_name(form.arch)
        model = archs.build(arch, seed)
        path = out / f"{form.name}.onnx"
        float_name = ""
        if floats is not None:
            Path(floats).mkdir(parents=True, exist_ok=True)
            float_name = f"{form.arch}_float.onnx"
            onnx.save(model, str(Path(floats) / float_name))
        if form.call == "quantize_dynamic":
            quantize_dynamic(model, path)
        else:
            quantize(model, arch.calibration, form.options, path, seed, form.samples, form.scale)
        variant = Variant(form.call, form.options, form.note)
        record = _record(form.name, path, arch, variant, seed)
        record = replace(record, variant=form.name, float_model=float_name,
                         quantizer=dict(record.quantizer, call=f"onnxruntime.quantization.{form.call}",
                                        **({"calibration_samples": form.samples, "calibration_scale": form.scale}
                                           if form.call == "quantize_static" else {"calibration_samples": 0})))
        made.append(record)
        if progress is not None:
            progress(record)
    (out / "manifest.json").write_text(json.dumps([asdict(m) for m in made], indent=2) + "\n")
    return made


def quantize_dynamic(model: Any, out: Path) -> Path:
    """onnxruntime.quantization.quantize_dynamic on a float ModelProto, at its defaults."""
    import onnx
    from onnxruntime.quantization import quantize_dynamic as dynamic

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "float.onnx"
        onnx.save(model, str(src))
        dynamic(str(src), str(out))
    return out
