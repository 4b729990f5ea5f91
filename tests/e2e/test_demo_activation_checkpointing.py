"""The activation-checkpointing page, run from the browser against the real worker."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_checkpointing_runs_from_the_page_and_ends_with_the_comparison(page: Page) -> None:
    page.goto("/demos/activation-checkpointing")
    page.fill("input[name=layers]", "4")
    page.fill("input[name=width]", "32")
    page.fill("input[name=tokens]", "64")
    page.fill("input[name=segment_layers]", "2")
    page.fill("input[name=steps]", "1")
    page.click("#run-demo")
    expect(page.locator(".prediction .katex").first).to_be_visible(
        timeout=60_000
    )  # the first run waits for the worker
    expect(page.locator("#rows tr[data-rank]")).to_have_count(6, timeout=30_000)  # 3 modes x 2
    summary = page.locator("#summary-table tbody tr")
    expect(summary).to_have_count(3, timeout=30_000)
    expect(summary.first).to_contain_text("294,912")  # 4 * 64 * (32 + 2 * 128) * 4
    expect(summary.first.locator(".peak")).to_have_text("335,880")  # 294,912 + 64 * 160 * 4 + 8
    expect(page.locator("#summary-table .ok", has_text="= prediction")).to_have_count(6)
    expect(page.locator("#demo-status")).to_have_text("Finished.")
    verdict = page.locator("#verdict-table")
    expect(verdict.locator("tbody tr:not(.why)")).to_have_count(9)  # 3 x (saved, peak), 2 times
    expect(verdict.locator("tr[data-status=equal]:not(.why)")).to_have_count(7)
    expect(verdict.locator("[data-status=unexpected]")).to_have_count(0)
    expect(page.locator("#demo-chart canvas").first).to_be_visible()
