"""The pipeline-schedule page in a real Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_pipeline_page_redraws_as_you_type(page: Page) -> None:
    page.goto("/calculators/pipeline")
    # Defaults: 1F1B, p = 4, m = 8, F = B = W = 1: (m + p - 1)(F + B + W) = 33.
    expect(page.locator("#total-time")).to_have_text("33")
    expect(page.locator("#pipeline-result .katex").first).to_be_visible()
    expect(page.locator("#pipeline-result .katex-error")).to_have_count(0)
    expect(page.locator("#gantt svg path.block").first).to_be_visible()
    expect(page.locator("#gantt-zb-h1 svg")).to_be_visible()
    page.fill("input[name=microbatches]", "16")
    # (16 + 3) * 3 = 57
    expect(page.locator("#total-time")).to_have_text("57")
    expect(page).to_have_url(re.compile(r"microbatches=16"))
    expect(page.locator("#pipeline-result .katex").first).to_be_visible()
    expect(page.locator("#bubble tr[data-measure='over_ideal'] .sim")).to_have_text("18.75 %")
    page.select_option("select[name=schedule]", "zb-h1")
    # 16 * 3 + (4 - 1)(1 + 1 - 1) = 51
    expect(page.locator("#total-time")).to_have_text("51")
    expect(page.locator("#gantt path.block.w").first).to_be_visible()
    page.fill("input[name=pp]", "0")
    expect(page.locator("#pipeline-result .errors")).to_contain_text("must be at least 1")
