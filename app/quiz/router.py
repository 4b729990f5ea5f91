"""The review and practice pages, answering and undoing an answer; progress, groups and mock
interviews are routed from their own modules and included here."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import FormData

from app.calc.messages import Message, words_of
from app.cards.service import CardLibrary
from app.db import STORED_INTEGERS, SessionDep
from app.errors import is_htmx
from app.forms import SubmittedForm
from app.i18n import N_, gettext, say
from app.language import request_language
from app.quiz.answer_form import read_answer_form
from app.quiz.bank import QuestionBank
from app.quiz.browser_router import router as browser_router
from app.quiz.design_router import router as design_router
from app.quiz.free_router import router as free_router
from app.quiz.grading import AnswerError
from app.quiz.groups_router import router as groups_router
from app.quiz.items import GeneratedItem
from app.quiz.mock_router import router as mock_router
from app.quiz.progress import ReviewCount, review_count, review_results
from app.quiz.progress_router import router as progress_router
from app.quiz.review_queue import (
    Mode,
    UnknownTopic,
    new_left_today,
    next_item,
    schedule_of,
    suspended_ids,
    topic_cards,
    topics,
)
from app.quiz.service import (
    NO_SUCH_ANSWER,
    UNDO_WITHIN,
    BadQuestion,
    CannotUndo,
    Question,
    draw_question,
    grade,
    next_intervals,
    question_for,
    record_answer,
    state_for,
    undo_answer,
)
from app.route_guards import GuardedRoute
from app.security import CurrentUser
from app.templating import templates

router = APIRouter(route_class=GuardedRoute, tags=["pages"], include_in_schema=False)
for _sub in (
    progress_router,
    groups_router,
    design_router,
    mock_router,
    browser_router,
    free_router,
):
    router.include_router(_sub)

# Labels are translated where the page shows them.
MODES: dict[str, str] = {"review": N_("Daily review"), "practice": N_("Practice")}


def bank_of(request: Request) -> QuestionBank:
    return request.app.state.quiz


def _mode(value: str) -> Mode:
    return "practice" if value == "practice" else "review"


def card_title(cards: CardLibrary, card_id: str, lang: str) -> str:
    """The card's title in `lang` (its edition there, else English) for a question's header."""
    card = cards.shown_in(card_id, lang)
    return card.meta.title if card else card_id


def _quiz_url(mode: str, topic: str, skip: str = "") -> str:
    query = {k: v for k, v in (("mode", mode), ("topic", topic), ("skip", skip)) if v}
    return "/quiz" + (f"?{urlencode(query)}" if query else "")


@router.get("/quiz", response_class=HTMLResponse)
def quiz_page(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    mode: str = "review",
    topic: str = "",
    skip: str = "",
) -> HTMLResponse:
    """The next item of a daily review (due, then new) or a topic's practice."""
    bank, lang = bank_of(request), request_language(request)
    context: dict[str, object] = {
        "mode": _mode(mode), "topic": topic[:80], "modes": MODES,
        "topics": topics(request.app.state.cards, bank, lang),
    }  # fmt: skip
    try:
        card_ids = topic_cards(request.app.state.cards, topic[:80])
    except UnknownTopic as exc:
        return templates.TemplateResponse(
            request, "quiz/question.html", {**context, "error": say(words_of(exc))}, status_code=422
        )
    assert user.id is not None
    now = datetime.now(UTC)
    # The queue and the progress bar both cap new items by today's allowance and read the
    # user's item states and suspended items: read each once.
    new_left = new_left_today(session, user.id, now) if _mode(mode) == "review" else None
    states = schedule_of(session, user.id, with_cards=_mode(mode) == "practice")
    suspended = suspended_ids(session, user.id)
    chosen = next_item(session, user.id, bank, card_ids, _mode(mode), skip=skip[:100], now=now,
                       new_left=new_left, states_read=states, suspended=suspended)  # fmt: skip
    if chosen is None:
        titles = {c.meta.id: c.meta.title for c in request.app.state.cards.in_language(lang)}
        context["results"] = review_results(session, user.id, bank, card_ids, titles)
        return templates.TemplateResponse(request, "quiz/question.html", context)
    item, reason = chosen
    question = draw_question(bank.in_language(item, lang))
    context |= {"question": question, "reason": reason, "shown_at": int(time.time() * 1000),
                "card_title": card_title(request.app.state.cards, item.card, lang)}  # fmt: skip
    if item.kind == "flashcard":  # rated by the learner: each button says what it schedules
        state = state_for(session, user.id, item.id)
        context["intervals"] = next_intervals(state, user.id, item.id, now)
    if _mode(mode) == "review":
        context["count"] = review_count(session, user.id, bank, card_ids, now, new_left, states,
                                        suspended)  # fmt: skip
    return templates.TemplateResponse(request, "quiz/question.html", context)


