"""Stand-in `tensorrt` modules per API generation (8.x, 10.x, 11.x) for the worker's plumbing: not TensorRT.

Each generation has only the attributes its version documents, read from NVIDIA's Python API pages
and migration guides ("Migrating from TensorRT 8.x to 10.x", "Migrating from TensorRT 10.x to 11.x").
Every attribute the worker reads on the module, an enum or a TensorRT object is appended, once, to
$FAKE_TRT_ACCESS_LOG as "Owner.name"; a name in REMOVED[generation] raises AttributeError, as the
real module would. The parser reads the ONNX model with `onnx` (a test dependency) to make one layer
per node; the build succeeds and the inspector replies in that generation's JSON layout. The run
stage needs libcuda, so on a machine without a GPU every cell ends at "run" with that error.
"""

import json
import os
import types

GENERATIONS = {"8": "8.6.1", "10": "10.16.1.11", "11": "11.4.0.106"}
# Removed in 10.0 (implicit batch, bindings API, build_engine, max_workspace_size).
_REMOVED_10 = {
    "num_bindings", "get_binding_name", "get_binding_dtype", "get_binding_shape", "binding_is_input",
    "set_binding_shape", "get_binding_index", "build_engine", "max_workspace_size", "max_batch_size",
    "execute", "execute_async", "execute_async_v2",
}
# Removed in 11.0: weak typing, INT8 calibration, dynamic ranges, algorithm selection, legacy
# IPluginCreator registry overloads, the cuBLAS/cuDNN tactic sources.
# A bare name is removed on every owner; "Owner.name" on that owner only (DataType.INT8 stays).
_REMOVED_11 = _REMOVED_10 | {f"BuilderFlag.{n}" for n in (
    "INT8", "FP16", "BF16", "FP8", "INT4", "FP4", "OBEY_PRECISION_CONSTRAINTS", "PREFER_PRECISION_CONSTRAINTS",
    "DIRECT_IO")} | {"NetworkDefinitionCreationFlag.EXPLICIT_BATCH", "TacticSource.CUBLAS", "TacticSource.CUBLAS_LT",
                     "TacticSource.CUDNN"} | {"int8_calibrator", "set_int8_calibrator", "IInt8Calibrator",
    "IInt8EntropyCalibrator", "IInt8EntropyCalibrator2", "IInt8MinMaxCalibrator", "IInt8LegacyCalibrator",
    "CalibrationAlgoType", "IAlgorithmSelector", "algorithm_selector", "platform_has_fast_int8",
    "platform_has_fast_fp16", "dynamic_range", "set_dynamic_range", "reset_dynamic_range", "precision",
    "reset_precision", "precision_is_set", "set_output_type", "plugin_creator_list", "get_plugin_creator",
}
REMOVED = {"8": set(), "10": _REMOVED_10, "11": _REMOVED_11}
_GEN = {"name": "11"}
_SEEN = set()


def _touch(owner, name):
    """Record one attribute access; refuse a name this generation removed."""
    if name.startswith("__"):
        return
    key = f"{owner}.{name}"
    if key not in _SEEN:
        _SEEN.add(key)
        path = os.environ.get("FAKE_TRT_ACCESS_LOG")
        if path:
            with open(path, "a") as f:
                f.write(key + "\n")
    if is_removed(_GEN["name"], key):
        raise AttributeError(f"fake tensorrt {GENERATIONS[_GEN['name']]} has no attribute {name!r} (removed)")


def is_removed(generation, key):
    """Whether "Owner.name" is an API this generation does not have any more."""
    return key in REMOVED[generation] or key.split(".", 1)[-1] in REMOVED[generation]


class _Recorded:
    """A TensorRT object: every attribute read is recorded."""

    def __getattribute__(self, name):
        _touch(type(self).__name__, name)
        return object.__getattribute__(self, name)


class _EnumMeta(type):
    def __getattribute__(cls, name):
        if not name.startswith("_"):
            _touch(type.__getattribute__(cls, "__name__"), name)
        return type.__getattribute__(cls, name)


class _Member(int):
    def __new__(cls, value, owner, name):
        obj = int.__new__(cls, value)
        obj.name, obj._owner = name, owner
        return obj

    def __repr__(self):
        return f"{self._owner}.{self.name}"

    __str__ = __repr__


