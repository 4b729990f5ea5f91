"""Long cards (issue #29): a table of contents, and every worked example after the first folded
into a <details> whose summary names it."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.cards.service import LONG_CARD_CHARS, CardLibrary, render_card
from app.config import ROOT_DIR
from app.i18n import language

CARDS_DIR = ROOT_DIR / "content" / "cards"
PARAGRAPH = "A sentence of plain prose that a reader has to scroll past on the way down. " * 20
FOLDED = re.compile(r'<details class="more-example">\n<summary>(.*?)</summary>\n'
                    r'<div class="worked-example">')  # fmt: skip


def card_with(sections: list[str], paragraph: str, examples: str = "") -> str:
    """A card with the four fixed sections and `sections` between, each holding `paragraph`."""
    body = "".join(f"## {title}\n\n{paragraph}\n\n" for title in sections)
    return (
        f"---\nid: x\ntitle: A card\n---\n## In 30 seconds\n\n{paragraph}\n\n{body}{examples}"
        "## Common mistakes\n\nm\n\n## Follow-up questions\n\nf\n\n## Sources\n\ns\n"
    )


def test_a_long_card_has_contents_linking_each_section() -> None:
    source = card_with(["Forward", "Backward", "The $P_a$ term"], PARAGRAPH)
    assert len(source) > LONG_CARD_CHARS
    card = render_card(source)
    assert len(card.sections) == 7
    assert [h.id for h in card.contents] == re.findall(r'<h2 id="([^"]+)"', card.html)
    assert [h.html for h in card.contents][:3] == ["In 30 seconds", "Forward", "Backward"]
    # A heading's math is marked for KaTeX; its permalink (¶) stays on the heading.
    assert card.contents[3].html == 'The <span class="math inline">P_a</span> term'
    assert all("¶" not in h.html for h in card.contents)


def test_a_short_card_has_no_contents() -> None:
    card = render_card(card_with(["Forward", "Backward", "Optimizer"], "A short paragraph."))
    assert len(card.sections) == 7 and card.contents == []


def test_a_card_pages_contents_link_every_section(client: TestClient) -> None:
    card = client.app.state.cards.get("training-compute")
    page = client.get("/cards/training-compute").text
    nav = re.search(r'<nav class="card-contents" aria-label="Contents">(.*?)</nav>', page, re.S)
    assert nav, "no table of contents on training-compute"
    links = re.findall(r'<a href="#([^"]+)">', nav.group(1))
    assert len(links) == len(card.sections) == 6
    assert all(f'<h2 id="{anchor}">' in page for anchor in links)
    chinese = client.get("/cards/training-compute", params={"lang": "zh"}).text
    assert re.search(r'<nav class="card-contents" aria-label="目录">\s*<details id="card-contents">'
                     r'<summary>目录</summary>', chinese)  # fmt: skip
    assert '<a href="#30-秒回答">30 秒回答</a>' in chinese


def test_worked_examples_after_the_first_fold_under_a_summary_naming_them() -> None:
    examples = (
        "## Worked example\n\n"
        "```example memory\nparams: 7.5e9\ndp_degree: 64\n```\n\n"
        "Fewer GPUs:\n\n```example memory\nparams: 7.5e9\ndp_degree: 8\n```\n\n"
        "And the time:\n\n```example compute\npreset: gpt3-175b\ntokens: 300e9\n```\n\n"
    )
    source = card_with([], "a", examples)
    html = render_card(source).html
    assert html.count('<div class="worked-example">') == 3
    assert html.index('<div class="worked-example">') < html.index("<details")  # the first shows
    assert FOLDED.findall(html) == [
        "Another worked example: Memory per GPU (ZeRO) with <code>dp_degree: 8</code>",
        "Another worked example: Compute and training time with <code>preset: gpt3-175b</code>, "
        "<code>tokens: 300e9</code>",
    ]
    with language("zh"):
        chinese = render_card(source, lang="zh").html
    summary = "另一个计算实例：每卡显存 (ZeRO)，输入 <code>dp_degree: 8</code>"
    assert FOLDED.findall(chinese)[0] == summary


def test_every_card_shows_its_first_worked_example_and_folds_the_rest() -> None:
    library = CardLibrary.load(CARDS_DIR)
    for card in library.all() + library.editions("zh"):
        folded = FOLDED.findall(card.html)
        assert card.html.count('<div class="worked-example">') == len(card.examples), card.meta.id
        assert len(folded) == max(0, len(card.examples) - 1), card.meta.id
