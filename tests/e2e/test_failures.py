"""The failures-and-checkpoints page in a real Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_failures_page_updates_as_you_type(page: Page) -> None:
    page.goto("/calculators/failures?units=1&rate=24&checkpoint_minutes=5&restart_minutes=10")
    expect(page.locator("#young")).to_have_text("120 min")
    expect(page.locator("#daly")).to_have_text("117 min")
    expect(page.locator("#failures-result .katex").first).to_be_visible()
    expect(page.locator("#failures-chart canvas").first).to_be_visible()
    page.fill("input[name=rate]", "6")
    expect(page.locator("#young")).to_have_text("60 min")
    expect(page.locator("#daly")).to_have_text("56.7 min")  # Daly 2006, Figure 4: 57 min
    expect(page).to_have_url(re.compile(r"rate=6"))
    expect(page.locator("#failures-result .katex").first).to_be_visible()
    expect(page.locator("#failures-chart canvas").first).to_be_visible()
    page.fill("input[name=units]", "0")
    expect(page.locator("#failures-result .errors")).to_contain_text("must be at least 1")
