"""ONNX Runtime adapter: a cross-check column, with per-node precision read from ORT's optimized graph and profile.

ORT has no build step apart from session creation, so "load" and "build" complete together. Its QDQ
fusion replaces DequantizeLinear -> Conv -> QuantizeLinear with one QLinearConv (named after the
original node, or "<node>_token_<n>" after the NHWC transformer); a Conv with no QuantizeLinear after
it stays a float Conv. The optimized graph and the profile's per-kernel input types are the evidence.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from core.engines import ENGINES
from core.isa import cpu_label
from core.tempdirs import CellFolders
from engines.base import EngineInfo, Observation, no_custom_ops
from engines.hardware import captured_stderr, not_installed, python_versions
from engines.onnxruntime import stages
from engines.onnxruntime.stages import CPU
from engines.reasons import newer_model
from generators.bundle import Bundle

NAME = "onnxruntime"
CUDA = "CUDAExecutionProvider"
# Kernels that compute on 8-bit integers (ONNX and com.microsoft domains).
INTEGER_KERNELS = frozenset({
    "ConvInteger", "MatMulInteger", "QGemm", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "MatMulNBits",
    "QAttention", "QEmbedLayerNormalization", "DynamicQuantizeLSTM", "QOrderedMatMul", "QOrderedGelu",
    "NhwcQLinearConv",
})
# Nodes that move or convert data around a kernel; they never decide a target's precision.
PLUMBING = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Transpose", "Cast", "Reshape",
    "ReorderInput", "ReorderOutput", "Identity",
})
# Of those, the ones that convert between float and integer: a target of theirs is never judged by its input type (a
# DequantizeLinear always reads integers and a QuantizeLinear floats; neither says what precision the network ran in).
CONVERSIONS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Cast"})
QUANT_TYPES = ("int8", "uint8")


def is_integer_kernel(op_type: str) -> bool:
    """Does this ORT op compute on quantized integers (QLinear*, *Integer, QGemm, ...)?"""
    return op_type.startswith("QLinear") or op_type in INTEGER_KERNELS


class Adapter:
    """Runs a bundle through onnxruntime.InferenceSession."""

    name = NAME
    static_not_run = True  # cannot_run reads the bundle alone (engines.reuse)

    @staticmethod
    def same_machine(hardware: str, detail: Mapping[str, str]) -> bool:
        """Whether a cell's hardware is this machine's (its label as this machine renders it), without importing
        onnxruntime (engines.run)."""
        return hardware == cpu_label()[0]

    def __init__(self, graph_optimization_level: Optional[str] = None, providers: Optional[Sequence[str]] = None,
                 x64quantprecision: Optional[str] = None):
        defaults = ENGINES[NAME].defaults()
        self.graph_optimization_level = graph_optimization_level or defaults["graph_optimization_level"]
        self.x64quantprecision = str(x64quantprecision or defaults["x64quantprecision"])
        ENGINES[NAME].check(self._options())
        self.requested_providers = list(providers) if providers else None
        # a fresh folder per cell for its optimized model and profile, inside one the adapter owns (core.tempdirs)
        self._cells = CellFolders("qdq-ort-")

    def close(self) -> None:
        """Remove the adapter's temporary folder (the cell runner calls this when its session ends)."""
        self._cells.close()

    def _options(self) -> Dict[str, str]:
        return {"graph_optimization_level": self.graph_optimization_level, "x64quantprecision": self.x64quantprecision}

    def _providers(self, ort: Any) -> List[str]:
        """The providers asked for, else CUDA (where this ORT has it) then CPU."""
        if self.requested_providers is not None:
            return list(self.requested_providers)
        return ([CUDA] if CUDA in ort.get_available_providers() else []) + [CPU]

    def probe(self) -> EngineInfo:
        try:
            ort = importlib.import_module("onnxruntime")
        except ImportError as exc:
            return not_installed(NAME, exc)
        label, detail = cpu_label()
        available = ort.get_available_providers()
        providers = [p for p in self._providers(ort) if p in available]
        missing = [p for p in self._providers(ort) if p not in available]
        if CUDA in providers:
            label += " + CUDA EP"
        detail = dict(detail, providers=",".join(available), device=str(ort.get_device()))
        versions = dict(python_versions(), onnxruntime=ort.__version__)
        variant = ENGINES[NAME].variant(self._options())
        if missing:
            return EngineInfo(name=NAME, version=ort.__version__, hardware=label, available=False,
                              unavailable_status="not_run",
                              reason=f"providers not available here: {', '.join(missing)}",
                              hardware_detail=detail, versions=versions, variant=variant)
        return EngineInfo(name=NAME, version=ort.__version__, hardware=label, available=True,
                          hardware_detail=detail, versions=versions, variant=variant)

    def cannot_run(self, bundle: Bundle) -> str:
        """Plugin models need a TensorRT plugin that onnxruntime does not have."""
        return no_custom_ops("onnxruntime", bundle)

    def run(self, bundle: Bundle) -> Observation:
        obs = Observation(options=self._options())
        try:
            ort = importlib.import_module("onnxruntime")
        except ImportError as exc:
            obs.error = f"onnxruntime is not installed: {exc}"
            return obs
        logs: List[str] = []
        with self._cells.cell() as tmp:
            try:
                with captured_stderr(logs):
                    self._run_stages(ort, bundle, Path(tmp), obs)
            except Exception as exc:  # an adapter bug must not take the controller down either
                obs.error = obs.error or f"{type(exc).__name__}: {exc}"
        obs.log = "".join(logs)
        return obs

    def _run_stages(self, ort: Any, bundle: Bundle, tmp: Path, obs: Observation) -> None:
        """The stages (engines/onnxruntime/stages.py, which bug bundles ship), then the precision evidence."""
        session = stages.run_stages(ort, str(bundle.model_path), bundle.inputs(), str(tmp), self._providers(ort),
                                    self.graph_optimization_level, self.x64quantprecision, obs)
        if session is None:
            too_new = newer_model(obs.error)
            if too_new:  # a model this version cannot read: not applicable to it, never its failure
                obs.options["not_applicable"] = too_new
            return
        profile = Path(session.end_profiling())
        optimized = tmp / "optimized.onnx"
        obs.options["optimized_model_saved"] = optimized.is_file()
        targets = list(bundle.meta.get("target_nodes", []))
        obs.precision = precision_evidence(bundle.model_path, optimized, profile, targets)


