"""Every catalogue signature names its own cause: fed the other cases' errors, none matches.

A signature's cause is the cells of the cases that declare a signature of its name (a name several cases declare is
one cause). The errors are the committed observed cells (reports/observed/, every results file under it) and the
TensorRT-RTX build errors kept as test data (tests/data/trt/). A user model's cells are left out: they are matched
against every signature (cases.user_model), and what a match there claims is the seed's cause, which these cells test.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

from cases import all_cases, get_case
from cases.base import Signature
from core.results import read_results

REPO = Path(__file__).resolve().parents[2]
OBSERVED = REPO / "reports" / "observed"
# TensorRT-RTX build errors kept as test data: "<version> <bundle>[ target=SM120]": error, under "errors" or "builds".
RTX_ERRORS = tuple(REPO / "tests" / "data" / "trt" / name for name in ("rtx-build-logs.json", "rtx-2026-forms.json"))

# Symptoms shared on purpose, (signature, case, bundle regex): the other case's cells show the same cause.
SHARED: Dict[Tuple[str, str, str], str] = {
    ("dql_plugin_not_found", "onnx_node_tests", r"/dynamicquantizelinear"):
        "ONNX's DynamicQuantizeLinear node tests: the operator seed 003 documents, refused by the same plugin lookup",
    ("rtx_check_dynamic_quantize_linear", "onnx_node_tests", r"/dynamicquantizelinear"):
        "ONNX's DynamicQuantizeLinear node tests: TensorRT-RTX's checker refuses the operator, as in seed 003",
    ("nonzero_zero_point", "onnx_node_tests", r"/(?:de)?quantizelinear_int4-"):
        "ONNX's INT4 node tests hold a non-zero zero point: the parser's symmetric-only check",
    ("trt85_dq_three_inputs", "dq_blocked_rank1", r"zero_point=none"):
        "a DequantizeLinear without a zero point: TensorRT 8.5's parser needs three inputs, whatever the case",
    ("trt85_dq_three_inputs", "onnx_node_tests", r"/quantizelinear_blocked_symmetric-"):
        "ONNX's blocked symmetric node test has no zero point: TensorRT 8.5's parser needs three inputs",
    ("trt86_dq_range_check", "dq_blocked_rank1", r"zero_point=none"):
        "a DequantizeLinear without a zero point: TensorRT 8.6's parser reads the missing third input",
    ("trt86_dq_range_check", "onnx_node_tests", r"/quantizelinear_blocked_symmetric-"):
        "ONNX's blocked symmetric node test has no zero point: TensorRT 8.6's parser reads the missing third input",
    ("rtx_hw_specific_type", "", r""):
        "Myelin's refusal of a target without one of the model's data types names the type and the target: one "
        "cause whatever case holds the type (FP8, FP4, INT4 on sm75 or sm80)",
    ("scale_not_positive", "fp16_scale_qdq", r""):
        "the parser's check of a scale's values: TensorRT 8.5-8.6 fail it on float16 scales that are all positive "
        "(fp16-repeat/README.md); the words cannot tell that from seed 033's zero scale",
    ("scale_not_positive", "fp16_quantize_rounding", r""):
        "the parser's check of a scale's values, on seed 029's float16 scale (fp16-repeat/README.md)",
}


def causes() -> Tuple[List[Signature], Dict[str, Set[str]]]:
    """Every seed case's signature once per name, and the cases that declare each name."""
    found: Dict[str, Signature] = {}
    owners: Dict[str, Set[str]] = {}
    for case in all_cases():
        if case.external:
            continue
        for s in case.signatures:
            found.setdefault(s.name, s)
            owners.setdefault(s.name, set()).add(case.id)
    return list(found.values()), owners


def observed_errors() -> Iterator[Tuple[str, str, str]]:
    """(case, bundle, text) of every committed observed cell: its error, reason and log, as the judge reads them."""
    for path in sorted(p for p in OBSERVED.rglob("*") if p.name.endswith((".jsonl", ".jsonl.gz"))):
        for stored in read_results(path).cells:
            c = stored.cell
            yield c.case, c.bundle, "\n".join([c.error, c.reason, c.log])


def rtx_build_errors() -> Iterator[Tuple[str, str, str]]:
    """(case, bundle, text) of the TensorRT-RTX build errors kept as test data."""
    for path in RTX_ERRORS:
        errors = json.loads(path.read_text(encoding="utf-8"))["errors"]
        for key, error in errors.get("builds", errors).items():
            if key == "how":
                continue  # what the file holds, in words
            bundle = key.split(" ")[1]
            yield bundle.split("/", 1)[0], bundle, error


def shared(name: str, case: str, bundle: str) -> bool:
    """Whether a match outside the signature's own cases is a symptom SHARED lists for that case and bundle."""
    return any(n == name and c in ("", case) and re.search(pattern, bundle)
               for (n, c, pattern) in SHARED)


def leaks(errors: Iterator[Tuple[str, str, str]], signatures: List[Signature], owners: Dict[str, Set[str]]) -> Counter:
    """(signature, case, bundle) -> cells where a signature matches a case that declares no signature of its name."""
    found: Counter = Counter()
    for case, bundle, text in errors:
        if get_case(case).external:
            continue
        for s in signatures:
            if case not in owners[s.name] and s.search(text) and not shared(s.name, case, bundle):
                found[(s.name, case, bundle)] += 1
    return found


def test_the_errors_are_there_to_feed():
    errors = list(observed_errors())
    assert len(errors) > 5000, "reports/observed/ holds the committed cells this test feeds the signatures"
    assert len(list(rtx_build_errors())) > 20
    assert {case for case, _, _ in errors} >= {"two_conv_fanout_qdq", "grouped_conv", "silu_qdq", "onnx_node_tests"}


def test_no_signature_matches_outside_its_own_cause():
    found = leaks(iter(list(observed_errors()) + list(rtx_build_errors())), *causes())
    said = [f"{name} matches {n} cell(s) of {bundle}" for (name, _, bundle), n in sorted(found.items())]
    assert not said, "signatures that match another case's error:\n" + "\n".join(said[:40])


def test_a_signature_of_a_generic_engine_message_is_caught():
    loose = Signature("loose", r"Assertion engine != nullptr failed", "error", "tests/cases/test_signature_causes.py",
                      short="no engine built", basis="baseline")
    found = leaks(observed_errors(), [loose], {"loose": {"two_conv_fanout_qdq"}})
    assert {case for _, case, _ in found} >= {"grouped_conv", "instancenorm_int8", "silu_qdq"}


def test_every_shared_symptom_names_a_declared_signature_and_a_case():
    signatures, owners = causes()
    for (name, case, _), why in SHARED.items():
        assert name in owners and why
        assert case == "" or get_case(case).id == case
