"""The card library: study order, links between cards, search, the map and the cheat sheet."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.calc.planner import cluster, plan, plan_request
from app.cards.router import CALCULATOR_PAGES, DEMO_PAGES
from app.cards.search import SearchIndex
from app.cards.service import CardError, CardLibrary
from app.config import ROOT_DIR
from app.journey.syllabus import syllabus_order
from app.quiz.bank import QuestionBank
from tests.cards.test_cards import SECTIONS_AFTER

CONTENT = ROOT_DIR / "content"


def write_card(folder: Path, card_id: str, prerequisites: str = "[]", body: str = "",
               extra: str = "") -> None:  # fmt: skip
    (folder / f"{card_id}.md").write_text(
        f"---\nid: {card_id}\ntitle: Card {card_id}\nprerequisites: {prerequisites}\n{extra}---\n"
        f"## In 30 seconds\n\nThe answer about {card_id}.\n\n{body}\n{SECTIONS_AFTER}"
    )


def test_prerequisites_come_first_in_study_order(tmp_path: Path) -> None:
    write_card(tmp_path, "a-late", "[b-middle]")
    write_card(tmp_path, "b-middle", "[c-first]")
    write_card(tmp_path, "c-first")
    library = CardLibrary.load(tmp_path)
    assert [c.meta.id for c in library.all()] == ["c-first", "b-middle", "a-late"]


def test_a_missing_prerequisite_or_a_cycle_is_refused(tmp_path: Path) -> None:
    write_card(tmp_path, "one", "[nowhere]")
    with pytest.raises(CardError, match="prerequisite 'nowhere' is not a card"):
        CardLibrary.load(tmp_path)
    write_card(tmp_path, "one", "[two]")
    write_card(tmp_path, "two", "[one]")
    with pytest.raises(CardError, match="cycle"):
        CardLibrary.load(tmp_path)


def test_links_to_calculators_demos_and_quiz_items_are_checked(tmp_path: Path) -> None:
    write_card(tmp_path, "x", extra="demos: [no-such-demo]\n")
    problems = CardLibrary.load(tmp_path).link_problems(CALCULATOR_PAGES, DEMO_PAGES)
    assert problems == ["x: no demo 'no-such-demo'"]


def test_every_card_in_content_links_only_to_what_exists() -> None:
    library = CardLibrary.load(CONTENT / "cards")
    assert library.link_problems(CALCULATOR_PAGES, DEMO_PAGES) == []
    bank = QuestionBank.load(CONTENT / "quiz")
    assert bank.card_problems(c.meta.id for c in library.all()) == []


def test_every_worked_example_in_content_renders_the_calculators_numbers() -> None:
    for card in CardLibrary.load(CONTENT / "cards").all():
        blocks = card.text.count("```example ")
        assert card.html.count('<div class="worked-example">') == blocks, card.meta.id
        if card.meta.calculators:
            assert blocks >= 1, card.meta.id


class _Hrefs(HTMLParser):
    """Every <a href> of a page, its character references decoded as a browser's parser does."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def test_search_finds_a_card_by_a_word_in_its_body_and_a_quiz_item(tmp_path: Path) -> None:
    write_card(tmp_path, "pipes", body="## Bubbles\n\nThe interleaved schedule shrinks it.")
    write_card(tmp_path, "other", body="## Other\n\nNothing relevant here.")
    bank = QuestionBank.load(CONTENT / "quiz")
    index = SearchIndex(CardLibrary.load(tmp_path).all(), bank.all())
    hits = index.search("interleaved")
    # The real bank has quiz items on interleaving too; of the cards, only "pipes" matches.
    assert [h.id for h in hits if h.kind == "card"] == ["pipes"]
    assert "<mark>interleaved</mark>" in next(h for h in hits if h.kind == "card").snippet
    quiz_hits = index.search("data-parallel GPUs")
    assert quiz_hits and quiz_hits[0].kind == "quiz"
    assert index.search('"; DROP TABLE docs; --') == []


def test_search_page(client: TestClient) -> None:
    page = client.get("/cards/search", params={"q": "reduce-scatter all-gather"})
    assert page.status_code == 200 and 'href="/cards/zero-stages"' in page.text
    assert client.get("/cards/search", params={"q": '"unbalanced (quote'}).status_code == 200


def test_map_draws_every_card_and_prerequisite(client: TestClient) -> None:
    page = client.get("/cards/map").text
    cards = client.app.state.cards.all()
    assert page.count("click n") == len(cards)
    # Only direct prerequisites get an arrow: at least one per card that has any, at most all.
    needing = sum(1 for c in cards if c.meta.prerequisites)
    assert needing <= page.count("--&gt;") <= sum(len(c.meta.prerequisites) for c in cards)
    assert "mermaid.min.js" in page


def test_cheat_sheet_holds_every_30_second_answer(client: TestClient) -> None:
    page = client.get("/cards/cheatsheet").text
    for card in client.app.state.cards.all():
        assert f'id="cheat-{card.meta.id}"' in page
        assert card.answer_html.strip()[:60] in page


def test_cards_follow_the_study_path(client: TestClient) -> None:
    # issue #29: /cards said "study order" and did not follow the path
    path = syllabus_order()
    listing = client.get("/cards").text
    shown = re.findall(r'<a href="/cards/([\w-]+)"><h2>', listing)
    assert shown == path
    sheet = client.get("/cards/cheatsheet").text
    assert re.findall(r'id="cheat-([\w-]+)"', sheet) == path


def test_card_page_has_study_order_links_and_tag_filter(client: TestClient) -> None:
    library = client.app.state.cards
    path = syllabus_order()
    card = library.get(path[1])
    page = client.get(f"/cards/{card.meta.id}").text
    assert f'rel="prev" href="/cards/{path[0]}"' in page
    assert f'rel="next" href="/cards/{path[2]}"' in page
    first, last = client.get(f"/cards/{path[0]}").text, client.get(f"/cards/{path[-1]}").text
    assert 'rel="prev"' not in first and 'rel="next"' not in last
    tag = card.meta.tags[0] if card.meta.tags else None
    if tag:
        listing = client.get("/cards", params={"tag": tag}).text
        assert f'href="/cards/{card.meta.id}"' in listing


def test_every_link_inside_the_cards_leads_somewhere(client: TestClient) -> None:
    # Read as a browser reads them: a bare "&micro_batch=1" in an href is the character
    # reference µ, and reached the calculator as "µ_batch=1" (a 422).
    library = client.app.state.cards
    seen: set[str] = set()
    for card in library.all() + library.editions("zh"):
        parser = _Hrefs()
        parser.feed(card.html)
        seen |= {href.split("#")[0] for href in parser.hrefs if href.startswith("/")}
    calculators = [href for href in seen if href.startswith("/calculators/") and "?" in href]
    assert len(calculators) >= 40  # the worked examples' links and the "use this" ones
    for href in sorted(seen):
        assert client.get(href).status_code == 200, href


def test_the_layout_cards_planner_example_is_the_planners_answer(client: TestClient) -> None:
    best = plan(plan_request("llama3-70b", cluster(nodes=8), 2**22, 8192, 15e12)).best
    assert best is not None
    page = client.get("/cards/choosing-a-parallel-layout").text
    assert f"<code>{best.layout.describe()}</code>" in page
    assert f"{best.step_time_s:.2f} s per step" in page
    link = re.search(r'href="(/calculators/planner\?[^"]+)">Open these inputs', page)
    assert link and client.get(link.group(1).replace("&amp;", "&")).status_code == 200
