"""INT8 identity plugins for the reproducers, written in Python for TensorRT >= 10.

Written from the TensorRT 10 Python plugin samples (samples/python/python_plugin: IPluginV2DynamicExt and
IPluginV3 classes). Run for real on TensorRT-RTX 1.4-1.7 (build time only, no GPU); TensorRT 10.x/11.x
proper remain NOT VERIFIED ON REAL TENSORRT.

Names, shared with cases/q_output_type.py and cases/quantized_constant_plugin.py: namespace
"qdq_matrix", version "1", plugins "Int8Identity" (IPluginV3), "Int8IdentityV3" (IPluginV3) and
"Int8IdentityV2" (IPluginV2DynamicExt). Each accepts INT8 in the linear format only, for its input
and output (as the INT8-only plugin of NVIDIA/TensorRT#3055 does), declares its output with the
input's network type and shape, and copies its input (cuMemcpyDtoDAsync on TensorRT's stream).

Class-based rather than `tensorrt.plugin` (the decorator API): that API arrived in TensorRT 10.6,
while #3919 is about 10.0 and 10.1; both register the same "qdq_matrix::<name>" creators.
Only the worker registers them, and only where the module has Python plugin classes (IPluginV3 arrived
with TensorRT 10; 8.x has none); the adapter imports this file for `python_plugins` alone. Plugin names
without this namespace are TensorRT's own (libnvinfer_plugin registers its creators in the empty namespace),
which 8.x hosts too.
"""

from __future__ import annotations

from typing import Any, Dict, List

NAMESPACE = "qdq_matrix"
VERSION = "1"
V3_PLUGINS = ("Int8Identity", "Int8IdentityV3")
V2_PLUGINS = ("Int8IdentityV2",)
_ITEMSIZE = {"FLOAT": 4, "HALF": 2, "BF16": 2, "INT8": 1, "UINT8": 1, "FP8": 1, "INT32": 4, "INT64": 8, "BOOL": 1}
_KEEP: List[Any] = []  # TensorRT holds raw pointers to the creators: they must outlive the build


def python_plugins(names: List[str]) -> List[str]:
    """The names among `names` that are this file's Python plugins ("qdq_matrix::<name>"), not TensorRT's own."""
    return [n for n in names if n.startswith(f"{NAMESPACE}::")]


def register(trt: Any, cuda: Any, kinds: List[str]) -> Dict[str, str]:
    """Register every plugin of the kinds this module hosts; "namespace::name" -> "registered" or why not."""
    registry = trt.get_plugin_registry()
    status: Dict[str, str] = {}
    makers = ((V3_PLUGINS, _v3_creator, "IPluginV3"), (V2_PLUGINS, _v2_creator, "IPluginV2DynamicExt"))
    for names, make, base in makers:
        for name in names:
            key = f"{NAMESPACE}::{name}"
            if base not in kinds:
                status[key] = f"this TensorRT has no Python {base}"
                continue
            creator = make(trt, cuda, name)
            _KEEP.append(creator)
            ok = registry.register_creator(creator, NAMESPACE)
            status[key] = "registered" if ok is not False else "register_creator returned False"
    return status


def _nbytes(desc: Any) -> int:
    count = 1
    for d in desc.dims:
        count *= int(d)
    name = str(desc.type).split(".")[-1]
    return count * _ITEMSIZE[name]


def _int8_linear(trt: Any, desc: Any) -> bool:
    return desc.format == trt.TensorFormat.LINEAR and desc.type == trt.DataType.INT8


def _v3_creator(trt: Any, cuda: Any, plugin_name: str) -> Any:
    """An IPluginCreatorV3One for one INT8 identity IPluginV3. NOT VERIFIED ON REAL TENSORRT."""

    class Int8IdentityV3(trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild, trt.IPluginV3OneRuntime):
        def __init__(self) -> None:
            trt.IPluginV3.__init__(self)
            trt.IPluginV3OneCore.__init__(self)
            trt.IPluginV3OneBuild.__init__(self)
            trt.IPluginV3OneRuntime.__init__(self)
            self.num_outputs = 1
            self.plugin_namespace = NAMESPACE
            self.plugin_name = plugin_name
            self.plugin_version = VERSION
            self.timing_cache_id = ""

        def get_capability_interface(self, kind: Any) -> Any:
            return self

        def clone(self) -> Any:
            return Int8IdentityV3()

        def get_output_data_types(self, input_types: List[Any]) -> List[Any]:
            return [input_types[0]]

        def get_output_shapes(self, inputs: List[Any], shape_inputs: List[Any], expr_builder: Any) -> List[Any]:
            return [trt.DimsExprs(inputs[0])]

        def supports_format_combination(self, pos: int, in_out: List[Any], num_inputs: int) -> bool:
            return _int8_linear(trt, in_out[pos].desc)

        def configure_plugin(self, inputs: List[Any], outputs: List[Any]) -> None:
            pass

        def on_shape_change(self, inputs: List[Any], outputs: List[Any]) -> None:
            pass

        def enqueue(self, input_desc: List[Any], output_desc: List[Any], inputs: List[int], outputs: List[int],
                    workspace: int, stream: int) -> None:
            cuda.copy_async(outputs[0], inputs[0], _nbytes(input_desc[0]), stream)

        def attach_to_context(self, context: Any) -> Any:
            return self.clone()

        def get_fields_to_serialize(self) -> Any:
            return trt.PluginFieldCollection([])

    class Creator(trt.IPluginCreatorV3One):
        def __init__(self) -> None:
            trt.IPluginCreatorV3One.__init__(self)
            self.name = plugin_name
            self.plugin_namespace = NAMESPACE
            self.plugin_version = VERSION
            self.field_names = trt.PluginFieldCollection([])

        def create_plugin(self, name: str, fields: Any, phase: Any) -> Any:
            return Int8IdentityV3()

    return Creator()


