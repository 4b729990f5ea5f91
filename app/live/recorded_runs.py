"""Recorded demo runs: a finished run replayed through the same templates as a live one (its
shareable link), and its raw rows, one per rank per step (app/live/raw_rows.py).

Mounted under /demos by app/live/router.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent

from app.i18n import N_, gettext
from app.live.demo_page import DemoPage
from app.live.models import DemoRun
from app.live.pages import DEMO_PAGES
from app.live.raw_rows import measurement_rows, rows_csv, rows_json
from app.live.run_view import RunView, card_links, failure_event, status_event
from app.live.runs import get_run
from app.route_guards import GuardedRoute
from app.templating import templates

router = APIRouter(route_class=GuardedRoute)


def _page_of(demo: str) -> DemoPage | None:
    return next((page for page in DEMO_PAGES.values() if page.demo == demo), None)


def _recorded(request: Request, run_id: str) -> tuple[DemoRun, DemoPage]:
    run = get_run(request.app.state.engine, run_id)
    page = _page_of(run.demo) if run else None
    if run is None or page is None or run.world_size is None:
        raise HTTPException(404, N_("No such demo run (the link may be mistyped)."))
    return run, page


@router.get("/runs/{run_id}", response_class=HTMLResponse, include_in_schema=False)
def recorded_run(
    request: Request, recorded: Annotated[tuple[DemoRun, DemoPage], Depends(_recorded)]
) -> HTMLResponse:
    """A finished run, shown with the page it ran from; its events replay through the stream."""
    run, page = recorded
    params = page.params.model_validate(run.params)
    context = {
        "page": page,
        "params": params,
        "errors": [],
        "card_links": card_links(request, page),
        "run": run,
        "prediction": page.predict(params, int(run.world_size or 1)),
        "world_size": run.world_size,
        "status": {"world_size": run.world_size, "backend": run.backend},
        "stream_url": f"/demos/runs/{run.id}/events",
    }
    return templates.TemplateResponse(request, "demos/run.html", context)


@router.get("/runs/{run_id}/events", response_class=EventSourceResponse, include_in_schema=False)
async def recorded_run_events(
    request: Request, recorded: Annotated[tuple[DemoRun, DemoPage], Depends(_recorded)]
) -> AsyncIterable[ServerSentEvent]:
    """A recorded run's events, replayed through the same templates as a live run."""
    run, page = recorded
    view = RunView(request, page, page.params.model_validate(run.params), run.id)
    view.accepted(int(run.world_size or 1), run.backend)
    when = f"{run.created_at:%Y-%m-%d %H:%M}"
    yield status_event(request, gettext("Recorded run of %(when)s UTC.") % {"when": when})
    for event in run.events:
        for shown in view.render(event):
            yield shown
    if run.status == "failed" and not any(e.get("event") == "error" for e in run.events):
        yield failure_event(request, run.message or gettext("the run failed"))
    yield ServerSentEvent(event="done", data="done")


def _download(run: DemoRun, body: str, suffix: str, media_type: str) -> Response:
    filename = f"shardlab-{run.demo.replace('_', '-')}-{run.id}-rows.{suffix}"
    disposition = {"Content-Disposition": f'attachment; filename="{filename}"'}
    return Response(body, media_type=media_type, headers=disposition)


@router.get("/runs/{run_id}/rows.csv", include_in_schema=False)
def recorded_rows_csv(
    recorded: Annotated[tuple[DemoRun, DemoPage], Depends(_recorded)],
) -> Response:
    """The run's raw rows as CSV: a header, then one row per rank per step."""
    run, _page = recorded
    return _download(run, rows_csv(measurement_rows(run.events)), "csv", "text/csv")


@router.get("/runs/{run_id}/rows.json", include_in_schema=False)
def recorded_rows_json(
    recorded: Annotated[tuple[DemoRun, DemoPage], Depends(_recorded)],
) -> Response:
    """The run's raw rows as a JSON list of objects, one per rank per step."""
    run, _page = recorded
    return _download(run, rows_json(measurement_rows(run.events)), "json", "application/json")
