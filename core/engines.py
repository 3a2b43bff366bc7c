"""Engine descriptors: what the catalogue, the runner, the reports, the bug bundles and the GPU tools know about each
engine, in one place.

Pure data and the standard library; no engine is imported here (the noxfile and `python -m engines.pins` read it
without numpy). Every place that needs an engine's name, title, device, defaults, options, repro files, lint
eligibility or pinned versions reads it from ENGINES instead of retyping it. An engine option with `column=True`
makes a column of its own when it is not at its default (a cell's `variant`): ONNX Runtime's
`session.x64quantprecision`, TensorRT's tactic sources, TensorRT-RTX's target architecture.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple


@dataclass(frozen=True)
class EngineOption:
    """One option of one engine that changes what a cell observes."""

    name: str  # the key in a cell's `variant` and in its cell options
    flag: str  # the pytest option that sets it ("--ort-x64quantprecision")
    default: str
    choices: Tuple[str, ...] = ()  # () accepts any text
    help: str = ""
    column: bool = True  # a value other than the default is a column of its own
    env: str = ""  # an environment variable that sets the default where no flag does ("" none)
    sweep: Tuple[str, ...] = ()  # the values a full run gives a column each (TensorRT-RTX's build targets)


@dataclass(frozen=True)
class PinGroup:
    """Versions of one engine that install alike, one nox session each (`<session>(<version>)`)."""

    session: str  # "trt", "trt10", "rtx", "ort", "openvino"
    versions: Tuple[str, ...]
    python: str = ""  # the interpreter they need ("" any the session has)
    index: str = ""  # an extra package index they come from ("" PyPI)
    requires: Tuple[str, ...] = ()  # what every version of the group needs beside it
    extra: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)  # per version: more of the same
    cuda: Mapping[str, str] = field(default_factory=dict)  # per version: the CUDA major its wheel names (cu11, cu12)
    # No machine of this project reaches `index` (the CPU machines reach PyPI only, the GPU machines nothing outside):
    # a version of the group without a cell that ran has never run, and the reports say so, and why (never_run_reason).
    unreachable: bool = False
    # per version whose number is not the build's (a wheel of three parts): the build it ships and the source that
    # says so, for a column whose cells do not record it
    builds: Mapping[str, Tuple[str, str]] = field(default_factory=dict)
    # per version that is an Early Access release: the GA release of its line, which no column of this suite runs,
    # and the source that says so (a bug bundle's "Have you tried the latest release?" names it)
    early_access: Mapping[str, Tuple[str, str]] = field(default_factory=dict)

    def requirements(self, version: str) -> Tuple[str, ...]:
        """What one version installs beside the engine itself."""
        return self.requires + tuple(self.extra.get(version, ()))


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
    # Fixed settings the adapter always uses and a bug bundle repeats (not options: no cell differs in them).
    settings: Mapping[str, Any] = field(default_factory=dict)
    # What a bug bundle's repro.py runs for this engine: bundle path -> repository path, copied unchanged.
    repro_files: Mapping[str, str] = field(default_factory=dict)
    repro_commands: str = ""  # the template of the equivalent tool command lines a bug bundle carries ("" none)
    lint: bool = False  # the TensorRT lint (check.lint) predicts for it: it shares TensorRT's ONNX parser
    pins: Tuple[PinGroup, ...] = ()
    # How a bug bundle's repro.py runs a cell as the adapter did (run_options, matrix.bugbundle): the settings the
    # adapter passes the engine, each the value a cell's options recorded where they did (under `run_aliases`' key
    # first: what was asked for, over what the engine reports), else this default; the column options whose column
    # value stands over a recorded one; the column options the worker's request carries (`request_options`) and its
    # engine record (`worker_options`); and the settings line ISSUE.md shows, a template over run_options' values.
    run_settings: Mapping[str, Any] = field(default_factory=dict)
    run_aliases: Mapping[str, str] = field(default_factory=dict)
    column_decides: Tuple[str, ...] = ()
    request_options: Tuple[str, ...] = ()
    worker_options: Tuple[str, ...] = ()
    run_words: str = ""

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

    def value(self, variant: Mapping[str, Any], name: str) -> str:
        """One option's value in a cell's column: its variant's, else the option's default."""
        return str(variant.get(name) or self.option(name).default)

    def run_options(self, recorded: Mapping[str, Any], variant: Mapping[str, Any]) -> Dict[str, Any]:
        """The options the adapter ran a cell with: those it recorded, each option's column value where it recorded
        none (or where the column decides), and the settings the adapter passes the engine (run_settings)."""
        found = dict(recorded)
        for o in self.options:
            found.setdefault(o.name, self.value(variant, o.name))
        for name in self.column_decides:
            found[name] = self.value(variant, name)
        for name, default in self.run_settings.items():
            found[name] = _plain(found.get(self.run_aliases.get(name, name)) or found.get(name) or default)
        return found

    def run_settings_words(self, options: Mapping[str, Any]) -> str:
        """ISSUE.md's words for the settings every cell of the engine runs with (run_words over run_options)."""
        return self.run_words.format(**{k: _said(v) for k, v in options.items() if k.isidentifier()})

    def resolve(self, given: Mapping[str, Optional[str]]) -> Dict[str, str]:
        """Every option: given (None for not given), else its environment variable, else its default; ValueError
        for a value this engine does not accept (engines.run and the pytest plugin resolve a column alike)."""
        found = {}
        for o in self.options:
            value = given.get(o.name)
            if value is None and o.env:
                value = os.environ.get(o.env) or None
            found[o.name] = str(value) if value is not None else o.default
        self.check(found)
        return found

    def check(self, values: Mapping[str, Any]) -> None:
        """ValueError naming an option value this engine does not accept."""
        for o in self.options:
            value = values.get(o.name)
            if value is not None and o.choices and str(value) not in o.choices:
                raise ValueError(f"{self.name} option {o.name} must be one of {', '.join(o.choices)}, not {value!r}")


