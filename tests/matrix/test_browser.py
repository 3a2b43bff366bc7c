"""The HTML report in a real headless Chromium: upgrade answer first, grid, filters that hide rows, not blank."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from matrix.merge import build
from matrix.render import write_reports

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from browser import Browser, find_chromium, png_colours  # noqa: E402

REQUIRED = os.environ.get("QDQ_REQUIRE_BROWSER") == "1"  # .ci/run sets it once chromium is installed


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


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from tests.matrix.conftest import cell

    binary = _browser_or_skip()
    cells = []
    for version, broken in (("8.5.3.1", False), ("8.6.0", True), ("10.3.0", False)):
        cells += [
            cell("grouped_conv/g=2", engine_version=version, status="fail" if broken else "pass",
                 stage="build" if broken else "compare", fused=None if broken else True,
                 verdict="regressed" if broken else "as documented", error="no implementation" if broken else ""),
            cell("grouped_conv/g=4", engine_version=version),
            cell("q_output_type/out=int8", engine_version=version),
        ]
    cells += [cell("q_output_type/out=int8", engine="onnxruntime", engine_version="1.31.1", hardware="cpu",
                   status="pass", verdict="undocumented", fused=False, expectation={})]
    cells += [cell(b, engine_version="10.13.3.9", hardware="no NVIDIA GPU", status="not_run", verdict="not run",
                   reason="no NVIDIA GPU", fused=None) for b in ("grouped_conv/g=2", "grouped_conv/g=4")]
    out = tmp_path_factory.mktemp("report")
    write_reports(build(cells), out, generated="2026-01-01")
    browser = Browser(binary, width=1200, height=900)
    try:
        browser.open(out / "matrix.html")
        yield browser
    finally:
        browser.close()


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
    assert "all 2 cells not run: no NVIDIA GPU" in collapsed
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


def test_a_cell_click_shows_its_details(page):
    assert page.evaluate("document.getElementById('dp').hidden")
    page.click("#g td.vu")
    details = page.evaluate("document.getElementById('dp').innerText")
    assert "regressed" in details and "no implementation" in details
    assert "python -m matrix bugs --cell grouped_conv/g=2" in details
    page.evaluate("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
    assert page.evaluate("document.getElementById('dp').hidden")


def test_a_screenshot_is_not_blank(page):
    page.evaluate("window.scrollTo(0, 0)")
    png = page.screenshot()
    assert len(png) > 5000
    assert png_colours(png) > 20
