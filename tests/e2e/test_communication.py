"""The communication calculator in a real Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_communication_follows_the_inputs(page: Page) -> None:
    page.goto("/calculators/communication")
    total = page.locator("#comm-total")
    first = total.inner_text()
    expect(page.locator("#communication-result .katex").first).to_be_visible()
    expect(page.locator("#communication-result .katex-error")).to_have_count(0)
    expect(page.locator("#comm-chart [data-bar='tp'] rect")).to_be_visible()
    page.fill("input[name=tp]", "4")
    expect(total).not_to_have_text(first)
    expect(page).to_have_url(re.compile(r"tp=4"))
    # The swapped-in formulas are rendered too, and the chart is redrawn.
    expect(page.locator("#communication-result .katex").first).to_be_visible()
    expect(page.locator("#communication-result .katex-error")).to_have_count(0)
    expect(page.locator("#comm-chart [data-bar='compute'] rect")).to_be_visible()
    page.fill("input[name=tp]", "3")
    expect(page.locator("#communication-result .errors")).to_contain_text("must divide")
