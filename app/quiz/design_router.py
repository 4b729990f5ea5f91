"""The mock interview's "design the run" section: a scenario, a layout form, the planner's score.

Routed before the mock interviews' /mock/{mock_id}, so /mock/design is never read as an id.
"""

from __future__ import annotations

import random

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.db import SessionDep
from app.forms import SubmittedForm, parse_form
from app.quiz.design_rounds_router import router as rounds_router
from app.quiz.design_run import DESIGN_LABELS, DesignAnswer, record_design, score_design
from app.quiz.layouts import SCENARIOS, SCHEDULE_TEXT, planner_url, scenario_fields
from app.route_guards import GuardedRoute
from app.security import CurrentUser
from app.templating import templates

router = APIRouter(
    route_class=GuardedRoute, prefix="/mock/design", tags=["pages"], include_in_schema=False
)
router.include_router(rounds_router)  # /mock/design/rounds: the system-design rounds


def _page(request: Request, scenario: int, status_code: int = 200, **extra: object) -> HTMLResponse:
    context = {"scenario": scenario, "fields": scenario_fields(scenario),
               "scenarios": len(SCENARIOS), "schedules": SCHEDULE_TEXT, **extra}  # fmt: skip
    return templates.TemplateResponse(request, "quiz/mock_design.html", context, status_code)


@router.get("", response_class=HTMLResponse)
def design_page(request: Request, user: CurrentUser, scenario: int | None = None) -> HTMLResponse:  # noqa: ARG001
    """A scenario (the one asked for, else a random one) and an empty layout form."""
    if scenario is None or not 0 <= scenario < len(SCENARIOS):
        scenario = random.randrange(len(SCENARIOS))
    return _page(request, scenario)


@router.post("", response_class=HTMLResponse)
def design_answer(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    form: SubmittedForm,
) -> HTMLResponse:
    """Scores the submitted layout against the planner and records it for the progress page;
    form errors come back inline (422) and are not recorded."""
    answer, errors = parse_form(DesignAnswer, form, DESIGN_LABELS)
    if answer is None:
        try:
            scenario = int(str(form.get("scenario", "")))
        except ValueError:
            scenario = 0
        scenario = scenario if 0 <= scenario < len(SCENARIOS) else 0
        return _page(request, scenario, 422, errors=errors, values=dict(form))
    result = score_design(answer)
    assert user.id is not None
    record_design(session, user.id, answer, result)
    return _page(request, answer.scenario, result=result, values=dict(form),
                 planner_link=planner_url(answer.scenario, answer.layout()))  # fmt: skip
