"""A stand-in `tensorrt` for testing worker.py's plumbing without TensorRT: it is not TensorRT.

It mimics the TensorRT 8.5 Python API surface the worker touches (no OnnxParserFlag, bindings API)
and replays the real 8.5.3.1 sample in ../../inspector-8.5.3.1-h200.json: the dense conv's network
layers before the build and its engine inspector JSON after. $FAKE_TRT_CRASH=build makes the
build take the process down with SIGSEGV; $FAKE_TRT_HANG=build makes it hang. A model file whose
bytes are "FAKE_TRT:segv", "FAKE_TRT:abort" or "FAKE_TRT:hang" faults that one model's build only; "FAKE_TRT:fail"
makes its build return None after an ERROR (as "Could not find any implementation" does), and "FAKE_TRT:fail-then-segv"
does that once, then segfaults in the next build of the process (the worker's verbose rebuild).
"""

import enum
import json
import os
import signal
import time

__version__ = "8.5.3.1"
__qdq_stand_in__ = "tests/data/trt/fake_tensorrt (not TensorRT)"  # its cells never reach a report
SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "inspector-8.5.3.1-h200.json")
MODEL = "conv_dense.onnx"
_FAULT = ""  # the fault the last parsed model file asks for
_BUILDS = []  # builds this process ran


def _sample():
    with open(SAMPLE) as f:
        return json.load(f)["models"][MODEL]


DataType = enum.IntEnum("DataType", "FLOAT HALF INT8 INT32 BOOL UINT8", start=0)
LayerType = enum.IntEnum("LayerType", "CONSTANT QUANTIZE DEQUANTIZE CONVOLUTION", start=0)
NetworkDefinitionCreationFlag = enum.IntEnum("NetworkDefinitionCreationFlag", "EXPLICIT_BATCH", start=0)
BuilderFlag = enum.IntEnum("BuilderFlag", "FP16 INT8", start=0)
ProfilingVerbosity = enum.IntEnum("ProfilingVerbosity", "LAYER_NAMES_ONLY NONE DETAILED", start=0)
MemoryPoolType = enum.IntEnum("MemoryPoolType", "WORKSPACE", start=0)
TacticSource = enum.IntEnum("TacticSource", "CUBLAS CUBLAS_LT CUDNN EDGE_MASK_CONVOLUTIONS JIT_CONVOLUTIONS", start=0)
LayerInformationFormat = enum.IntEnum("LayerInformationFormat", "ONELINE JSON", start=0)


class ILogger:
    Severity = enum.IntEnum("Severity", "INTERNAL_ERROR ERROR WARNING INFO VERBOSE", start=0)

    def __init__(self):
        pass


class _Tensor:
    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _Layer:
    def __init__(self, name, kind, dtype):
        self.name, self.type, self.num_outputs = name, LayerType[kind.split(".")[-1]], 1
        tensor = name[len("node_of_"):] if name.startswith("node_of_") else name
        self._out = _Tensor(tensor, DataType[dtype.split(".")[-1]])

    def get_output(self, j):
        return self._out


class _Network:
    def __init__(self):
        self.layers = []

    @property
    def num_layers(self):
        return len(self.layers)

    def get_layer(self, i):
        return self.layers[i]

    num_inputs = 0  # the replayed sample's inputs are static: the worker adds no optimization profile


class OnnxParser:
    def __init__(self, network, logger):
        self.network, self.logger, self.num_errors = network, logger, 0

    def parse_from_file(self, path):
        global _FAULT
        with open(path, "rb") as f:
            head = f.read(64)
        _FAULT = head[len(b"FAKE_TRT:"):].decode().strip() if head.startswith(b"FAKE_TRT:") else ""
        rows = _sample()["network_layers (name, type, output dtype) before build"]
        self.network.layers = [_Layer(*row) for row in rows]
        return True


class _Config:
    def __init__(self):
        self.flags, self.tactic_sources, self.pools = [], None, {}
        self.profiling_verbosity = ProfilingVerbosity.LAYER_NAMES_ONLY

    def set_flag(self, flag):
        self.flags.append(flag)

    def set_tactic_sources(self, mask):
        self.tactic_sources = mask

    def get_tactic_sources(self):  # every source on unless set
        return (1 << len(TacticSource)) - 1 if self.tactic_sources is None else self.tactic_sources

    def set_memory_pool_limit(self, pool, size):
        self.pools[pool] = size


class Builder:
    def __init__(self, logger):
        self.logger = logger

    def create_network(self, flags):
        return _Network()

    def create_builder_config(self):
        return _Config()

    def build_serialized_network(self, network, config):
        self.logger.log(ILogger.Severity.WARNING, "fake: Missing scale and zero-point for tensor x")
        self.logger.log(ILogger.Severity.VERBOSE, "fake: verbose chatter")
        if os.environ.get("FAKE_TRT_CRASH") == "build" or _FAULT == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if _FAULT == "abort":
            os.abort()
        _BUILDS.append(_FAULT)
        if _FAULT == "fail-then-segv" and _BUILDS.count(_FAULT) > 1:
            os.kill(os.getpid(), signal.SIGSEGV)
        if _FAULT in ("fail", "fail-then-segv"):
            self.logger.log(ILogger.Severity.VERBOSE, "fake: tactic 0x0000000000000001 skipped")
            self.logger.log(ILogger.Severity.ERROR, "fake: Could not find any implementation for node w + node_of_c.")
            return None
        if os.environ.get("FAKE_TRT_HANG") == "build" or _FAULT == "hang":
            time.sleep(600)
        return b"fake engine"


class _Inspector:
    def get_engine_information(self, fmt):
        return json.dumps(_sample()["engine inspector JSON (get_engine_information, DETAILED)"])


class _Engine:
    num_bindings = 2

    def create_engine_inspector(self):
        return _Inspector()


class Runtime:
    def __init__(self, logger):
        self.logger = logger

    def deserialize_cuda_engine(self, data):
        return _Engine()


class _Registry:
    plugin_creator_list = []


def get_plugin_registry():
    return _Registry()


def init_libnvinfer_plugins(logger, namespace):
    return True
