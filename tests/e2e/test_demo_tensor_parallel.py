"""The tensor-parallel demo run from its page in a real Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_tensor_parallel_demo_ends_with_every_split_equal_to_the_prediction(page: Page) -> None:
    page.goto("/demos/tensor-parallel")
    page.fill("input[name=hidden]", "32")
    page.fill("input[name=batch]", "2")
    page.fill("input[name=seq_len]", "4")
    page.fill("input[name=heads]", "2")
    page.fill("input[name=iterations]", "1")
    page.click("#run-demo")
    expect(page.locator(".prediction .katex").first).to_be_visible(timeout=20_000)
    expect(page.locator("#rows tr[data-rank]")).to_have_count(6, timeout=30_000)  # 3 splits x 2
    summary = page.locator("#tp-summary-table")
    expect(summary.locator(".verdict .ok")).to_have_count(6)
    expect(summary).to_contain_text("equal the one-rank result")
    expect(page.locator("#demo-status")).to_have_text("Finished.")
    verdict = page.locator("#verdict-table")
    expect(verdict.locator("tbody tr:not(.why)")).to_have_count(9)  # 3 splits x 3 quantities
    expect(verdict.locator("tr[data-status=equal]:not(.why)")).to_have_count(6)
    expect(verdict.locator("[data-status=unexpected]")).to_have_count(0)
    expect(page.locator("#demo-chart canvas").first).to_be_visible()
