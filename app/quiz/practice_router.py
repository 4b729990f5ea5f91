"""A visitor's practice of one card's questions: asked, graded and explained as the quiz does
(app/quiz/router.py), and kept nowhere. The page says so, with the way to register or log in
and come back to the same questions, whose answers then count.

A signed-in learner is sent to the quiz's practice of the card, which keeps every answer.
Nothing here writes to the database."""

from __future__ import annotations

import time
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.responses import Response

from app.calc.messages import words_of
from app.errors import is_htmx
from app.forms import SubmittedForm
from app.i18n import gettext, say
from app.language import request_language
from app.quiz.answer_form import read_answer_form
from app.quiz.grading import AnswerError
from app.quiz.items import QuizItem
from app.quiz.router import bank_of, card_title, question_from_form
from app.quiz.service import draw_question, grade
from app.route_guards import GuardedRoute
from app.security import OptionalUser
from app.templating import templates

router = APIRouter(route_class=GuardedRoute, tags=["pages"], include_in_schema=False)

MAX_TOPIC_CHARS = 80  # as the quiz reads ?topic=
MAX_STEP_CHARS = 4  # ?step= is only passed on, for the way back (app/journey/return_link.py)


def _url(path: str, **query: str) -> str:
    """`path?name=value&…` for the values that are set."""
    return f"{path}?{urlencode({k: v for k, v in query.items() if v})}"


def quiz_practice_url(card_id: str) -> str:
    """The quiz's practice of the card: where a learner's answers count."""
    return _url("/quiz", mode="practice", topic=card_id)


def _card_items(request: Request, topic: str) -> tuple[list[QuizItem], str | None]:
    """The card's questions in the bank's order, or none and why (a card that does not exist,
    or has no questions)."""
    if topic not in request.app.state.cards:
        return [], gettext("no card called '%(card)s'") % {"card": topic}
    items = bank_of(request).for_cards([topic])
    if not items:
        return [], gettext("the card '%(card)s' has no questions yet") % {"card": topic}
    return items, None


def _context(request: Request, topic: str, step: str) -> dict[str, object]:
    """What the page and an answer's result both show around the question."""
    # After registering or logging in: the same card's questions, in the quiz.
    come_back = quiz_practice_url(topic)
    return {
        "card_title": card_title(request.app.state.cards, topic, request_language(request)),
        "card_url": _url(f"/cards/{topic}", step=step),
        "answer_url": _url("/practice/answer", topic=topic, step=step),
        "register_url": _url("/register", next=come_back),
        "login_url": _url("/login", next=come_back),
    }


@router.get("/practice", response_class=HTMLResponse, response_model=None)
def practice_page(
    request: Request, user: OptionalUser, topic: str = "", step: str = "", after: str = ""
) -> Response:
    """The card's next question: the one after `after` (the item just answered) in the bank's
    order, so that every question comes round in turn, as a new learner's practice would."""
    topic, step = topic[:MAX_TOPIC_CHARS], step[:MAX_STEP_CHARS]
    if user is not None:
        return RedirectResponse(quiz_practice_url(topic), status_code=303)
    context = _context(request, topic, step)
    items, error = _card_items(request, topic)
    if error:
        return templates.TemplateResponse(
            request, "quiz/practice.html", {**context, "error": error}, status_code=422
        )
    ids = [item.id for item in items]
    item = items[(ids.index(after) + 1) % len(items)] if after in ids else items[0]
    lang = request_language(request)
    question = draw_question(bank_of(request).in_language(item, lang))
    context |= {"question": question, "shown_at": int(time.time() * 1000)}
    return templates.TemplateResponse(request, "quiz/practice.html", context)


@router.post("/practice/answer", response_class=HTMLResponse, response_model=None)
def practice_answer(
    request: Request, user: OptionalUser, form: SubmittedForm, topic: str = "", step: str = ""
) -> Response:
    """Grades the answer as the quiz would and shows why; nothing is recorded."""
    topic, step = topic[:MAX_TOPIC_CHARS], step[:MAX_STEP_CHARS]
    if user is not None:
        return RedirectResponse(quiz_practice_url(topic), status_code=303)
    context = _context(request, topic, step)
    _, error = _card_items(request, topic)
    if error:
        return templates.TemplateResponse(
            request, "quiz/practice.html", {**context, "error": error}, status_code=422
        )
    fields = read_answer_form(form)
    # HTTP 422 with its reason if the item or its inputs were changed.
    question = question_from_form(bank_of(request), form, fields.item_id,
                                  request_language(request))  # fmt: skip
    template = "quiz/practice_result.html" if is_htmx(request) else "quiz/practice.html"
    next_url = _url("/practice", topic=topic, step=step, after=question.item.id)
    context |= {"question": question, "next_url": next_url}
    try:
        outcome = grade(question, fields.answer, fields.picked, fields.rating,
                        fields.duration_s, fields.hinted, fields.response,
                        fields.compared)  # fmt: skip
    except AnswerError as exc:
        return templates.TemplateResponse(
            request, template, {**context, "answer_error": say(words_of(exc))}, status_code=422
        )
    return templates.TemplateResponse(request, template, {**context, "outcome": outcome})
