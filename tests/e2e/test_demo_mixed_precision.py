"""The mixed-precision page, run from the browser against the real worker."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_mixed_precision_runs_from_the_page_and_ends_with_the_comparison(page: Page) -> None:
    page.goto("/demos/mixed-precision")
    page.fill("input[name=gradients]", "1024")
    page.click("#run-demo")
    expect(page.locator(".prediction .katex").first).to_be_visible(
        timeout=60_000
    )  # the first run waits for the worker
    expect(page.locator("#rows tr[data-rank]")).to_have_count(8, timeout=30_000)  # 4 cases x 2
    expect(page.locator("#summary-table tbody tr")).to_have_count(4, timeout=30_000)
    expect(page.locator("#summary-table .bad")).to_have_count(0)
    expect(page.locator("#range-table tbody tr").first).to_contain_text("65504.0")
    expect(page.locator("#range-table .bad")).to_have_count(0)
    expect(page.locator("#demo-status")).to_have_text("Finished.")
    verdict = page.locator("#verdict-table")
    expect(verdict.locator("tbody tr:not(.why)")).to_have_count(13)  # with the all-reduce's sums
    expect(verdict.locator("[data-status=unexpected]")).to_have_count(0)
    expect(page.locator("#demo-chart canvas").first).to_be_visible()
