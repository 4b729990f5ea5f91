"""The DDP vs ZeRO page, run from the browser against the real worker."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_zero_page_runs_four_strategies_and_shows_the_comparison(page: Page) -> None:
    page.goto("/demos/ddp-vs-zero")
    for name, value in (("width", "16"), ("layers", "1"), ("vocab", "10"), ("seq_len", "8")):
        page.fill(f"input[name={name}]", value)
    page.click("#run-demo")
    expect(page.locator(".prediction .katex").first).to_be_visible(timeout=20_000)
    expect(page.locator("#rows tr[data-step]")).to_have_count(24, timeout=60_000)
    summary = page.locator("#zero-summary")
    expect(summary).to_contain_text("Loss curves coincide with DDP")
    expect(page.locator("#verdict-table tbody tr:not(.why)")).to_have_count(12)
    expect(page.locator("#zero-memory-table .bad")).to_have_count(0)
    # DDP's buckets, for DDP and ZeRO-1, both ranks alike: one row each.
    buckets = page.locator("#zero-memory-table tr[data-kind=buckets]")
    expect(buckets).to_have_count(2)
    expect(buckets.first).to_contain_text("0–1")
    expect(page.locator("#zero-traffic-table .bad")).to_have_count(0)
    expect(
        page.locator("#zero-traffic-table tr[data-strategy=zero1][data-kind=broadcast]")
    ).to_be_visible()
    # The step's peak, term by term: one column per strategy, its fullest rank.
    expect(page.locator("#zero-peak-table thead th[data-strategy]")).to_have_count(4)
    expect(page.locator("#zero-peak-table tr[data-term=traced] td.measured")).to_have_count(4)
    expect(page.locator("#demo-status")).to_have_text("Finished.")
    expect(page.locator("#zero-loss-chart canvas").first).to_be_visible()
    expect(page.locator("#zero-memory-chart canvas").first).to_be_visible()
