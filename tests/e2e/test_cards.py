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


# training-compute at 1280 px before issue #29 folded its second and third worked examples
# (measured with the same Chromium): 8,235 px. Its first example alone is some 1,600 px.
TRAINING_COMPUTE_BEFORE_PX = 8_235

# The plotting area's opaque pixels: the series and points, not the faint grid (as
# test_pages_fit.py counts them).
CHART_INK = """el => {
  const box = el.uplot.bbox, canvas = el.querySelector('canvas');
  const pixels = canvas.getContext('2d').getImageData(Math.round(box.left), Math.round(box.top),
    Math.round(box.width), Math.round(box.height)).data;
  let opaque = 0;
  for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 128) opaque++;
  return {opaque, canvas: canvas.width, box: el.clientWidth};
}"""


def test_a_long_card_folds_its_later_examples_and_one_opened_draws_its_chart(page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/cards/training-compute")
    # Drawn while folded at a phone's width; the window then widens to a desktop's.
    folded = page.locator("#card details.more-example")
    expect(folded).to_have_count(2)
    page.set_viewport_size({"width": 1280, "height": 800})
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 0.7 * TRAINING_COMPUTE_BEFORE_PX, f"{height} px"
    summary = folded.first.locator(":scope > summary")
    expect(summary).to_have_text(
        "Another worked example: Compute and training time with attention_term: true"
    )
    chart = folded.first.locator(".chart")
    expect(chart).to_be_hidden()
    summary.click()
    expect(chart.locator("canvas")).to_be_visible()
    page.wait_for_timeout(100)  # the resize observer's frame
    ink = chart.evaluate(CHART_INK)
    assert ink["opaque"] >= 20, ink
    assert abs(ink["canvas"] - ink["box"]) <= 2, f"the chart is not its box's width: {ink}"


def test_the_contents_sit_beside_a_card_on_a_desktop_and_fold_on_a_phone(page: Page) -> None:
    card = LIBRARY.get("training-compute")
    assert card is not None
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/cards/training-compute")
    contents = page.locator("nav.card-contents")
    links = contents.locator("a")
    expect(links).to_have_count(len(card.sections))
    expect(links.last).to_be_visible()  # open beside the card, beside its top
    article = page.locator("#card").bounding_box()
    nav = contents.bounding_box()
    assert article and nav and nav["x"] >= article["x"] + article["width"]
    page.mouse.wheel(0, 3000)  # it stays in view as the reader scrolls
    expect(links.first).to_be_in_viewport()
    links.get_by_text("Common mistakes").click()
    expect(page.locator("#common-mistakes")).to_be_in_viewport()

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/cards/training-compute?lang=zh")
    summary = contents.locator("summary")
    expect(summary).to_have_text("目录")
    expect(links.first).to_be_hidden()
    folded_box = contents.bounding_box()  # one line above the card, not a screen of links
    assert folded_box and folded_box["height"] < 60, folded_box
    summary.click()
    expect(links).to_have_count(len(card.sections))
    links.last.click()
    expect(page.locator("#参考文献")).to_be_in_viewport()