def precision_evidence(model: Path, optimized: Path, profile: Path,
                       targets: Sequence[str]) -> Dict[str, Dict[str, str]]:
    """node -> {precision, evidence} from the optimized graph, backed by the profile's kernel input types."""
    kernels = read_profile(profile)
    graphs = _load_graphs(model, optimized)
    if graphs is None:
        named = _kernels_named(kernels)
        return {target: _from_profile_only(target, kernels, named.get(target)) for target in targets}
    index = _Trace(*graphs)
    return {target: _from_graph(target, index, kernels) for target in targets}


def read_profile(path: Path) -> Dict[str, Dict[str, Any]]:
    """Kernel name -> {op, provider, types} from an ORT profile (empty if there is none)."""
    try:
        events = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    kernels: Dict[str, Dict[str, Any]] = {}
    for event in events if isinstance(events, list) else []:
        name, args = event.get("name", ""), event.get("args", {})
        if event.get("cat") != "Node" or not name.endswith("_kernel_time") or "op_name" not in args:
            continue
        types = [next(iter(d), "") for d in args.get("input_type_shape", []) if isinstance(d, dict)]
        kernels.setdefault(name[: -len("_kernel_time")], {
            "op": args["op_name"], "provider": args.get("provider", ""), "types": types,
        })
    return kernels


def _load_graphs(model: Path, optimized: Path) -> Optional[tuple]:
    try:
        onnx = importlib.import_module("onnx")
        if not optimized.is_file():
            return None
        return (onnx.load(str(model), load_external_data=False).graph,
                onnx.load(str(optimized), load_external_data=False).graph)
    except Exception:
        return None


class _Trace:
    """The original and optimized graphs, indexed once, so that tracing every target costs one pass over each."""

    def __init__(self, original: Any, optimized: Any) -> None:
        self.original = {}  # name -> the first node of that name
        for n in original.node:
            self.original.setdefault(n.name, n)
        self.producers = {o: n for n in original.node for o in n.output}
        self.initializers = {i.name: i for i in original.initializer}
        # graph order; a plumbing node only where it is a target itself (a Transpose or Reshape ORT runs on uint8)
        self.candidates = [n for n in optimized.node if n.op_type not in PLUMBING or _kept_node(n, self.original)]
        self.by_name: Dict[str, List[int]] = {}  # a target -> candidates named after it ("<target>", "<target>_...")
        self.by_output: Dict[str, List[int]] = {}
        self.by_input: Dict[str, List[int]] = {}
        for k, n in enumerate(self.candidates):
            for prefix in _prefixes(n.name, n.name in self.original):
                self.by_name.setdefault(prefix, []).append(k)
            for o in dict.fromkeys(n.output):
                self.by_output.setdefault(o, []).append(k)
            for i in dict.fromkeys(n.input):
                self.by_input.setdefault(i, []).append(k)
        self.dq_outputs = {o for n in optimized.node if n.op_type == "DequantizeLinear" for o in n.output}

    def traced(self, target: str) -> List[Any]:
        """Nodes of the optimized graph that came from the target: by name, by output, then by weight."""
        node = self.original.get(target)
        if node is None:
            return []
        weights = set()
        for name in node.input:
            source = self.producers.get(name)
            data = source.input[0] if source is not None and source.op_type == "DequantizeLinear" else name
            if data in self.initializers and _size(self.initializers[data]) > 1:
                weights.add(data)
        for found in (self.by_name.get(target, []), self._any(self.by_output, {target, *node.output}),
                      self._any(self.by_input, weights)):
            if found:
                return [self.candidates[k] for k in found]
        return []

    @staticmethod
    def _any(index: Dict[str, List[int]], names: Any) -> List[int]:
        """The candidates (in graph order) that have any of the names."""
        return sorted({k for name in names for k in index.get(name, [])})


