"""Cards: every file meets the contract, examples are computed, pages render."""

from __future__ import annotations

import re
from html import escape

import pytest
from fastapi.testclient import TestClient

from app.calc.memory import model_states_all_stages
from app.cards.service import CardError, CardLibrary, render_card
from app.config import ROOT_DIR
from app.formatting import gb

CARDS_DIR = ROOT_DIR / "content" / "cards"

SECTIONS_AFTER = "\n## Common mistakes\n\nm\n\n## Follow-up questions\n\nf\n\n## Sources\n\ns\n"

GOOD = (
    """---
id: sample
title: A sample card
calculators: [memory]
---
## In 30 seconds

Inline $a^2$ and display $$b$$ math, and a price of $5 and $10.

## Worked example

```example memory
params: 7.5e9
dp_degree: 64
```
"""
    + SECTIONS_AFTER
)


def card(body: str, front: str = "id: x\ntitle: Title") -> str:
    return f"---\n{front}\n---\n## In 30 seconds\n\nanswer\n\n{body}\n{SECTIONS_AFTER}"


def test_every_card_in_content_loads() -> None:
    library = CardLibrary.load(CARDS_DIR)
    assert "zero-stages" in library
    for card in library.all():
        assert card.meta.title and card.html


def test_math_is_marked_for_katex_and_dollar_prices_are_left_alone() -> None:
    card = render_card(GOOD)
    assert '<span class="math inline">a^2</span>' in card.html
    assert "$5 and $10" in card.html


def test_worked_example_numbers_come_from_the_calculator() -> None:
    html = render_card(GOOD).html
    for states in model_states_all_stages(7.5e9, 64):
        assert gb(states.total_bytes) in html


def test_zero_card_shows_figure_1_computed_not_typed() -> None:
    source = (CARDS_DIR / "zero-stages.md").read_text()
    # The figures the calculator computes must not be typed into the card's prose...
    for typed in ("120 GB", "31.4 GB", "16.6 GB", "1.9 GB", "1.88 GB", "31.41", "16.64"):
        assert typed not in source
    # ...and yet the rendered card shows them, from app/calc.
    html = render_card(source).html
    for total in ("120.00 GB", "31.41 GB", "16.64 GB", "1.88 GB"):
        assert total in html


def test_raw_html_in_a_card_is_escaped() -> None:
    rendered = render_card(card("<script>alert(1)</script>"))
    assert "<script>" not in rendered.html
    assert "&lt;script&gt;" in rendered.html


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("no front matter here\n", "front matter"),
        ("---\nid: Bad Id\ntitle: T\n---\n", "bad front matter"),
        ("---\nid: x\ntitle: T\nunknown: 1\n---\n", "bad front matter"),
        (card("```example nope\na: 1\n```"), "unknown example"),
        (card("```example memory\nparams: -1\ndp_degree: 8\n```"), "params"),
        ("---\nid: x\ntitle: Title\n---\n## Intro\n", "first section must be"),
        (card("", "id: x\ntitle: Title\ncalculators: [memory]"), "Worked example"),
        ("---\nid: x\ntitle: Title\n---\n## In 30 seconds\n\na\n\n## Sources\n", "end with"),
        (card("", "id: x\ntitle: Title\ndifficulty: 4"), "bad front matter"),
    ],
)
def test_a_broken_card_is_refused_with_the_reason(source: str, message: str) -> None:
    with pytest.raises(CardError, match=message):
        render_card(source, "broken.md")


def test_card_page_renders_with_links_and_a_diagram(client: TestClient) -> None:
    page = client.get("/cards/zero-stages")
    assert page.status_code == 200
    assert 'href="/calculators/memory"' in page.text
    assert 'href="/demos/all-reduce"' in page.text
    assert '<pre class="mermaid">' in page.text
    assert re.search(r'<script src="/static/vendor/mermaid-[\d.]+\.\w+/mermaid.min.js"', page.text)


def test_a_demo_page_links_its_cards_by_title_in_the_readers_language(client: TestClient) -> None:
    cards = client.app.state.cards
    for lang in ("en", "zh"):
        page = client.get("/demos/all-reduce", params={"lang": lang}).text
        for card_id in ("ring-all-reduce", "dp-vs-ddp"):
            title = (cards.edition(card_id, lang) or cards.get(card_id)).meta.short_title
            assert f'<a href="/cards/{card_id}">{escape(title)}</a>' in page, (lang, card_id)
            assert f'<a href="/cards/{card_id}">{card_id}</a>' not in page


def test_mermaid_is_loaded_only_where_there_is_a_diagram(client: TestClient) -> None:
    assert "mermaid.min.js" not in client.get("/cards").text
    assert "mermaid.min.js" not in client.get("/calculators/memory").text


def test_unknown_card_is_a_404(client: TestClient) -> None:
    assert client.get("/cards/no-such-card").status_code == 404


def test_card_list_links_every_card(client: TestClient) -> None:
    page = client.get("/cards")
    assert 'href="/cards/zero-stages"' in page.text


def test_a_short_title_is_the_title_up_to_its_colon() -> None:
    library = CardLibrary.load(CARDS_DIR)
    assert library.get("zero-stages").meta.short_title == "ZeRO stages 1, 2 and 3"
    assert library.edition("zero-stages", "zh").meta.short_title == "ZeRO 的 stage 1、2、3"
    assert library.get("roofline").meta.short_title == "Roofline and arithmetic intensity"
    no_colon = library.get("compute-comm-overlap").meta
    assert no_colon.short_title == no_colon.title


def test_no_card_shows_markdown_it_failed_to_parse() -> None:
    # CommonMark opens bold only where "**" is left-flanking: "以及**“…”**" (a letter, then
    # the marker, then punctuation) stays two literal asterisks on the page.
    library = CardLibrary.load(CARDS_DIR)
    for card in library.all() + library.editions("zh"):
        html = re.sub(r"<(code|pre)[^>]*>.*?</\1>", "", card.html, flags=re.S)
        html = re.sub(r'<(div|span) class="math[^"]*">.*?</\1>', "", html, flags=re.S)
        assert "**" not in html, (card.meta.id, card.lang)
