"""Mastery: FSRS's predicted recall a week out, averaged over the questions answered, on the
real bank and a real SQLite file (issue #29: it read 100 % after 2 right answers of 13)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from fsrs import Rating
from sqlmodel import Session, select

from app.accounts.models import User
from app.quiz.items import GeneratedItem
from app.quiz.models import ItemState
from app.quiz.progress import (
    TopicProgress,
    mastery_of,
    pooled_mastery,
    progress_of,
    recall_in_a_week,
)
from app.quiz.scheduling import new_card, review
from app.quiz.service import Outcome, question_for, record_answer
from tests.utils import register

# FSRS-6's default parameters (py-fsrs 6.3.2): a new item's stability after its first rating
# is w0 = 0.212 days (Again), w1 = 1.2931 (Hard), w2 = 2.3065 (Good), w3 = 8.2956 (Easy), and
# recall after t days is (1 + F t / S) ** -w20 with w20 = 0.1542, F = 0.9 ** (-1 / w20) - 1
# = 0.98035. A week out: (1 + 0.98035 * 7 / S) ** -0.1542.
AGAIN_IN_A_WEEK = 0.5822  # S = 0.212: 33.37 ** -0.1542
HARD_IN_A_WEEK = 0.7528  # S = 1.2931: 6.307 ** -0.1542
GOOD_IN_A_WEEK = 0.8083  # S = 2.3065: 3.975 ** -0.1542
EASY_IN_A_WEEK = 0.9112  # S = 8.2956: 1.827 ** -0.1542

MEMORY_ANATOMY = 11  # questions in the real bank, free responses and follow-ups included
MIXED_PRECISION = 13


def answer_items(
    client: TestClient, item_ids: Iterable[str], rating: Rating, now: datetime | None = None
) -> None:
    """The signed-in learner answers each item as the quiz records it: wrong when `rating` is
    Again, else right with that rating."""
    bank = client.app.state.quiz
    with Session(client.app.state.engine) as session:
        user = session.exec(select(User)).one()
        for item_id in item_ids:
            item = bank.get(item_id)
            inputs = ({name: values[0] for name, values in item.choices.items()}
                      if isinstance(item, GeneratedItem) else None)  # fmt: skip
            outcome = Outcome(rating != Rating.Again, rating)
            record_answer(session, user, question_for(item, inputs), outcome, now=now)


def topic_ids(client: TestClient, card_id: str) -> list[str]:
    return [item.id for item in client.app.state.quiz.for_cards([card_id])]


def topics(client: TestClient, now: datetime | None = None) -> dict[str, TopicProgress]:
    state = client.app.state
    with Session(state.engine) as session:
        user = session.exec(select(User)).one()
        assert user.id is not None
        progress = progress_of(session, user.id, state.quiz, state.cards, now=now)
    return {t.card_id: t for t in progress.topics}


def progress_row(page: str, card_id: str) -> str:
    row = re.search(rf'<tr data-card="{card_id}">(.*?)</tr>', page, re.S)
    assert row, card_id
    return row.group(1)


def test_wrong_answers_bring_mastery_well_below_what_the_right_ones_gave(
    client: TestClient,
) -> None:
    register(client)
    memory, mixed = topic_ids(client, "memory-anatomy"), topic_ids(client, "mixed-precision")
    assert (len(memory), len(mixed)) == (MEMORY_ANATOMY, MIXED_PRECISION)
    answer_items(client, memory[:2], Rating.Good)
    before = topics(client)["memory-anatomy"]
    assert before.studied == 2 and before.mastery == pytest.approx(GOOD_IN_A_WEEK, abs=1e-4)
    # The learner: 2 right, then every other question of the two topics wrong.
    answer_items(client, memory[2:] + mixed, Rating.Again)
    wrong = MEMORY_ANATOMY - 2 + MIXED_PRECISION
    after = topics(client)
    expected = (2 * GOOD_IN_A_WEEK + (MEMORY_ANATOMY - 2) * AGAIN_IN_A_WEEK) / MEMORY_ANATOMY
    assert after["memory-anatomy"].mastery == pytest.approx(expected, abs=1e-4)  # 0.6233
    assert after["mixed-precision"].mastery == pytest.approx(AGAIN_IN_A_WEEK, abs=1e-4)
    both = pooled_mastery([after["memory-anatomy"], after["mixed-precision"]])
    assert both == pytest.approx(
        (2 * GOOD_IN_A_WEEK + wrong * AGAIN_IN_A_WEEK) / (2 + wrong), abs=1e-4
    )
    assert both is not None and both < 0.65 < before.mastery
    # /progress shows those figures, where it showed 100 % with every other question due.
    page = client.get("/progress").text
    assert '<td class="num mastery">62%</td>' in progress_row(page, "memory-anatomy")
    assert '<td class="num mastery">58%</td>' in progress_row(page, "mixed-precision")
    assert "100%" not in page


def test_right_answers_only_give_a_high_mastery(client: TestClient) -> None:
    register(client)
    answer_items(client, topic_ids(client, "memory-anatomy"), Rating.Good)
    answer_items(client, topic_ids(client, "mixed-precision"), Rating.Easy)  # right and fast
    after = topics(client)
    assert after["memory-anatomy"].mastery == pytest.approx(GOOD_IN_A_WEEK, abs=1e-4)
    assert after["mixed-precision"].mastery == pytest.approx(EASY_IN_A_WEEK, abs=1e-4)
    # A week on without a review, the same answers have faded: mastery says so.
    later = topics(client, datetime.now(UTC) + timedelta(days=7))["memory-anatomy"].mastery
    assert later is not None and later < GOOD_IN_A_WEEK - 0.05


def test_questions_never_answered_are_not_counted_as_mastered(client: TestClient) -> None:
    register(client)
    answer_items(client, topic_ids(client, "memory-anatomy")[:1], Rating.Easy)
    now = topics(client)
    assert (now["memory-anatomy"].studied, now["memory-anatomy"].items) == (1, MEMORY_ANATOMY)
    assert now["memory-anatomy"].mastery == pytest.approx(EASY_IN_A_WEEK, abs=1e-4)
    assert now["mixed-precision"].mastery is None and mastery_of([], datetime.now(UTC)) is None
    # An unanswered topic adds nothing to the figure of the topics around it.
    assert pooled_mastery([now["memory-anatomy"], now["mixed-precision"]]) == pytest.approx(
        EASY_IN_A_WEEK, abs=1e-4
    )
    page = client.get("/progress").text
    row = progress_row(page, "mixed-precision")
    assert f'<td class="num">0 / {MIXED_PRECISION}</td>' in row
    assert '<td class="num mastery">–</td>' in row
    assert f'<td class="num">1 / {MEMORY_ANATOMY}</td>' in progress_row(page, "memory-anatomy")


def test_a_lapse_lowers_the_items_recall_a_week_out() -> None:
    t0 = datetime(2026, 1, 1, 9, tzinfo=UTC)
    card = review(review(new_card(1, t0), Rating.Good, t0), Rating.Good, t0 + timedelta(days=3))
    at_due = card.due
    state = ItemState(user_id=1, item_id="x", fsrs_card=card.to_dict(), due=at_due)
    lapsed = review(card, Rating.Again, at_due)
    after = ItemState(user_id=1, item_id="x", fsrs_card=lapsed.to_dict(), due=lapsed.due)
    assert recall_in_a_week(after, at_due) < recall_in_a_week(state, at_due) - 0.05
    right = review(card, Rating.Good, at_due)
    kept = ItemState(user_id=1, item_id="x", fsrs_card=right.to_dict(), due=right.due)
    assert recall_in_a_week(kept, at_due) > recall_in_a_week(state, at_due)


def test_the_progress_page_defines_mastery_in_the_readers_language(client: TestClient) -> None:
    register(client)
    english = client.get("/progress").text
    assert 'id="mastery-definition">Mastery: the chance FSRS predicts that you recall a ' in english
    assert "averaged over the questions you have answered" in english
    chinese = client.get("/progress?lang=zh").text
    assert "掌握度：FSRS 预测你一周后仍能回忆起一道题的概率 (predicted recall)" in chinese
