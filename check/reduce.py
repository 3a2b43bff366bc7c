"""Reduce a failing model to the smallest contiguous subgraph that still shows the same signature, then a bug bundle.

The graph's nodes, topologically sorted, are grouped into units that are never cut: a QuantizeLinear with
the DequantizeLinear nodes it feeds, and a DequantizeLinear of an initializer (a weight or bias) or a
Constant with the nodes it feeds. Two binary searches over the units (the shortest failing prefix, then
the shortest failing suffix of it) cost about 2*log2(units) oracle runs for one failing node. Each
candidate is cut out with onnx.utils.Extractor; its inputs are the boundary tensors.

The oracle is a function (candidate model path) -> signature, "" when the candidate is healthy; engine_oracle runs the
engine adapter (engines.get_engine(...).run) on a bundle of the candidate. Signatures: the failed stage in
core.words's words and a catalogue signature name or the error's first line, its numbers masked ("parse fails: ...",
"load fails: ..."), "float:<node>" (the node lost INT8), "drift" (outputs beyond tolerance), or a regex given with
--signature.

    python -m check.reduce model.onnx --engine E [--trt-python PY] [--signature SIG] [--node NODE] --out DIR
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from core.cli import ArgumentParser
from core.words import FAILED_STAGE, fails_at, mask_numbers

Oracle = Callable[[Path], str]
DRIFT = "drift"  # the signature of outputs beyond tolerance


@dataclass(frozen=True)
class Reduction:
    """What a reduction found and what it cost."""

    model: str  # the reduced model's path
    signature: str
    nodes_before: int
    nodes_after: int
    units_before: int
    runs: int  # oracle runs, the first (the full model) included
    budget: int  # 2 * ceil(log2(units)) + 1: the target for one failing node
    nodes: Tuple[str, ...]  # the reduced model's node names
    steps: Tuple[Dict[str, Any], ...] = field(default_factory=tuple)  # (range, signature) per run
    pattern: str = ""  # the regular expression a signature had to match, where one was given (signature: the full's)


class ReduceError(Exception):
    """Nothing to reduce: the full model does not show the signature, or bad input."""


def units(model: Any) -> List[List[int]]:
    """Node indices grouped so that no cut separates a Q from its DQ or a constant DQ from its consumer."""
    nodes = list(model.graph.node)
    consts = {t.name for t in model.graph.initializer}
    consumers: Dict[str, List[int]] = {}
    for i, n in enumerate(nodes):
        for t in n.input:
            consumers.setdefault(t, []).append(i)
    parent = list(range(len(nodes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, n in enumerate(nodes):
        glued = []
        if n.op_type == "QuantizeLinear":
            glued = [j for j in consumers.get(n.output[0], []) if nodes[j].op_type == "DequantizeLinear"]
        elif n.op_type == "Constant" or (n.op_type == "DequantizeLinear" and n.input[0] in consts):
            glued = [j for o in n.output for j in consumers.get(o, [])]
        for j in glued:
            parent[find(j)] = find(i)
    groups: Dict[int, List[int]] = {}
    for i in range(len(nodes)):
        groups.setdefault(find(i), []).append(i)
    return _topological([sorted(g) for g in groups.values()], nodes)


def _topological(groups: List[List[int]], nodes: Sequence[Any]) -> List[List[int]]:
    """Units in dependency order (Kahn), ties broken by the first node's position."""
    import heapq

    unit_of = {i: u for u, g in enumerate(groups) for i in g}
    producer = {o: i for i, n in enumerate(nodes) for o in n.output}
    deps: List[Set[int]] = [set() for _ in groups]
    for u, g in enumerate(groups):
        for i in g:
            for t in nodes[i].input:
                if t in producer and unit_of[producer[t]] != u:
                    deps[u].add(unit_of[producer[t]])
    users: List[List[int]] = [[] for _ in groups]
    for u, d in enumerate(deps):
        for v in d:
            users[v].append(u)
    waiting = [len(d) for d in deps]
    ready = [(groups[u][0], u) for u in range(len(groups)) if not waiting[u]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(groups[u])
        for v in users[u]:
            waiting[v] -= 1
            if not waiting[v]:
                heapq.heappush(ready, (groups[v][0], v))
    if len(order) != len(groups):
        raise ReduceError("the graph has a cycle once Q/DQ pairs are kept whole")
    return order


def extract(model: Any, keep: Sequence[int]) -> Any:
    """The subgraph of the nodes at `keep`: boundary tensors become inputs, tensors used outside become outputs."""
    from onnx.utils import Extractor

    nodes = list(model.graph.node)
    kept = set(keep)
    consts = {t.name for t in model.graph.initializer}
    produced = {o for i in kept for o in nodes[i].output}
    inputs, outputs = [], []
    for i in sorted(kept):
        for t in nodes[i].input:
            if t and t not in produced and t not in consts and t not in inputs:
                inputs.append(t)
    used_outside = {t for j, n in enumerate(nodes) if j not in kept for t in n.input}
    graph_outputs = {o.name for o in model.graph.output}
    for i in sorted(kept):
        for o in nodes[i].output:
            if o and (o in used_outside or o in graph_outputs) and o not in outputs:
                outputs.append(o)
    if not outputs:  # a dead end: keep the last node's outputs
        outputs = [o for o in nodes[max(kept)].output if o]
    sub = Extractor(model).extract_model(inputs, outputs)
    sub.ir_version = model.ir_version
    del sub.opset_import[:]
    sub.opset_import.extend(model.opset_import)
    return sub


def complete_value_info(model: Any) -> Any:
    """Give every node output a value_info, so any cut can name it; float, unknown shape, where inference knows none.

    Shape inference knows nothing of custom ops (TensorRT plugins); their outputs are declared float, a guess
    an engine may refuse differently, so the reduced model's signature is checked again by the oracle anyway.
    """
    import onnx

    known = {v.name for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    known |= {t.name for t in model.graph.initializer}
    for n in model.graph.node:
        for o in n.output:
            if o and o not in known:
                model.graph.value_info.append(onnx.helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None))
                known.add(o)
    return model


def reduce_model(model_path: Path, oracle: Oracle, out: Path, signature: Optional[str] = None,
                 pattern: Optional[str] = None) -> Reduction:
    """Bisect to the shortest contiguous run of units that shows `signature` (default: the full model's), or, with
    `pattern` (a regular expression), any signature it finds."""
    import onnx

    model = complete_value_info(onnx.shape_inference.infer_shapes(onnx.load(str(model_path))))
    order = units(model)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    steps: List[Dict[str, Any]] = []
    work = Path(tempfile.mkdtemp(prefix="candidates.", dir=out))

    def shows(lo: int, hi: int) -> bool:
        keep = [i for u in order[lo:hi] for i in u]
        path = work / f"units_{lo}_{hi}.onnx"
        onnx.save(extract(model, keep) if (lo, hi) != (0, len(order)) else model, str(path))
        got = oracle(path)
        steps.append({"units": [lo, hi], "nodes": len(keep), "signature": got})
        return bool(got) and _shows(got, want, pattern)

    want = signature or ""
    said = f"a signature matching {pattern!r}" if pattern else f"the signature {want!r}"
    full = oracle(Path(model_path))
    steps.append({"units": [0, len(order)], "nodes": len(model.graph.node), "signature": full})
    if not want and not pattern:
        want, said = full, f"the signature {full!r}"
    if not full or not _shows(full, want, pattern):
        raise ReduceError(f"the full model does not show {said} (it shows {full or 'nothing'!r}); "
                          "nothing to reduce")
    lo, hi = 1, len(order)
    while lo < hi:  # the shortest prefix that still shows it
        mid = (lo + hi) // 2
        if shows(0, mid):
            hi = mid
        else:
            lo = mid + 1
    end = hi
    lo, hi = 0, end - 1
    while lo < hi:  # the latest start that still shows it
        mid = (lo + hi + 1) // 2
        if shows(mid, end):
            lo = mid
        else:
            hi = mid - 1
    start = lo
    keep = [i for u in order[start:end] for i in u]
    reduced = extract(model, keep) if (start, end) != (0, len(order)) else model
    target = out / "reduced.onnx"
    onnx.save(reduced, str(target))
    result = Reduction(str(target), want or full, len(model.graph.node), len(reduced.graph.node), len(order),
                       len(steps), 2 * math.ceil(math.log2(max(len(order), 2))) + 1,
                       tuple(n.name for n in reduced.graph.node), tuple(steps), pattern or "")
    (out / "reduction.json").write_text(json.dumps(asdict(result), indent=2) + "\n")
    return result


def _shows(got: str, want: str, pattern: Optional[str] = None) -> bool:
    """Whether a run's signature is the one wanted: the same, or, with a pattern, one the pattern finds."""
    if pattern:
        return re.search(pattern, got) is not None
    return got == want


# ---- oracles ----

def observation_signature(obs: Any, engine: str, node: Optional[str] = None, bundle: Any = None) -> str:
    """An engine's observation in signature words (failed stage and catalogue signature or error, lost INT8, drift);
    "" if healthy."""
    if obs.crashed:
        return f"crashed: {obs.crashed.splitlines()[0] if obs.crashed else ''}"
    if obs.error:
        from cases.user_model import catalogue_signatures

        text = "\n".join([obs.error, obs.log])
        named = [s.name for s in catalogue_signatures() if s.kind == "error" and s.search(text)]
        first = mask_numbers(_first_line(obs.error))
        return f"{fails_at(FAILED_STAGE[obs.stage], engine)}: {named[0] if named else first}"
    if node is not None:
        precision = obs.precision.get(node, {}).get("precision", "unknown")
        return f"float:{node}" if precision == "float" else ""
    if getattr(obs, "not_run_here", ""):  # built ahead of time (TensorRT-RTX), not run: no numerics to drift
        return ""
    if bundle is not None:
        from engines.cells import compare

        _, mismatch, _ = compare(bundle, obs.outputs)
        return DRIFT if mismatch else ""
    return ""


def engine_oracle(engine: str, bundles: Path, node: Optional[str] = None, seed: int = 0,
                  **options: Any) -> Oracle:
    """An oracle that writes a bundle of the candidate (check.bundle) and runs the engine adapter on it."""
    from check.bundle import bundle_from_model
    from engines import get_engine

    adapter = get_engine(engine, **options)
    info = adapter.probe()
    if not info.available:
        raise ReduceError(f"{engine} cannot run here: {info.reason}")

    def oracle(path: Path) -> str:
        bundle = bundle_from_model(path, bundles, seed=seed, name="candidate")  # one folder, not one per candidate
        if node is not None and node not in (bundle.meta.get("target_nodes") or []):
            return ""
        return observation_signature(adapter.run(bundle), engine, node, bundle)

    oracle.adapter = adapter  # type: ignore[attr-defined]
    oracle.info = info  # type: ignore[attr-defined]
    return oracle


def _first_line(text: str) -> str:
    lines = [x.strip() for x in (text or "").splitlines() if x.strip()]
    return lines[0] if lines else ""


# ---- bug bundle ----

def bug_bundle(reduced: Path, engine: str, out: Path, seed: int = 0, **options: Any) -> Path:
    """Run the reduced model once more as a cell and make its bug bundle with matrix.bugbundle."""
    import datetime

    from cases.user_model import CASE
    from check.bundle import bundle_from_model
    from engines import get_engine
    from engines.cells import judge_observation
    from matrix.bugbundle import make

    bundles = Path(out) / "bundles"
    bundle = bundle_from_model(reduced, bundles, seed=seed, name="reduced")
    adapter = get_engine(engine, **options)
    info = adapter.probe()
    run = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "source": "local", "command": "python -m check.reduce"}
    cell = judge_observation(CASE, bundle, info, adapter.run(bundle), run)
    (Path(out) / "cell.jsonl").write_text(cell.to_json() + "\n")
    return make(cell, [cell], bundles, Path(out) / "bug-bundles")


