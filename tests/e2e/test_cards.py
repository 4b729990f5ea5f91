"""Every card in a real browser: math rendered without errors, diagrams drawn; search and map."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from app.cards.service import CardLibrary
from app.config import ROOT_DIR

pytestmark = pytest.mark.browser

LIBRARY = CardLibrary.load(ROOT_DIR / "content" / "cards")
CARDS = LIBRARY.all()


@pytest.mark.parametrize("card_id", [c.meta.id for c in CARDS])
def test_card_renders_its_math_and_diagrams(page: Page, card_id: str) -> None:
    card = next(c for c in CARDS if c.meta.id == card_id)
    page.goto(f"/cards/{card_id}")
    expect(page.locator("h1")).to_have_text(card.meta.title)
    if 'class="math' in card.html:
        expect(page.locator("#card .katex").first).to_be_visible()
    expect(page.locator("#card .katex-error")).to_have_count(0)
    if card.has_diagram:
        expect(page.locator("#card pre.mermaid svg").first).to_be_visible(timeout=15_000)
        expect(page.locator("#card pre.mermaid", has_text="Syntax error")).to_have_count(0)


@pytest.mark.parametrize("card_id", [c.meta.id for c in LIBRARY.editions("zh")][:2])
def test_a_chinese_card_renders_its_math_and_switches_to_english(page: Page, card_id: str) -> None:
    edition = LIBRARY.edition(card_id, "zh")
    assert edition is not None
    page.goto(f"/cards/{card_id}?lang=zh")
    expect(page.locator("h1")).to_have_text(edition.meta.title)
    expect(page.locator("#card .katex").first).to_be_visible()
    expect(page.locator("#card .katex-error")).to_have_count(0)
    expect(page.locator("#card .worked-example").first).to_be_visible()
    if edition.has_diagram:
        expect(page.locator("#card pre.mermaid svg").first).to_be_visible(timeout=15_000)
    page.click("a.edition-switch")
    expect(page.locator("h1")).to_have_text(LIBRARY.get(card_id).meta.title)  # type: ignore[union-attr]


def test_search_then_open_a_card(page: Page) -> None:
    page.goto("/cards")
    page.fill("#card-search", "reduce-scatter")
    page.click("form.search button")
    expect(page.locator("#hits mark").first).to_be_visible()
    page.locator("#hits a[href^='/cards/']").first.click()  # quiz hits need a login
    expect(page.locator("#card")).to_be_visible()


def test_topic_map_draws_the_graph(page: Page) -> None:
    page.goto("/cards/map")
    expect(page.locator(".topic-map svg")).to_be_visible(timeout=15_000)
