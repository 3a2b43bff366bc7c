"""Root causes: a thousand unexpected cells read as the few things that went wrong, each hardware named once."""

from __future__ import annotations

from engines.reasons import symptom
from matrix.causes import root_causes, say_settings, say_versions
from matrix.merge import build
from matrix.upgrade import upgrade_view

AOT = "no GPU: ahead-of-time build"
RTX = ("1.4.0.76", "1.5.0.114", "1.6.1.120", "1.7.1.116")


def myelin(line: int) -> str:
    return (f"build_serialized_network returned None: Error Code 1: Myelin ([myelin_graph.h:{line}: attach] "
            f"MyelinCheckException: cudnn_impl.cpp:{line - 200}: CHECK(dtype == myelinTypeFloat) failed at 0x7f{line}")


def rtx_cell(make_cell, bundle: str, version: str, target: str = "", **fields):
    base = dict(engine="tensorrt-rtx", engine_version=version, hardware=AOT,
                variant={"target": target} if target else {}, status="fail", last_stage="load", verdict="new failure",
                fused=None, expectation={}, explanation="fail, and no source documents a failure here")
    return make_cell(bundle, **dict(base, **fields))


def test_source_lines_addresses_folders_and_numbers_do_not_split_a_cause():
    assert symptom(myelin(1250)) == symptom(myelin(1259))
    assert symptom("Load model from .bundles/grouped_conv/g=2/model.onnx failed") == \
        symptom("Load model from /home/me/.bundles/fp8_qdq/op=conv/model.onnx failed") == \
        "Load model from …/model.onnx failed"
    assert symptom("Cannot compile for target(s) sm75") == symptom("Cannot compile for target(s) sm86")
    assert symptom("unsupported input type of UINT8") != symptom("unsupported input type of INT4")  # names stay


def test_one_engine_bug_over_versions_and_targets_is_one_root_cause(make_cell):
    cells = [rtx_cell(make_cell, f"grouped_conv/g={g}", v, t, error=myelin(1250 + 9 * n))
             for n, v in enumerate(RTX[:3]) for t in ("", "SM75", "SM86") for g in (2, 4, 8)]
    cells += [rtx_cell(make_cell, f"grouped_conv/g={g}", RTX[3], status="built", last_stage="build",
                       verdict="undocumented", fused=True) for g in (2, 4, 8)]  # 1.7 builds: no cause
    cells += [make_cell("grouped_conv/g=2", engine_version="8.6.0", status="fail", last_stage="build", fused=None,
                        verdict="fails against expectation", error="no implementation")]
    [rtx, trt] = root_causes(cells)
    assert (rtx["n"], rtx["bundles"], rtx["title"], rtx["versions"], rtx["did"]) == \
        (27, 3, "TensorRT for RTX", "1.4.0.76 to 1.6.1.120", "fails at build")
    assert rtx["where"] == f"{AOT} · its default, target=SM75 and SM86"
    assert rtx["example"].startswith("build_serialized_network returned None")
    assert [(g["case"], g["slugs"], g["cells"]) for g in rtx["groups"]] == [("grouped_conv", ["g=2", "g=4", "g=8"], 27)]
    assert (trt["n"], trt["title"], trt["versions"], trt["verdicts"]) == \
        (1, "TensorRT", "8.6.0", [{"verdict": "fails against expectation", "n": 1}])


def test_a_signature_and_the_parsers_fields_name_a_cause_whatever_the_node(make_cell):
    parse = [{"desc": "false", "func": "checkDynamicQuantizeLinear", "node_name": name,
              "node_operator": "DynamicQuantizeLinear"} for name in ("x_q", "node_of_x_q")]
    cells = [rtx_cell(make_cell, "dynamic_quantize/v=a", RTX[0], error="ONNX parse failed: false [node x_q]",
                      parser_errors=[parse[0]]),
             rtx_cell(make_cell, "dynamic_quantize/v=b", RTX[0], error="ONNX parse failed: false [node node_of_x_q]",
                      parser_errors=[parse[1]]),
             rtx_cell(make_cell, "grouped_conv/g=2", RTX[0], signature="rtx_conv_dtype_check", error=myelin(1)),
             rtx_cell(make_cell, "grouped_conv/g=4", RTX[1], signature="rtx_conv_dtype_check", error=myelin(2))]
    causes = root_causes(cells)
    assert [(c["n"], c["signature"], c["symptom"]) for c in causes] == [
        (2, "", "DynamicQuantizeLinear: false [checkDynamicQuantizeLinear]"),
        (2, "rtx_conv_dtype_check", "sig: rtx_conv_dtype_check")]


