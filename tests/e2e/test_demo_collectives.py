"""The collectives demo run from its page in a real Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_collectives_demo_charts_busbw_and_ends_with_the_comparison(page: Page) -> None:
    page.goto("/demos/collectives")
    page.fill("input[name=max_size_mib]", "1")
    page.fill("input[name=sizes]", "2")
    page.fill("input[name=iterations]", "2")
    page.click("#run-demo")
    expect(page.locator(".prediction .katex").first).to_be_visible(timeout=20_000)
    expect(page.locator("#rows tr[data-kind]")).to_have_count(10, timeout=30_000)  # 2 sizes x 5
    summary = page.locator("#collectives-summary-table")
    expect(summary.locator(".logical-verdict .ok")).to_have_count(10)
    expect(summary.locator("tr[data-kind=reduce_scatter]").first).to_contain_text(
        "a whole all-reduce"
    )
    expect(page.locator("#rs-ag-table tr[data-size='1048576'] .rs-ag-logical")).to_have_text(
        "1,048,576"
    )
    expect(page.locator("#demo-status")).to_have_text("Finished.")
    # The verdict leads: logical bytes equal the ring's; gloo's wire bytes differ for its reasons.
    verdict = page.locator("#verdict-table")
    # the results, then 5 kinds x (logical, the backend's own log, wire)
    expect(verdict.locator("tbody tr:not(.why)")).to_have_count(16)
    expect(verdict.locator("tr[data-status=equal]:not(.why)")).to_have_count(11)
    expect(verdict.locator("[data-status=unexpected]")).to_have_count(0)
    expect(verdict.locator("tr.why")).to_contain_text(["headers", "whole all-reduce", "binomial"])
    expect(page.locator("#demo-chart canvas").first).to_be_visible()
