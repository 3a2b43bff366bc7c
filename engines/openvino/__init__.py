"""OpenVINO adapter: a cross-check column, with per-node precision read from the compiled model's runtime graph.

On CPUs with bf16 support OpenVINO computes float layers in bf16 unless INFERENCE_PRECISION_HINT is f32,
so the adapter always sets it; and it turns the CPU plugin's dynamic quantization of activations for compressed
weights off unless its option asks for a group size (core.engines). Each runtime layer's rt_info names the ONNX nodes
it came from ("originalLayersNames") and the precision it ran in ("runtimePrecision").
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from core.engines import ENGINES
from core.isa import cpu_label
from engines.base import EngineInfo, Observation, no_custom_ops, target_outputs
from engines.hardware import captured_stderr, not_installed, python_versions
from engines.openvino import stages
from generators.bundle import Bundle

NAME = "openvino"
SETTINGS = ENGINES[NAME].settings  # the device and the float precision hint (core.engines)
INT8_PRECISIONS = ("i8", "u8")
FLOAT_PRECISIONS = ("f32", "bf16", "f16")
# Runtime layers that only move data; they never decide a target's precision.
PLUMBING = frozenset({"Reorder", "Const", "Input", "Output", "Parameter", "Result", "Transpose", "Reshape"})


def release(version: str) -> str:
    """The PEP 440 release part of an OpenVINO build string: "2026.4.1-22982-e213a14..." -> "2026.4.1"."""
    match = re.match(r"\s*(\d+(?:\.\d+)*)", version)
    return match.group(1) if match else version


def _openvino_version(ov: Any) -> str:
    version = getattr(ov, "__version__", "") or ""
    if not version and hasattr(ov, "get_version"):
        version = ov.get_version()
    return str(version)


class Adapter:
    """Reads, compiles and infers a bundle with openvino.Core."""

    name = NAME
    static_not_run = True  # cannot_run reads the bundle alone (engines.reuse)

    @staticmethod
    def same_machine(hardware: str, detail: Mapping[str, str]) -> bool:
        """Whether a cell's hardware is this machine's CPU (its label as this machine renders it), without importing
        openvino (engines.run)."""
        return hardware == cpu_label(onednn=True)[0]

    def __init__(self, device: str = SETTINGS["device"],
                 inference_precision_hint: str = SETTINGS["inference_precision_hint"],
                 dynamic_quantization_group_size: Optional[str] = None):
        self.device = device
        group = str(dynamic_quantization_group_size or ENGINES[NAME].defaults()["dynamic_quantization_group_size"])
        if not group.isdigit():
            raise ValueError(f"openvino option dynamic_quantization_group_size must be a whole number (0: off), "
                             f"not {group!r}")
        self.config = {"INFERENCE_PRECISION_HINT": inference_precision_hint, "DYNAMIC_QUANTIZATION_GROUP_SIZE": group}
        self._core: Any = None  # one openvino.Core for every cell: made at the first, its CPU plugin loaded once

    def _shared_core(self, ov: Any) -> Any:
        """The adapter's openvino.Core, made the first time a cell asks (no property is set on it: each compile_model
        gets the cell's config); OpenVINO's malloc_trim skipped in this process (keep_freed_memory)."""
        if self._core is None:
            self._core = ov.Core()
            keep_freed_memory()
        return self._core

    def probe(self) -> EngineInfo:
        try:
            ov = importlib.import_module("openvino")
        except ImportError as exc:
            return not_installed(NAME, exc, onednn=True)
        label, detail = cpu_label(onednn=True)  # its CPU plugin is oneDNN: ONEDNN_MAX_CPU_ISA caps its kernels
        full = _openvino_version(ov)
        versions = dict(python_versions(), openvino=full)
        try:
            core = ov.Core()
            devices = list(core.available_devices)
            if self.device in devices:
                detail = dict(detail, openvino_device=str(core.get_property(self.device, "FULL_DEVICE_NAME")),
                              capabilities=" ".join(core.get_property(self.device, "OPTIMIZATION_CAPABILITIES")))
        except Exception as exc:
            return EngineInfo(name=NAME, version=release(full), hardware=label, available=False,
                              unavailable_status="not_run", reason=f"openvino.Core() failed: {exc}",
                              hardware_detail=detail, versions=versions)
        if self.device not in devices:
            return EngineInfo(name=NAME, version=release(full), hardware=label, available=False,
                              unavailable_status="not_run",
                              reason=f"OpenVINO device {self.device} is not here (devices: {', '.join(devices)})",
                              hardware_detail=detail, versions=versions)
        if self.device != "CPU":
            label = f"{self.device.lower()}: {detail.get('openvino_device', self.device)}"
        return EngineInfo(name=NAME, version=release(full), hardware=label, available=True,
                          hardware_detail=detail, versions=versions)

    def cannot_run(self, bundle: Bundle) -> str:
        """Plugin models need a TensorRT plugin that openvino does not have."""
        return no_custom_ops("openvino", bundle)

    def run(self, bundle: Bundle) -> Observation:
        obs = Observation(options={"device": self.device, "config": dict(self.config)})
        try:
            ov = importlib.import_module("openvino")
        except ImportError as exc:
            obs.error = f"openvino is not installed: {exc}"
            return obs
        logs: List[str] = []
        try:
            with captured_stderr(logs):
                self._run_stages(ov, bundle, obs)
        except Exception as exc:  # an adapter bug must not take the controller down either
            obs.error = obs.error or f"{type(exc).__name__}: {exc}"
        obs.log = "".join(logs)
        return obs

    def _run_stages(self, ov: Any, bundle: Bundle, obs: Observation) -> None:
        """The stages (engines/openvino/stages.py, which bug bundles ship), the precision evidence between them."""
        compiled = stages.compile_stages(ov, str(bundle.model_path), self.device, self.config, obs,
                                         self._shared_core(ov))
        if compiled is None:
            return
        obs.precision = precision_evidence(
            compiled, list(bundle.meta.get("target_nodes", [])), target_outputs(bundle)
        )
        stages.run_stage(compiled, bundle.inputs(), list(bundle.meta.get("outputs", {})), obs)


def keep_freed_memory() -> bool:
    """Since 2024.6, OpenVINO calls glibc's malloc_trim(0) each time a compiled model is destroyed, so that a process
    that compiles once gives the memory back; here it comes at every cell, and each call hands every free page of the
    heap back to the kernel (a 635-cell column: about 140,000 madvise calls), which the next compile faults in again.
    libopenvino's calls to malloc_trim are pointed at libc's labs (engines.imports), which touches no memory and
    returns 0 for OpenVINO's 0: what is computed is the same, the memory freed stays with the process as any other
    freed memory does. Measured: 2026.4.1's column 2.3 s and 2024.6.0's 1.4 s less system time. Whether it was done
    (False: another platform, a libopenvino without the call, or any step not as expected, and nothing changed)."""
    import ctypes

    from engines import imports

    try:
        labs = ctypes.cast(ctypes.CDLL(None).labs, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return False
    return imports.redirect("libopenvino.so", "malloc_trim", labs or 0)


def runtime_layers(compiled: Any) -> List[Dict[str, Any]]:
    """The executed graph's layers: name, type, runtime precision, and the ONNX nodes each came from."""
    layers = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        layers.append({
            "name": op.get_friendly_name(), "type": _rt(info, "layerType"), "precision": _rt(info, "runtimePrecision"),
            "outputs": _rt(info, "outputPrecisions"), "primitive": _rt(info, "primitiveType"),
            "original": [n for n in _rt(info, "originalLayersNames").split(",") if n],
        })
    return layers


