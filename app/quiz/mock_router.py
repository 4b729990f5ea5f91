"""Mock interview pages: start, answer each question against the clock, the report."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.calc.messages import words_of
from app.db import SessionDep
from app.forms import SubmittedForm, parse_form
from app.i18n import N_, say
from app.language import request_language
from app.quiz.answer_form import read_answer_form
from app.quiz.grading import AnswerError
from app.quiz.mock import (
    MOCK_LABELS,
    MockSettings,
    NotEnoughItems,
    current_question,
    deadline,
    mock_of,
    report,
    start_mock,
)
from app.quiz.models import MockInterview
from app.quiz.review_queue import UnknownTopic, topic_cards, topics
from app.quiz.service import grade, record_answer
from app.security import CurrentUser
from app.templating import templates

router = APIRouter(prefix="/mock", tags=["pages"], include_in_schema=False)


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
                          settings.minutes, random.Random())  # fmt: skip
    except (UnknownTopic, NotEnoughItems) as exc:
        return _start_page(request, 422, errors=[say(words_of(exc))])
    return RedirectResponse(f"/mock/{mock.id}", status_code=303)


def _own_mock(session: SessionDep, user: CurrentUser, mock_id: int) -> MockInterview:
    mock = mock_of(session, user, mock_id)
    if mock is None:
        raise HTTPException(404, N_("no such mock interview"))
    return mock


@router.get("/{mock_id}", response_class=HTMLResponse)
def mock_page(
    request: Request, mock_id: int, user: CurrentUser, session: SessionDep
) -> HTMLResponse:
    mock = _own_mock(session, user, mock_id)
    bank = request.app.state.quiz
    lang = request_language(request)
    current = current_question(session, mock, bank, lang=lang)
    if current is None:
        titles = {c.meta.id: c.meta.title for c in request.app.state.cards.in_language(lang)}
        return templates.TemplateResponse(
            request,
            "quiz/mock_report.html",
            {"mock": mock, "report": report(session, mock, bank, titles, lang=lang)},
        )
    index, question = current
    remaining_s = max(0, int((deadline(mock) - datetime.now(UTC)).total_seconds()))
    return templates.TemplateResponse(
        request,
        "quiz/mock_question.html",
        {"mock": mock, "index": index, "question": question, "remaining_s": remaining_s,
         "shown_at": int(time.time() * 1000)},
    )  # fmt: skip


@router.post("/{mock_id}/answer", response_class=HTMLResponse, response_model=None)
def mock_answer(
    request: Request, mock_id: int, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    """Records the answer to the current question (after the clock: not recorded) and moves on;
    no verdict until the report, as in an interview."""
    mock = _own_mock(session, user, mock_id)
    lang = request_language(request)
    current = current_question(session, mock, request.app.state.quiz, lang=lang)
    fields = read_answer_form(form)
    if current is None or str(form.get("index", "")) != str(current[0]):
        return RedirectResponse(f"/mock/{mock_id}", status_code=303)  # stale tab or time up
    index, question = current
    try:
        outcome = grade(question, fields.answer, fields.picked, fields.rating,
                        fields.duration_s, fields.hinted)  # fmt: skip
    except AnswerError as exc:
        remaining_s = max(0, int((deadline(mock) - datetime.now(UTC)).total_seconds()))
        return templates.TemplateResponse(
            request,
            "quiz/mock_question.html",
            {"mock": mock, "index": index, "question": question, "remaining_s": remaining_s,
             "shown_at": form.get("shown_at", ""), "answer_error": say(words_of(exc))},
            status_code=422,
        )  # fmt: skip
    record_answer(session, user, question, outcome, mock_id=mock.id)
    return RedirectResponse(f"/mock/{mock_id}", status_code=303)