def _enum(name, members):
    members = [m for m in members.split() if not is_removed(_GEN["name"], f"{name}.{m}")]
    table = {m: _Member(i, name, m) for i, m in enumerate(members)}
    return _EnumMeta(name, (), dict(table, __members__=table))


class ILogger:
    def __init__(self):
        pass


class PluginFieldCollection(list):
    pass


class _PluginBase:
    def __init__(self, *args):
        pass


class _Tensor(_Recorded):
    def __init__(self, name, dtype, shape=()):
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)
        if _GEN["name"] != "11":
            self.dynamic_range = None

    def set_dynamic_range(self, low, high):
        self.dynamic_range = (low, high)
        return True


class _Layer(_Recorded):
    def __init__(self, name, kind, inputs, outputs):
        self.name, self.type, self._in, self._out = name, kind, inputs, outputs
        self.num_inputs, self.num_outputs = len(inputs), len(outputs)

    def get_input(self, j):
        return self._in[j]

    def get_output(self, j):
        return self._out[j]


class _Network(_Recorded):
    def __init__(self, flags):
        self.flags, self.layers, self.inputs = flags, [], []

    @property
    def num_layers(self):
        return len(self.layers)

    def get_layer(self, i):
        return self.layers[i]

    @property
    def num_inputs(self):
        return len(self.inputs)

    def get_input(self, i):
        return self.inputs[i]


class _Profile(_Recorded):
    def __init__(self):
        self.shapes = {}

    def set_shape(self, name, low, opt, high):
        self.shapes[name] = (tuple(low), tuple(opt), tuple(high))


class _ParserError(_Recorded):
    def __init__(self, text, node):
        self._text, self._node = text, node

    def desc(self):
        return self._text

    def node(self):
        return self._node


_OP_TYPES = {"QuantizeLinear": "QUANTIZE", "DequantizeLinear": "DEQUANTIZE", "Conv": "CONVOLUTION",
             "ConvTranspose": "DECONVOLUTION", "MatMul": "MATRIX_MULTIPLY", "Constant": "CONSTANT"}


class OnnxParser(_Recorded):
    def __init__(self, network, logger):
        self.network, self.logger, self._errors, self._flags = network, logger, [], set()

    @property
    def num_errors(self):
        return len(self._errors)

    def get_error(self, i):
        return self._errors[i]

    def set_flag(self, flag):
        self._flags.add(int(flag))

    def clear_flag(self, flag):
        self._flags.discard(int(flag))

    def get_flag(self, flag):
        return int(flag) in self._flags

    def parse_from_file(self, path):
        import onnx

        graph = onnx.load(path, load_external_data=False).graph
        strong = _GEN["name"] == "11" or bool(self.network.flags & (1 << _strong_bit()))
        have = _registry().names()
        tensors = {}
        weights = {t.name for t in graph.initializer}
        for vi in graph.input:
            if vi.name not in weights:
                dims = [d.dim_value if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim]
                tensors[vi.name] = _Tensor(vi.name, DataType.__members__["FLOAT"], dims)
                self.network.inputs.append(tensors[vi.name])
        for i, node in enumerate(graph.node):
            if node.domain not in ("", "ai.onnx") and not {node.op_type, f"{node.domain}::{node.op_type}"} & have:
                self._errors.append(_ParserError(f"fake: no plugin creator for {node.domain}::{node.op_type}", i))
                return False
            other = "PLUGIN_V3" if node.domain not in ("", "ai.onnx") else "ELEMENTWISE"
            kind = LayerType.__members__.get(_OP_TYPES.get(node.op_type, ""), LayerType.__members__[other])
            dtype = "INT8" if strong and node.op_type == "QuantizeLinear" else "FLOAT"
            outs = [_Tensor(o, DataType.__members__[dtype]) for o in node.output]
            tensors.update({t.name: t for t in outs})
            ins = [tensors.get(n) or _Tensor(n, DataType.__members__["FLOAT"]) for n in node.input if n]
            self.network.layers.append(_Layer(node.name or f"node{i}", kind, ins, outs))
        return True


