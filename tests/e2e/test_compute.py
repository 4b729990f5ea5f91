"""The compute & time page in a real Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from app.calc.compute_query import ComputeQuery, compute_result

pytestmark = pytest.mark.browser


def test_compute_updates_as_you_type(page: Page) -> None:
    page.goto("/calculators/compute")
    days = page.locator("#compute-result #time-days")
    expect(days).to_contain_text("days")
    before = days.inner_text()
    expect(page.locator("#compute-result .katex").first).to_be_visible()
    expect(page.locator("#compute-chart canvas").first).to_be_visible()
    # Twice the GPUs at the same utilization: half the days.
    page.fill("input[name=gpus]", "2048")
    expect(page).to_have_url(re.compile(r"gpus=2048"))
    expect(days).not_to_have_text(before)
    expected = compute_result(ComputeQuery(gpus=2048))["time_days"]
    assert expected == pytest.approx(compute_result(ComputeQuery())["time_days"] / 2)
    expect(days).to_have_text(f"{expected:,.2f} days")
    expect(page.locator("#compute-result .katex").first).to_be_visible()
    expect(page.locator("#compute-chart canvas").first).to_be_visible()
    page.fill("input[name=gpus]", "0")
    expect(page.locator("#compute-result .errors")).to_contain_text("GPUs: must be at least 1")
