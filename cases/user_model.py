"""A user's own quantized model: no upstream thread of its own; matched against every documented symptom (#3844 ...).

Not a seed and not a sweep (`external=True`): each bundle is one model a user brought
(`python -m check`), written under `user_model/<slug of its file name>`. There are no expectations,
so a failure is a "new failure" and a pass "undocumented"; the signatures are the catalogue's, so a
known upstream symptom is still named when a user's model shows it.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Dict, Tuple, Union

from cases.base import Case, Signature

ID = "user_model"
# A user model's compute nodes: the ops that do a network's arithmetic on weights. With any node that takes weights
# through a DequantizeLinear of an initializer, they are the denominator of "N of M quantized compute nodes INT8";
# the other quantized nodes (activations, Concat, Resize, ...) are counted apart (check.bundle.target_details).
COMPUTE_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm", "ConvInteger", "MatMulInteger", "QLinearConv",
                         "QLinearMatMul"})


def catalogue_signatures() -> Tuple[Signature, ...]:
    """Every documented signature of the seed cases (cases.CASE_MODULES, external ones left out), once per name."""
    from cases import CASE_MODULES

    found: Dict[str, Signature] = {}
    for module in CASE_MODULES:
        if module == __name__:
            continue
        case = importlib.import_module(module).CASE
        if case.external:
            continue
        for s in case.signatures:
            found.setdefault(s.name, s)
    return tuple(found.values())


def model_slug(model: Union[str, Path]) -> str:
    """The bundle slug of a model file: its name without .onnx, in filesystem-safe characters."""
    name = Path(model).name
    stem = name[: -len(".onnx")] if name.lower().endswith(".onnx") else name
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "model"


def bundle_id_for(model: Union[str, Path]) -> str:
    """The bundle id a model file gets: user_model/<slug>."""
    return f"{ID}/{model_slug(model)}"


CASE = Case(
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