class _Config(_Recorded):
    def __init__(self):
        self.flags, self.tactic_sources, self.pools = [], None, {}
        self.profiling_verbosity = ProfilingVerbosity.__members__["LAYER_NAMES_ONLY"]
        if _GEN["name"] != "11":
            self.int8_calibrator = None

    def set_flag(self, flag):
        self.flags.append(flag)

    def set_tactic_sources(self, mask):
        self.tactic_sources = mask

    def set_memory_pool_limit(self, pool, size):
        self.pools[pool] = size

    def add_optimization_profile(self, profile):
        self.profiles = getattr(self, "profiles", []) + [profile]
        return len(self.profiles) - 1


class Builder(_Recorded):
    def __init__(self, logger):
        self.logger = logger
        if _GEN["name"] != "11":
            self.platform_has_fast_int8 = self.platform_has_fast_fp16 = True

    def create_network(self, flags=0):
        return _Network(flags)

    def create_builder_config(self):
        return _Config()

    def create_optimization_profile(self):
        return _Profile()

    def build_serialized_network(self, network, config):
        layers = [network.get_layer(i) for i in range(network.num_layers)]
        return json.dumps(_inspector(layers)).encode()


def _io(t):
    int8 = t is not None and t.dtype.name == "INT8"
    fmt = "Thirty-two wide channel vectorized row major Int8 format" if int8 else "Row major linear FP32"
    if _GEN["name"] == "11":
        return {"Name": t.name if t else "?", "Format": fmt, "DataType": "Int8" if int8 else "Float"}
    return {"Name": t.name if t else "?", "Format/Datatype": fmt}


def _inspector(layers):
    data = {"Layers": [{"Name": layer.name, "LayerType": layer.type.name, "Inputs": [_io(t) for t in layer._in],
                        "Outputs": [_io(t) for t in layer._out]} for layer in layers]}
    if _GEN["name"] == "11":
        data["I/O Tensors"] = [{"Name": "x", "IOMode": "Input", "DataType": "Float"}]
    else:
        data["Bindings"] = ["x"]
    return data


class _Inspector(_Recorded):
    def __init__(self, data):
        self._data = data

    def get_engine_information(self, fmt):
        return self._data.decode()


class _Engine(_Recorded):
    def __init__(self, data):
        self._data = data

    def create_engine_inspector(self):
        return _Inspector(self._data)


class Runtime(_Recorded):
    def __init__(self, logger):
        self.logger = logger

    def deserialize_cuda_engine(self, data):
        return _Engine(data)


class _Creator:
    def __init__(self, name, namespace):
        self.name, self.plugin_namespace = name, namespace


class _Registry(_Recorded):
    def __init__(self):
        self._creators = [_Creator("InstanceNormalization_TRT", "")]
        if _GEN["name"] == "8":
            self.plugin_creator_list = self._creators
        else:
            self.all_creators = self._creators

    def register_creator(self, creator, namespace=""):
        self._creators.append(_Creator(creator.name, namespace or creator.plugin_namespace))
        return True

    def names(self):
        found = set()
        for c in self._creators:
            found |= {c.name, f"{c.plugin_namespace}::{c.name}"}
        return found


_REGISTRY = []


def _registry():
    if not _REGISTRY:
        _REGISTRY.append(_Registry())
    return _REGISTRY[0]


def get_plugin_registry():
    return _registry()


def init_libnvinfer_plugins(logger, namespace):
    return True


def _strong_bit():
    members = NetworkDefinitionCreationFlag.__members__
    return int(members["STRONGLY_TYPED"]) if "STRONGLY_TYPED" in members else 31


class _Module(types.ModuleType):
    def __getattribute__(self, name):
        _touch("tensorrt", name)
        return types.ModuleType.__getattribute__(self, name)


_PUBLIC = ("ILogger", "OnnxParser", "Builder", "Runtime", "get_plugin_registry", "init_libnvinfer_plugins",
           "PluginFieldCollection")
