"""What a TensorRT-family module offers, found once by looking names up: the worker's one record of it.

Standard library only, Python 3.9+. The worker computes this when it imports the module and records it in
every result (`options.api`); the adapter and the reports read that record instead of comparing version
numbers. TensorRT 8.5 .. 11.x and TensorRT for RTX (1.4 .. 1.7) are told apart by what they have, plus two
documented facts about TensorRT-RTX, which is keyed by its module name: its networks are always strongly
typed, and it builds ahead of time without a GPU for the architectures it lists.
"""

from __future__ import annotations

from typing import Any, Dict, List

# NVIDIA, "Migrating from TensorRT 10.x to 11.x": weak typing, INT8 calibration and dynamic ranges are gone.
MIGRATION_11 = "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html"
# NVIDIA TensorRT-RTX, "Working with Quantized Types": explicit quantization (Q/DQ) only, strongly typed.
RTX_QUANTIZED_TYPES = "https://docs.nvidia.com/deeplearning/tensorrt-rtx/latest/inference-library/work-with-quantized-types.html"
RTX_MODULE = "tensorrt_rtx"


def members(enum_cls: Any) -> List[str]:
    """Member names of a pybind11 or Python enum class ([] for None)."""
    if enum_cls is None:
        return []
    found = getattr(enum_cls, "__members__", None)
    if isinstance(found, dict) or hasattr(found, "keys"):
        return list(found.keys())
    return [n for n in dir(enum_cls) if n.isupper() and not n.startswith("_")]


def detect(trt: Any, module: str) -> Dict[str, Any]:
    """The capability record of an imported TensorRT-family module."""
    rtx = module == RTX_MODULE
    network_flags = members(getattr(trt, "NetworkDefinitionCreationFlag", None))
    builder_flags = members(getattr(trt, "BuilderFlag", None))
    if rtx or "INT8" not in builder_flags:
        typing = "always strong"  # 11.x removed weak typing; TensorRT-RTX never had it
    elif "STRONGLY_TYPED" in network_flags:
        typing = "optional"  # 9.x/10.x: a network flag
    else:
        typing = "weak"  # 8.x
    plugins = []
    if hasattr(trt, "IPluginV3"):  # Python plugins arrived with IPluginV3 (TensorRT 10.0)
        if hasattr(trt, "IPluginCreatorV3One"):
            plugins.append("IPluginV3")
        if hasattr(trt, "IPluginV2DynamicExt") and hasattr(trt, "IPluginCreator"):
            plugins.append("IPluginV2DynamicExt")
    if typing == "always strong":
        implicit_int8 = (f"TensorRT-RTX networks are strongly typed: INT8 only through explicit Q/DQ "
                         f"({RTX_QUANTIZED_TYPES})" if rtx else
                         f"INT8 calibration removed in TensorRT 11.0 ({MIGRATION_11})")
    else:
        implicit_int8 = ""
    engine_cls = getattr(trt, "ICudaEngine", None)
    io = ("bindings" if hasattr(engine_cls, "num_bindings") else "tensors") if engine_cls is not None else ""
    context_cls = getattr(trt, "IExecutionContext", None)
    # How a dynamic input's shape is set before a run: by binding index with the bindings API (8.x), by name
    # with named I/O tensors (8.5 on, the only way from 10.0).
    if io == "bindings" and hasattr(context_cls, "set_binding_shape"):
        input_shapes = "set_binding_shape"
    else:
        input_shapes = "set_input_shape" if hasattr(context_cls, "set_input_shape") else ""
    return {
        "module": module,
        "version": str(getattr(trt, "__version__", "")),
        "typing": typing,
        # 8.x needs EXPLICIT_BATCH; 10.x keeps it as a no-op, TensorRT-RTX 1.4 as a leftover
        "explicit_batch": "EXPLICIT_BATCH" in network_flags and typing == "weak",
        # 8.x's default tactic sources call cuBLAS and cuDNN; 10.0 turned both off by default (10.0 release notes)
        "default_tactics_use_cudnn": typing == "weak" and "CUDNN" in members(getattr(trt, "TacticSource", None)),
        "precision_flags": [f for f in ("INT8", "FP16") if f in builder_flags and typing != "always strong"],
        "io": io,  # "" until an engine says (the stand-ins have no ICudaEngine class)
        "input_shapes": input_shapes,  # the execution context's method for a dynamic input's shape ("" if none)
        "python_plugins": plugins,
        "implicit_int8": implicit_int8,  # why implicit (calibrated) INT8 cannot be built, or ""
        "parser_flags": members(getattr(trt, "OnnxParserFlag", None)),
        "compute_capabilities": [m for m in members(getattr(trt, "ComputeCapability", None)) if m.startswith("SM")],
        "aot": rtx,  # builds on a CPU for listed GPU architectures; runs only on those
        "layer_listing": "build log" if rtx else "engine inspector",
    }
