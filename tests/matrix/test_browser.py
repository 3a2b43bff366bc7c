"""The HTML report in a real headless Chromium: upgrade answer first, grid, filters that hide rows, not blank."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from matrix.merge import build
from tests.matrix.conftest import write_reports

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from browser import Browser, find_chromium  # noqa: E402

REQUIRED = os.environ.get("QDQ_REQUIRE_BROWSER") == "1"  # .ci/run sets it once chromium is installed


def png_colours(data: bytes, limit: int = 5000) -> int:
    """How many distinct pixel colours a PNG has (up to limit): a blank page has one."""
    import struct
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    if depth != 8 or colour_type not in (2, 6):
        raise ValueError(f"PNG colour type {colour_type} depth {depth} is not RGB(A) 8-bit")
    channels = 3 if colour_type == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    previous = bytearray(stride)
    seen = set()
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        _unfilter(kind, line, previous, channels)
        for x in range(0, stride, channels * 7):  # every 7th pixel is plenty to tell a blank page
            seen.add(bytes(line[x:x + 3]))
        if len(seen) >= limit:
            break
        previous = line
    return len(seen)


def _unfilter(kind: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF


def _browser_or_skip() -> str:
    binary = find_chromium()
    missing = "no chromium on PATH (apt-get install chromium, or set $CHROMIUM)" if not binary else ""
    try:
        import websocket  # noqa: F401
    except ImportError:
        missing = missing or "websocket-client is not installed (pyproject's test group has it)"
    if missing:
        if REQUIRED:
            pytest.fail(f"QDQ_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    return binary


@contextlib.contextmanager
def opened(binary: str, page: Path, width: int, height: int = 900) -> Iterator[Browser]:
    """A headless browser on one report page, closed however the test ends."""
    browser = Browser(binary, width=width, height=height)
    try:
        browser.open(page)
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from tests.matrix.conftest import cell

    binary = _browser_or_skip()
    cells = []
    for version, broken in (("8.5.3.1", False), ("8.6.0", True), ("10.3.0", False)):
        cells += [
            cell("grouped_conv/g=2", engine_version=version, status="fail" if broken else "pass",
                 last_stage="build" if broken else "compare", fused=None if broken else True,
                 verdict="fails against expectation" if broken else "as documented",
                 error="no implementation" if broken else ""),
            cell("grouped_conv/g=4", engine_version=version),
            cell("q_output_type/out=int8", engine_version=version),
        ]
    cells += [cell("q_output_type/out=int8", engine="onnxruntime", engine_version="1.31.1", hardware="cpu",
                   status="pass", verdict="undocumented", fused=False, expectation={})]
    cells += [cell(b, engine_version="10.13.3.9", hardware="no NVIDIA GPU", status="not_run", verdict="not run",
                   reason="no NVIDIA GPU", fused=None) for b in ("grouped_conv/g=2", "grouped_conv/g=4")]
    out = tmp_path_factory.mktemp("report")
    write_reports(build(cells), out, generated="2026-01-01")
    with opened(binary, out / "matrix.html", 1200) as browser:
        yield browser


def visible_rows(browser) -> int:
    return browser.evaluate("[...document.querySelectorAll('#g tr.r')].filter(r => r.offsetParent !== null).length")


def test_the_page_opens_with_the_upgrade_answer(page):
    first = page.evaluate("document.querySelector('section').id")
    assert first == "upgrade"
    text = page.evaluate("document.getElementById('upgrade').innerText")
    assert "8.5.3.1 \u2192 8.6.0" in text and "1 regression" in text
    assert page.evaluate("document.getElementById('upgrade').getBoundingClientRect().top") < 400


def test_the_any_pair_picker_shows_the_pair_picked(page):
    shown = "[...document.querySelectorAll('.pp')].filter(e => e.offsetParent !== null).map(e => e.id)"
    assert page.evaluate(shown) == ["pp1_0_2"]  # tensorrt (engines in name order), oldest to newest by default
    page.click("label[for=pt1_1]")
    assert page.evaluate(shown) == ["pp1_0_1"]


def test_the_grid_and_its_filters_are_there(page):
    assert page.evaluate("document.querySelectorAll('#g td[tabindex]').length") == 10
    legends = page.evaluate("[...document.querySelectorAll('#filters legend')].map(e => e.textContent)")
    assert legends == ["case", "engine", "verdict", "hardware"]
    collapsed = page.evaluate("document.getElementById('grid').innerText")
    assert "tensorrt@10.13.3.9: never run: its builder wheel is not reachable from here (NVIDIA's index)." in collapsed
    assert "10.13.3.9" not in page.evaluate("document.querySelector('#g thead').innerText")


def test_a_filter_click_changes_the_visible_rows(page):
    assert visible_rows(page) == 3
    page.click("#fvu")  # unexpected verdicts only
    assert visible_rows(page) == 1
    page.click("#fc0")  # and only q_output_type (seed 000): nothing unexpected there
    assert visible_rows(page) == 0
    page.click("#fv_all")
    assert visible_rows(page) == 1
    page.click("#fc_all")
    page.click("#fe0")  # onnxruntime only: its column stays, TensorRT's go
    assert page.evaluate("[...document.querySelectorAll('#g thead th')].filter(t => t.offsetParent).length") == 2
    page.click("#fe_all")
    assert visible_rows(page) == 3


def wait_for(browser, script: str, seconds: float = 10):
    """The script's value once it is truthy (the page loads its details side file on the first click)."""
    deadline = time.monotonic() + seconds
    while not browser.evaluate(script):
        assert time.monotonic() < deadline, f"never true: {script}"
        time.sleep(0.05)
    return browser.evaluate(script)


