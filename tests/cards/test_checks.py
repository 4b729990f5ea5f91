"""The "Check yourself" boxes inside cards (issue #29), over HTTP on the quiz's fixture bank
(tests/quiz/content: two graded items on memory-anatomy, one on zero-stages, none on most
cards) and, for the choice of items, on the real bank. The browser's side is
tests/e2e/test_card_checks.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.cards.check import MAX_CHECKS, checked_positions, items_by_section
from app.cards.service import CardLibrary
from app.config import ROOT_DIR
from app.main import create_app
from app.quiz.bank import QuestionBank
from app.quiz.models import ItemState, QuizAttempt
from tests.quiz.conftest import FIXTURE_CONTENT
from tests.utils import make_settings, refresh_csrf, register

MEMORY_ANATOMY_CHECKS = [
    # (box id, section position, item): the two main sections before the worked example, the
    # third main section left without a box as the card has only two graded items.
    ("check-the-two-groups-term-by-term", "1", "fx-numeric"),
    ("check-what-a-gpu-reports-beyond-the-textbook-count", "2", "fx-single"),
]


@pytest.fixture
def check_client(tmp_path: Path) -> Iterator[TestClient]:
    settings = make_settings(tmp_path / "data", content_dir=FIXTURE_CONTENT)
    with TestClient(create_app(settings)) as client:
        refresh_csrf(client)
        yield client


def boxes(page: str) -> list[tuple[str, str, str]]:
    """Each box on a page: (its id, the section it follows, the item it asks)."""
    found = re.findall(r'<aside class="card-check" id="([^"]+)".*?name="section" value="(\d+)"'
                       r'.*?name="item_id" value="([^"]+)"', page, re.S)  # fmt: skip
    return [tuple(f) for f in found]


def box_html(page: str, box_id: str) -> str:
    box = re.search(rf'<aside class="card-check" id="{box_id}".*?</aside>', page, re.S)
    assert box, page[:2000]
    return box.group(0)


def box_fields(page: str, box_id: str) -> dict[str, str]:
    """The hidden fields the box's form sends, as a browser would send them."""
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"',
                             box_html(page, box_id)))  # fmt: skip
    fields.pop("csrf_token")  # the client sends it as a header, as htmx does
    return fields


def check(client: TestClient, card_id: str, fields: dict[str, object], htmx: bool = True,
          lang: str = "en") -> object:  # fmt: skip
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(f"/cards/{card_id}/check?lang={lang}", data=fields, headers=headers)


def stored(client: TestClient) -> tuple[list[QuizAttempt], list[ItemState]]:
    with Session(client.app.state.engine) as session:
        return list(session.exec(select(QuizAttempt))), list(session.exec(select(ItemState)))


def test_main_sections_are_checked_summary_and_closing_ones_are_not() -> None:
    sections = ["In 30 seconds", "A", "B", "C", "D", "E", "Worked example", "Common mistakes",
                "Follow-up questions", "Sources"]  # fmt: skip
    assert checked_positions(sections) == [1, 2, 3, 4]  # MAX_CHECKS of the six main ones
    assert MAX_CHECKS == 4
    assert checked_positions(["In 30 seconds", "Common mistakes", "Sources"]) == []


def test_a_box_follows_each_main_section_of_a_card_with_items(check_client: TestClient) -> None:
    page = check_client.get("/cards/memory-anatomy").text
    assert boxes(page) == MEMORY_ANATOMY_CHECKS
    # Each box closes its section: after the section's text, before the next heading.
    order = [m.group(0) for m in re.finditer(r'<h2 id="[^"]+"|<aside class="card-check"', page)]
    assert order[:5] == ['<h2 id="in-30-seconds"', '<h2 id="the-two-groups-term-by-term"',
                         '<aside class="card-check"',
                         '<h2 id="what-a-gpu-reports-beyond-the-textbook-count"',
                         '<aside class="card-check"']  # fmt: skip
    assert page.count("Check yourself") == 2


def test_a_card_without_items_has_no_boxes(check_client: TestClient) -> None:
    page = check_client.get("/cards/roofline").text
    assert "<h2 id=" in page and "card-check" not in page


def test_a_flashcard_is_never_a_check(check_client: TestClient) -> None:
    # zero-stages has a generated item and a flashcard: one box, the generated item's.
    page = check_client.get("/cards/zero-stages").text
    assert boxes(page) == [("check-derivation", "1", "fx-generated")]


