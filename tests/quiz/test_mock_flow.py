"""A mock interview's flow (issue #29): each answer is acknowledged without a verdict, a
question can be skipped (reported as skipped, no item rescheduled), the interview can be ended
early (the rest reported as unanswered), and whatever cannot be done now is a 4xx in words
that records nothing."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from httpx import Response
from sqlmodel import Session, select

from app.quiz.models import ItemState, MockInterview, QuizAttempt
from tests.quiz.conftest import shown_item
from tests.quiz.test_review import RIGHT, answer
from tests.utils import log_out, register

HTML = {"Accept": "text/html"}


def start(client: TestClient, questions: int = 3) -> str:
    started = client.post("/mock", data={"questions": str(questions), "minutes": "5"})
    assert started.status_code == 200, started.text
    return started.url.path


def index_of(page: str) -> str:
    match = re.search(r'name="index" value="(\d+)"', page)
    assert match, page[:2000]
    return match.group(1)


def answer_right(client: TestClient, url: str) -> Response:
    page = client.get(url).text
    item_id = shown_item(page)
    data = {"item_id": item_id, "index": index_of(page), **RIGHT[item_id]}
    return client.post(f"{url}/answer", data=data)


def skip(client: TestClient, url: str, seconds_shown: float = 0) -> Response:
    page = client.get(url).text
    shown_at = str(int((time.time() - seconds_shown) * 1000))
    return client.post(f"{url}/skip", data={"index": index_of(page), "shown_at": shown_at})


def the_mock(client: TestClient) -> MockInterview:
    with Session(client.app.state.engine) as session:
        return session.exec(select(MockInterview)).one()


def rows_of(report: str) -> list[tuple[str, str, str]]:
    """The report's table: (number, outcome, the row's HTML) per question."""
    return re.findall(r'<tr data-number="(\d+)" data-outcome="(\w+)"[^>]*>(.*?)</tr>', report, re.S)


def test_an_answer_is_acknowledged_without_a_verdict(quiz_client: TestClient) -> None:
    register(quiz_client)
    url = start(quiz_client)
    first = quiz_client.get(url).text
    assert 'id="mock-ack"' not in first
    assert "you learn which answers were right only in the report at the end" in first
    next_page = answer_right(quiz_client, url)
    assert next_page.status_code == 200 and next_page.url.query == b"after=1"
    ack = re.search(r'<p class="notice mock-ack" id="mock-ack" role="status">(.*?)</p>',
                    next_page.text, re.S)  # fmt: skip
    assert ack and ack.group(1) == "Answer 1 of 3 recorded — next question."
    assert 'Question <span id="mock-index">2</span> of 3' in next_page.text
    assert not re.search(r"Correct|class=\"(ok|bad)\"", next_page.text)  # no verdict yet
    # The acknowledgement is read from the database: a link naming an open question, or an old
    # link once the interview has moved on, claims nothing.
    assert 'id="mock-ack"' not in quiz_client.get(f"{url}?after=2").text
    assert "Answer 2 of 3 recorded" in answer_right(quiz_client, url).text
    assert 'id="mock-ack"' not in quiz_client.get(f"{url}?after=1").text


def test_the_answer_button_says_it_records_the_answer(quiz_client: TestClient) -> None:
    register(quiz_client)
    page = quiz_client.get(start(quiz_client)).text
    form = re.search(r'<form class="stack answer-form".*?</form>', page, re.S).group(0)
    buttons = re.findall(r"<button[^>]*>(.*?)</button>", form, re.S)
    assert buttons == ["Submit answer", "Skip this question"]
    # Skipping sends the form without the answer a field may require.
    assert re.search(r'<button type="submit" formaction="[^"]+/skip" formnovalidate', form)
    assert ">Check<" not in page and "Reload" not in page


def test_a_skipped_question_is_reported_as_skipped_and_leaves_its_schedule_alone(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    for item_id in ("fx-single", "fx-numeric", "fx-multiple", "fx-generated"):
        answer(quiz_client, item_id, **RIGHT[item_id])  # every item has a schedule
    with Session(quiz_client.app.state.engine) as session:
        before = {s.item_id: s.model_dump() for s in session.exec(select(ItemState))}
    url = start(quiz_client, 4)
    skipped_item = shown_item(quiz_client.get(url).text)
    after_skip = skip(quiz_client, url, seconds_shown=7)
    assert after_skip.status_code == 200
    assert "Question 1 of 4 skipped — next question." in after_skip.text
    assert 'Question <span id="mock-index">2</span> of 4' in after_skip.text
    with Session(quiz_client.app.state.engine) as session:
        states = {s.item_id: s.model_dump() for s in session.exec(select(ItemState))}
        assert session.exec(select(QuizAttempt).where(QuizAttempt.mock_id.is_not(None))).all() == []
    assert states == before
    for _ in range(3):
        answer_right(quiz_client, url)
    report = quiz_client.get(url).text
    assert re.search(r"<strong>3 of 4</strong> right \(3 answered, 1 skipped\)", report)
    assert [(n, outcome) for n, outcome, _ in rows_of(report)] == [
        ("1", "skipped"), ("2", "right"), ("3", "right"), ("4", "right")]  # fmt: skip
    skipped_row = rows_of(report)[0][2]
    assert '<td class="outcome">skipped</td>' in skipped_row
    assert '<td class="num question-time">7 s</td>' in skipped_row
    assert re.search(r'id="mock-skipped"><span class="stat-value">1<', report)
    # Skipped is not right: the card is a gap to review.
    card = quiz_client.app.state.quiz.get(skipped_item).card
    gaps = re.search(r'<ul id="gaps">(.*?)</ul>', report, re.S)
    assert gaps and f'data-card="{card}"' in gaps.group(1)


def test_ending_early_reports_the_questions_left_as_unanswered(quiz_client: TestClient) -> None:
    register(quiz_client)
    url = start(quiz_client, 4)
    page = answer_right(quiz_client, url).text
    # Ending asks first: the button is inside a <details>, saying what will happen.
    end = re.search(r'<details class="mock-end" id="mock-end">(.*?)</details>', page, re.S)
    assert end and f'action="{url}/end"' in end.group(1)
    assert "This question and the ones after it, 3 in all, will count as not answered." in (
        end.group(1)
    )
    ended = quiz_client.post(f"{url}/end")
    assert ended.status_code == 200 and ended.url.path == url
    report = ended.text
    assert "Mock interview report" in report
    assert "You ended the interview early: 3 questions were not answered." in report
    assert re.search(r"<strong>1 of 4</strong> right \(1 answered, 0 skipped\)", report)
    rows = rows_of(report)
    assert [(n, outcome) for n, outcome, _ in rows] == [
        ("1", "right"), ("2", "unanswered"), ("3", "unanswered"), ("4", "unanswered")]  # fmt: skip
    assert all("not answered" in row and 'question-time">–<' in row for _, _, row in rows[1:])
    # The time used stops at the end, not at the clock's five minutes.
    used = re.search(r'id="mock-time-used"><span class="stat-value">(\d+) s<', report)
    assert used and int(used.group(1)) < 60
    with Session(quiz_client.app.state.engine) as session:
        assert len(session.exec(select(QuizAttempt)).all()) == 1


def test_a_mock_of_no_one_or_of_someone_else_is_a_404_in_words(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    url = start(quiz_client)
    for missing in ("/mock/999", "/mock/99999999999999999999999"):
        page = quiz_client.get(missing, headers=HTML)
        assert page.status_code == 404 and "No such mock interview" in page.text
    assert quiz_client.get("/mock/first", headers=HTML).status_code == 422
    log_out(quiz_client)
    register(quiz_client, "bob")
    for action in ("/skip", "/end", "/answer"):
        refused = quiz_client.post(f"{url}{action}", data={"index": "0"}, headers=HTML)
        assert refused.status_code == 404 and "No such mock interview" in refused.text
    # Nothing skipped or ended.
    assert all(set(q) == {"item_id", "inputs"} for q in the_mock(quiz_client).questions)


def test_an_answer_after_the_time_ran_out_is_refused_and_not_recorded(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    url = start(quiz_client)
    page = quiz_client.get(url).text
    item_id = shown_item(page)
    with Session(quiz_client.app.state.engine) as session:
        mock = session.exec(select(MockInterview)).one()
        mock.started_at = datetime.now(UTC) - timedelta(minutes=6)
        session.add(mock)
        session.commit()
    late = quiz_client.post(f"{url}/answer", data={"item_id": item_id, "index": "0",
                                                    **RIGHT[item_id]})  # fmt: skip
    assert late.status_code == 422
    assert "This interview is over: the time ran out. Nothing more was recorded." in late.text
    assert "Mock interview report" in late.text
    assert quiz_client.post(f"{url}/skip", data={"index": "0"}).status_code == 422
    assert quiz_client.post(f"{url}/end").status_code == 422
    with Session(quiz_client.app.state.engine) as session:
        assert session.exec(select(QuizAttempt)).all() == []


def test_nothing_is_taken_after_ending_early(quiz_client: TestClient) -> None:
    register(quiz_client)
    url = start(quiz_client)
    page = quiz_client.get(url).text
    item_id = shown_item(page)
    quiz_client.post(f"{url}/end")
    over = "This interview is over: you ended it early. Nothing more was recorded."
    late = quiz_client.post(f"{url}/answer", data={"item_id": item_id, "index": "0",
                                                    **RIGHT[item_id]})  # fmt: skip
    assert late.status_code == 422 and over in late.text
    for action in ("/skip", "/end"):
        refused = quiz_client.post(f"{url}{action}", data={"index": "0"})
        assert refused.status_code == 422 and over in refused.text
    with Session(quiz_client.app.state.engine) as session:
        assert session.exec(select(QuizAttempt)).all() == []


def test_an_answered_or_skipped_question_cannot_be_skipped_or_answered_again(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    url = start(quiz_client, 4)
    first_item = shown_item(quiz_client.get(url).text)
    answer_right(quiz_client, url)
    again = quiz_client.post(f"{url}/skip", data={"index": "0"})
    assert again.status_code == 422
    assert ("Question 1 is answered already; nothing was changed. This is question 2."
            in again.text)  # fmt: skip
    assert 'Question <span id="mock-index">2</span> of 4' in again.text  # the page goes on
    skip(quiz_client, url)
    answer_skipped = quiz_client.post(
        f"{url}/answer", data={"item_id": first_item, "index": "1", "option": "0"}
    )
    assert answer_skipped.status_code == 422
    assert "Question 2 was skipped already; nothing was changed." in answer_skipped.text
    ahead = quiz_client.post(f"{url}/skip", data={"index": "3"})
    assert ahead.status_code == 422
    assert "Question 4 is not asked yet; nothing was recorded. This is question 3." in ahead.text
    for index in ("", "seven", "-1", "40"):
        nameless = quiz_client.post(f"{url}/skip", data={"index": index})
        assert nameless.status_code == 422
        assert "The form did not say which question of this interview it is for" in nameless.text
    skipped = [i for i, q in enumerate(the_mock(quiz_client).questions) if "skipped_at" in q]
    assert skipped == [1]
    with Session(quiz_client.app.state.engine) as session:
        assert len(session.exec(select(QuizAttempt)).all()) == 1


def test_the_last_answer_is_acknowledged_on_the_report(quiz_client: TestClient) -> None:
    register(quiz_client)
    url = start(quiz_client)
    for _ in range(2):
        answer_right(quiz_client, url)
    report = skip(quiz_client, url).text
    assert "Mock interview report" in report
    assert "Question 3 of 3 skipped — that was the last question." in report
    assert "You ended the interview early" not in report and 'id="mock-unanswered"' not in report