def _v2_creator(trt: Any, cuda: Any, plugin_name: str) -> Any:
    """An IPluginCreator for one INT8 identity IPluginV2DynamicExt. NOT VERIFIED ON REAL TENSORRT."""

    class Int8IdentityV2(trt.IPluginV2DynamicExt):
        def __init__(self) -> None:
            trt.IPluginV2DynamicExt.__init__(self)
            self.num_outputs = 1
            self.plugin_namespace = NAMESPACE
            self.plugin_type = plugin_name
            self.plugin_version = VERSION

        def get_output_datatype(self, index: int, input_types: List[Any]) -> Any:
            return input_types[0]

        def get_output_dimensions(self, output_index: int, inputs: List[Any], expr_builder: Any) -> Any:
            return trt.DimsExprs(inputs[0])

        def supports_format_combination(self, pos: int, in_out: List[Any], num_inputs: int) -> bool:
            return _int8_linear(trt, in_out[pos])

        def configure_plugin(self, inputs: List[Any], outputs: List[Any]) -> None:
            pass

        def enqueue(self, input_desc: List[Any], output_desc: List[Any], inputs: List[int], outputs: List[int],
                    workspace: int, stream: int) -> None:
            cuda.copy_async(outputs[0], inputs[0], _nbytes(input_desc[0]), stream)

        def serialize(self) -> bytes:
            return b"{}"

        def clone(self) -> Any:
            return Int8IdentityV2()

    class Creator(trt.IPluginCreator):
        def __init__(self) -> None:
            trt.IPluginCreator.__init__(self)
            self.name = plugin_name
            self.plugin_namespace = NAMESPACE
            self.plugin_version = VERSION
            self.field_names = trt.PluginFieldCollection([])

        def create_plugin(self, name: str, fields: Any) -> Any:
            return Int8IdentityV2()

        def deserialize_plugin(self, name: str, data: bytes) -> Any:
            return Int8IdentityV2()

    return Creator()


def prepare(session: Any, caps: Dict[str, Any], opts: Dict[str, Any], result: Any, cuda: Any) -> None:
    """Register TensorRT's own plugins and, where the module hosts Python plugins, ours (once a process);
    note any plugin the model needs that is still missing."""
    trt = session.trt
    options = result.data["options"]
    wanted = list(opts.get("plugins") or [])
    namespace = opts.get("plugin_namespace", "")
    options.update(plugins=wanted, plugin_api=opts.get("plugin_api", ""))
    notes: List[str] = []
    if session.plugins is None:
        session.plugins = {}
        init = getattr(trt, "init_libnvinfer_plugins", None)
        if init is not None:
            init(session.logger, "")
        if caps["python_plugins"]:
            try:
                session.plugins = register(trt, cuda, caps["python_plugins"])
            except Exception as e:  # the parse that follows shows the effect; this says why
                session.plugins = {"error": f"our Python plugins failed to register: {type(e).__name__}: {e}"}
    ours = session.plugins
    if "error" in ours:
        notes.append(ours["error"])
    elif ours:
        options["plugins_registered"] = ours
    if python_plugins(wanted) and not caps["python_plugins"]:
        notes.append(f"{caps['module']} {caps['version']} has no Python plugin classes: "
                     "Python plugins need TensorRT >= 10 (IPluginV3)")
    builtin = [p for p in wanted if "::" not in p and not namespace]
    if builtin:
        options["plugin_creators"] = creator_versions(trt, builtin)
    have = registered_plugins(trt)
    have.update(name for name, state in ours.items() if state == "registered")
    full = [p if "::" in p or not namespace else f"{namespace}::{p}" for p in wanted]
    missing = [p for p in full if p not in have]
    if missing:
        notes.insert(0, f"not provided by this TensorRT: {', '.join(missing)}")
    if missing or notes:
        options["plugins_missing"] = "; ".join(notes)


def _creators(trt: Any) -> List[Any]:
    registry = trt.get_plugin_registry()
    creators = getattr(registry, "all_creators", None)
    return list(creators if creators is not None else getattr(registry, "plugin_creator_list", []))


def creator_versions(trt: Any, names: List[str]) -> Dict[str, List[str]]:
    """The versions the registry holds of each plugin name (TensorRT's own share a name across versions)."""
    found: Dict[str, List[str]] = {n: [] for n in names}
    for c in _creators(trt):
        if getattr(c, "name", "") in found:
            found[c.name].append(str(getattr(c, "plugin_version", "")))
    return {n: sorted(v) for n, v in found.items()}


def registered_plugins(trt: Any) -> set:
    """Plugin names in the registry, bare and as "namespace::name"."""
    names = set()
    for c in _creators(trt):
        name, ns = getattr(c, "name", ""), getattr(c, "plugin_namespace", "")
        names.add(name)
        if ns:
            names.add(f"{ns}::{name}")
    return names