def _review_count(
    request: Request, session: SessionDep, user: CurrentUser, mode: Mode, topic: str
) -> ReviewCount | None:
    """Today's review of the topic so far, for the progress bar; practice has no end, and so
    no bar."""
    if mode != "review":
        return None
    try:
        card_ids = topic_cards(request.app.state.cards, topic)
    except UnknownTopic:
        return None
    assert user.id is not None
    return review_count(session, user.id, bank_of(request), card_ids)


def question_from_form(
    bank: QuestionBank, form: FormData, item_id: str, lang: str = "en"
) -> Question:
    """The question the form was showing, in `lang` where the item is translated; HTTP 422 if
    the item or its inputs were changed."""
    item = bank.get(item_id)
    if item is None:
        raise HTTPException(422, gettext("no quiz item called '%(item)s'") % {"item": item_id})
    item = bank.in_language(item, lang)
    inputs = None
    if isinstance(item, GeneratedItem):
        try:
            inputs = {name: float(str(form.get(f"in_{name}", ""))) for name in item.choices}
            return question_for(item, inputs)
        except (ValueError, BadQuestion) as exc:
            why = gettext("this question's inputs were changed: %(why)s") % {"why": exc}
            raise HTTPException(422, why) from exc
    return question_for(item)


@router.post("/quiz/answer", response_class=HTMLResponse)
def answer(
    request: Request, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse:
    fields = read_answer_form(form)
    lang = request_language(request)
    question = question_from_form(bank_of(request), form, fields.item_id, lang)
    mode, topic = _mode(str(form.get("mode", ""))), str(form.get("topic", ""))[:80]
    context: dict[str, object] = {
        "question": question, "mode": mode, "topic": topic, "modes": MODES,
        "next_url": _quiz_url(mode, topic, skip=question.item.id),
        "topics": topics(request.app.state.cards, bank_of(request), lang),
        "card_title": card_title(request.app.state.cards, question.item.card, lang),
    }  # fmt: skip
    partial = is_htmx(request)
    template = "quiz/_result.html" if partial else "quiz/question.html"
    try:
        outcome = grade(question, fields.answer, fields.picked, fields.rating,
                        fields.duration_s, fields.hinted, fields.response,
                        fields.compared)  # fmt: skip
    except AnswerError as exc:
        return templates.TemplateResponse(
            request, template, {**context, "answer_error": say(words_of(exc))}, status_code=422
        )
    attempt, state = record_answer(session, user, question, outcome)
    context |= {"attempt": attempt, "outcome": outcome, "state": state, "partial": partial,
                "count": _review_count(request, session, user, mode, topic),
                "undo_minutes": int(UNDO_WITHIN.total_seconds() // 60)}  # fmt: skip
    return templates.TemplateResponse(request, template, context)


def _attempt_id(value: object) -> int | None:
    """The form's attempt id; None for anything that cannot be one (an id is a 4-byte
    integer on PostgreSQL, so a larger number is no row either, rather than a 500)."""
    text = str(value)
    if not text.isdigit() or len(text) > 10:
        return None
    return int(text) if int(text) in STORED_INTEGERS else None


@router.post("/quiz/undo", response_class=HTMLResponse, response_model=None)
def undo(
    request: Request, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    """Takes the answer back and asks the same question again (a generated one with the same
    inputs), saying why it is asked as the queue would have before the answer."""
    bank, lang = bank_of(request), request_language(request)
    mode, topic = _mode(str(form.get("mode", ""))), str(form.get("topic", ""))[:80]
    context: dict[str, object] = {
        "mode": mode, "topic": topic, "modes": MODES,
        "topics": topics(request.app.state.cards, bank, lang),
    }  # fmt: skip
    try:
        attempt_id = _attempt_id(form.get("attempt_id", ""))
        if attempt_id is None:
            raise CannotUndo(Message(NO_SUCH_ANSWER))
        undone = undo_answer(session, user, attempt_id)
    except CannotUndo as exc:
        return templates.TemplateResponse(
            request, "quiz/question.html", {**context, "error": say(words_of(exc))}, 422
        )
    # Unless the bank has changed since the answer (the item, or its choices): then the page
    # asks whatever comes next.
    item = bank.get(undone.item_id)
    if item is None:
        return RedirectResponse(_quiz_url(mode, topic), status_code=303)
    try:
        question = question_for(bank.in_language(item, lang), undone.question_params)
    except BadQuestion:
        return RedirectResponse(_quiz_url(mode, topic), status_code=303)
    assert user.id is not None
    now, state = datetime.now(UTC), undone.state
    if state is None:
        reason = "new"
    elif state.due <= now:
        reason = "due"
    else:  # not due: a review was asking it again before the end, practice to practise it
        reason = "again" if mode == "review" else "practice"
    context |= {"question": question, "reason": reason, "shown_at": int(time.time() * 1000),
                "card_title": card_title(request.app.state.cards, item.card, lang),
                "count": _review_count(request, session, user, mode, topic)}  # fmt: skip
    if item.kind == "flashcard":
        context["intervals"] = next_intervals(state, user.id, item.id, now)
    return templates.TemplateResponse(request, "quiz/question.html", context)
