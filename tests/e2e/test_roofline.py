"""The roofline page in a real Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_roofline_verdict_flips_as_the_batch_grows(page: Page) -> None:
    page.goto("/calculators/roofline")
    expect(page.locator("#bound")).to_have_text("memory-bound")
    expect(page.locator("#roofline-result .katex").first).to_be_visible()
    expect(page.locator("#roofline-chart canvas").first).to_be_visible()
    # B = 512 tokens passes the H100's ridge (B* = 318 for D = F = 8192 in bf16).
    page.fill("input[name=b]", "512")
    expect(page).to_have_url(re.compile(r"b=512"))
    expect(page.locator("#bound")).to_have_text("compute-bound")
    expect(page.locator("#roofline-result .katex").first).to_be_visible()
    expect(page.locator("#roofline-chart canvas").first).to_be_visible()