def test_the_boxes_are_the_same_on_every_visit(check_client: TestClient, tmp_path: Path) -> None:
    first = check_client.get("/cards/memory-anatomy").text
    settings = make_settings(tmp_path / "other", content_dir=FIXTURE_CONTENT)
    with TestClient(create_app(settings)) as other:  # another server process's view
        again = other.get("/cards/memory-anatomy").text
    for box_id, _, _ in MEMORY_ANATOMY_CHECKS:
        assert box_fields(first, box_id) == box_fields(again, box_id)
    # The choice item's options in the same order too.
    options = re.compile(r'name="option" value="(\d)"')
    assert options.findall(first) == options.findall(again) and len(options.findall(first)) == 3


def test_the_real_bank_gives_each_section_its_own_graded_item() -> None:
    library = CardLibrary.load(ROOT_DIR / "content" / "cards")
    bank = QuestionBank.load(ROOT_DIR / "content" / "quiz")
    for card in library.all():
        items = bank.for_cards([card.meta.id])
        chosen = items_by_section(card.meta.id, card.sections, items)
        graded = [i for i in items if i.kind != "flashcard"]
        assert len(chosen) == min(len(graded), len(checked_positions(card.sections))), card.meta.id
        assert len({i.id for i in chosen.values()}) == len(chosen), card.meta.id
        assert all(i.card == card.meta.id and i.kind != "flashcard" for i in chosen.values())
        # The order the bank lists the items in does not matter.
        assert items_by_section(card.meta.id, card.sections, items[::-1]) == chosen


def test_a_signed_in_answer_is_recorded_like_any_answer(check_client: TestClient) -> None:
    register(check_client)
    page = check_client.get("/cards/memory-anatomy").text
    fields = box_fields(page, "check-the-two-groups-term-by-term")
    response = check(check_client, "memory-anatomy", {**fields, "answer": "16 B"})
    assert response.status_code == 200, response.text
    assert '<span class="ok">Correct.</span>' in response.text
    assert "2 + 2 + 12 = 16 bytes" in response.text  # the item's solution
    assert '<span class="recorded">Recorded.</span>' in response.text
    # The box's form is taken away, out of band: the answer is in.
    assert ('<div id="check-the-two-groups-term-by-term-form" hx-swap-oob="true" hidden>'
            in response.text)  # fmt: skip
    attempts, states = stored(check_client)
    assert [(a.item_id, a.correct, a.answer, a.rating) for a in attempts] == [
        ("fx-numeric", True, 16.0, 3)  # Good: the box does not time the answer
    ]
    assert [(s.item_id, s.reviews, s.lapses) for s in states] == [("fx-numeric", 1, 0)]
    assert states[0].due > attempts[0].created_at


def test_a_wrong_generated_answer_is_recorded_as_again(check_client: TestClient) -> None:
    register(check_client)
    page = check_client.get("/cards/zero-stages").text
    fields = box_fields(page, "check-derivation")
    assert fields["in_dp_degree"] == "64"
    response = check(check_client, "zero-stages", {**fields, "answer": "99"})
    assert '<span class="bad">Not quite.</span>' in response.text
    assert "16.64 GB" in response.text  # (2 + (2 + 12) / 64) × 7.5e9 bytes
    attempts, states = stored(check_client)
    assert [(a.item_id, a.correct, a.rating) for a in attempts] == [("fx-generated", False, 1)]
    assert [(s.reviews, s.lapses) for s in states] == [(1, 1)]


def test_a_signed_out_answer_is_graded_and_not_kept(check_client: TestClient) -> None:
    page = check_client.get("/cards/memory-anatomy").text
    box_id = "check-what-a-gpu-reports-beyond-the-textbook-count"
    response = check(check_client, "memory-anatomy", {**box_fields(page, box_id), "option": "0"})
    assert response.status_code == 200
    assert '<span class="ok">Correct.</span>' in response.text
    assert "Stage 1 shards the optimizer states." in response.text
    back = "next=/cards/memory-anatomy%23what-a-gpu-reports-beyond-the-textbook-count"
    invite = (f'<strong>Not saved</strong> — <a href="/register?{back}">register</a> or '
              f'<a href="/login?{back}">sign in</a> to keep your progress.')  # fmt: skip
    assert invite in response.text
    assert "Recorded." not in response.text
    assert stored(check_client) == ([], [])


