"""The UI in Chinese in a real Chromium: chosen once with ?lang=zh, kept while clicking on."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.learner import answer_any, register

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


def test_the_config_json_reader_answers_in_chinese(page: Page) -> None:
    # Its words come from the page; the API's own complaint follows the refusal in English.
    page.goto("/calculators/training-memory?lang=zh")
    page.locator("details", has=page.locator("#hf-config")).locator("summary").click()
    status = page.locator("#hf-config-status")
    page.fill("#hf-config", "{not json")
    page.click("#hf-config-fill")
    expect(status).to_contain_text("不是合法的 JSON：")
    page.fill("#hf-config", '{"model_type": "llama"}')
    page.click("#hf-config-fill")
    expect(status).to_contain_text("无法读取这个 config.json： config.json: missing")
    page.fill(
        "#hf-config",
        '{"model_type": "llama", "num_hidden_layers": 40, "hidden_size": 5120,'
        ' "num_attention_heads": 40, "intermediate_size": 13824, "vocab_size": 32000}',
    )
    page.click("#hf-config-fill")
    expect(status).to_have_text("已填入：13,015,864,320 个参数。")


def test_the_switch_goes_back_to_english(page: Page) -> None:
    page.goto("/calculators?lang=zh")
    expect(page.locator("h1")).to_have_text("计算器")
    page.locator("header.site .language-switch").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("h1")).to_have_text("Calculators")
    expect(page.locator("header.site .language-switch")).to_have_text("中文")


# A sentence of English UI: three Latin words in a row, one of them a function word. Chinese
# text keeps technical terms in English (all-reduce, ZeRO-3, micro-batch), never a sentence.
ENGLISH_SENTENCE = re.compile(r"\b[A-Za-z]+(?:[ '-][A-Za-z]+){2,}\b")
FUNCTION_WORDS = {"the", "and", "of", "to", "a", "an", "is", "are", "in", "on", "for", "with",
                  "per", "from", "by", "your", "you", "this", "that", "it", "or", "be", "not",
                  "no", "as", "at", "run", "each", "what", "how"}  # fmt: skip
# Text a reader sees, less what is English by nature: code, math, diagrams, content marked
# lang="en" (an untranslated title), and a card's list of sources (papers keep their titles).
VISIBLE_TEXT = """() => {
  const skip = 'script,style,code,pre,kbd,samp,.katex,.math,.mermaid,svg,[lang="en"],[hidden]';
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let sources = null;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip) || !el.checkVisibility()) continue;
    const h2 = el.closest('h2');
    if (h2) sources = h2.textContent.includes('参考文献') ? h2.parentElement : null;
    if (sources && sources.contains(el) && !el.closest('h2')) continue;
    const text = n.textContent.trim();
    if (text) out.push(text);
  }
  return out;
}"""


def english_sentences(page: Page) -> list[str]:
    found = []
    for text in page.evaluate(VISIBLE_TEXT):
        for run in ENGLISH_SENTENCE.findall(text):
            if FUNCTION_WORDS & {w.lower() for w in re.split(r"[ '-]", run)}:
                found.append(run)
    return found


def test_a_card_a_calculator_a_demo_and_a_quiz_answer_have_no_english_ui(page: Page) -> None:
    page.goto("/cards/zero-stages?lang=zh")
    _assert_chinese_chrome(page)
    left = english_sentences(page)
    assert left == [], (page.url, left)

    page.goto("/calculators/memory")
    page.fill("input[name=dp_degree]", "8")
    expect(page).to_have_url(re.compile(r"dp_degree=8"))
    left = english_sentences(page)
    assert left == [], (page.url, left)

    page.goto("/demos/all-reduce")
    _assert_chinese_chrome(page)
    page.fill("input[name=size_mib]", "1")
    page.fill("input[name=iterations]", "3")
    page.click("#run-demo")
    expect(page.locator("#rows tr[data-rank]")).to_have_count(6, timeout=30_000)
    expect(page.locator("#demo-chart canvas").first).to_be_visible(timeout=30_000)
    left = english_sentences(page)
    assert left == [], (page.url, left)

    register(page)
    page.goto("/quiz?mode=practice&topic=zero-stages")
    _assert_chinese_chrome(page)
    left = english_sentences(page)
    assert left == [], (page.url, left)
    answer_any(page)
    left = english_sentences(page)
    assert left == [], (page.url, left)
