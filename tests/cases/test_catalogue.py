"""Every case of the catalogue, parametrized: what holds for all of them, checked on each (as onnx's backend node tests
check every node case the same way). What one case alone says is in its own file, tests/cases/per_case/test_<id>.py.

Per case: registered under its id, cited (its docstring's first line names the thread its first link is), built by its
generator, with well-formed expectations and signatures, and a test file of its own.
Per reproducer: a valid model at the case's opset, built byte for byte the same twice, whose targets are its nodes; its
bundle (written once per test run, tests/conftest.py) verifies, keeps every output quantizer inside its range, and
agrees with ONNX Runtime wherever ONNX Runtime can run it.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Dict, Set, Tuple

import numpy as np
import onnx
import pytest
from packaging.specifiers import SpecifierSet

from cases import CASE_MODULES, CaseModuleError, all_cases, bundle_id, case_modules, get_case
from cases.base import Case, Expectation, Signature, repository_path, upstream
from core.isa import isa
from core.numerics import error_steps, output_step
from generators import write
from generators.bundle import Bundle, verify_bundle
from generators.onnx_util import IR_VERSION_FOR_OPSET

REPO = Path(__file__).resolve().parents[2]
PER_CASE = Path(__file__).resolve().parent / "per_case"
SEEDS = ("000", "001", "002", "003", "004")
CASES = all_cases()
CASE_IDS = [c.id for c in CASES]
VARIANTS = [(c, p) for c in CASES for p in c.variants()]
IDS = [bundle_id(c, p) for c, p in VARIANTS]
THREAD = re.compile(r"([\w.-]+/[\w.-]+)#(\d+)")  # owner/repo#number
FOUND_HERE = "reports/observed/"  # a case this project found: its first line names the observation folder
# Domains ONNX Runtime runs; a node in any other (qdq_matrix plugins, TensorRT's trt and trt.plugins) is a custom op.
ONNXRUNTIME_DOMAINS = ("", "ai.onnx", "com.microsoft")
# Types ONNX Runtime's CPU provider has no Q/DQ kernel for (1.2x: "Failed to find kernel for DequantizeLinear(23)",
# "Could not find an implementation for DequantizeLinear(24)"): a model that holds them may be one it cannot run.
NO_CPU_KERNEL = {onnx.TensorProto.FLOAT4E2M1, onnx.TensorProto.FLOAT8E8M0}


def _custom_ops(model: onnx.ModelProto) -> Set[str]:
    return {f"{n.domain}:{n.op_type}" for n in model.graph.node if n.domain not in ONNXRUNTIME_DOMAINS}


def _opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _bundle(root: Path, case: Case, params: dict) -> Bundle:
    return verify_bundle(root / bundle_id(case, params))


# ---- the catalogue ----

def test_every_seed_is_covered_once():
    seeds = sorted(c.seed for c in CASES)
    assert set(SEEDS) <= set(seeds)  # the five seed issues, then the cases added after them (005 onwards)
    assert len(set(seeds)) == len(seeds) and all(re.fullmatch(r"\d{3}", s) for s in seeds)
    assert len(set(CASE_IDS)) == len(CASES)


def test_seeds_count_up_from_000_without_a_gap_and_external_cases_come_last():
    listed = all_cases(external=True)
    seeds = [c.seed for c in listed if not c.external]
    assert seeds == [f"{n:03d}" for n in range(len(seeds))]
    assert [c.external for c in listed] == sorted(c.external for c in listed)
    assert {f"cases.{c.id}" for c in listed} == set(CASE_MODULES)


def test_a_case_module_is_found_by_its_case_declaration_not_by_a_list(tmp_path):
    """The seed's one source is the Case.seed field: no list names a module, so no position can disagree with it."""
    (tmp_path / "some_case.py").write_text('"""A case."""\n\nCASE = make()\n', encoding="utf-8")
    (tmp_path / "typed_case.py").write_text("CASE: Case = make()\n", encoding="utf-8")
    (tmp_path / "helpers.py").write_text("def f():\n    CASE = 1\n    return CASE\n", encoding="utf-8")
    (tmp_path / "_private.py").write_text("CASE = make()\n", encoding="utf-8")
    assert case_modules(tmp_path) == ("cases.some_case", "cases.typed_case")
    assert "CASE_MODULES" not in (REPO / "docs" / "adding-a-case.md").read_text(encoding="utf-8")


