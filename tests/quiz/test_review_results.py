"""A review session's progress bar (answers today of answers to give) and its results page
once nothing is left: score, time per question, and the weak cards to review next."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.models import User
from app.quiz.models import ItemState, QuizAttempt
from tests.quiz.conftest import shown_item
from tests.quiz.test_review import RIGHT, STUDY_ORDER
from tests.utils import register


def answer_after(client: TestClient, item_id: str, seconds: float, htmx: bool = True,
                 **fields: object) -> str:  # fmt: skip
    """Answers as if the question had been on screen for `seconds`."""
    shown_at = int((time.time() - seconds) * 1000)
    data = {"item_id": item_id, "shown_at": str(shown_at), "mode": "review", **fields}
    headers = {"HX-Request": "true"} if htmx else {}
    response = client.post("/quiz/answer", data=data, headers=headers)
    assert response.status_code == 200, response.text
    return response.text


def bar(page: str) -> tuple[int, int, str]:
    """done, total and the 'due, new' line of the progress bar on a page or fragment."""
    match = re.search(
        r'id="review-progress" data-done="(\d+)" data-total="(\d+)".*?'
        r'class="review-left">([^<]*)<', page, re.S,
    )  # fmt: skip
    assert match, page[:3000]
    return int(match.group(1)), int(match.group(2)), match.group(3)


def test_the_bar_counts_answers_today_of_due_plus_new(quiz_client: TestClient) -> None:
    register(quiz_client)
    page = quiz_client.get("/quiz").text
    assert bar(page) == (0, 5, "0 due, 5 new to go")
    assert "<strong>0 of 5</strong> done today" in page
    # The htmx answer moves the bar out of band, with the next count.
    fragment = answer_after(quiz_client, "fx-single", 5, **RIGHT["fx-single"])
    assert 'hx-swap-oob="true"' in fragment
    assert bar(fragment) == (1, 5, "0 due, 4 new to go")
    answer_after(quiz_client, "fx-numeric", 5, answer="3")  # wrong: Again, back in a minute
    # The review asks it again before it ends: one more answer to give today, at once ...
    assert bar(quiz_client.get("/quiz").text) == (2, 6, "1 due, 3 new to go")
    # ... and a minute later, when it is due, before the new items.
    with Session(quiz_client.app.state.engine) as session:
        state = session.exec(select(ItemState).where(ItemState.item_id == "fx-numeric")).one()
        state.due = datetime.now(UTC) - timedelta(seconds=1)
        session.add(state)
        session.commit()
    page = quiz_client.get("/quiz").text
    assert shown_item(page) == "fx-numeric" and bar(page) == (2, 6, "1 due, 3 new to go")


def test_a_full_page_answer_shows_the_bar_in_place_and_practice_has_none(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    page = answer_after(quiz_client, "fx-single", 5, htmx=False, **RIGHT["fx-single"])
    assert bar(page) == (1, 5, "0 due, 4 new to go")
    assert page.count('id="review-progress"') == 1 and "hx-swap-oob" not in page
    assert 'id="review-progress"' not in quiz_client.get("/quiz?mode=practice").text


def test_a_topic_counts_only_its_own_items(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer_after(quiz_client, "fx-flash", 5, rating="3")  # zero-stages, not memory-anatomy
    page = quiz_client.get("/quiz?topic=memory-anatomy").text
    assert bar(page) == (0, 2, "0 due, 2 new to go")


def test_answers_coming_back_count_in_their_own_topic_and_take_the_same_statements(
    quiz_client: TestClient,
) -> None:
    # A review page's reads are the same statements whatever the learner has answered (one
    # item coming back or two): a statement whose text grew with the items, as an IN list of
    # their ids did, was compiled and prepared anew for each count.
    from sqlalchemy import event

    register(quiz_client)
    engine = quiz_client.app.state.engine

    def statements_of(path: str) -> tuple[str, set[str]]:
        seen: set[str] = set()

        def note(conn, cursor, statement: str, *args: object) -> None:  # noqa: ANN001
            seen.add(statement)

        event.listen(engine, "before_cursor_execute", note)
        try:
            page = quiz_client.get(path).text
        finally:
            event.remove(engine, "before_cursor_execute", note)
        return page, seen

    answer_after(quiz_client, "fx-single", 5, option="1")  # wrong: back within minutes
    page, one_back = statements_of("/quiz")
    assert bar(page) == (1, 6, "1 due, 4 new to go")
    answer_after(quiz_client, "fx-multiple", 5, option="0")  # wrong, another card's topic
    page, two_back = statements_of("/quiz")
    assert bar(page) == (2, 7, "2 due, 3 new to go")
    assert one_back == two_back
    # Only the topic's own item comes back in the topic's review.
    assert bar(quiz_client.get("/quiz?topic=memory-anatomy").text) == (1, 3, "1 due, 1 new to go")


def test_the_results_page_gives_score_time_and_what_to_review_next(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    seconds = dict(zip(STUDY_ORDER, (10, 20, 30, 40, 50), strict=True))
    for item_id in STUDY_ORDER:
        fields = {"option": "0"} if item_id == "fx-multiple" else RIGHT[item_id]  # one wrong
        answer_after(quiz_client, item_id, seconds[item_id], **fields)
    # The wrong one is asked again before the review ends (review_queue.coming_back).
    assert shown_item(quiz_client.get("/quiz").text) == "fx-multiple"
    answer_after(quiz_client, "fx-multiple", 60, **RIGHT["fx-multiple"])
    page = quiz_client.get("/quiz").text
    assert 'id="all-done"' in page and 'id="review-results"' in page
    assert 'id="review-progress"' not in page

    def tile(name: str) -> str:
        match = re.search(rf'id="results-{name}">(.*?)</div>', page, re.S)
        assert match, page
        return re.sub(r"<[^>]+>", " ", match.group(1)).split()

    assert tile("answers") == ["6", "answers", "today"]
    assert tile("right") == ["83%", "5", "of", "6", "right"]
    # (10 + 20 + 30 + 40 + 50 + 60) / 6 = 35 s each, 210 s = 3 min 30 s in all. Each answer
    # reaches the server a little after the shown_at it carries, so on a loaded machine the six
    # together can round up by a second or two.
    time = tile("time")
    assert time[:6] == ["35", "s", "per", "question;", "3", "min"]
    assert time[7:] == ["s", "in", "all"] and 30 <= int(time[6]) <= 32
    assert "next review" in " ".join(tile("next-due"))
    # The card of the wrong answer comes first, with links to read it and practise it.
    first = re.search(r'id="review-next">\s*<li data-card="([^"]+)">(.*?)</li>', page, re.S)
    assert first and first.group(1) == "mixed-precision"
    assert "1 wrong today" in first.group(2)
    assert 'href="/cards/mixed-precision"' in first.group(2)
    assert 'href="/quiz?mode=practice&amp;topic=mixed-precision"' in first.group(2)


def test_the_results_count_today_only_and_no_mock_interview(quiz_client: TestClient) -> None:
    register(quiz_client)
    for item_id in STUDY_ORDER:
        answer_after(quiz_client, item_id, 10, **RIGHT[item_id])
    with Session(quiz_client.app.state.engine) as session:
        old = session.exec(select(QuizAttempt).where(QuizAttempt.item_id == "fx-single")).one()
        old.created_at = datetime.now(UTC) - timedelta(days=2)
        session.add(old)
        session.commit()
    mock = quiz_client.post("/mock", data={"questions": "3", "minutes": "5"})
    item_id = shown_item(mock.text)
    quiz_client.post(f"{mock.url}/answer", data={"item_id": item_id, "index": "0",
                                                 **RIGHT[item_id]})  # fmt: skip
    with Session(quiz_client.app.state.engine) as session:
        assert len(session.exec(select(QuizAttempt)).all()) == 6
    page = quiz_client.get("/quiz").text
    assert re.search(r'id="results-answers"><span class="stat-value">4<', page)
    # All right and freshly reviewed: nothing is weak.
    assert '<p id="review-next">Nothing weak today' in page


def test_done_with_no_answer_today_shows_no_results(quiz_client: TestClient) -> None:
    register(quiz_client)
    for item_id in STUDY_ORDER:
        answer_after(quiz_client, item_id, 10, **RIGHT[item_id])
    with Session(quiz_client.app.state.engine) as session:
        for attempt in session.exec(select(QuizAttempt)):
            attempt.created_at = datetime.now(UTC) - timedelta(days=2)
            session.add(attempt)
        session.commit()
    page = quiz_client.get("/quiz").text
    assert 'id="all-done"' in page and 'id="review-results"' not in page


def test_the_question_shows_keyboard_keys(quiz_client: TestClient) -> None:
    register(quiz_client)
    page = quiz_client.get("/quiz").text
    assert '<kbd class="key" aria-hidden="true">1</kbd>' in page
    assert 'class="keys-hint">Keys: <kbd>1</kbd>–<kbd>9</kbd> picks an option' in page
    fragment = answer_after(quiz_client, "fx-single", 5, **RIGHT["fx-single"])
    assert "<kbd>Enter</kbd> or <kbd>Space</kbd> goes to the next question" in fragment


def test_a_daily_review_brings_in_at_most_new_per_day_new_items(client: TestClient) -> None:
    """With the real bank (over 200 items) a first review is NEW_PER_DAY items, not all."""
    from app.quiz.review_queue import NEW_PER_DAY, new_left_today, next_item
    from app.quiz.scheduling import new_card

    register(client)
    assert bar(client.get("/quiz").text)[1] == NEW_PER_DAY
    bank = client.app.state.quiz
    now = datetime.now(UTC)
    with Session(client.app.state.engine) as session:
        user_id = session.exec(select(QuizAttempt.user_id)).first()
        user_id = user_id or session.exec(select(ItemState.user_id)).first() or 1
        for n, item in enumerate(bank.all()[:NEW_PER_DAY]):
            session.add(QuizAttempt(user_id=user_id, item_id=item.id, kind=item.kind,
                                    question_params={}, prompt="p", correct=True))  # fmt: skip
            card = new_card(n + 1, now)
            session.add(ItemState(user_id=user_id, item_id=item.id, fsrs_card=card.to_dict(),
                                  due=now + timedelta(days=2)))  # fmt: skip
        session.commit()
        assert new_left_today(session, user_id, now) == 0
        cards = [c.meta.id for c in client.app.state.cards.all()]
        assert next_item(session, user_id, bank, cards, "review", now=now) is None
        assert next_item(session, user_id, bank, cards, "practice", now=now) is not None
        tomorrow = now + timedelta(days=1)
        assert new_left_today(session, user_id, tomorrow) == NEW_PER_DAY


def test_a_count_of_new_items_left_given_by_the_caller_is_used_as_is(
    quiz_client: TestClient,
) -> None:
    """A quiz page counts today's new items once and hands the count to both the queue and
    the progress bar."""
    from app.quiz.progress import review_count
    from app.quiz.review_queue import next_item

    register(quiz_client)
    bank = quiz_client.app.state.quiz
    cards = sorted({item.card for item in bank.all()})
    with Session(quiz_client.app.state.engine) as session:
        user_id = session.exec(select(User.id)).one()
        assert next_item(session, user_id, bank, cards, "review", new_left=0) is None
        assert next_item(session, user_id, bank, cards, "review", new_left=1) == (
            bank.get(STUDY_ORDER[0]), "new")  # fmt: skip
        assert review_count(session, user_id, bank, cards, new_left=2).new == 2
        assert review_count(session, user_id, bank, cards).new == len(STUDY_ORDER)
