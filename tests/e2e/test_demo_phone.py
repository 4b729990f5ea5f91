"""A demo run on a phone (issue #29): the run's panel lands under the form, below the fold, so
Run scrolls its status into sight and says it to a screen reader; the verdict's ✓/Δ column
fits the screen with every figure beside it. At 1280 px the panel sits beside the form and
nothing scrolls (tests/e2e/test_demo_verdict.py)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
FINISHED = {"en": "Finished.", "zh": "已完成。"}

# Each verdict row's figures and ✓/Δ: where they are on the screen, and whether a box they sit
# in cuts them off (a table that scrolls inside its box hides what lies past its edge).
FIGURES = """() => [...document.querySelectorAll(
    '#verdict-table tbody tr:not(.why) > :is(.measured, .predicted, .judged)')].map(cell => {
  const box = cell.getBoundingClientRect();
  const wrap = cell.closest('.table-wrap').getBoundingClientRect();
  return {text: cell.innerText.trim(), left: box.left, right: box.right,
          clipped: box.left < wrap.left - 0.5 || box.right > wrap.right + 0.5};
})"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_run_on_a_phone_shows_its_status_and_a_verdict_that_fits(page: Page, lang: str) -> None:
    page.set_viewport_size(PHONE)
    page.goto(f"/demos/mixed-precision?lang={lang}")
    page.fill("input[name=gradients]", "1024")  # the fastest run that still shows a Δ
    page.click("#run-demo")
    # Under the form the panel starts below the fold; Run brings it up to the window's top.
    expect(page.locator("#demo-status")).to_be_in_viewport(ratio=1, timeout=60_000)
    expect(page.locator("#demo-verdict-title")).to_be_in_viewport(ratio=1)

    expect(page.locator("#demo-status")).to_have_text(FINISHED[lang], timeout=30_000)
    expect(page.locator("#verdict-table tbody tr:not(.why)")).to_have_count(13)
    expect(page.locator("#verdict-table .judged .delta")).to_have_count(1)
    figures = page.evaluate(FIGURES)
    assert len(figures) == 13 * 3 and all(f["text"] for f in figures)
    outside = [f for f in figures if f["left"] < 0 or f["right"] > PHONE["width"] or f["clipped"]]
    assert not outside, outside
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    # A screen reader heard the run end, with the verdict's tally.
    announce = page.locator("#demo-announce")
    expect(announce).to_have_attribute("role", "status")
    tally = " ".join(page.locator(".verdict-tally").inner_text().split())
    assert "12" in tally and "13" in tally
    expect(announce).to_have_text(f"{FINISHED[lang]} {tally}")
