"""The progress page, the daily review's settings, and export and import of one's own
progress as JSON."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import UploadFile

from app.db import SessionDep
from app.forms import SubmittedForm, parse_form
from app.heavy_work import HeavyWorkSlot
from app.i18n import N_, gettext
from app.language import request_language
from app.quiz.layouts import scenario_fields
from app.quiz.models import MAX_NEW_PER_DAY, MIN_NEW_PER_DAY
from app.quiz.progress import progress_of, recent_designs
from app.quiz.progress_file import export_progress, import_progress, parse_progress
from app.quiz.review_queue import NEW_PER_DAY, new_left_today, new_per_day_of, set_new_per_day
from app.quiz.service import attempts_of
from app.ratelimit import count_import
from app.route_guards import GuardedRoute
from app.security import CurrentUser
from app.templating import templates

router = APIRouter(route_class=GuardedRoute, tags=["pages"], include_in_schema=False)

MAX_IMPORT_BYTES = 20 * 1024 * 1024


class ReviewSettingsForm(BaseModel):
    model_config = ConfigDict(extra="ignore")

    new_per_day: int = Field(ge=MIN_NEW_PER_DAY, le=MAX_NEW_PER_DAY)


SETTINGS_LABELS = {"new_per_day": N_("New cards per day")}


def _page(
    request: Request, user: CurrentUser, session: SessionDep, status_code: int = 200,
    **extra: object,
) -> HTMLResponse:  # fmt: skip
    assert user.id is not None
    lang = request_language(request)
    progress = progress_of(
        session, user.id, request.app.state.quiz, request.app.state.cards, lang=lang
    )
    chart = {
        "days": [int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp())
                 for d, _, _ in progress.history],
        "answers": [n for _, n, _ in progress.history],
        "correct": [c for _, _, c in progress.history],
    }  # fmt: skip
    bank = request.app.state.quiz
    # A weak item is named by its question (in the page's language) and its card's title.
    prompts = {w.item_id: bank.in_language(bank.get(w.item_id), lang).prompt
               for w in progress.weakest}  # fmt: skip
    questions = {item_id: re.sub(r"\{\w+\}", "…", p) for item_id, p in prompts.items()}
    titles = {c.meta.id: c.meta.title for c in request.app.state.cards.in_language(lang)}
    designs = recent_designs(session, user.id)
    scenarios = {d.scenario: scenario_fields(d.scenario) for d in designs if not d.round_id}
    # A system-design round is named by its title; one removed since, by its id.
    rounds = request.app.state.design_rounds
    round_titles = {
        d.round_id: (found.words(lang).title if (found := rounds.get(d.round_id)) else d.round_id)
        for d in designs if d.round_id
    }  # fmt: skip
    now = datetime.now(UTC)
    context = {
        "progress": progress,
        "questions": questions,
        "titles": titles,
        "attempts": attempts_of(session, user, limit=50),
        "designs": designs,
        "scenarios": scenarios,
        "round_titles": round_titles,
        "chart_json": json.dumps(chart),
        # The settings form shows the saved value, or what was typed when it was refused.
        "new_per_day": new_per_day_of(session, user.id),
        "new_per_day_bounds": (MIN_NEW_PER_DAY, MAX_NEW_PER_DAY, NEW_PER_DAY),
        "new_left_today": new_left_today(session, user.id, now),
        **extra,
    }
    return templates.TemplateResponse(request, "quiz/progress.html", context, status_code)


@router.get("/progress", response_class=HTMLResponse)
def progress_page(request: Request, user: CurrentUser, session: SessionDep) -> HTMLResponse:
    return _page(request, user, session)


@router.post("/progress/settings", response_class=HTMLResponse, response_model=None)
def progress_settings(
    request: Request, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    assert user.id is not None
    settings, errors = parse_form(ReviewSettingsForm, form, SETTINGS_LABELS)
    if settings is None:
        typed = str(form.get("new_per_day", ""))[:20]
        return _page(request, user, session, 422, settings_errors=errors, new_per_day=typed)
    set_new_per_day(session, user.id, settings.new_per_day)
    return RedirectResponse("/progress#review-settings", status_code=303)


@router.get("/progress/export")
def progress_export(user: CurrentUser, session: SessionDep, _: HeavyWorkSlot) -> Response:
    assert user.id is not None
    body = json.dumps(export_progress(session, user.id), indent=1)
    name = f"shardlab-progress-{user.username}-{datetime.now(UTC):%Y%m%d}.json"
    return Response(
        body,
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


async def uploaded_file(form: SubmittedForm) -> bytes | None:
    """The chosen file's bytes, at most one past the limit, which is enough to tell it is too
    big; None when no file was chosen. Read here, on the event loop, so that the import can
    run in the thread pool (see app.forms.submitted_form)."""
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        return None
    return await upload.read(MAX_IMPORT_BYTES + 1)


@router.post("/progress/import", response_class=HTMLResponse, dependencies=[Depends(count_import)])
def progress_import(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    raw: Annotated[bytes | None, Depends(uploaded_file)],
    _: HeavyWorkSlot,
) -> HTMLResponse:
    if raw is None:
        problem = gettext("choose a file to import")
        return _page(request, user, session, 422, import_errors=[problem])
    if len(raw) > MAX_IMPORT_BYTES:
        problem = gettext("the file is over %(mib)s MiB") % {"mib": MAX_IMPORT_BYTES // 2**20}
        return _page(request, user, session, 422, import_errors=[problem])
    data, problems = parse_progress(raw)
    if data is None:
        return _page(request, user, session, 422, import_errors=problems)
    assert user.id is not None
    imported = import_progress(session, user.id, data)
    counts = {"answers": imported.attempts_added, "schedules": imported.states_updated,
              "designs": imported.designs_added}  # fmt: skip
    message = gettext("Imported: %(answers)s answers added, %(schedules)s item schedules "
                      "updated, %(designs)s design answers added.") % counts  # fmt: skip
    if imported.goal_restored:
        message += " " + gettext("Study goal restored.")
    if imported.review_settings_restored:
        message += " " + gettext("New cards per day restored.")
    return _page(request, user, session, import_message=message)
