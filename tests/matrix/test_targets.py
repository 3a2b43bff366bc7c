"""The architecture view: per engine version, which reproducers build for some targets and not for others."""

from __future__ import annotations

from matrix.merge import build
from matrix.targets import target_view
from tests.matrix.conftest import write_reports

RTX = dict(engine="tensorrt-rtx", engine_version="1.7.1.116", hardware="no GPU: ahead-of-time build")
FP8 = {"node_of_y": {"precision": "fp8", "evidence": "layer 'node_of_y_myl0_1' gemm (via metadata)"}}


def _fp8_gemm(make_cell, bundle, target, ok):
    key, value = bundle.split("/", 1)[1].split("=")
    common = dict(variant={"target": target}, params={key: value}, max_error_steps=None, **RTX)
    if ok:
        return make_cell(bundle, status="built", last_stage="build", fused=True, precision=FP8, **common)
    return make_cell(bundle, status="fail", last_stage="load", fused=None, precision={}, verdict="as documented",
                     error="Cannot compile for target(s) sm75", **common)


def _cells(make_cell):
    cells = []
    for bundle in ("fp8_qdq/op=matmul", "fp8_qdq/op=gemm"):
        cells += [_fp8_gemm(make_cell, bundle, t, t in ("SM89", "SM120")) for t in ("SM75", "SM86", "SM89", "SM120")]
    cells += [_fp8_gemm(make_cell, "q_output_type/out=int8", t, True) for t in ("SM75", "SM86", "SM89", "SM120")]
    return cells


def test_an_fp8_gemm_refused_below_sm89_is_said_in_one_sentence_per_group(make_cell):
    [view] = target_view(_cells(make_cell))
    assert (view["engine"], view["version"], view["targets"]) == ("tensorrt-rtx", "1.7.1.116",
                                                                  ["SM75", "SM86", "SM89", "SM120"])
    assert view["rows"] == [{"case": "fp8_qdq", "n": 2, "params": "op=gemm|matmul",
                             "text": "fails at build for SM75 and SM86; built, FP8 for SM89 and SM120"}]
    assert (view["same"], view["bundles"]) == (1, 3)


def test_default_target_cells_and_a_single_target_make_no_architecture_section(make_cell):
    one = [_fp8_gemm(make_cell, "fp8_qdq/op=matmul", "SM89", True),
           make_cell("fp8_qdq/op=matmul", **RTX)]
    assert target_view(one) == []


def test_the_reports_state_the_architecture_differences(make_cell, tmp_path):
    result = build(_cells(make_cell))
    write_reports(result, tmp_path, generated="2026-01-01")
    md, html = (tmp_path / "matrix.md").read_text(), (tmp_path / "matrix.html").read_text()
    assert "## Across GPU architectures" in md and md.index("## Across GPU architectures") < md.index("## Grid")
    assert "| fp8_qdq | op=gemm\\|matmul | 2 | fails at build for SM75 and SM86; built, FP8 for SM89 and SM120 |" in md
    assert 'id="targets"' in html and "built, FP8 for SM89 and SM120" in html


def test_the_documented_architectures_say_4832s_orin_and_thor_beside_the_rtx_targets(make_cell, tmp_path):
    """NVIDIA/TensorRT#4832's architecture axis (one version, SM87 fails, SM110 builds) is said as the catalogue
    documents it, whatever ran here; so is each TensorRT-RTX support-matrix row, never the default target set."""
    from cases import all_cases
    from matrix.targets import documented_view

    rows = {(r["case"], r["engine"]): r for r in documented_view(all_cases())}
    orin = rows["fp16_scale_qdq", "TensorRT"]
    assert orin["versions"] == "==10.16.*" and orin["params"] == "graph=dq_cast_after_reshape_slice, weights=none"
    assert orin["text"] == ("fails at build for SM87 (Jetson Orin, L4T R39.2); passes for SM110 (Jetson Thor, "
                            "L4T R39.2)")
    assert orin["sources"] == ["https://github.com/NVIDIA/TensorRT/issues/4832"]
    assert rows["fp8_qdq", "TensorRT for RTX"]["text"] == \
        "fails at build for SM75, SM80 and SM86; passes for SM89, SM120 and SM121"
    assert ("fp8_conv_stack", "TensorRT for RTX") not in rows  # its crash is documented for the default set only
    write_reports(build(_cells(make_cell)), tmp_path, generated="2026-01-01")
    md, html = (tmp_path / "matrix.md").read_text(), (tmp_path / "matrix.html").read_text()
    for page in (md, html):
        assert page.index("Documented by architecture") < page.index("fails at build for SM87 (Jetson Orin")
        assert "https://github.com/NVIDIA/TensorRT/issues/4832" in page