def test_a_cell_click_shows_its_details(page):
    assert page.evaluate("document.getElementById('dp').hidden")
    assert page.evaluate("typeof window.qdqDetails") == "function"  # nothing loaded before the first look
    page.click("#g td.vu")
    details = wait_for(page, "(t => !t.includes('loading') && t)(document.getElementById('dp').innerText)")
    assert "fails against expectation" in details and "no implementation" in details
    # the cell whole: its hardware quoted, as a shell takes it pasted (three TensorRT 8.6.0 cells of this bundle could
    # be H100, H200 and H200 with tensorrt-only tactics)
    assert ('nox -s bugs -- --cell grouped_conv/g=2 --engine tensorrt --version 8.6.0 --hardware "NVIDIA H200 (sm_90)" '
            "--variant default") in details
    link = page.evaluate("document.querySelector('#dp a').getAttribute('href')")
    assert link.startswith("cells/tensorrt_8.6.0") and link.endswith(".jsonl")  # the whole cell, with its log
    page.evaluate("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
    assert page.evaluate("document.getElementById('dp').hidden")


def test_the_root_causes_open_to_their_cells(page):
    summary = page.evaluate("document.querySelector('#causes summary').innerText")
    # 8.5.3.1 passed it (fused): a regression, its own cause, naming the runs it rests on; stage: last one completed
    assert summary == ("1 cell in TensorRT 8.6.0: regression from 8.5.3.1 (pass (fused) there, fail at run here); "
                       "observed by this suite only: 8.5.3.1 on NVIDIA H200 (sm_90) (local); 8.6.0 on NVIDIA H200 "
                       "(sm_90) (local): fails at run \u2014 no implementation")
    assert "2 unexpected" not in page.evaluate("document.body.innerText")
    assert not page.evaluate("document.querySelector('#causes ul').offsetParent")  # folded
    page.click("#causes summary")
    assert "grouped_conv g=2" in page.evaluate("document.querySelector('#causes ul').innerText")


def test_without_its_side_file_a_cell_says_where_its_details_are(tmp_path):
    from tests.matrix.conftest import cell

    binary = _browser_or_skip()
    write_reports(build([cell(status="fail", last_stage="build", verdict="fails against expectation", fused=None,
                              error="boom")]),
                  tmp_path, generated="2026-01-01")
    (tmp_path / "cells" / "details.js").unlink()  # the page copied alone
    with opened(binary, tmp_path / "matrix.html", 1000, height=700) as browser:
        browser.click("#g td.vu")
        said = wait_for(browser, "(t => !t.includes('loading') && t)(document.getElementById('dp').innerText)")
        assert "details are in cells/details.js beside this page, which is not there" in said
        assert "nox -s bugs -- --cell q_output_type/out=uint8 --engine tensorrt" in said  # it needs no side file


def test_a_screenshot_is_not_blank(page):
    page.evaluate("window.scrollTo(0, 0)")
    png = page.screenshot()
    assert len(png) > 5000
    assert png_colours(png) > 20


@pytest.fixture(scope="module")
def models_page(tmp_path_factory):
    """The committed producer-model observations (TensorRT 8.5.3.1 and 8.6.0 on an H100 and an H200), with their
    bundles rebuilt from seeds so that each carries the lint's findings, as `python -m matrix report` shows them."""
    pytest.importorskip("onnxruntime.quantization")
    from check.__main__ import main as check
    from check.producers import produce
    from matrix.merge import load_results
    from matrix.nodes import write_all

    binary = _browser_or_skip()
    root = tmp_path_factory.mktemp("models")
    produce(root / "models")
    assert check([str(root / "models"), "--prepare-only", "--out", str(root / "bundles")]) == 0
    observed = Path(__file__).resolve().parents[2] / "reports" / "observed"
    result = load_results([observed / "nvidia-h100" / "check", observed / "nvidia-h200" / "check"])
    out = root / "report"
    write_reports(result, out, generated="2026-01-01",
                  node_reports=write_all(result.cells, out / "nodes", [root / "bundles"]))
    with opened(binary, out / "matrix.html", 1400) as browser:
        browser.reports = out
        yield browser


def row_texts(browser, model: str) -> list:
    return browser.evaluate(f"[...[...document.querySelectorAll('#m tbody tr')].find(r => r.cells[0].innerText == "
                            f"{model!r}).cells].slice(1).map(c => c.innerText)")


def on_models_page(browser) -> None:
    """Every model by every column: models.html, beside matrix.html."""
    if not browser.evaluate("location.pathname.endsWith('/models.html')"):
        browser.open(browser.reports / "models.html")


@pytest.mark.slow
def test_your_models_is_one_table_after_the_upgrade_answer(models_page):
    page = models_page
    assert page.evaluate("[...document.querySelectorAll('section')].map(s => s.id).slice(0, 4)") == \
        ["upgrade", "models", "causes", "grid"]
    assert page.evaluate("document.querySelectorAll('#ms tbody tr').length") == 13  # a line per model
    assert page.evaluate("[...document.querySelectorAll('#ms tbody tr')].find(r => r.cells[0].innerText == "
                         "'ort_mobilenet_s8_per_channel.onnx').innerText") == \
        "ort_mobilenet_s8_per_channel.onnx\tparse fails: INT32 bias DQ (b_dw_DequantizeLinear)\tTensorRT 8.5.3.1 and " \
        "TensorRT 8.6.0\t0 of 4"
    on_models_page(page)
    assert page.evaluate("document.querySelectorAll('#m tbody tr').length") == 13
    heads = page.evaluate("[...document.querySelectorAll('#m thead th')].map(t => t.innerText.replace(/\\n/g, ' '))")
    assert heads == ["model", "TensorRT 8.5.3.1 NVIDIA H100 80GB HBM3 (sm_90)", "TensorRT 8.5.3.1 NVIDIA H200 (sm_90)",
                     "TensorRT 8.6.0 NVIDIA H100 80GB HBM3 (sm_90)", "TensorRT 8.6.0 NVIDIA H200 (sm_90)"]
    assert page.evaluate("document.querySelectorAll('#models ul, #models h3').length") == 0  # no bullets left
    box = page.evaluate("(() => { const r = document.getElementById('m').getBoundingClientRect();"
                        " return [r.width, r.height]; })()")
    assert box[0] <= 1400 and box[1] < 900  # 13 models by 4 columns fit one screen


@pytest.mark.slow
def test_each_model_cell_says_int8_or_the_failing_node_and_why(models_page):
    on_models_page(models_page)
    assert row_texts(models_page, "ort_mobilenet_s8_per_channel.onnx") == \
        ["parse fails: INT32 bias DQ (b_dw_DequantizeLinear)"] * 4
    # its two convolutions: the Relu and Add around them are quantized nodes, not compute nodes
    assert row_texts(models_page, "ort_resnet_s8_per_channel_float_bias.onnx") == ["2/2 INT8"] * 4
    # 8.6.0's build: no kernel for a Myelin ForeignNode, which is no catalogue case's cause (no signature): its reason
    assert row_texts(models_page, "ort_transformer_s8_per_channel_float_bias.onnx") == \
        ["parse fails [1]"] * 2 + ["build fails [2]"] * 2
    models_page.click("#m a.note")
    assert models_page.evaluate("location.hash") == "#mn1"
    assert "Plugin not found" in models_page.evaluate("document.querySelector('#mn1:target').innerText")
    assert "ForeignNode" in models_page.evaluate("document.querySelector('#mn2').innerText")


@pytest.mark.slow
def test_a_model_cell_opens_its_per_node_report(models_page):  # last: it leaves the page
    page = models_page
    on_models_page(page)
    page.evaluate("window.scrollTo(0, 0)")
    png = page.screenshot()
    assert png_colours(png) > 20
    page.click("#m tbody tr:nth-child(3) td:nth-child(4) a")  # mobilenet, float bias; TensorRT 8.6.0 on the H100
    deadline = time.monotonic() + 10
    while not _arrived(page, "location.pathname.includes('/nodes/') && document.readyState == 'complete'"):
        assert time.monotonic() < deadline, "the click did not open the per-node report"
        time.sleep(0.05)
    assert page.evaluate("document.title") == "Per-node INT8 report: ort_mobilenet_s8_per_channel_float_bias.onnx"
    assert "tensorrt@8.6.0" in page.evaluate("document.body.innerText")


def _arrived(page, condition: str) -> bool:
    """The condition, asked of the page; False while a navigation replaces the page under the question (the browser
    then answers 'Inspected target navigated or closed', which is no failure of the report)."""
    try:
        return bool(page.evaluate(condition))
    except RuntimeError as e:
        if "navigated or closed" in str(e):
            return False
        raise


@pytest.fixture(scope="module")
def todays_grid(tmp_path_factory):
    """A fresh clone's matrix, today's shape (matrix.render's budget test): 60 columns, 300 reproducers."""
    from tests.matrix.conftest import cell
    from tests.matrix.test_render import OBSERVED, todays_shape

    if not OBSERVED.is_dir():
        pytest.skip("reports/observed is not in this checkout")
    binary = _browser_or_skip()
    out = tmp_path_factory.mktemp("today")
    write_reports(todays_shape(cell), out, generated="2026-01-01")
    with opened(binary, out / "matrix.html", 1400) as browser:
        yield browser


@pytest.mark.slow
def test_the_grid_fits_a_1400_px_window_with_row_labels_told_apart(todays_grid):
    """Issue 40: the grid was 4,899 px wide and its row labels cut (`cpg=2+weights=per_channel+activati…`)."""
    page = todays_grid
    width, shown, columns = page.evaluate("(() => { const g = document.getElementById('g'); return "
                                          "[g.getBoundingClientRect().right, g.parentElement.clientWidth, "
                                          "g.tHead.rows[0].cells.length - 1]; })()")
    assert columns >= 50 and width <= 1400 and page.evaluate("document.querySelector('#grid .scroll').scrollWidth") \
        <= shown  # every column in view, nothing to scroll sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400  # nor the page
    cut = page.evaluate("[...document.querySelectorAll('#g tr.r th')].filter(th => th.scrollWidth > th.clientWidth "
                        "|| th.scrollHeight > th.clientHeight).map(th => th.innerText)")
    assert cut == []
    labels = page.evaluate("[...document.querySelectorAll('#g tbody')].map(b => [...b.querySelectorAll('tr.r th')]"
                           ".map(th => [th.innerText.replace(/\\s+/g, ' '), th.title]))")
    assert sum(map(len, labels)) >= 250
    assert all(len({label for label, _ in group}) == len(group) for group in labels)  # told apart within a case
    assert all(title for group in labels for _, title in group)  # the whole slug on hover
    # axis=value pairs of the slug (those that vary within the case), spaced so that they wrap; an axis the slug leaves
    # out is one added to the case later, shown at the value its older reproducers have (cases.base.Case.defaults)
    assert all({p for p in label.split(" · ") if p.split("=")[0] in {t.split("=")[0] for t in title.split("+")}}
               <= set(title.split("+")) for group in labels for label, title in group if "=" in title)