def test_without_javascript_the_answer_gets_a_page_leading_back(check_client: TestClient) -> None:
    page = check_client.get("/cards/memory-anatomy").text
    box_id = "check-what-a-gpu-reports-beyond-the-textbook-count"
    response = check(check_client, "memory-anatomy", {**box_fields(page, box_id), "option": "1"},
                     htmx=False)  # fmt: skip
    assert response.status_code == 200
    assert "<!doctype html>" in response.text
    back = "/cards/memory-anatomy?lang=en#what-a-gpu-reports-beyond-the-textbook-count"
    assert f'<a id="back-to-card" href="{back}">' in response.text
    assert "Not quite." in response.text
    assert 'name="option"' not in response.text  # answered: no form to send it again
    assert "hx-swap-oob" not in response.text


@pytest.mark.parametrize(
    ("card_id", "fields", "says"),
    [
        ("no-such-card", {"section": "1", "item_id": "fx-numeric", "answer": "16"},
         "no card called"),
        ("memory-anatomy", {"section": "1", "item_id": "fx-multiple", "option": "0"},
         "is not the question this card asks after that section"),
        ("memory-anatomy", {"section": "1", "item_id": "nope", "answer": "16"},
         "is not the question this card asks after that section"),
        ("memory-anatomy", {"section": "0", "item_id": "fx-numeric", "answer": "16"},
         "this card has no check after section"),
        ("memory-anatomy", {"section": "x", "item_id": "fx-numeric", "answer": "16"},
         "this card has no check after section"),
        ("memory-anatomy", {"section": "²", "item_id": "fx-numeric", "answer": "16"},
         "this card has no check after section"),
        ("zero-stages", {"section": "1", "item_id": "fx-generated", "answer": "16.64",
                         "in_params": "7500000000.0", "in_dp_degree": "65", "in_zero_stage": "2"},
         "this question's inputs were changed"),
        ("zero-stages", {"section": "1", "item_id": "fx-generated", "answer": "16.64"},
         "this question's inputs were changed"),
        ("memory-anatomy", {"section": "1", "item_id": "fx-numeric", "answer": ""},
         "type a number"),
        ("memory-anatomy", {"section": "2", "item_id": "fx-single"}, "pick an option"),
    ],
    ids=["unknown card", "another card's item", "unknown item", "summary section",
         "not a section", "a superscript", "edited inputs", "missing inputs", "empty answer",
         "no option"],
)  # fmt: skip
def test_bad_input_is_a_422_that_says_why(
    check_client: TestClient, card_id: str, fields: dict[str, str], says: str
) -> None:
    register(check_client)
    response = check(check_client, card_id, fields)
    assert response.status_code == 422
    assert says in unescape(response.text).lower()  # a refusal starts with a capital
    assert stored(check_client) == ([], [])


def test_an_empty_answer_without_javascript_shows_the_box_again(check_client: TestClient) -> None:
    page = check_client.get("/cards/memory-anatomy").text
    fields = box_fields(page, "check-the-two-groups-term-by-term")
    response = check(check_client, "memory-anatomy", {**fields, "answer": " "}, htmx=False)
    assert response.status_code == 422
    assert '<div class="errors" role="alert">' in response.text
    assert 'name="answer"' in response.text  # the form, to answer again


def test_a_chinese_card_asks_in_chinese(check_client: TestClient) -> None:
    page = check_client.get("/cards/memory-anatomy?lang=zh").text
    found = boxes(page)
    assert [(section, item) for _, section, item in found] == [
        (section, item) for _, section, item in MEMORY_ANATOMY_CHECKS
    ]  # the English card's items, after the same sections
    single = box_html(page, found[1][0])
    assert '<div class="prompt" lang="zh-CN"><p>ZeRO 第 1 阶段切分训练显存中的哪一项？' in single
    assert "优化器状态" in single
    response = check(check_client, "memory-anatomy", {**box_fields(page, found[1][0]),
                                                      "option": "0"}, lang="zh")  # fmt: skip
    assert "第 1 阶段切分优化器状态。" in response.text  # the explanation, in Chinese
    # An item the bank has not translated is asked in English, and says so to a screen reader.
    numeric = box_html(page, found[0][0])
    assert '<div class="prompt" lang="en"><p>Bytes per parameter' in numeric