_PLUGIN_CLASSES = {
    "8": (),
    "10": ("IPluginV3", "IPluginV3OneCore", "IPluginV3OneBuild", "IPluginV3OneRuntime", "IPluginCreatorV3One",
           "IPluginV2DynamicExt", "IPluginCreator", "IPluginCreatorInterface", "DimsExprs"),
}
_PLUGIN_CLASSES["11"] = _PLUGIN_CLASSES["10"]
# What the worker looks up on the engine and execution context classes (capabilities.detect): the bindings API
# and set_binding_shape until 10.0, named I/O tensors and set_input_shape from 8.5 on.
# execute_v2 is deprecated in 11 and still there; IPluginCreator is an IPluginCreatorInterface.
_RUNTIME_CLASSES = {"ICudaEngine": ("num_bindings", "num_io_tensors", "get_tensor_name"),
                    "IExecutionContext": ("set_binding_shape", "set_input_shape", "execute_v2", "execute_async_v3")}


def install(module, generation):
    """Fill the `tensorrt` module of one API generation and record every attribute read on it."""
    global DataType, LayerType, NetworkDefinitionCreationFlag, BuilderFlag, ProfilingVerbosity
    _GEN["name"] = generation
    DataType = _enum("DataType", "FLOAT HALF INT8 INT32 BOOL UINT8 FP8"
                     + ("" if generation == "8" else " BF16 INT64 INT4 FP4"))
    LayerType = _enum("LayerType", "CONSTANT QUANTIZE DEQUANTIZE CONVOLUTION DECONVOLUTION MATRIX_MULTIPLY "
                      "ELEMENTWISE CONCATENATION POOLING PLUGIN_V2 PLUGIN_V3")
    NetworkDefinitionCreationFlag = _enum("NetworkDefinitionCreationFlag", {
        "8": "EXPLICIT_BATCH EXPLICIT_PRECISION", "10": "EXPLICIT_BATCH STRONGLY_TYPED",
        "11": "STRONGLY_TYPED PREFER_AOT_PYTHON_PLUGINS PREFER_JIT_PYTHON_PLUGINS"}[generation])
    BuilderFlag = _enum("BuilderFlag", "FP16 INT8 DEBUG GPU_FALLBACK REFIT TF32 SPARSE_WEIGHTS "
                        "OBEY_PRECISION_CONSTRAINTS PREFER_PRECISION_CONSTRAINTS DIRECT_IO"
                        + ("" if generation == "8" else " BF16 FP8 INT4 FP4 STRIP_PLAN"))
    ProfilingVerbosity = _enum("ProfilingVerbosity", "LAYER_NAMES_ONLY NONE DETAILED")
    enums = {
        "DataType": DataType, "LayerType": LayerType, "NetworkDefinitionCreationFlag": NetworkDefinitionCreationFlag,
        "BuilderFlag": BuilderFlag, "ProfilingVerbosity": ProfilingVerbosity,
        "MemoryPoolType": _enum("MemoryPoolType", "WORKSPACE"),
        "TacticSource": _enum("TacticSource", "CUBLAS CUBLAS_LT CUDNN EDGE_MASK_CONVOLUTIONS JIT_CONVOLUTIONS"),
        "LayerInformationFormat": _enum("LayerInformationFormat", "ONELINE JSON"),
        "OnnxParserFlag": _enum("OnnxParserFlag", "NATIVE_INSTANCENORM"),
        "TensorIOMode": _enum("TensorIOMode", "NONE INPUT OUTPUT"),
        "TensorFormat": _enum("TensorFormat", "LINEAR CHW4 CHW32"),
    }
    ILogger.Severity = _enum("Severity", "INTERNAL_ERROR ERROR WARNING INFO VERBOSE")
    for name in _PUBLIC:
        setattr(module, name, globals()[name])
    for name, value in enums.items():
        setattr(module, name, value)
    for name in _PLUGIN_CLASSES[generation]:
        setattr(module, name, type(name, (_PluginBase,), {}))
    for name, methods in _RUNTIME_CLASSES.items():
        kept = {m: None for m in methods if not is_removed(generation, f"{name}.{m}")}
        setattr(module, name, type(name, (), kept))
    if generation != "11":  # calibrators and algorithm selection: gone in 11.0
        for name in ("IInt8EntropyCalibrator2", "IInt8MinMaxCalibrator", "IAlgorithmSelector"):
            setattr(module, name, type(name, (_PluginBase,), {}))
    module.__version__ = GENERATIONS[generation]
    module.__qdq_stand_in__ = f"tests/data/trt/fake_api generation {generation} (not TensorRT)"
    module.__class__ = _Module
