"""The quiz page, answering, and the progress page."""

from __future__ import annotations

import math
import random
from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse

from app.db import SessionDep
from app.quiz.bank import QuestionBank
from app.quiz.service import (
    BadQuestion,
    Question,
    attempts_of,
    draw_question,
    question_for,
    record_attempt,
)
from app.security import CurrentUser
from app.templating import templates

router = APIRouter(tags=["pages"], include_in_schema=False)


def _bank(request: Request) -> QuestionBank:
    return request.app.state.quiz


@router.get("/quiz", response_class=HTMLResponse)
def quiz_page(request: Request, user: CurrentUser) -> HTMLResponse:
    items = _bank(request).all()
    rng = random.Random()
    question = draw_question(rng.choice(items), rng)
    return templates.TemplateResponse(request, "quiz/question.html", {"question": question})


def _parse_answer(text: str) -> float | None:
    try:
        value = float(text.strip().replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@router.post("/quiz/answer", response_class=HTMLResponse)
async def answer(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    item_id: Annotated[str, Form(max_length=100)],
    answer: Annotated[str, Form(max_length=100)] = "",
) -> HTMLResponse:
    item = _bank(request).get(item_id)
    if item is None:
        raise HTTPException(422, f"no quiz item called {item_id!r}")
    form = await request.form()
    try:
        inputs = {name: float(str(form.get(f"in_{name}", ""))) for name in item.choices}
        question = question_for(item, inputs)
    except (ValueError, BadQuestion) as exc:
        raise HTTPException(422, f"this question's inputs were changed: {exc}") from exc
    value = _parse_answer(answer)
    partial = request.headers.get("HX-Request") == "true"
    if value is None:
        return _answered(
            request, question, partial, error="Answer: type a number, e.g. 16.6", status=422
        )
    attempt = record_attempt(session, user, question, value)
    return _answered(request, question, partial, attempt=attempt)


def _answered(
    request: Request, question: Question, partial: bool, status: int = 200, **context: object
) -> HTMLResponse:
    template = "quiz/_result.html" if partial else "quiz/question.html"
    return templates.TemplateResponse(
        request, template, {"question": question, **context}, status_code=status
    )


@router.get("/progress", response_class=HTMLResponse)
def progress_page(request: Request, user: CurrentUser, session: SessionDep) -> HTMLResponse:
    attempts = attempts_of(session, user)
    correct = sum(a.correct for a in attempts)
    return templates.TemplateResponse(
        request, "quiz/progress.html", {"attempts": attempts, "correct": correct}
    )
