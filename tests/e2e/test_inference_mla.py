"""The inference-memory page's MLA and nominal-parameter fields in a real Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser


def test_mla_attention_and_nominal_params(page: Page) -> None:
    page.goto("/calculators/inference-memory")
    page.select_option("select[name=attention]", "mla")
    # Llama 2 70B's 80 layers with DeepSeek's latent: (512 + 64) x 80 x 2 B = 92,160 B per
    # token, the whole of it on each of the 4 GPUs.
    expect(page.locator("#kv-token-model")).to_have_text("92,160 B")
    expect(page.locator("#kv-token-gpu")).to_have_text("92,160 B")
    expect(page.locator("#inference-result")).to_contain_text("no head axis to split")
    expect(page).to_have_url(re.compile(r"attention=mla"))
    page.fill("input[name=params]", "70e9")
    # 70e9 x 2 B / 4 = 35 GB of weights per GPU.
    expect(page.locator('[data-term="weights"] td.num')).to_have_text("35.00 GB")
    expect(page).to_have_url(re.compile(r"params=7"))