def test_two_cases_of_one_seed_stop_the_catalogue(tmp_path, monkeypatch):
    import sys

    import cases

    (tmp_path / "second_of_seed_000.py").write_text(
        "import dataclasses\nfrom cases.q_output_type import CASE as FIRST\n"
        "CASE = dataclasses.replace(FIRST, id='second_of_seed_000')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cases, "CASE_MODULES", (*CASE_MODULES, "second_of_seed_000"))
    with pytest.raises(CaseModuleError, match="seed 000 is case q_output_type's already"):
        all_cases()
    sys.modules.pop("second_of_seed_000", None)


# ---- each case ----

@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_case_is_registered_under_its_id_and_built_by_its_generator(case):
    module = f"cases.{case.id}"
    assert module in CASE_MODULES and importlib.import_module(module).CASE is case and get_case(case.id) is case
    assert case.builder == f"generators.{case.id}:build"
    name, function = case.builder.split(":")
    assert callable(getattr(importlib.import_module(name), function)), case.builder
    assert list(case.variants())


@pytest.mark.parametrize("module", CASE_MODULES)
def test_module_docstring_cites_its_upstream_threads(module):
    first_line = (importlib.import_module(module).__doc__ or "").strip().splitlines()[0]
    assert "#" in first_line or "github.com" in first_line or FOUND_HERE in first_line, first_line


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_first_link_is_the_source_the_docstring_names_first(case):
    """owner/repo#N: the first link is that issue or pull request; else the address (and any .py file) it names."""
    first_line = importlib.import_module(f"cases.{case.id}").__doc__.strip().splitlines()[0]
    cited = THREAD.search(first_line)
    if FOUND_HERE in first_line:  # found by this project: its observation folder is the source, and no document speaks
        folder = next(w for w in first_line.split() if w.startswith(FOUND_HERE)).rstrip(".,;:)")
        assert (REPO / folder).is_dir() and case.expectations
        assert all(e.basis == "baseline" and e.source.startswith(FOUND_HERE) for e in case.expectations)
        return
    if cited:
        owner_repo, number = cited.groups()
        assert case.links[0].endswith((f"{owner_repo}/issues/{number}", f"{owner_repo}/pull/{number}")), case.links[0]
        return
    address = next(w for w in first_line.split() if w.startswith(("https://", "github.com/"))).rstrip(".,;:)")
    assert case.links[0].startswith(address if address.startswith("https://") else "https://" + address)
    assert all(f in case.links[0] for f in re.findall(r"\w+\.py", first_line)), case.links[0]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_expectations_rest_on_an_upstream_source_or_a_named_baseline(case):
    """documented: an upstream address, never a file of this repository. baseline: this repository's file that holds
    the observation (listed in reports/observed/MANIFEST.json where it lies under reports/observed/, with cells of
    that engine in that version range) and the hardware it ran on."""
    for e in case.expectations:
        SpecifierSet(e.versions)
        if e.basis == "documented":
            assert upstream(e.source) and not repository_path(e.source), e.source
            assert not (REPO / e.source).exists() and "reports/observed" not in e.source, e.source
        else:
            assert e.basis == "baseline" and e.hardware, e
            assert _baseline_problem(e.source, e.engine, e.versions) == "", e


def _baseline_problem(source: str, engine: str = "", versions: str = "") -> str:
    """Why a baseline's file does not stand as one ("" where it does)."""
    from cases.base import repository_path
    from core.results import read_results
    from matrix import observed

    path = REPO / source
    if not repository_path(source) or not path.is_file():
        return f"{source} is no file of this repository"
    if source.startswith("reports/observed/"):
        if source[len("reports/observed/"):] not in observed.load(REPO / "reports" / "observed").entries:
            return f"{source} is not listed in reports/observed/MANIFEST.json"
    if engine and source.endswith(".jsonl"):
        cells = [s.cell for s in read_results(path).cells if s.cell.engine == engine]
        if not any(SpecifierSet(versions).contains(c.engine_version, prereleases=True) for c in cells):
            return f"{source} holds no {engine} cell in {versions or 'any version'}"
    return ""


def _every_signature():
    from cases.common import ENGINE_SIGNATURES, ENVIRONMENT_SIGNATURES

    found = {s.name: s for c in all_cases(external=True) for s in c.signatures}
    for table in (ENGINE_SIGNATURES, ENVIRONMENT_SIGNATURES):
        found.update({s.name: s for signatures in table.values() for s in signatures})
    return sorted(found.values(), key=lambda s: s.name)


@pytest.mark.parametrize("signature", _every_signature(), ids=lambda s: s.name)
def test_signatures_compile_and_rest_on_an_upstream_source_or_a_named_baseline(signature):
    """A documented signature cites an upstream thread; a baseline one, this repository's file, which holds the text."""
    s = signature
    re.compile(s.pattern)
    if s.basis == "documented":
        assert upstream(s.source) and not repository_path(s.source), s.source
    else:
        assert _baseline_problem(s.source) == "", s.source
        assert re.search(s.pattern, (REPO / s.source).read_text(encoding="utf-8")), f"{s.source} lacks {s.pattern}"


def test_a_source_that_does_not_fit_its_basis_is_refused():
    """No expectation says "documented" of this repository's own file, nor "baseline" without its file and hardware."""
    observed = "reports/observed/nvidia-h100/seeds-024-025/trt-8.6.0.jsonl"
    with pytest.raises(ValueError, match="a documented source is an upstream address"):
        Expectation("tensorrt", "==8.6.0", "int8", observed, hardware="NVIDIA H100")
    with pytest.raises(ValueError, match="names the hardware"):
        Expectation("tensorrt", "==8.6.0", "int8", observed, basis="baseline")
    with pytest.raises(ValueError, match="names the file of this repository"):
        Expectation("tensorrt", "==8.6.0", "int8", "https://github.com/NVIDIA/TensorRT/issues/1", basis="baseline",
                    hardware="NVIDIA H100")
    with pytest.raises(ValueError, match="basis 'observed' is not one of"):
        Expectation("tensorrt", "==8.6.0", "int8", observed, basis="observed", hardware="NVIDIA H100")
    with pytest.raises(ValueError, match="a documented source is an upstream address"):
        Signature("x", "x", "error", "tests/data/trt/rtx-2026-forms.json", short="x")
    assert Expectation("tensorrt", "==8.6.0", "int8", observed, basis="baseline", hardware="NVIDIA H100")


def test_the_catalogue_has_baselines_and_says_them_apart():
    """The catalogue's own observations are baselines, each its own word; at least one of each basis exists, so the
    checks above inspect something."""
    bases = [e.basis for c in CASES for e in c.expectations]
    assert bases.count("baseline") >= 8 and bases.count("documented") >= 80


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_case_has_a_test_file_of_its_own(case):
    assert (PER_CASE / f"test_{case.id}.py").is_file()


# ---- each reproducer ----

@pytest.mark.parametrize("case, params", VARIANTS, ids=IDS)
def test_model_passes_the_full_checker_at_its_cases_opset(case, params):
    """The case's opset (a custom-op form may keep the opset its tool writes), and the IR version pinned for it."""
    rep = write.build(case, params)
    assert not (rep.intentionally_invalid or case.intentionally_invalid)
    onnx.checker.check_model(rep.model, full_check=True)
    opset = _opset(rep.model)
    assert opset == case.opset or (_custom_ops(rep.model) and opset < case.opset), opset
    assert rep.model.ir_version == IR_VERSION_FOR_OPSET[opset]


@pytest.mark.parametrize("case, params", VARIANTS, ids=IDS)
def test_two_builds_are_byte_identical(case, params):
    a, b = write.build(case, params), write.build(case, params)
    assert a.model.SerializeToString() == b.model.SerializeToString()
    assert a.inputs.keys() == b.inputs.keys()
    for name in a.inputs:
        assert a.inputs[name].dtype == b.inputs[name].dtype and a.inputs[name].tobytes() == b.inputs[name].tobytes()


@pytest.mark.parametrize("case, params", VARIANTS, ids=IDS)
def test_targets_are_nodes_of_the_model_and_convolutions_carry_kernel_shape(case, params):
    """A target is a node of the graph and one the case declares (a real quantizer's graph names its own nodes);
    TensorRT 8.x's parser needs kernel_shape where a convolution's weights come from a DQ."""
    rep = write.build(case, params)
    names = {n.name for n in rep.model.graph.node}
    assert rep.target_nodes and set(rep.target_nodes) <= names
    if case.target_nodes and rep.model.producer_name != "onnx.quantize":
        assert set(rep.target_nodes) <= set(case.target_nodes)
    for n in rep.model.graph.node:
        if n.op_type in ("Conv", "ConvTranspose", "ConvInteger"):
            assert "kernel_shape" in {a.name for a in n.attribute}, n.name


@pytest.mark.parametrize("case, params", VARIANTS, ids=IDS)
def test_bundle_verifies_and_says_what_computed_its_expected_outputs(catalogue_bundles, case, params):
    """The digests hold; the checker passed; the expected outputs are finite and come from onnx.reference, or from
    the builder's numpy reference where the graph holds a custom op onnx.reference cannot run, or where the builder
    says why onnx.reference does not do (Reproducer.reference_why)."""
    bundle = _bundle(catalogue_bundles, case, params)
    meta = bundle.meta
    assert (meta["bundle"], meta["case"], meta["seed"], meta["params"]) == \
        (bundle_id(case, params), case.id, case.seed, params)
    assert meta["checker"] == "passed" and meta["cache_key"] == write.cache_key(case, params)
    custom = _custom_ops(onnx.load(str(bundle.model_path)))
    why = write.build(case, params).reference_why
    assert meta["reference"] == ("numpy" if custom or why else "onnx.reference"), custom
    assert not (custom and why), f"a custom op needs no reason to bring a numpy reference: {why}"
    for name, want in bundle.expected().items():
        assert np.isfinite(want.astype(np.float64)).all(), name


@pytest.mark.parametrize("case, params", VARIANTS, ids=IDS)
def test_no_output_quantizer_saturates(catalogue_bundles, case, params):
    """An output read through a QuantizeLinear peaks inside its 8-bit range (0 < max|y| / step <= 127): a saturated
    output would hide the very differences the steps count."""
    bundle = _bundle(catalogue_bundles, case, params)
    for name, want in bundle.expected().items():
        if bundle.meta["outputs"][name]["step_kind"] == "quantization":
            assert 0 < np.max(np.abs(want.astype(np.float64))) / output_step(bundle.meta, name) <= 127, name


def _run_onnxruntime(bundle: Bundle) -> Tuple[str, str, str]:
    """(status, what it found, version): ONNX Runtime CPU with optimizations off against the expected outputs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(bundle.model_path), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        actual: Dict[str, np.ndarray] = dict(zip(names, session.run(names, bundle.inputs())))
    except Exception as e:  # a custom op or a type it has no kernel for: ORT says so in a generic error
        return "cannot run", str(e), ort.__version__
    worst = max(error_steps(want, actual[n], output_step(bundle.meta, n)) for n, want in bundle.expected().items())
    status = "agree" if worst <= bundle.meta["tolerance_steps"] else "disagree"
    return status, f"worst {worst:.3g} steps", ort.__version__


@pytest.mark.parametrize("case, params", VARIANTS, ids=IDS)
def test_onnxruntime_agrees_with_the_expected_outputs(catalogue_bundles, case, params):
    """Within the reproducer's tolerance, on this CPU, and the bundle's cross-check record says the same. ONNX Runtime
    may not run a custom op (it must say which) or a type it has no CPU kernel for; it may disagree only without VNNI
    where the case documents ONNX Runtime's u8s8 saturation, and then its documented fix (x64quantprecision) agrees."""
    bundle = _bundle(catalogue_bundles, case, params)
    record = bundle.meta["cross_check"]["onnxruntime"]
    status, found, version = _run_onnxruntime(bundle)
    here = isa()
    assert record["isa"] == here.label and record["status"] == status, (record, found)
    model = onnx.load(str(bundle.model_path))
    custom = _custom_ops(model)
    if custom:
        assert status == "cannot run" and any(op in found for op in custom), found
    elif status == "cannot run":
        assert {t.data_type for t in model.graph.initializer} & NO_CPU_KERNEL, found
    elif status == "disagree":
        context = {"isa": here.level, "x64quantprecision": "0", "graph_optimization_level": "ORT_DISABLE_ALL"}
        documented = case.expectation_for("onnxruntime", version, params, context)
        assert not here.vnni and documented is not None and documented.outcome == "fail", found
        fix = record["x64quantprecision"]
        assert fix["status"] == "agree" and "session.x64quantprecision=1" in record["detail"], record["detail"]
    else:
        assert "x64quantprecision" not in record