def _plain(value: Any) -> Any:
    """A setting's value as a cell's JSON holds it: a list for a sequence, a dict for a mapping."""
    if isinstance(value, (list, tuple)):
        return list(value)
    return dict(value) if isinstance(value, Mapping) else value


def _said(value: Any) -> str:
    """A setting's value in a sentence: a list joined by commas, a mapping as sorted JSON."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return json.dumps(value, sort_keys=True) if isinstance(value, Mapping) else str(value)


ORT_LEVELS = ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_LAYOUT", "ORT_ENABLE_ALL")
# Every target a TensorRT-RTX ahead-of-time build accepts ("default": the builder's own set); a full run sweeps
# some of them (the target option's `sweep`).
RTX_BUILD_TARGETS = ("default", "SM75", "SM80", "SM86", "SM89", "SM120", "SM121")
# The GPU architectures a TensorRT expectation can name (`Expectation.when={"gpu": ...}`), spelt as TensorRT-RTX's
# targets are; a GPU cell's is its compute capability (hardware_detail, "8.7" -> "SM87"). Jetson Orin is SM87 and
# Jetson Thor SM110.
GPU_ARCHITECTURES = ("SM75", "SM80", "SM86", "SM87", "SM89", "SM90", "SM100", "SM110", "SM120", "SM121")
NVIDIA_INDEX = "https://pypi.nvidia.com"
INDEX_NAMES = {"": "PyPI", NVIDIA_INDEX: "NVIDIA's index"}  # a package index as a report names it
# The worker and the stages a bug bundle's repro.py runs, by family, copied unchanged (bundle path: repository path).
TRT_FILES = ("worker.py", "build.py", "execute.py", "capabilities.py", "inspect.py", "layers.py", "gpu.py",
             "plugins.py", "timing.py", "lifeline.py")
TRT_REPRO = {f"suite/tensorrt/{name}": f"engines/tensorrt/{name}" for name in TRT_FILES}
TRT_SETTINGS = {"workspace_mb": 1024}  # the builder's workspace pool: 1 GiB
ORT_SETTINGS = {"providers": ("CPUExecutionProvider",)}
# On CPUs with bf16 support OpenVINO computes float layers in bf16 unless the hint says f32.
OV_SETTINGS = {"device": "CPU", "inference_precision_hint": "f32"}

ENGINES: Dict[str, EngineSpec] = {s.name: s for s in (
    EngineSpec(
        "tensorrt", "TensorRT", "trt", "tensorrt", "nvidia-gpu", "engines.tensorrt:Adapter", "tensorrt",
        "tensorrt (8.x needs numpy<1.24)",
        options=(
            EngineOption("tactics", "--trt-tactics", "default", ("default", "tensorrt-only"),
                         "TensorRT tactic sources: its default, or its own kernels only (no cuBLAS/cuDNN)",
                         env="QDQ_TRT_TACTICS"),
            # Recorded with every cell (and in the resume key), but not a column: a verdict must not depend on it.
            EngineOption("timing_cache", "--trt-timing-cache", "on", ("on", "off"),
                         "share one ITimingCache per TensorRT version, GPU and tactic setting, kept in "
                         "results/timing-cache/ ($QDQ_TIMING_CACHE_DIR)", column=False),
        ),
        settings=TRT_SETTINGS, repro_files=TRT_REPRO, repro_commands="commands_tensorrt.md.j2", lint=True,
        column_decides=("tactics",), request_options=("tactics",),
        pins=(
            # TensorRT from PyPI: whole wheels exist only for these, for CPython <= 3.10, and their trt.nptype needs
            # numpy < 1.24 (np.bool). They need an NVIDIA GPU. Their Requires-Dist names the CUDA wheels: 8.5.x
            # *-cu11, 8.6.0 *-cu12 (tools/gpu-payload pins those).
            # PyPI's tensorrt 8.6.0 is TensorRT 8.6.0 EA, build 8.6.0.12, the only 8.6.0 build NVIDIA released (8.6.1 GA
            # is 8.6.1.6): its OSS release says "corresponding to TensorRT 8.6.0.12 EA release", and its
            # include/NvInferVersion.h has NV_TENSORRT_BUILD 12. The cells record tensorrt.__version__, "8.6.0".
            PinGroup("trt", ("8.5.1.7", "8.5.2.2", "8.5.3.1", "8.6.0"), python="3.10", requires=("numpy<1.24",),
                     cuda={"8.5.1.7": "cu11", "8.5.2.2": "cu11", "8.5.3.1": "cu11", "8.6.0": "cu12"},
                     builds={"8.6.0": ("8.6.0.12", "https://github.com/NVIDIA/TensorRT/releases/tag/v8.6.0")},
                     early_access={"8.6.0": ("8.6.1.6", "https://github.com/NVIDIA/TensorRT/releases/tag/v8.6.1")}),
            # TensorRT 10.x and 11.x from NVIDIA's own index (pip's --extra-index-url); run these on a machine that
            # reaches it. Not verified on real TensorRT here. 10.16.1.11 is the last 10.x; 11.x (11.0.0.114 ..
            # 11.4.0.106, version strings as released) is strongly typed only: see worker.py. 11.5.0 (2026-11-18;
            # parses opset 25, ships Polygraphy 0.53.9) as its release notes and v11.5 tag publish it: no 11.5 wheel
            # was reachable from here to read its build number, so its session takes the newest 11.5.0.* build.
            PinGroup("trt10", ("10.8.0.43", "10.13.3.9", "10.16.1.11", "11.0.0.114", "11.1.0.106", "11.2.1.2",
                               "11.3.0.99", "11.4.0.106", "11.5.0"), python="3.12", index=NVIDIA_INDEX,
                     unreachable=True),
        ),
    ),
    EngineSpec(
        "tensorrt-rtx", "TensorRT for RTX", "rtx", "tensorrt", "aot", "engines.tensorrt:RtxAdapter", "tensorrt_rtx",
        "tensorrt-rtx",
        options=(
            # The targets swept are the architectures whose outcome can differ (FP8 GEMM needs SM89+, FP4 GEMM
            # Blackwell, INT4 weight-only GEMM no Turing: the RTX support matrix; 1.7 builds an INT8 Conv in float
            # for SM75, seeds 013 and 023), for the cases that say so (Case.arch_dependent).
            EngineOption("target", "--rtx-target", "default", RTX_BUILD_TARGETS,
                         "the GPU architecture the ahead-of-time build is for (default: the builder's own set)",
                         sweep=("SM75", "SM80", "SM86", "SM89", "SM120")),
            EngineOption("plugin_link", "--rtx-plugin-link", "none", ("none", "libtensorrt_rtx.so"),
                         "give the worker a libtensorrt_rtx.so link to the wheel's libtensorrt_rtx.so.1: the wheel "
                         "ships only .so.1, and 1.7's ONNX parser aborts the process on a Python IPluginV3 node "
                         "without it"),
        ),
        settings=TRT_SETTINGS, repro_files=TRT_REPRO, lint=True,
        request_options=("target",), worker_options=("plugin_link",), run_words="an ahead-of-time build",
        pins=(
            # Real, and it builds with no GPU (CPU-only ahead-of-time builds), so every machine gets these columns.
            # `tensorrt-rtx==V` is what a user's `pip install` gives: the cu13 build (tensorrt_rtx_cu13_libs); the
            # cu12 build gives byte-identical plans (measured on 1.7.1.116), and the CUDA major only matters for
            # running a plan, which no machine here can (sm_90 is not a target).
            PinGroup("rtx", ("1.4.0.76", "1.5.0.114", "1.6.1.120", "1.7.1.116")),
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
        settings=ORT_SETTINGS,
        repro_files={"suite/stages.py": "engines/onnxruntime/stages.py"},
        run_settings=ORT_SETTINGS, run_aliases={"providers": "providers_requested"},
        run_words="providers {providers}",
        # Oldest and newest; 1.16 is the oldest that reads the bundles (IR 8), and it needs numpy 1.x.
        pins=(PinGroup("ort", ("1.16.3", "1.31.1"), extra={"1.16.3": ("numpy<2",)}),),
    ),
    EngineSpec(
        "openvino", "OpenVINO", "ov", "openvino", "cpu", "engines.openvino:Adapter", "openvino", "openvino",
        options=(
            # Since 2024 the CPU plugin quantizes activations to int8 on the fly (groups of 32) in front of a MatMul
            # whose weights are compressed (int4, int8): measured on this suite's INT4 reproducers with OpenVINO
            # 2026.4.1, 0.4-0.65 steps off the reference with it and exact without. A reference column runs without.
            EngineOption("dynamic_quantization_group_size", "--ov-dynamic-quantization-group-size", "0", (),
                         "DYNAMIC_QUANTIZATION_GROUP_SIZE: 0 turns the CPU plugin's dynamic quantization of "
                         "activations for compressed weights off; 32 is OpenVINO's own default"),
        ),
        settings=OV_SETTINGS,
        repro_files={"suite/stages.py": "engines/openvino/stages.py"},
        run_settings={"device": OV_SETTINGS["device"],
                      "config": {"INFERENCE_PRECISION_HINT": OV_SETTINGS["inference_precision_hint"]}},
        run_words="device {device}, config {config}",
        # Oldest and newest; the oldest needs numpy 1.x.
        pins=(PinGroup("openvino", ("2024.6.0", "2026.4.1"), extra={"2024.6.0": ("numpy<2",)}),),
    ),
)}
NAMES: Tuple[str, ...] = tuple(ENGINES)
CPU_ENGINES: Tuple[str, ...] = tuple(n for n, s in ENGINES.items() if s.device == "cpu")
LINT_ENGINES: Tuple[str, ...] = tuple(n for n, s in ENGINES.items() if s.lint)
# What every bug bundle's repro.py needs, whatever the engine: itself and the suite's one judge of a cell, with the
# judge of outputs, the vocabulary and the engine descriptors it imports.
REPRO_ALWAYS = {"repro.py": "matrix/repro.py", "suite/judge.py": "core/judge.py",
                "suite/numerics.py": "core/numerics.py", "suite/words.py": "core/words.py",
                "suite/engines.py": "core/engines.py", "suite/thresholds.py": "core/thresholds.py"}


# The files an NVIDIA driver leaves: this machine has an NVIDIA GPU where either exists (the TensorRT adapter then asks
# the CUDA driver itself).
NVIDIA_DEVICE_FILES = ("/dev/nvidia0", "/proc/driver/nvidia/version")


def nvidia_gpu_present(device_files: Sequence[str] = NVIDIA_DEVICE_FILES) -> bool:
    """An NVIDIA driver is on this machine (no engine is imported to say so)."""
    return any(os.path.exists(f) for f in device_files)


def runs_here(name: str) -> bool:
    """This machine can run the engine at all: a CPU or ahead-of-time engine anywhere, a GPU engine with a GPU."""
    return spec(name).device != "nvidia-gpu" or nvidia_gpu_present()


def spec(name: str) -> EngineSpec:
    """The descriptor of one engine, with a readable error for an unknown name."""
    if name not in ENGINES:
        raise KeyError(f"unknown engine {name!r}; known engines: {', '.join(ENGINES)}")
    return ENGINES[name]


def title(name: str) -> str:
    return ENGINES[name].title if name in ENGINES else name


def family(name: str) -> str:
    """"tensorrt" for both TensorRT engines, the name itself for any other."""
    return ENGINES[name].family if name in ENGINES else name


def pin_groups() -> Dict[str, PinGroup]:
    """Every pin group by session name, in descriptor order."""
    return {g.session: g for s in ENGINES.values() for g in s.pins}


def pin_group(session: str) -> PinGroup:
    groups = pin_groups()
    if session not in groups:
        raise KeyError(f"no pin group {session!r}; groups: {', '.join(groups)}")
    return groups[session]


def engine_of(session: str) -> Optional[str]:
    """The engine whose pins a session installs, None for another session."""
    return next((s.name for s in ENGINES.values() for g in s.pins if g.session == session), None)


def never_run_reason(engine: str, version: str) -> str:
    """Why a pinned version can have no cell from any machine of this project: "its builder wheel is not reachable
    from here (NVIDIA's index)"; "" for a version whose wheel installs here (or one not in the pin table)."""
    for group in ENGINES[engine].pins if engine in ENGINES else ():
        if version in group.versions and group.unreachable:
            return f"its builder wheel is not reachable from here ({INDEX_NAMES.get(group.index, group.index)})"
    return ""


def unreachable_versions() -> Dict[Tuple[str, str], str]:
    """(engine, version) -> never_run_reason, for every pinned version whose wheel no machine here reaches."""
    return {(s.name, v): never_run_reason(s.name, v) for s in ENGINES.values() for g in s.pins if g.unreachable
            for v in g.versions}


def pinned_build(engine: str, version: str) -> Tuple[str, str]:
    """(build, source) a pinned version's wheel ships where its number is not the build's ("8.6.0" is 8.6.0.12),
    else ("", "")."""
    for group in ENGINES[engine].pins if engine in ENGINES else ():
        if version in group.builds:
            return group.builds[version]
    return "", ""


def variant_label(variant: Mapping[str, Any]) -> str:
    """"x64quantprecision=1" or "" for an engine's default column."""
    return ", ".join(f"{k}={v}" for k, v in sorted(variant.items()))
