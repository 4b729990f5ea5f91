"""Mock interview pages: start, answer or skip each question against the clock, end early,
the report. A refused answer, skip or end says what is wrong (422) above the page the learner
should be on: the current question, or the report once the interview is over."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import FormData

from app.calc.messages import words_of
from app.db import SessionDep
from app.forms import SubmittedForm, parse_form
from app.i18n import N_, say
from app.language import request_language
from app.quiz.answer_form import read_answer_form
from app.quiz.grading import AnswerError
from app.quiz.mock import (
    MOCK_LABELS,
    MockClosed,
    MockSettings,
    NotEnoughItems,
    answered,
    current_question,
    deadline,
    end_early,
    handled_as,
    mock_of,
    next_index,
    open_questions,
    refusal,
    skip_question,
    start_mock,
)
from app.quiz.mock_report import report
from app.quiz.models import MockInterview, QuizAttempt
from app.quiz.review_queue import UnknownTopic, topic_cards, topics
from app.quiz.service import DRAWS, Question, grade, record_answer
from app.route_guards import GuardedRoute
from app.security import CurrentUser
from app.templating import templates

router = APIRouter(
    route_class=GuardedRoute, prefix="/mock", tags=["pages"], include_in_schema=False
)


def _start_page(request: Request, status_code: int = 200, **extra: object) -> HTMLResponse:
    state, lang = request.app.state, request_language(request)
    context = {"topics": topics(state.cards, state.quiz, lang), **extra}
    return templates.TemplateResponse(request, "quiz/mock_start.html", context, status_code)


@router.get("", response_class=HTMLResponse)
def mock_start_page(request: Request, user: CurrentUser) -> HTMLResponse:  # noqa: ARG001
    return _start_page(request)


@router.post("", response_class=HTMLResponse, response_model=None)
def mock_start(
    request: Request, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    settings, errors = parse_form(MockSettings, form, MOCK_LABELS)
    if settings is None:
        return _start_page(request, 422, errors=errors)
    try:
        card_ids = topic_cards(request.app.state.cards, settings.topic)
        mock = start_mock(session, user, request.app.state.quiz, card_ids, settings.questions,
                          settings.minutes, DRAWS, settings.level,
                          settings.style)  # fmt: skip
    except (UnknownTopic, NotEnoughItems) as exc:
        return _start_page(request, 422, errors=[say(words_of(exc))])
    return RedirectResponse(f"/mock/{mock.id}", status_code=303)


def _own_mock(session: SessionDep, user: CurrentUser, mock_id: int) -> MockInterview:
    mock = mock_of(session, user, mock_id)
    if mock is None:
        raise HTTPException(404, N_("no such mock interview"))
    return mock


def _question_page(
    request: Request, session: SessionDep, mock: MockInterview, index: int, question: Question,
    status_code: int = 200, **extra: object,
) -> HTMLResponse:  # fmt: skip
    remaining_s = max(0, int((deadline(mock) - datetime.now(UTC)).total_seconds()))
    context = {"mock": mock, "index": index, "question": question, "remaining_s": remaining_s,
               "shown_at": int(time.time() * 1000),
               "left": len(open_questions(mock, answered(session, mock))), **extra}  # fmt: skip
    return templates.TemplateResponse(request, "quiz/mock_question.html", context, status_code)


def _report_page(
    request: Request, session: SessionDep, mock: MockInterview, status_code: int = 200,
    **extra: object,
) -> HTMLResponse:  # fmt: skip
    lang = request_language(request)
    titles = {c.meta.id: c.meta.title for c in request.app.state.cards.in_language(lang)}
    mock_report = report(session, mock, request.app.state.quiz, titles, lang=lang,
                         cards=request.app.state.cards)  # fmt: skip
    context = {"mock": mock, "report": mock_report, **extra}
    return templates.TemplateResponse(request, "quiz/mock_report.html", context, status_code)


def _page(
    request: Request, session: SessionDep, mock: MockInterview, status_code: int = 200,
    **extra: object,
) -> HTMLResponse:  # fmt: skip
    """The question being asked, or the report once the interview is over."""
    current = current_question(session, mock, request.app.state.quiz,
                               lang=request_language(request))  # fmt: skip
    if current is None:
        return _report_page(request, session, mock, status_code, **extra)
    return _question_page(request, session, mock, *current, status_code, **extra)


def _index_of(form: FormData) -> int | None:
    """The question a form is for, 0-based, as the page that sent it numbered it."""
    try:
        return int(str(form.get("index", "")))
    except ValueError:
        return None


def _acknowledged(
    mock: MockInterview, attempts: dict[int, QuizAttempt], after: int | None
) -> dict[str, object] | None:
    """What to acknowledge of question number `after`: how it was dealt with, if it is the one
    just before the question now asked (or the last). Read from the database, so an edited or
    old link claims nothing."""
    if after is None:
        return None
    asked = next_index(mock, attempts)
    if after != (len(mock.questions) if asked is None else asked):
        return None
    handled = handled_as(mock, attempts, after - 1)
    return {"number": after, "as": handled} if handled else None


@router.get("/{mock_id}", response_class=HTMLResponse)
def mock_page(
    request: Request, mock_id: int, user: CurrentUser, session: SessionDep,
    after: int | None = None,
) -> HTMLResponse:  # fmt: skip
    """`after`: the number of the question just answered or skipped, acknowledged at the top."""
    mock = _own_mock(session, user, mock_id)
    acknowledged = _acknowledged(mock, answered(session, mock), after)
    return _page(request, session, mock, acknowledged=acknowledged)


@router.post("/{mock_id}/answer", response_class=HTMLResponse, response_model=None)
def mock_answer(
    request: Request, mock_id: int, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    """Records the answer to the current question and moves on; no verdict until the report,
    as in an interview."""
    mock = _own_mock(session, user, mock_id)
    index = _index_of(form)
    refused = refusal(mock, answered(session, mock), index, datetime.now(UTC))
    if refused is not None:
        return _page(request, session, mock, 422, refused=say(refused))
    current = current_question(session, mock, request.app.state.quiz,
                               lang=request_language(request))  # fmt: skip
    if current is None:  # its item was removed from the bank just now: the report
        return RedirectResponse(f"/mock/{mock_id}", status_code=303)
    fields = read_answer_form(form)
    asked, question = current
    try:
        outcome = grade(question, fields.answer, fields.picked, fields.rating,
                        fields.duration_s, fields.hinted, fields.response,
                        fields.compared)  # fmt: skip
    except AnswerError as exc:
        return _question_page(request, session, mock, *current, 422,
                              shown_at=form.get("shown_at", ""),
                              answer_error=say(words_of(exc)))  # fmt: skip
    record_answer(session, user, question, outcome, mock_id=mock.id)
    return RedirectResponse(f"/mock/{mock_id}?after={asked + 1}", status_code=303)


@router.post("/{mock_id}/skip", response_class=HTMLResponse, response_model=None)
def mock_skip(
    request: Request, mock_id: int, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    """Skips the current question: reported as skipped, not wrong, and no item rescheduled."""
    mock = _own_mock(session, user, mock_id)
    try:
        skipped = skip_question(session, mock, _index_of(form), read_answer_form(form).duration_s)
    except MockClosed as exc:
        return _page(request, session, mock, 422, refused=say(words_of(exc)))
    return RedirectResponse(f"/mock/{mock_id}?after={skipped + 1}", status_code=303)


@router.post("/{mock_id}/end", response_class=HTMLResponse, response_model=None)
def mock_end(
    request: Request, mock_id: int, user: CurrentUser, session: SessionDep
) -> HTMLResponse | RedirectResponse:
    """Ends the interview now (the page asks first); the questions left count as unanswered."""
    mock = _own_mock(session, user, mock_id)
    try:
        end_early(session, mock)
    except MockClosed as exc:
        return _page(request, session, mock, 422, refused=say(words_of(exc)))
    return RedirectResponse(f"/mock/{mock_id}", status_code=303)
