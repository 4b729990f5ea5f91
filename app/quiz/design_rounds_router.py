"""System-design rounds' pages (issue #27): the list, a round's brief and answer sheet, and the
sheet graded term by term beside the calculators' figures. Included by design_router, so the
paths sit under /mock/design."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from app.db import SessionDep
from app.forms import SubmittedForm
from app.i18n import N_
from app.language import request_language
from app.quiz.design_keys import filled, input_figures, round_figures
from app.quiz.design_rounds import DesignRound, DesignRounds
from app.quiz.design_sheet import YES_NO_WORDS, grade_sheet, parse_sheet, record_round
from app.quiz.layouts import SCHEDULE_TEXT
from app.route_guards import GuardedRoute
from app.security import CurrentUser
from app.templating import templates

router = APIRouter(
    route_class=GuardedRoute, prefix="/rounds", tags=["pages"], include_in_schema=False
)


def _bank(request: Request) -> DesignRounds:
    return request.app.state.design_rounds


def _round(request: Request, round_id: str) -> DesignRound:
    round_ = _bank(request).get(round_id)
    if round_ is None:
        raise HTTPException(404, N_("no such design round"))
    return round_


@router.get("", response_class=HTMLResponse)
def rounds_page(request: Request, user: CurrentUser) -> HTMLResponse:  # noqa: ARG001
    """Every round: its title, kind, level and model."""
    lang = request_language(request)
    rows = [(r, filled(r.words(lang).title, input_figures(r))) for r in _bank(request).all()]
    return templates.TemplateResponse(request, "quiz/design_rounds.html", {"rows": rows})


def _page(
    request: Request, round_: DesignRound, status_code: int = 200, **extra: object
) -> HTMLResponse:
    words = round_.words(request_language(request))
    figures = round_figures(round_)
    context = {
        "round": round_, "title": filled(words.title, figures),
        "brief": filled(words.brief, figures), "watch": [filled(w, figures) for w in words.watch],
        "schedules": SCHEDULE_TEXT, "yes_no": YES_NO_WORDS, **extra,
    }  # fmt: skip
    if "result" in extra:  # the answer and the next questions only once the sheet is in
        context["model_answer"] = filled(words.model_answer, figures)
        context["next_questions"] = [filled(q, figures) for q in words.next_questions]
    return templates.TemplateResponse(request, "quiz/design_round.html", context, status_code)


@router.get("/{round_id}", response_class=HTMLResponse)
def round_page(request: Request, round_id: str, user: CurrentUser) -> HTMLResponse:  # noqa: ARG001
    """The brief and an empty answer sheet."""
    return _page(request, _round(request, round_id))


@router.post("/{round_id}", response_class=HTMLResponse)
def round_answer(
    request: Request, round_id: str, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse:
    """Grades the sheet term by term and records it; form errors come back inline (422) and are
    not recorded."""
    round_ = _round(request, round_id)
    sheet, errors = parse_sheet(round_, form)
    # Text fields only: a file sent in a field's name is no answer to it.
    values = {k: v for k, v in form.items() if k != "watch" and isinstance(v, str)}
    ticked = {int(i) for i in form.getlist("watch") if isinstance(i, str) and i.isdigit()
              and len(i) <= 2}  # fmt: skip
    if sheet is None:
        return _page(request, round_, 422, errors=errors, values=values, ticked=ticked)
    result = grade_sheet(round_, sheet)
    assert user.id is not None
    record_round(session, user.id, round_, sheet, result)
    return _page(request, round_, result=result, values=values, ticked=set(sheet.watch))
