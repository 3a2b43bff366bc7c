"""Real-architecture float graphs, written here: the operators and dynamic shapes of YOLOv8, PaddleOCR and BERT.

Seeded, small enough to run on a CPU in milliseconds, and named as PyTorch's exporter names nodes
(`/model.2/cv1/conv/Conv`, output `..._output_0`, weights `model.2.cv1.conv.weight`):

- `yolo_csp`: a YOLOv8-style detector: Conv + SiLU (Sigmoid * Mul, as exporters write it), C2f blocks
  (Split, bottlenecks with residual Add, Concat), SPPF (three MaxPools), a nearest Resize by 2, and a
  detection head (per-scale box and class branches, DFL Softmax, Sigmoid) on `images` [batch, 3, height, width];
- `ocr_rec`: a PaddleOCR-style recognizer of depthwise-separable blocks (depthwise and pointwise Conv,
  HardSwish, squeeze-and-excitation ending in HardSigmoid * Mul) and a CTC head (MatMul, Softmax) on
  `x` [batch, 3, 48, width];
- `bert_encoder`: BERT layers on `input_ids`, `attention_mask`, `token_type_ids` (int64 [batch, sequence]):
  Gather embeddings, LayerNormalization, multi-head attention with the additive mask, Erf GELU, and a Gemm pooler;
- `backbone`: C2f and depthwise-SE blocks stacked to any depth with a YOLO head, for models of hundreds of nodes;
- `mobilenet_cls`: a MobileNetV3-style classifier exported at a fixed `x` [1, 3, 224, 224], as most classifiers are
  (depthwise-SE blocks at stride 2, GlobalAveragePool, Flatten, a Gemm head).

A dimension given as a string stays dynamic in the graph; give an int to fix it. Nothing is built at import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple, Union

import numpy as np

Dim = Union[int, str]
IR_VERSION = 8  # ONNX Runtime 1.16 and TensorRT 8.x read IR 8
PRODUCER = "qdq-matrix.archs"
YOLO_OPSET, OCR_OPSET, BERT_OPSET = 13, 14, 17  # Split/Resize inputs; HardSwish; LayerNormalization
REG_MAX, CLASSES = 4, 8  # YOLO head: DFL bins per box side, classes
OCR_HEIGHT, OCR_CLASSES = 48, 97  # PaddleOCR's recognizer input height; a small character set + CTC blank
CLS_SIZE, CLS_CLASSES = 224, 10  # an ImageNet-style classifier's fixed input side; a few classes
VOCAB, MAX_POSITIONS, TYPE_VOCAB = 512, 64, 2  # BERT tables: tokens, positions, token types
# SiLU and HardSwish halve a small input: at 1 activations fade to the biases within a few layers, at 2 a
# 40-block backbone overflows; at 1.6 every block's output keeps a standard deviation of about 0.1-1.
GAIN = 1.6


@dataclass(frozen=True)
class Input:
    """A graph input as a calibration reader or a user's --shape sees it: name, numpy dtype, dims."""

    name: str
    dtype: str
    dims: Tuple[Dim, ...]