def _kept_node(node: Any, original: Mapping[str, Any]) -> bool:
    """A node of the optimized graph that is the original graph's node of that name and op type."""
    return node.op_type not in CONVERSIONS and node.name in original and original[node.name].op_type == node.op_type


def integer_inputs(kernel: Optional[Mapping[str, Any]]) -> bool:
    """Whether a profiled kernel's first input is an 8-bit integer: ORT ran the node on quantized data (a MaxPool,
    Resize, Transpose or Concat between the Q/DQ pairs ORT dropped), whatever its op name."""
    types = (kernel or {}).get("types") or []
    return bool(types and types[0] in QUANT_TYPES)


def _prefixes(name: str, original: bool) -> List[str]:
    """The target names a node of this name traces to: itself, and where it is no node of the original graph, every
    "<target>" of "<target>_<suffix>" (ORT names a fused or transformed node after its origin)."""
    found = [name]
    if not original:
        found += [name[:i] for i, c in enumerate(name) if c == "_"]
    return found


def _size(tensor: Any) -> int:
    size = 1
    for d in tensor.dims:
        size *= d
    return size


def _from_graph(target: str, index: _Trace, kernels: Dict[str, Dict[str, Any]]) -> Dict[str, str]:
    if target not in index.original:
        return {"precision": "unknown", "evidence": f"{target} is not a node of the model"}
    traced = index.traced(target)
    if not traced:
        return {"precision": "unknown", "evidence": f"optimized graph: no node traces back to {target}"}
    integer = [n for n in traced if is_integer_kernel(n.op_type) or integer_inputs(kernels.get(n.name))]
    kernel = (integer or traced)[0]
    where = f"{kernel.op_type} '{kernel.name}'"
    if integer:
        same = kernel.name == target and kernel.op_type == index.original[target].op_type
        evidence = f"optimized graph: {target} runs as integer kernel {where}" if same else \
            f"optimized graph: {target} fused into {where}"
        if not is_integer_kernel(kernel.op_type):
            ran_on = kernels[kernel.name]["types"][0]
            evidence = f"optimized graph and profile: {target} runs {where} on {ran_on} inputs"
        precision = "int8"
    else:
        fed = " with DequantizeLinear inputs" if index.dq_outputs & set(kernel.input) else ""
        evidence = f"optimized graph: {target} stays a float {where}{fed}"
        precision = "float"
    profiled = kernels.get(kernel.name) or {}
    via = "ORT optimized graph" + (" and profile" if profiled else "")
    return {"precision": precision, "evidence": evidence + _profile_note(profiled), "layer": kernel.name,
            "layer_type": kernel.op_type, "inputs": [_dtype(t) for t in profiled.get("types", [])], "weights": [],
            "outputs": [], "tactic": profiled.get("provider", ""), "via": via}


# ORT profile type names -> the evidence's dtype words (as TensorRT's: engines/tensorrt/layers.py)
_DTYPES = {"float": "fp32", "float16": "fp16", "bfloat16": "bf16", "double": "fp64"}


def _dtype(name: str) -> str:
    return _DTYPES.get(name, name or "?")


def _kernels_named(kernels: Dict[str, Dict[str, Any]]) -> Dict[str, str]:
    """Each name a profiled kernel is named after ("<name>" or "<name>_<suffix>") -> the first such kernel."""
    first: Dict[str, str] = {}
    for k in kernels:
        for prefix in _prefixes(k, False):
            first.setdefault(prefix, k)
    return first


def _from_profile_only(target: str, kernels: Dict[str, Dict[str, Any]], name: Optional[str]) -> Dict[str, str]:
    """Without an optimized graph (not saved, or onnx missing): the first profiled kernel named after the target."""
    if name is None:
        return {"precision": "unknown", "evidence": f"no optimized graph, and no profiled kernel named after {target}"}
    kernel = kernels[name]
    types = kernel["types"]
    integer = is_integer_kernel(kernel["op"]) or integer_inputs(kernel)
    note = _profile_note(kernel).lstrip("; ")
    return {"precision": "int8" if integer else "float", "evidence": f"no optimized graph; {note} ('{name}')",
            "layer": name, "layer_type": kernel["op"], "inputs": [_dtype(t) for t in types], "weights": [],
            "outputs": [], "tactic": kernel.get("provider", ""), "via": "ORT profile"}


def _profile_note(kernel: Optional[Dict[str, Any]]) -> str:
    if not kernel:
        return ""
    types = list(dict.fromkeys(t for t in kernel["types"] if t))
    first = f"first input {kernel['types'][0]}, " if kernel["types"] else ""
    return f"; profile: {kernel['op']} ran on {kernel['provider']}, {first}input types {', '.join(types) or 'none'}"
