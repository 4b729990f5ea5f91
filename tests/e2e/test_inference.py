"""The inference-memory page in a real Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_inference_memory_follows_tensor_parallel_and_presets(page: Page) -> None:
    page.goto("/calculators/inference-memory")
    expect(page.locator("#kv-token-model")).to_have_text("327,680 B")
    expect(page.locator("#kv-token-gpu")).to_have_text("81,920 B")
    expect(page.locator("#inference-result .katex").first).to_be_visible()
    expect(page.locator("#inference-chart canvas").first).to_be_visible()
    page.fill("input[name=tp]", "16")
    expect(page.locator("#kv-token-gpu")).to_have_text("40,960 B")
    expect(page.locator("#inference-result")).to_contain_text("replicates them")
    expect(page).to_have_url(re.compile(r"tp=16"))
    expect(page.locator("#inference-result .katex").first).to_be_visible()
    expect(page.locator("#inference-chart canvas").first).to_be_visible()
    page.select_option("select[name=preset]", "llama2-7b")
    expect(page.locator("input[name=kv_heads]")).to_have_value("32")
    expect(page.locator("#kv-token-model")).to_have_text("524,288 B")
    page.fill("input[name=tp]", "3")
    expect(page.locator("#inference-result .errors")).to_contain_text("must divide")
