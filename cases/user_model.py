"""A user's own quantized model: no upstream thread of its own; matched against every documented symptom (#3844 ...).

Not a seed and not a sweep (`external=True`): each bundle is one model a user brought
(`python -m check`), written under `user_model/<slug of its file name>-<digest of its name and bytes>`.
It has no expectations of its own: a failure is a "new failure" and a pass "undocumented", except where the model
is in a form a seed case reproduces (check.forms: onnxruntime's quantize_dynamic, seed 002). Its bundle then names
that case and the variant it matches (params `like_case`, `like_<axis>`), and the case's expectations judge its cells
where they speak. A failure its lint predicted at that stage takes the prediction's verdict (cases.verdict.
lint_expectation: a documented rule's source, or the observed cells it was read from), and a model the reference
cannot run gets "no reference" cells that blame nobody (cases.verdict.unreferenced). The signatures are the
catalogue's, so a known upstream symptom is still named when a user's model shows it; a seed case's only where the
lint matched that case's pattern on the model (cases.verdict.backed_signatures).
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple, Union

from cases.base import Case, Expectation, Params, Signature
from core.words import MODELS, file_name

ID = "user_model"
ID_DIGITS = 10  # hex digits of the content digest in a model's bundle id
# A user model's compute nodes: the convolutions, matrix products and recurrent or attention layers that do a
# network's arithmetic on weights, in float and in their quantized forms (the integer ops, QOperator's and onnxruntime's
# com.microsoft ones). Quantized, they are the denominator of "N of M quantized compute nodes INT8"; the other
# quantized nodes (activations, Concat, Resize, and LayerNormalization, Gather or BatchNormalization even where their
# weights are quantized) are counted apart (check.bundle.target_details).
COMPUTE_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm", "LSTM", "GRU", "RNN", "Attention",
                         "ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul", "QGemm", "QAttention",
                         "DynamicQuantizeLSTM", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "MatMulNBits",
                         "QOrderedMatMul", "QOrderedAttention"})


def catalogue_signatures() -> Tuple[Signature, ...]:
    """Every documented signature of the seed cases (cases.CASE_MODULES, external ones left out), in seed order, and of
    the engines (cases.common.ENGINE_SIGNATURES), once per name."""
    from cases import CASE_MODULES
    from cases.common import ENGINE_SIGNATURES

    found: Dict[str, Signature] = {}
    # Not all_cases(): it would import this module, which is still importing.
    declared = [importlib.import_module(m).CASE for m in CASE_MODULES if m != __name__]
    for case in sorted((c for c in declared if not c.external), key=lambda c: c.seed):
        for s in case.signatures:
            found.setdefault(s.name, s)
    for signatures in ENGINE_SIGNATURES.values():
        for s in signatures:
            found.setdefault(s.name, s)
    return tuple(found.values())


def model_slug(model: Union[str, Path]) -> str:
    """A model file's name without .onnx, in filesystem-safe characters (not unique: see model_id)."""
    name = Path(model).name
    stem = name[: -len(".onnx")] if name.lower().endswith(".onnx") else name
    return file_name(stem, MODELS)


def model_id(model: Union[str, Path]) -> str:
    """The bundle slug of a model file: its name's slug and a digest of its name and bytes, stable across runs.

    The same file always gets the same id; files that differ in content or in name (`net ü.onnx`, `net ö.onnx`)
    never share one. External data files are covered by the bundle's digest, not by its id.
    """
    path = Path(model)
    h = hashlib.sha256(path.name.encode("utf-8") + b"\0")
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return f"{model_slug(path)}-{h.hexdigest()[:ID_DIGITS]}"


def bundle_id_for(model: Union[str, Path]) -> str:
    """The bundle id a model file gets: user_model/<model_id>."""
    return f"{ID}/{model_id(model)}"


def slug_of(bundle: str) -> str:
    """The model's name slug in a bundle id: user_model/net-0123456789 -> net (an older id's slug as it is)."""
    slug = bundle.split("/", 1)[-1]
    stem, _, digits = slug.rpartition("-")
    return stem if stem and len(digits) == ID_DIGITS and all(c in "0123456789abcdef" for c in digits) else slug


def bundle_ids_for(model: Union[str, Path]) -> List[str]:
    """Its bundle id, then the one bundles had before ids carried a digest (user_model/<slug>, committed cells);
    the latter alone for a file that cannot be read here."""
    try:
        current = [bundle_id_for(model)]
    except OSError:
        current = []
    return current + [f"{ID}/{model_slug(model)}"]


LIKE_CASE, LIKE_PREFIX = "like_case", "like_"


def like(params: Params) -> Tuple[str, Dict[str, str]]:
    """(case id, that case's parameters) a user bundle's params name (check.forms.like_params), ("", {}) for none."""
    case = str(params.get(LIKE_CASE) or "")
    if not case:
        return "", {}
    return case, {k[len(LIKE_PREFIX):]: str(v) for k, v in params.items()
                  if k.startswith(LIKE_PREFIX) and k != LIKE_CASE}


@dataclass(frozen=True)
class UserModelCase(Case):
    """The user-model case: the expectation of the seed case a model's form matches, where its bundle names one."""

    def expectation_for(self, engine: str, version: str, params: Params,
                        context: Optional[Mapping[str, str]] = None) -> Optional[Expectation]:
        from cases import get_case

        case, matched = like(params)
        if not case:
            return super().expectation_for(engine, version, params, context)
        return get_case(case).expectation_for(engine, version, matched, context)


CASE = UserModelCase(
    id=ID,
    seed="",
    title="a user's own quantized model",
    links=(),
    axes={},
    target_nodes=(),  # per model: every node fed by a DequantizeLinear or feeding a QuantizeLinear (check.bundle)
    signatures=catalogue_signatures(),
    expectations=(),
    builder="check.bundle:bundle_from_model",
    external=True,
)
