"""Engine descriptors: what the catalogue, the runner, the reports and the bug bundles know about each engine.

Pure data; no engine is imported here. Every place that needs an engine's name, title, device, options
or repro driver reads it from ENGINES instead of retyping it. An engine option with `column=True`
makes a column of its own when it is not at its default (a cell's `variant`): ONNX Runtime's
`session.x64quantprecision`, TensorRT's tactic sources, TensorRT-RTX's target architecture.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Tuple


@dataclass(frozen=True)
class EngineOption:
    """One option of one engine that changes what a cell observes."""

    name: str  # the key in a cell's `variant` and in its cell options
    flag: str  # the pytest option that sets it ("--ort-x64quantprecision")
    default: str
    choices: Tuple[str, ...] = ()  # () accepts any text
    help: str = ""
    column: bool = True  # a value other than the default is a column of its own


@dataclass(frozen=True)
class EngineSpec:
    """One engine, as data."""

    name: str  # the cell's `engine`
    title: str  # for people: "TensorRT for RTX"
    short: str  # a plot's column head: "rtx"
    family: str  # engines of one family share an adapter and its stages (TensorRT and TensorRT-RTX)
    device: str  # "cpu", "nvidia-gpu" (build and run need one), "aot" (builds anywhere, runs on a listed GPU)
    adapter: str  # "module:Class", imported only when the engine runs
    module: str  # the Python module the engine is (what its worker imports)
    requirement: str  # what a bug bundle's reader installs
    options: Tuple[EngineOption, ...] = ()

    def option(self, name: str) -> EngineOption:
        for o in self.options:
            if o.name == name:
                return o
        raise KeyError(f"{self.name} has no option {name!r}; options: {', '.join(o.name for o in self.options)}")

    def defaults(self) -> Dict[str, str]:
        return {o.name: o.default for o in self.options}

    def variant(self, values: Mapping[str, Any]) -> Dict[str, str]:
        """The column options among `values` that differ from their defaults: {} is the engine's default column."""
        return {o.name: str(values[o.name]) for o in self.options
                if o.column and o.name in values and values[o.name] is not None and str(values[o.name]) != o.default}

    def check(self, values: Mapping[str, Any]) -> None:
        """ValueError naming an option value this engine does not accept."""
        for o in self.options:
            value = values.get(o.name)
            if value is not None and o.choices and str(value) not in o.choices:
                raise ValueError(f"{self.name} option {o.name} must be one of {', '.join(o.choices)}, not {value!r}")


ORT_LEVELS = ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_LAYOUT", "ORT_ENABLE_ALL")
RTX_TARGETS = ("default", "SM75", "SM80", "SM86", "SM89", "SM120", "SM121")

ENGINES: Dict[str, EngineSpec] = {s.name: s for s in (
    EngineSpec(
        "tensorrt", "TensorRT", "trt", "tensorrt", "nvidia-gpu", "engines.tensorrt:Adapter", "tensorrt",
        "tensorrt (8.x needs numpy<1.24)",
        options=(
            EngineOption("tactics", "--trt-tactics", "default", ("default", "tensorrt-only"),
                         "TensorRT tactic sources: its default, or its own kernels only (no cuBLAS/cuDNN)"),
            # Recorded with every cell (and in the resume key), but not a column: a verdict must not depend on it.
            EngineOption("timing_cache", "--trt-timing-cache", "on", ("on", "off"),
                         "share one ITimingCache per TensorRT version, GPU and tactic setting, kept in "
                         "results/timing-cache/ ($QDQ_TIMING_CACHE_DIR)", column=False),
        ),
    ),
    EngineSpec(
        "tensorrt-rtx", "TensorRT for RTX", "rtx", "tensorrt", "aot", "engines.tensorrt:RtxAdapter", "tensorrt_rtx",
        "tensorrt-rtx",
        options=(
            EngineOption("target", "--rtx-target", "default", RTX_TARGETS,
                         "the GPU architecture the ahead-of-time build is for (default: the builder's own set)"),
            EngineOption("plugin_link", "--rtx-plugin-link", "none", ("none", "libtensorrt_rtx.so"),
                         "give the worker a libtensorrt_rtx.so link to the wheel's libtensorrt_rtx.so.1: the wheel "
                         "ships only .so.1, and 1.7's ONNX parser aborts the process on a Python IPluginV3 node "
                         "without it"),
        ),
    ),
    EngineSpec(
        "onnxruntime", "ONNX Runtime", "ort", "onnxruntime", "cpu", "engines.onnxruntime:Adapter", "onnxruntime",
        "onnxruntime",
        options=(
            EngineOption("graph_optimization_level", "--ort-opt-level", "ORT_ENABLE_ALL", ORT_LEVELS,
                         "ONNX Runtime graph optimization level"),
            EngineOption("x64quantprecision", "--ort-x64quantprecision", "0", ("0", "1"),
                         "session.x64quantprecision: u8s8 -> u8u8 where x86-64 without VNNI would saturate "
                         "(microsoft/onnxruntime#12088)"),
        ),
    ),
    EngineSpec("openvino", "OpenVINO", "ov", "openvino", "cpu", "engines.openvino:Adapter", "openvino", "openvino"),
)}
NAMES: Tuple[str, ...] = tuple(ENGINES)
CPU_ENGINES: Tuple[str, ...] = tuple(n for n, s in ENGINES.items() if s.device == "cpu")


def spec(name: str) -> EngineSpec:
    """The descriptor of one engine, with a readable error for an unknown name."""
    if name not in ENGINES:
        raise KeyError(f"unknown engine {name!r}; known engines: {', '.join(ENGINES)}")
    return ENGINES[name]


def title(name: str) -> str:
    return ENGINES[name].title if name in ENGINES else name


def variant_label(variant: Mapping[str, Any]) -> str:
    """"x64quantprecision=1" or "" for an engine's default column."""
    return ", ".join(f"{k}={v}" for k, v in sorted(variant.items()))
