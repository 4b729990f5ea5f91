"""The pipeline-schedules demo run from its page in a real Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_pipeline_demo_draws_measured_and_simulated_gantts(page: Page) -> None:
    page.goto("/demos/pipeline-schedules")
    page.select_option("select[name=schedule]", "all")
    page.fill("input[name=microbatches]", "4")
    page.fill("input[name=forward_ms]", "4")
    page.fill("input[name=backward_ms]", "8")
    page.click("#run-demo")
    expect(page.locator("#pp-predicted .katex").first).to_be_visible(timeout=20_000)
    expect(page.locator("#demo-status")).to_have_text("Finished.", timeout=60_000)
    # p = 2, m = 4: the interleaved schedule runs too (m is a multiple of p). (At m = p = 2
    # torch's interleaved order differs from the simulator's on the last rank: the verdict shows
    # its peak in flight as unexpected.)
    for schedule in ("gpipe", "1f1b", "interleaved", "zb-h1"):
        expect(page.locator(f"#gantt-measured-{schedule} svg path.block").first).to_be_visible()
        expect(page.locator(f"#gantt-simulated-{schedule} svg path.block").first).to_be_visible()
    summary = page.locator("#pp-summary-table tbody tr")
    expect(summary).to_have_count(4)
    expect(page.locator("#pp-summary-table")).to_contain_text("GPipe")
    expect(page.locator("#pp-summary-table .bad")).to_have_count(0)
    # The verdict leads: step and bubble beside the simulation, messages and gradients exact.
    verdict = page.locator("#verdict-table")
    expect(verdict.locator("tbody tr:not(.why)")).to_have_count(14)  # 4 x 3, in flight, grads
    expect(verdict.locator("[data-status=unexpected]")).to_have_count(0)
    # The timelines are charts, above the raw rows, which start closed.
    charts, raw = (
        page.locator("#pp-charts").bounding_box(),
        page.locator("#raw-rows").bounding_box(),
    )
    assert charts and raw and charts["y"] < raw["y"]
    expect(page.locator("details#raw-rows #rows tr[data-rank]").first).to_be_hidden()