class Net:
    """Nodes and initializers of one graph, named the way PyTorch's ONNX exporter names them."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: List[Any] = []
        self.inits: List[Any] = []
        self._names: Dict[str, int] = {}

    def const(self, name: str, array: Any) -> str:
        """An initializer; returns its name."""
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], scope: str, outputs: int = 1, **attrs: Any) -> Any:
        """One node named `<scope>/<op_type>`; its output name, or a list of them when outputs > 1."""
        from onnx import helper

        name = f"{scope}/{op_type}"
        n = self._names.get(name, 0)
        self._names[name] = n + 1
        name = f"{name}_{n}" if n else name
        outs = [f"{name}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def weight(self, name: str, *shape: int) -> str:
        """A seeded weight of standard deviation GAIN/sqrt(fan_in)."""
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        return self.const(name, (self.rng.standard_normal(shape) * GAIN / np.sqrt(fan_in)).astype(np.float32))

    def bias(self, name: str, n: int) -> str:
        return self.const(name, (self.rng.standard_normal(n) * 0.05).astype(np.float32))

    def conv(self, x: str, cin: int, cout: int, k: int, scope: str, stride: Union[int, Tuple[int, int]] = 1,
             group: int = 1) -> str:
        """Conv with bias (BatchNorm folded in, as exporters leave it), same padding."""
        strides = list(stride) if isinstance(stride, tuple) else [stride, stride]
        key = scope.strip("/").replace("/", ".")
        w = self.weight(f"{key}.weight", cout, cin // group, k, k)
        return self.op("Conv", [x, w, self.bias(f"{key}.bias", cout)], scope, kernel_shape=[k, k],
                       pads=[k // 2] * 4, strides=strides, group=group, dilations=[1, 1])

    def silu(self, x: str, scope: str) -> str:
        """SiLU as torch.onnx writes it: x * Sigmoid(x)."""
        return self.op("Mul", [x, self.op("Sigmoid", [x], scope)], scope)

    def conv_silu(self, x: str, cin: int, cout: int, k: int, scope: str, stride: int = 1) -> str:
        return self.silu(self.conv(x, cin, cout, k, f"{scope}/conv", stride), f"{scope}/act")

    def ints(self, name: str, values: Sequence[int]) -> str:
        return self.const(name, np.array(values, np.int64))

    def model(self, name: str, inputs: Sequence[Input], outputs: Sequence[Tuple[str, Sequence[Dim]]],
              opset: int) -> Any:
        """The checked ModelProto, IR 8, outputs float32."""
        import onnx
        from onnx import helper

        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(i.name, helper.np_dtype_to_tensor_dtype(np.dtype(i.dtype)), list(i.dims))
             for i in inputs],
            [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, list(dims)) for o, dims in outputs],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name=PRODUCER)
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model


# --- YOLO (C2f, SPPF, Resize, detection head) -------------------------------------------------------------

def c2f(net: Net, x: str, cin: int, cout: int, n: int, scope: str, shortcut: bool = True) -> str:
    """YOLOv8's C2f: 1x1 Conv, Split in two, n bottlenecks on the second half (residual Add), Concat, 1x1 Conv."""
    half = cout // 2
    y = net.conv_silu(x, cin, cout, 1, f"{scope}/cv1")
    parts = net.op("Split", [y, net.ints(f"{scope.strip('/')}.split", [half, half])], f"{scope}", outputs=2, axis=1)
    branches = list(parts)
    for i in range(n):
        b = f"{scope}/m.{i}"
        h = net.conv_silu(branches[-1], half, half, 3, f"{b}/cv1")
        h = net.conv_silu(h, half, half, 3, f"{b}/cv2")
        branches.append(net.op("Add", [branches[-1], h], b) if shortcut else h)
    cat = net.op("Concat", branches, scope, axis=1)
    return net.conv_silu(cat, (2 + n) * half, cout, 1, f"{scope}/cv2")


