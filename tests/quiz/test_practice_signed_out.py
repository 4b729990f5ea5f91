"""A visitor practises a step's questions (/practice, app/quiz/practice_router.py): asked,
graded and explained as the quiz does, and kept nowhere; a learner is sent to the quiz."""

from __future__ import annotations

import html
import re
import time
from urllib.parse import parse_qs, urlsplit

from fastapi.testclient import TestClient
from sqlalchemy import Engine, inspect, text
from sqlmodel import Session, func, select

from app.journey.syllabus import syllabus_order
from app.quiz.bank import QuestionBank
from app.quiz.items import FreeResponseItem, GeneratedItem
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.rendering import markdown_inline_html
from app.quiz.service import question_for
from tests.quiz.conftest import shown_item
from tests.utils import csrf_token, refresh_csrf, register

FIRST_CARD = syllabus_order()[0]  # step 1: a question of every kind


def _rows(engine: Engine) -> dict[str, int]:
    """Every table's row count: what a request that writes nothing leaves as it was."""
    names = inspect(engine).get_table_names()  # either database's catalogue
    with engine.connect() as conn:
        return {n: conn.execute(text(f'SELECT COUNT(*) FROM "{n}"')).scalar_one() for n in names}


def _answers_kept(engine: Engine) -> tuple[int, int]:
    with Session(engine) as session:
        attempts = session.exec(select(func.count()).select_from(QuizAttempt)).one()
        states = session.exec(select(func.count()).select_from(ItemState)).one()
    return attempts, states


def _inputs(page: str) -> dict[str, str]:
    """The hidden fields that name a generated question's drawn inputs."""
    return dict(re.findall(r'name="(in_\w+)" value="([^"]+)"', page))


def _answer(bank: QuestionBank, page: str, right: bool) -> dict[str, object]:
    """The form fields that answer the question on the page, right or wrong."""
    item = bank.get(shown_item(page))
    assert item is not None
    fields: dict[str, object] = {"item_id": item.id, "shown_at": str(int(time.time() * 1000))}
    if item.kind == "flashcard":
        return fields | {"rating": "3" if right else "1"}
    if isinstance(item, FreeResponseItem):  # compared, then every rubric point or none ticked
        said = item.model_answer if right else "I do not know."
        ticked = [str(i) for i in range(len(item.rubric))] if right else []
        return fields | {"response": said, "compared": "1", "option": ticked}
    if item.kind in ("single", "multiple"):
        options = [str(i) for i, o in enumerate(item.options) if o.correct == right]
        return fields | {"option": options if item.kind == "multiple" else options[0]}
    choices = 0  # a generated question answered by picking one of its numbered options
    if isinstance(item, GeneratedItem):
        inputs = {k.removeprefix("in_"): float(v) for k, v in _inputs(page).items()}
        solution = question_for(item, inputs).solution
        assert solution is not None
        expected, choices = solution.answer, len(solution.options)
        fields |= _inputs(page)
    else:
        expected = item.answer
    # Wrong: the next option, or a figure ten times too large.
    wrong = expected % choices + 1 if choices else expected * 10 + 1
    return fields | {"answer": f"{expected if right else wrong:.10g}"}


def _post(client: TestClient, fields: dict[str, object], step: int = 1) -> object:
    return client.post(f"/practice/answer?topic={FIRST_CARD}&step={step}", data=fields,
                       headers={"HX-Request": "true"})  # fmt: skip


def test_a_visitor_practises_every_question_of_a_step_and_nothing_is_kept(
    client: TestClient,
) -> None:
    engine, bank = client.app.state.engine, client.app.state.quiz
    step = client.get("/path/1").text
    link = re.search(r'href="([^"]+)" id="part-questions"', step)
    assert link and html.unescape(link.group(1)) == f"/practice?topic={FIRST_CARD}&step=1"
    refresh_csrf(client)
    before = _rows(engine)
    assert _answers_kept(engine) == (0, 0)
    url, asked = html.unescape(link.group(1)), []
    for _ in bank.for_cards([FIRST_CARD]):
        page = client.get(url)
        assert page.status_code == 200 and 'id="not-saved"' in page.text
        asked.append(shown_item(page.text))
        wrong = _post(client, _answer(bank, page.text, right=False))
        assert wrong.status_code == 200 and 'class="panel result wrong"' in wrong.text
        right = _post(client, _answer(bank, page.text, right=True))
        assert right.status_code == 200 and 'class="panel result right"' in right.text
        assert "Not saved" in right.text and "Recorded." not in right.text
        assert "next-due" not in right.text and "undo" not in right.text.lower()
        next_link = re.search(r'id="next-question" href="([^"]+)"', right.text)
        assert next_link
        url = html.unescape(next_link.group(1))
    # Every question of the card came round once, in the bank's order.
    assert asked == [item.id for item in bank.for_cards([FIRST_CARD])]
    assert _answers_kept(engine) == (0, 0)
    assert _rows(engine) == before


