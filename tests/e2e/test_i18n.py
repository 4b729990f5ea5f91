"""The UI in Chinese in a real Chromium: chosen once with ?lang=zh, kept while clicking on."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

# The header's English labels: none may show once Chinese is chosen.
ENGLISH_LABELS = ["Cards", "Calculators", "Demos", "Quiz", "Progress", "Groups", "Log in",
                  "Register", "Log out", "Skip to content", "Admin"]  # fmt: skip


def _assert_chinese_chrome(page: Page) -> None:
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    header = page.locator("header.site").inner_text()
    left = [w for w in ENGLISH_LABELS if re.search(rf"\b{w}\b", header)]
    assert left == [], f"English left in the header of {page.url}: {left}"
    expect(page.locator("header.site .language-switch")).to_have_text("English")


def test_home_card_and_calculator_in_chinese(page: Page) -> None:
    page.goto("/?lang=zh")
    _assert_chinese_chrome(page)
    expect(page.locator("h1")).to_have_text("分布式大模型训练：从公式到网络上的每一个字节。")

    page.locator("header.site nav").get_by_role("link", name="卡片").click()
    expect(page).to_have_url(re.compile(r"/cards$"))  # the cookie keeps the choice
    _assert_chinese_chrome(page)
    expect(page.locator("h1")).to_have_text("知识卡片")

    page.goto("/cards/zero-stages")
    _assert_chinese_chrome(page)
    related = page.locator("nav.related")
    expect(related.get_by_role("link", name="每卡显存 (ZeRO)")).to_be_visible()
    related.get_by_role("link", name="每卡显存 (ZeRO)").click()

    expect(page).to_have_url(re.compile(r"/calculators/memory"))
    _assert_chinese_chrome(page)
    expect(page.locator("h1")).to_have_text("ZeRO 下每卡的模型状态显存")
    expect(page.locator("#memory-form label").first).to_contain_text("参数量（十亿，B）")
    # The numbers still come from app/calc and update as you type.
    page.fill("input[name=dp_degree]", "8")
    expect(page).to_have_url(re.compile(r"dp_degree=8"))


def test_the_switch_goes_back_to_english(page: Page) -> None:
    page.goto("/calculators?lang=zh")
    expect(page.locator("h1")).to_have_text("计算器")
    page.locator("header.site .language-switch").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("h1")).to_have_text("Calculators")
    expect(page.locator("header.site .language-switch")).to_have_text("中文")
