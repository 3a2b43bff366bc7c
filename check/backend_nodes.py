"""ONNX backend node tests for the quantization ops, as an external case set of user-model bundles.

The onnx wheel ships the node test generators (onnx/backend/test/case/node/*.py; the prebuilt .pb data
left the wheel with onnx#7959). For QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv,
QLinearMatMul, ConvInteger and MatMulInteger each test's model and data set 0 become a bundle through
check.bundle.bundle_from_model, with the test's inputs; the reference is check.bundle's (ONNX Runtime, optimizations
off, for Q/DQ; onnx.reference for the integer and QLinear ops, never an engine under test) where it runs the model,
else the test's own expected outputs. Each model is pinned to the first of
opsets 13, 11 and 10 that passes onnx's full check, and IR 8, so TensorRT 8.x and ONNX Runtime 1.16 read
it; a test whose types no such opset allows (float8, int4, int16, blocked) is listed as left out.

    python -m check.backend_nodes --out DIR     then    python -m engines.run --bundles DIR ...
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from core.cli import ArgumentParser

OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
       "ConvInteger", "MatMulInteger")
PIN_OPSETS = (13, 11, 10)  # 13 first: TensorRT's explicit quantization (per-axis Q/DQ) is opset 13
IR_VERSION = 8


@dataclass(frozen=True)
class NodeTest:
    """One backend node test as written (or why it was left out)."""

    name: str
    op: str
    opset: int
    bundle: str = ""  # bundle id, "" when left out
    reference: str = ""  # "onnxruntime <version>", "onnx.reference <version>" or "onnx backend test data <version>"
    left_out: str = ""


def node_tests(ops: Sequence[str] = OPS) -> List[Any]:
    """The onnx package's node test cases for these ops (onnx.backend.test.case.node)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # other ops' generators warn about overflowing casts
        cases = collect_testcases()
    return [c for c in cases if c.kind == "node" and c.model.graph.node
            and c.model.graph.node[0].op_type in ops]


def pinned(model: Any) -> Optional[Any]:
    """A copy at the first opset in PIN_OPSETS that passes the full check, IR 8; None if none does."""
    import onnx

    for opset in PIN_OPSETS:
        candidate = onnx.ModelProto()
        candidate.CopyFrom(model)
        for entry in candidate.opset_import:
            if entry.domain in ("", "ai.onnx"):
                entry.version = opset
        candidate.ir_version = IR_VERSION
        try:
            onnx.checker.check_model(candidate, full_check=True)
        except Exception:  # ValidationError / InferenceError: this opset does not allow the op or its types
            continue
        return candidate
    return None


@contextlib.contextmanager
def test_data_reference(expected: Dict[str, np.ndarray]) -> Iterator[None]:
    """While active, check.bundle takes the test's expected outputs where ONNX Runtime cannot run the model."""
    import onnx

    import check.bundle as cb

    originals = cb.reference_outputs, cb.independent_outputs

    def falling_back(original: Any) -> Any:
        def reference(model: Path, inputs: Any) -> Tuple[Dict[str, np.ndarray], Dict[str, Any], str]:
            outputs, record, error = original(model, inputs)
            if not error:
                return outputs, record, ""
            record = {"engine": "onnx backend test data", "version": onnx.__version__,
                      "why": f"{record.get('engine', 'the reference')} cannot run it: {error}"}
            return dict(expected), record, ""
        return reference

    cb.reference_outputs, cb.independent_outputs = (falling_back(f) for f in originals)
    try:
        yield
    finally:
        cb.reference_outputs, cb.independent_outputs = originals


def write(out: Path, ops: Sequence[str] = OPS) -> List[NodeTest]:
    """A bundle per usable node test under out/user_model/backend_<test name>; manifest.json beside them."""
    import onnx

    from check.bundle import bundle_from_model

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: List[NodeTest] = []
    for case in node_tests(ops):
        op = case.model.graph.node[0].op_type
        model = pinned(case.model)
        if model is None:
            written.append(NodeTest(case.name, op, case.model.opset_import[0].version,
                                    left_out="no opset in 13, 11, 10 allows its types or attributes"))
            continue
        inputs, outputs = case.data_sets[0]
        names_in = [i.name for i in model.graph.input]
        names_out = [o.name for o in model.graph.output]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"backend_{case.name}.onnx"
            onnx.save(model, str(path))
            npz = Path(tmp) / "inputs.npz"
            np.savez(npz, **{n: np.asarray(a) for n, a in zip(names_in, inputs)})
            with test_data_reference({n: np.asarray(a) for n, a in zip(names_out, outputs)}):
                bundle = bundle_from_model(path, out, inputs_npz=npz, name=path.stem)  # one per node test
        written.append(NodeTest(case.name, op, model.opset_import[0].version, bundle.id,
                                str(bundle.meta.get("reference", ""))))
    (out / "backend_nodes.json").write_text(json.dumps([asdict(t) for t in written], indent=2) + "\n")
    return written


def main(argv: Optional[List[str]] = None) -> int:
    parser = ArgumentParser(prog="python -m check.backend_nodes", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="bundle root (pass it to the cells as --bundles)")
    parser.add_argument("--op", action="append", choices=OPS, help="only these ops (repeatable)")
    args = parser.parse_args(argv)
    from check import CheckError

    try:
        written = write(args.out, tuple(args.op or OPS))
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for t in written:
        print(f"{t.name}: " + (f"{t.bundle} (reference: {t.reference})" if t.bundle else f"left out: {t.left_out}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