def test_a_visitor_s_answer_is_explained_as_the_quiz_explains_it(client: TestClient) -> None:
    bank = client.app.state.quiz
    refresh_csrf(client)
    items = bank.for_cards([FIRST_CARD])
    last = client.get(f"/practice?topic={FIRST_CARD}&after={items[-1].id}").text
    assert shown_item(last) == items[0].id  # after the last question, the first again
    single = next(i for i in items if i.kind == "single")
    after = items[items.index(single) - 1].id
    page = client.get(f"/practice?topic={FIRST_CARD}&step=1&after={after}").text
    assert shown_item(page) == single.id
    result = _post(client, _answer(bank, page, right=False)).text
    assert "Not quite." in result
    # Every option is shown with whether it is right and why, as the quiz shows it.
    assert result.count('data-correct="true"') == sum(o.correct for o in single.options)
    for option in single.options:
        assert str(markdown_inline_html(option.explanation)) in result
    assert "<strong>You picked:</strong>" in result


def test_a_learner_on_the_practice_page_is_sent_to_the_quiz(client: TestClient) -> None:
    register(client)
    quiz = f"/quiz?mode=practice&topic={FIRST_CARD}"
    page = client.get(f"/practice?topic={FIRST_CARD}&step=1", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == quiz
    answer = client.post(f"/practice/answer?topic={FIRST_CARD}", data={"item_id": "x"},
                         follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303 and answer.headers["location"] == quiz


def test_the_not_saved_line_comes_back_to_the_step_s_questions_after_registering(
    client: TestClient,
) -> None:
    page = client.get(f"/practice?topic={FIRST_CARD}&step=1").text
    line = re.search(r'<p class="notice not-saved" id="not-saved">(.*?)</p>', page, re.S)
    assert line and "Not saved" in line.group(1) and "to keep your progress." in line.group(1)
    found = re.findall(r'<a href="([^"]+)">([^<]+)</a>', line.group(1))
    links = {words: html.unescape(href) for href, words in found}
    quiz = f"/quiz?mode=practice&topic={FIRST_CARD}"
    assert parse_qs(urlsplit(links["sign in"]).query) == {"next": [quiz]}
    assert urlsplit(links["register"]).path == "/register"
    form = client.get(links["register"]).text
    next_value = re.search(r'name="next" value="([^"]*)"', form)
    assert next_value and html.unescape(next_value.group(1)) == quiz
    done = client.post("/register", data={"username": "ada", "password": "correct horse",
                                          "next": quiz, "csrf_token": csrf_token(client)},
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303 and done.headers["location"] == quiz
    assert 'name="item_id"' in client.get(quiz).text


def test_an_unknown_card_is_a_422_that_says_so(client: TestClient) -> None:
    page = client.get("/practice?topic=no-such-card&step=1")
    assert page.status_code == 422 and "no card called &#39;no-such-card&#39;" in page.text
    refresh_csrf(client)
    answer = client.post("/practice/answer?topic=no-such-card", data={"item_id": "x"})
    assert answer.status_code == 422 and "no card called" in answer.text


def test_a_card_without_questions_is_a_422_that_says_so(quiz_client: TestClient) -> None:
    page = quiz_client.get("/practice?topic=training-compute")
    assert page.status_code == 422
    assert "the card &#39;training-compute&#39; has no questions yet" in page.text


def test_an_edited_item_or_input_is_a_422_with_its_reason(client: TestClient) -> None:
    bank = client.app.state.quiz
    refresh_csrf(client)
    page = client.get(f"/practice?topic={FIRST_CARD}&step=1").text
    fields = _answer(bank, page, right=True)
    unknown = _post(client, {**fields, "item_id": "no-such-item"})
    assert unknown.status_code == 422 and "No quiz item called" in unknown.text
    generated = next(i for i in bank.for_cards([FIRST_CARD]) if isinstance(i, GeneratedItem))
    assert fields["item_id"] == generated.id  # the card's first question
    edited = {**fields, **dict.fromkeys(_inputs(page), "12345")}
    changed = _post(client, edited)
    assert changed.status_code == 422 and "inputs were changed" in changed.text
    unanswered = _post(client, {"item_id": next(i.id for i in bank.for_cards([FIRST_CARD])
                                                 if i.kind == "single")})  # fmt: skip
    assert unanswered.status_code == 422 and "pick an option" in unanswered.text
    assert _answers_kept(client.app.state.engine) == (0, 0)