def main(argv: Optional[List[str]] = None) -> int:
    parser = ArgumentParser(prog="python -m check.reduce", description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--engine", required=True, help="onnxruntime, openvino, tensorrt-rtx or tensorrt")
    parser.add_argument("--trt-python", help="an interpreter with TensorRT or TensorRT-RTX (default: this one)")
    parser.add_argument("--rtx-target", help="TensorRT-RTX: the architecture to build for (SM75 ... SM121)")
    wanted = parser.add_mutually_exclusive_group()
    wanted.add_argument("--signature", help="what to keep: a signature as this tool prints it; default: what the full "
                                            "model shows")
    wanted.add_argument("--signature-regex", metavar="REGEX",
                        help="what to keep: any signature this regular expression finds (re.search)")
    parser.add_argument("--node", help="reduce to this node losing INT8 (signature float:<node>)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from check import CheckError

    if not args.model.is_file():
        print(f"error: no such model file: {args.model}", file=sys.stderr)
        return 2
    options = {"python": args.trt_python} if args.trt_python else {}
    if args.rtx_target:
        options["target"] = args.rtx_target
    try:
        oracle = engine_oracle(args.engine, args.out / "candidate-bundles", args.node, args.seed, **options)
        signature = args.signature or (f"float:{args.node}" if args.node else None)
        result = reduce_model(args.model, oracle, args.out, signature, args.signature_regex)
        made = bug_bundle(Path(result.model), args.engine, args.out, args.seed, **options)
    except (ReduceError, CheckError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{args.model}: {result.nodes_before} nodes -> {result.nodes_after} ({', '.join(result.nodes)}) "
          f"showing {result.signature!r}; {result.runs} engine runs (target {result.budget})")
    print(f"reduced model: {result.model}\nbug bundle: {made}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