def sppf(net: Net, x: str, c: int, scope: str) -> str:
    """YOLOv8's SPPF: 1x1 Conv, three 5x5 stride-1 MaxPools in a row, Concat of all four, 1x1 Conv."""
    y = net.conv_silu(x, c, c // 2, 1, f"{scope}/cv1")
    pooled = [y]
    for _ in range(3):
        pooled.append(net.op("MaxPool", [pooled[-1]], f"{scope}/m", kernel_shape=[5, 5], strides=[1, 1],
                             pads=[2, 2, 2, 2]))
    return net.conv_silu(net.op("Concat", pooled, scope, axis=1), 2 * c, c, 1, f"{scope}/cv2")


def upsample(net: Net, x: str, scope: str) -> str:
    """Resize by 2, nearest, as torch.nn.Upsample exports (empty roi, scales input)."""
    scales = net.const(f"{scope.strip('/')}.scales", np.array([1, 1, 2, 2], np.float32))
    return net.op("Resize", [x, "", scales], scope, mode="nearest", coordinate_transformation_mode="asymmetric",
                  nearest_mode="floor")


def detect(net: Net, features: Sequence[Tuple[str, int]], scope: str) -> str:
    """YOLOv8's Detect head: box (4*REG_MAX) and class branches per scale, flattened, DFL over the box bins.

    Returns [batch, 4 + CLASSES, anchors]: expected box side distances and class probabilities.
    """
    flat = []
    for i, (x, c) in enumerate(features):
        box = net.conv_silu(net.conv_silu(x, c, c, 3, f"{scope}/cv2.{i}/cv2.{i}.0"), c, c, 3,
                            f"{scope}/cv2.{i}/cv2.{i}.1")
        box = net.conv(box, c, 4 * REG_MAX, 1, f"{scope}/cv2.{i}/cv2.{i}.2")
        cls = net.conv_silu(net.conv_silu(x, c, c, 3, f"{scope}/cv3.{i}/cv3.{i}.0"), c, c, 3,
                            f"{scope}/cv3.{i}/cv3.{i}.1")
        cls = net.conv(cls, c, CLASSES, 1, f"{scope}/cv3.{i}/cv3.{i}.2")
        both = net.op("Concat", [box, cls], scope, axis=1)
        flat.append(net.op("Reshape", [both, net.ints(f"{scope.strip('/')}.shape{i}", [0, 4 * REG_MAX + CLASSES, -1])],
                           scope))
    cat = net.op("Concat", flat, scope, axis=2) if len(flat) > 1 else flat[0]
    box, cls = net.op("Split", [cat, net.ints(f"{scope.strip('/')}.split", [4 * REG_MAX, CLASSES])], scope,
                      outputs=2, axis=1)
    # DFL: softmax over each side's bins, then the expectation as a 1x1 Conv with weights 0..REG_MAX-1
    bins = net.op("Reshape", [box, net.ints(f"{scope.strip('/')}.dfl.shape", [0, 4, REG_MAX, -1])], f"{scope}/dfl")
    bins = net.op("Softmax", [net.op("Transpose", [bins], f"{scope}/dfl", perm=[0, 2, 1, 3])], f"{scope}/dfl", axis=1)
    w = net.const(f"{scope.strip('/')}.dfl.conv.weight", np.arange(REG_MAX, dtype=np.float32).reshape(1, REG_MAX, 1, 1))
    dist = net.op("Conv", [bins, w], f"{scope}/dfl/conv", kernel_shape=[1, 1])
    dist = net.op("Reshape", [dist, net.ints(f"{scope.strip('/')}.dfl.out", [0, 4, -1])], f"{scope}/dfl")
    return net.op("Concat", [dist, net.op("Sigmoid", [cls], scope)], scope, axis=1)


def yolo_csp(rng: np.random.Generator, batch: Dim = "batch", height: Dim = "height", width: Dim = "width") -> Any:
    """A YOLOv8n-shaped detector at 1/8 width: stem, two C2f stages, SPPF, a top-down neck, a two-scale head.

    Height and width must be multiples of 8 (YOLO's own are multiples of 32).
    """
    net = Net(rng)
    x = net.conv_silu("images", 3, 16, 3, "/model.0", stride=2)
    x = net.conv_silu(x, 16, 32, 3, "/model.1", stride=2)
    p3 = c2f(net, x, 32, 32, 1, "/model.2")
    x = net.conv_silu(p3, 32, 64, 3, "/model.3", stride=2)
    x = c2f(net, x, 64, 64, 2, "/model.4")
    p4 = sppf(net, x, 64, "/model.5")
    up = net.op("Concat", [upsample(net, p4, "/model.6"), p3], "/model.7", axis=1)
    n3 = c2f(net, up, 96, 32, 1, "/model.8", shortcut=False)
    y = detect(net, [(n3, 32), (p4, 64)], "/model.9")
    return net.model("yolo_csp", [Input("images", "float32", (batch, 3, height, width))],
                     [(y, (batch, 4 + CLASSES, "anchors"))], YOLO_OPSET)


# --- PaddleOCR (depthwise-separable blocks, squeeze-and-excitation, CTC head) ----------------------------------

def hardswish(net: Net, x: str, scope: str) -> str:
    return net.op("HardSwish", [x], scope)


def squeeze_excite(net: Net, x: str, c: int, scope: str) -> str:
    """GlobalAveragePool -> 1x1 Conv -> Relu -> 1x1 Conv -> HardSigmoid (Paddle's slope 0.2) -> Mul."""
    s = net.op("GlobalAveragePool", [x], scope)
    s = net.op("Relu", [net.conv(s, c, max(c // 4, 4), 1, f"{scope}/conv1")], scope)
    s = net.conv(s, max(c // 4, 4), c, 1, f"{scope}/conv2")
    return net.op("Mul", [x, net.op("HardSigmoid", [s], scope, alpha=0.2, beta=0.5)], scope)


def dw_block(net: Net, x: str, cin: int, cout: int, scope: str, stride: Union[int, Tuple[int, int]] = 1,
             se: bool = True, k: int = 3) -> str:
    """MobileNetV3's inverted residual: 1x1 expand + HardSwish, depthwise kxk + HardSwish, SE, 1x1 project."""
    mid = 2 * cin
    h = hardswish(net, net.conv(x, cin, mid, 1, f"{scope}/expand_conv"), f"{scope}/expand_conv")
    h = hardswish(net, net.conv(h, mid, mid, k, f"{scope}/bottleneck_conv", stride, group=mid),
                  f"{scope}/bottleneck_conv")
    if se:
        h = squeeze_excite(net, h, mid, f"{scope}/mid_se")
    h = net.conv(h, mid, cout, 1, f"{scope}/linear_conv")
    return net.op("Add", [x, h], scope) if cin == cout and stride == 1 else h


def ocr_rec(rng: np.random.Generator, batch: Dim = "batch", width: Dim = "width") -> Any:
    """A PP-OCR-style text recognizer: stem, four depthwise-SE blocks (stride 2 in height only), a CTC head.

    Output [batch, ceil(width/2), OCR_CLASSES]: per column, a softmax over the characters.
    """
    net = Net(rng)
    x = hardswish(net, net.conv("x", 3, 16, 3, "/backbone/conv1", stride=2), "/backbone/conv1")
    x = dw_block(net, x, 16, 16, "/backbone/blocks.0", se=False)
    x = dw_block(net, x, 16, 24, "/backbone/blocks.1", stride=(2, 1))
    x = dw_block(net, x, 24, 24, "/backbone/blocks.2", k=5)
    x = dw_block(net, x, 24, 32, "/backbone/blocks.3", stride=(2, 1))
    x = net.op("ReduceMean", [x], "/neck", axes=[2], keepdims=1)
    x = net.op("Squeeze", [x, net.ints("neck.squeeze_axes", [2])], "/neck")
    x = net.op("Transpose", [x], "/neck", perm=[0, 2, 1])
    logits = net.op("Add", [net.op("MatMul", [x, net.weight("head.fc.weight", 32, OCR_CLASSES)], "/head/fc"),
                            net.bias("head.fc.bias", OCR_CLASSES)], "/head/fc")
    y = net.op("Softmax", [logits], "/head", axis=2)
    return net.model("ocr_rec", [Input("x", "float32", (batch, 3, OCR_HEIGHT, width))],
                     [(y, (batch, "steps", OCR_CLASSES))], OCR_OPSET)


def mobilenet_cls(rng: np.random.Generator, batch: Dim = 1, size: Dim = CLS_SIZE) -> Any:
    """A MobileNetV3-style classifier on a fixed image: stem, three depthwise-SE blocks at stride 2, GlobalAveragePool,
    Flatten, a Gemm head and a Softmax. Output [batch, CLS_CLASSES]."""
    net = Net(rng)
    x = hardswish(net, net.conv("x", 3, 16, 3, "/backbone/conv1", stride=2), "/backbone/conv1")
    x = dw_block(net, x, 16, 16, "/backbone/blocks.0", stride=2, se=False)
    x = dw_block(net, x, 16, 24, "/backbone/blocks.1", stride=2)
    x = dw_block(net, x, 24, 32, "/backbone/blocks.2", stride=2)
    x = net.op("Flatten", [net.op("GlobalAveragePool", [x], "/head")], "/head", axis=1)
    logits = net.op("Gemm", [x, net.weight("head.fc.weight", CLS_CLASSES, 32), net.bias("head.fc.bias", CLS_CLASSES)],
                    "/head/fc", transB=1)
    y = net.op("Softmax", [logits], "/head", axis=1)
    return net.model("mobilenet_cls", [Input("x", "float32", (batch, 3, size, size))], [(y, (batch, CLS_CLASSES))],
                     OCR_OPSET)


# --- BERT (embeddings, attention with a mask, LayerNormalization, GELU FFN, pooler) ----------------------------

def layer_norm(net: Net, x: str, d: int, scope: str) -> str:
    key = scope.strip("/").replace("/", ".")
    return net.op("LayerNormalization", [x, net.const(f"{key}.weight", np.ones(d, np.float32)),
                                         net.const(f"{key}.bias", np.zeros(d, np.float32))], scope, axis=-1,
                  epsilon=1e-12)


def linear(net: Net, x: str, din: int, dout: int, scope: str) -> str:
    """MatMul + Add, as torch.onnx writes nn.Linear on a 3-D input."""
    key = scope.strip("/").replace("/", ".")
    y = net.op("MatMul", [x, net.weight(f"{key}.weight", din, dout)], scope)
    return net.op("Add", [net.bias(f"{key}.bias", dout), y], scope)


def gelu(net: Net, x: str, scope: str) -> str:
    """Exact GELU as exporters before opset 20 write it: x * 0.5 * (1 + erf(x / sqrt(2)))."""
    key = scope.strip("/").replace("/", ".")
    e = net.op("Erf", [net.op("Div", [x, net.const(f"{key}.sqrt2", np.array(np.sqrt(2), np.float32))], scope)], scope)
    e = net.op("Add", [e, net.const(f"{key}.one", np.array(1.0, np.float32))], scope)
    return net.op("Mul", [net.op("Mul", [x, e], scope), net.const(f"{key}.half", np.array(0.5, np.float32))], scope)


def attention(net: Net, x: str, mask: str, d: int, heads: int, scope: str) -> str:
    """Multi-head self-attention: Q/K/V projections, heads by Reshape/Transpose, scaled scores + mask, Softmax."""
    dh = d // heads
    key = scope.strip("/").replace("/", ".")
    split = net.ints(f"{key}.heads_shape", [0, 0, heads, dh])
    q, k, v = (net.op("Transpose", [net.op("Reshape", [linear(net, x, d, d, f"{scope}/{n}"), split], f"{scope}/{n}")],
                      f"{scope}/{n}", perm=perm)
               for n, perm in (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]), ("value", [0, 2, 1, 3])))
    scores = net.op("MatMul", [q, k], scope)
    scores = net.op("Div", [scores, net.const(f"{key}.sqrt_dh", np.array(np.sqrt(dh), np.float32))], scope)
    probs = net.op("Softmax", [net.op("Add", [scores, mask], scope)], scope, axis=-1)
    context = net.op("Transpose", [net.op("MatMul", [probs, v], scope)], scope, perm=[0, 2, 1, 3])
    context = net.op("Reshape", [context, net.ints(f"{key}.context_shape", [0, 0, d])], scope)
    return linear(net, context, d, d, f"{scope}/output/dense")


def bert_layer(net: Net, x: str, mask: str, d: int, heads: int, ffn: int, scope: str) -> str:
    """One post-norm encoder layer: attention + residual + LayerNorm, GELU FFN + residual + LayerNorm."""
    a = attention(net, x, mask, d, heads, f"{scope}/attention/self")
    x = layer_norm(net, net.op("Add", [a, x], f"{scope}/attention/output"), d, f"{scope}/attention/output/LayerNorm")
    h = gelu(net, linear(net, x, d, ffn, f"{scope}/intermediate/dense"), f"{scope}/intermediate/intermediate_act_fn")
    h = linear(net, h, ffn, d, f"{scope}/output/dense")
    return layer_norm(net, net.op("Add", [h, x], f"{scope}/output"), d, f"{scope}/output/LayerNorm")


def embeddings(net: Net, d: int) -> str:
    """Word + position + token-type Gathers, summed, then LayerNorm; positions sliced to the sequence length."""
    word = net.op("Gather", [net.weight("embeddings.word_embeddings.weight", VOCAB, d), "input_ids"],
                  "/embeddings/word_embeddings")
    types = net.op("Gather", [net.weight("embeddings.token_type_embeddings.weight", TYPE_VOCAB, d), "token_type_ids"],
                   "/embeddings/token_type_embeddings")
    seq = net.op("Gather", [net.op("Shape", ["input_ids"], "/embeddings"), net.const("embeddings.seq_axis",
                                                                                    np.array([1], np.int64))],
                 "/embeddings")
    ids = net.op("Slice", [net.const("embeddings.position_ids", np.arange(MAX_POSITIONS, dtype=np.int64)[None]),
                           net.ints("embeddings.slice_start", [0]), seq, net.ints("embeddings.slice_axes", [1])],
                 "/embeddings")
    pos = net.op("Gather", [net.weight("embeddings.position_embeddings.weight", MAX_POSITIONS, d), ids],
                 "/embeddings/position_embeddings")
    total = net.op("Add", [net.op("Add", [word, types], "/embeddings"), pos], "/embeddings")
    return layer_norm(net, total, d, "/embeddings/LayerNorm")


def extended_mask(net: Net) -> str:
    """attention_mask [batch, sequence] -> additive [batch, 1, 1, sequence]: 0 where attended, -10000 where padded."""
    m = net.op("Unsqueeze", ["attention_mask", net.ints("mask.axes", [1, 2])], "/bert")
    m = net.op("Cast", [m], "/bert", to=1)
    m = net.op("Sub", [net.const("mask.one", np.array(1.0, np.float32)), m], "/bert")
    return net.op("Mul", [m, net.const("mask.min", np.array(-10000.0, np.float32))], "/bert")


def bert_encoder(rng: np.random.Generator, layers: int = 1, batch: Dim = "batch", sequence: Dim = "sequence",
                 hidden: int = 64, heads: int = 4) -> Any:
    """A BERT encoder (post-norm) with the pooler: last_hidden_state and pooler_output (Gemm + Tanh on token 0)."""
    net = Net(rng)
    x = embeddings(net, hidden)
    mask = extended_mask(net)
    for i in range(layers):
        x = bert_layer(net, x, mask, hidden, heads, 2 * hidden, f"/encoder/layer.{i}")
    first = net.op("Gather", [x, net.const("pooler.first_token", np.array(0, np.int64))], "/pooler", axis=1)
    dense = net.op("Gemm", [first, net.weight("pooler.dense.weight", hidden, hidden), net.bias("pooler.dense.bias",
                                                                                            hidden)],
                   "/pooler/dense", transB=1)
    pooled = net.op("Tanh", [dense], "/pooler/activation")
    ids = [Input(n, "int64", (batch, sequence)) for n in ("input_ids", "attention_mask", "token_type_ids")]
    return net.model("bert_encoder", ids, [(x, (batch, sequence, hidden)), (pooled, (batch, hidden))], BERT_OPSET)


# --- A deep backbone of those blocks (hundreds of nodes) -------------------------------------------------------

def backbone(rng: np.random.Generator, stages: int = 4, bottlenecks: int = 2, batch: Dim = "batch") -> Any:
    """Stem, then `stages` x (C2f with `bottlenecks`, depthwise-SE block) at 32 channels, SPPF, a one-scale head.

    Input [batch, 3, 64, 64]; float nodes grow by 7*bottlenecks + 20 per stage.
    """
    net = Net(rng)
    x = net.conv_silu("images", 3, 16, 3, "/model.0", stride=2)
    x = net.conv_silu(x, 16, 32, 3, "/model.1", stride=2)
    for s in range(stages):
        x = c2f(net, x, 32, 32, bottlenecks, f"/model.{2 + 2 * s}")
        x = dw_block(net, x, 32, 32, f"/model.{3 + 2 * s}")
    x = sppf(net, x, 32, f"/model.{2 + 2 * stages}")
    y = detect(net, [(x, 32)], f"/model.{3 + 2 * stages}")
    return net.model("backbone", [Input("images", "float32", (batch, 3, 64, 64))],
                     [(y, (batch, 4 + CLASSES, "anchors"))], OCR_OPSET)


def graph_inputs(model: Any) -> List[Input]:
    """The model's inputs as Input records (dims: int, or the dim_param of a dynamic one)."""
    from onnx import helper

    found = []
    for vi in model.graph.input:
        t = vi.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim)
        found.append(Input(vi.name, np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type)).name, dims))
    return found


def feeds(model: Any, rng: np.random.Generator, sizes: Dict[str, int]) -> Dict[str, np.ndarray]:
    """Valid inputs for a model of this module: dynamic dims from `sizes` (by dim name), ids inside their tables.

    Images are uniform in [0, 1) as a normalised image is; input_ids in [0, VOCAB), token_type_ids 0 then 1
    (two segments), attention_mask ones with the last quarter of every row but the first padded out.
    """
    out: Dict[str, np.ndarray] = {}
    for i in graph_inputs(model):
        shape = [d if isinstance(d, int) else sizes[d] for d in i.dims]
        out[i.name] = _feed(i.name, shape, rng)
    return out


def _feed(name: str, shape: List[int], rng: np.random.Generator) -> np.ndarray:
    if name == "input_ids":
        return rng.integers(0, VOCAB, size=shape, dtype=np.int64)
    if name == "token_type_ids":
        return (np.arange(shape[-1]) >= shape[-1] // 2).astype(np.int64)[None].repeat(shape[0], 0)
    if name == "attention_mask":
        mask = np.ones(shape, np.int64)
        mask[1:, shape[-1] - shape[-1] // 4:] = 0
        return mask
    return rng.uniform(0.0, 1.0, size=shape).astype(np.float32)


@dataclass(frozen=True)
class Arch:
    """A graph builder, the sizes its dynamic dims take for calibration, and what it stands for."""

    name: str
    build: Callable[..., Any]  # (rng, **dims or depth) -> onnx.ModelProto
    calibration: Dict[str, int]
    resembles: str
    options: Dict[str, Any]


ARCHS = (
    Arch("yolo_csp", yolo_csp, {"batch": 2, "height": 64, "width": 64}, "YOLOv8n (C2f, SPPF, Detect)", {}),
    Arch("ocr_rec", ocr_rec, {"batch": 2, "width": 96}, "PaddleOCR PP-OCR recognizer (MobileNetV3, CTC)", {}),
    Arch("bert_encoder", bert_encoder, {"batch": 2, "sequence": 16}, "BERT-base layer (embeddings, pooler)", {}),
)
# Deep models for the benchmark and report-size tests: about 300 and 900 nodes once quantized with TensorRT settings.
LARGE = (
    Arch("backbone_300", backbone, {"batch": 2}, "a YOLO/PP-OCR backbone of C2f and depthwise-SE stages",
         {"stages": 2, "bottlenecks": 1}),
    Arch("backbone_900", backbone, {"batch": 2}, "a YOLO/PP-OCR backbone of C2f and depthwise-SE stages",
         {"stages": 7, "bottlenecks": 2}),
)


# A model exported at a fixed input shape, beside the dynamic ones (check.arch_models.FORMS).
STATIC = (Arch("mobilenet_cls", mobilenet_cls, {}, "a MobileNetV3 classifier exported at 1x3x224x224", {}),)


def by_name(name: str) -> Arch:
    """The Arch called `name` (ARCHS, LARGE and STATIC); KeyError names the known ones."""
    for arch in ARCHS + LARGE + STATIC:
        if arch.name == name:
            return arch
    raise KeyError(f"no architecture {name!r}; known: {', '.join(a.name for a in ARCHS + LARGE + STATIC)}")


def build(arch: Arch, seed: int = 0) -> Any:
    """The float model of an Arch, seeded."""
    return arch.build(np.random.default_rng(seed), **arch.options)