def _rt(info: Any, key: str) -> str:
    """One rt_info entry as text (its values are OVAny), "" when absent."""
    if key not in info:
        return ""
    value = info[key]
    if hasattr(value, "astype"):
        try:
            return str(value.astype(str))
        except Exception:
            pass
    return str(value)


def precision_evidence(
    compiled: Any, targets: Sequence[str], outputs: Optional[Dict[str, str]] = None
) -> Dict[str, Dict[str, str]]:
    """node -> {precision, evidence} from the runtime layers whose originalLayersNames name the node."""
    try:
        layers = runtime_layers(compiled)
    except Exception as exc:
        return {t: {"precision": "unknown", "evidence": f"runtime model unreadable: {exc}"} for t in targets}
    index = LayerIndex(layers)
    return {t: layer_precision(t, layers, (outputs or {}).get(t, ""), index) for t in targets}


def layer_precision(target: str, layers: List[Dict[str, Any]], output: str = "",
                    index: Optional["LayerIndex"] = None) -> Dict[str, str]:
    """The runtime layer that executes target: by node name ("<target>", "<target>/..."), else by the
    node's output tensor (OpenVINO renames a node that writes a graph output after that output)."""
    index = index or LayerIndex(layers)
    layer = index.find(target) or (index.find(output) if output else None)
    if layer is None:
        return {"precision": "unknown", "evidence": f"no runtime layer lists {target} in originalLayersNames"}
    runtime = layer["precision"].lower()
    if runtime in INT8_PRECISIONS:
        precision = "int8"
    elif runtime in FLOAT_PRECISIONS:
        precision = "float"
    else:
        precision = "unknown"
    evidence = (f"runtime layer '{layer['name']}' type {layer['type']}, runtimePrecision {layer['precision']}, "
                f"outputPrecisions {layer['outputs']}, originalLayersNames {','.join(layer['original'])}"
                + (f", primitiveType {layer['primitive']}" if layer.get("primitive") else ""))
    return {"precision": precision, "evidence": evidence, "layer": layer["name"], "layer_type": layer["type"],
            "inputs": [_dtype(layer["precision"])], "weights": [],
            "outputs": [_dtype(p) for p in re.findall(r"\w+", layer["outputs"])], "tactic": layer.get("primitive", ""),
            "via": "OpenVINO runtime model (originalLayersNames)"}


# OpenVINO's element type names -> the evidence's dtype words (as TensorRT's: engines/tensorrt/layers.py)
_DTYPES = {"i8": "int8", "u8": "uint8", "f32": "fp32", "f16": "fp16", "bf16": "bf16", "i32": "int32", "i64": "int64"}


def _dtype(name: str) -> str:
    return _DTYPES.get(name.lower(), name.lower() or "?")


class LayerIndex:
    """The runtime layers that do work, by the ONNX node names in their originalLayersNames, built in one pass."""

    def __init__(self, layers: List[Dict[str, Any]]) -> None:
        self.exact: Dict[str, Dict[str, Any]] = {}  # a node name -> the first layer that lists it
        self.prefixed: Dict[str, Dict[str, Any]] = {}  # "<target>" -> the first layer that lists "<target>/..."
        for layer in layers:
            if layer["type"] in PLUMBING:
                continue
            for name in layer["original"]:
                self.exact.setdefault(name, layer)
                for i, c in enumerate(name):
                    if c == "/":
                        self.prefixed.setdefault(name[:i], layer)

    def find(self, target: str) -> Optional[Dict[str, Any]]:
        """The first layer that lists the target, else the first that lists a node inside it ("<target>/...")."""
        return self.exact.get(target) or self.prefixed.get(target)