def test_a_cell_that_works_against_its_documentation_is_caused_by_that_documentation(make_cell):
    documented = {"outcome": "fail", "versions": "<1.7", "signature": "rtx_conv_dtype_check",
                  "source": "https://docs.nvidia.com/x", "basis": "documented"}
    cells = [rtx_cell(make_cell, f"grouped_conv/g={g}", RTX[3], status="built", last_stage="build", verdict="fixed",
                      fused=True, expectation=documented) for g in (2, 4)]
    [cause] = root_causes(cells)
    assert (cause["n"], cause["did"], cause["example"]) == (2, "works", "")
    assert (cause["expected_by"], cause["expected"]) == \
        ("documented", "fail <1.7 (signature rtx_conv_dtype_check): https://docs.nvidia.com/x")


def test_a_cell_that_works_against_an_earlier_observation_is_a_cause_apart_named_as_observed(make_cell):
    """A baseline (this suite's own earlier run) is never said as documentation, and its fixes are not counted with
    the fixes of documented failures."""
    documented = {"outcome": "fail", "versions": "<1.7", "source": "https://docs.nvidia.com/x", "basis": "documented"}
    baseline = {"outcome": "fail", "versions": "<1.7", "source": "reports/observed/x.jsonl", "basis": "baseline",
                "hardware": "NVIDIA H100"}
    cells = [rtx_cell(make_cell, f"grouped_conv/g={g}", RTX[3], status="built", last_stage="build", verdict="fixed",
                      fused=True, expectation=e) for g, e in ((2, documented), (4, baseline), (8, baseline))]
    observed, upstream = root_causes(cells)
    assert (observed["n"], observed["expected_by"]) == (2, "observed before")
    assert observed["expected"] == "fail <1.7: reports/observed/x.jsonl, on NVIDIA H100"
    assert (upstream["n"], upstream["expected_by"]) == (1, "documented")


def test_versions_and_settings_are_said_once():
    every = ["8.5.1.7", "8.5.2.2", "8.5.3.1", "8.6.0"]
    assert say_versions(["8.6.0", "8.5.1.7", "8.5.2.2", "8.5.3.1"], every) == "8.5.1.7 to 8.6.0"
    assert say_versions(["8.5.1.7", "8.6.0"], every) == "8.5.1.7 and 8.6.0"
    only = (("tactics", "tensorrt-only"),)
    assert say_settings([("H200", ()), ("H200", only), ("H100", ()), ("H200", ())]) == \
        "H200 · its default and tactics=tensorrt-only; H100"
    assert say_settings([(AOT, (("target", f"SM{t}"),)) for t in (120, 75, 86)] + [(AOT, (("plugin_link", "x"),))]) == \
        f"{AOT} · plugin_link=x, target=SM75, SM86 and SM120"


def test_the_upgrade_answer_names_each_hardware_once(make_cell):
    cells = [rtx_cell(make_cell, "grouped_conv/g=2", v, t, status="built" if v == RTX[3] else "fail",
                      last_stage="build" if v == RTX[3] else "load", fused=True if v == RTX[3] else None,
                      error="" if v == RTX[3] else myelin(5))
             for v in RTX[2:] for t in ("SM75", "SM80", "SM86", "SM89", "SM120")]
    [engine] = upgrade_view(build(cells).cells)
    [pair] = engine["pairs"]
    assert pair["headline"] == "1 fix (1 reproducer compared on 5 hardware settings)"  # one reproducer, five targets
    assert pair["under"][0] == f"Compared on {AOT} · target=SM75, SM80, SM86, SM89 and SM120."
    assert all(n.count(AOT) <= 1 for n in pair["notes"] + pair["under"])
    assert [g["where"] for g in pair["groups"]] == [f"on {AOT} · target=SM75, SM80, SM86, SM89 and SM120"]
    assert pair["file"].startswith("diff/tensorrt-rtx_1.6.1.120_to_1.7.1.116_") and pair["file"].endswith(".md")
