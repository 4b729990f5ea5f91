"""Demo pages, the server-sent-event stream that relays a running demo, and recorded runs.

Every page in app/live/pages/ gets the same four routes (see app/live/demo_page.py):
  GET /demos/<slug>          the page (query parameters pre-fill the form)
  GET /demos/<slug>/run      checks the form and returns the panel that opens the stream
  GET /demos/<slug>/stream   runs the demo on the worker and streams it (SSE)
  GET /demos/runs/<id>       a finished run, replayed through the same templates (shareable)
and a finished run's raw rows, one per rank per step (app/live/raw_rows.py):
  GET /demos/runs/<id>/rows.csv, /demos/runs/<id>/rows.json
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, ValidationError

from app.errors import is_htmx
from app.forms import parse_form, query_inputs
from app.i18n import N_, gettext, say
from app.language import request_language
from app.live.demo_page import DemoPage
from app.live.job_cost import estimated_cost_s
from app.live.models import DemoRun
from app.live.pages import DEMO_PAGES
from app.live.queue import (
    JobQueue,
    Owner,
    QueueBusy,
    QueueCancelled,
    QueueEntry,
    until_cancelled,
)
from app.live.raw_rows import measurement_rows, rows_csv, rows_json
from app.live.runs import finish_run, get_run, start_run
from app.live.verdict import reason_lines, tally
from app.live.worker_client import WorkerClient, WorkerUnavailable
from app.ratelimit import DemoLaunchCheck, client_address, count_demo_launch
from app.security import SESSION_CSRF_KEY, SESSION_USER_KEY
from app.templating import templates
from demos.specs import DEMO_COLLECTIVES
from demos.specs._devices import job_problem

log = logging.getLogger(__name__)

router = APIRouter(prefix="/demos", tags=["demos"])


def _client(request: Request) -> WorkerClient:
    return request.app.state.worker_client


def _queue(request: Request) -> JobQueue:
    return request.app.state.demo_queue


def _owner(request: Request) -> Owner:
    """Whose place a run takes: its account (the signed-in user, else this browser's session,
    else the address) and its client address."""
    address = client_address(request)
    user_id = request.session.get(SESSION_USER_KEY)
    if isinstance(user_id, int):
        return Owner(f"user:{user_id}", address, user_id)
    session_token = request.session.get(SESSION_CSRF_KEY)
    if isinstance(session_token, str):
        # A digest: the token is the session's CSRF secret.
        return Owner(f"session:{hashlib.sha256(session_token.encode()).hexdigest()[:16]}", address)
    return Owner(f"address:{address}", address)


def _render(request: Request, template: str, **context: Any) -> str:
    return templates.get_template(template).render(request=request, **context)


def _html_event(request: Request, template: str, **context: Any) -> ServerSentEvent:
    return ServerSentEvent(raw_data=_render(request, template, **context))


def _status(request: Request, text: str) -> ServerSentEvent:
    return _html_event(request, "demos/_status.html", text=text)


def _failure(request: Request, message: str) -> ServerSentEvent:
    return _html_event(request, "demos/_failure.html", message=message)


def _errors(request: Request, errors: list[str], status_code: int) -> HTMLResponse:
    return templates.TemplateResponse(
        request, "demos/_run_errors.html", {"errors": errors}, status_code=status_code
    )


# A run takes seconds and a worker restarts in a few; the 503 page says "in a minute".
RETRY_AFTER = {"Retry-After": "60"}
# Kept in English with the run; said in the reader's language on the page.
CANCELLED_BY_ADMIN = N_("cancelled by the admin")


def _unavailable(request: Request, message: str) -> HTMLResponse:
    """The run panel's 503: htmx swaps the reason in under the form; a request without htmx
    (the form sent with JavaScript off) gets the 503 page from app/errors.py."""
    if not is_htmx(request):
        raise HTTPException(503, message, headers=RETRY_AFTER)
    response = _errors(request, [message], 503)
    response.headers.update(RETRY_AFTER)
    return response


@router.get("", response_class=HTMLResponse, include_in_schema=False)
def demos_index(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(
        request, "demos/index.html", {"pages": list(DEMO_PAGES.values())}
    )


@dataclass
class RunView:
    """Turns a run's worker events into what the page shows: live, or replayed from the DB."""

    request: Request
    page: DemoPage
    params: BaseModel
    run_id: str
    world_size: int | None = None
    backend: str | None = None
    prediction: Any = None
    measurements: int = 0
    rows: int = 0

    def accepted(self, world_size: int, backend: str | None) -> None:
        self.world_size = world_size
        self.backend = backend
        self.prediction = self.page.predict(self.params, world_size)

    def render(self, event: dict[str, Any]) -> list[ServerSentEvent]:
        context = {
            "params": self.params,
            "prediction": self.prediction,
            "world_size": self.world_size,
            "run_id": self.run_id,
        }
        kind = event.get("event")
        if kind == "measurement" and self.prediction is not None:
            self.measurements += 1
            self.rows += len(event.get("ranks", []))
            template = f"demos/_{self.page.demo}_rows.html"
            shown = [
                _html_event(self.request, template, event=event, **context),
                _html_event(self.request, "demos/_progress.html",
                            measurements=self.measurements, rows=self.rows),
            ]  # fmt: skip
            if self.page.chart_data is not None:
                data = self.page.chart_data(event, self.prediction)
                shown.append(ServerSentEvent(event="measurement", data=data))
            return shown
        if kind == "done":
            template = f"demos/_{self.page.demo}_summary.html"
            summary = event["summary"]
            shown = [_html_event(self.request, template, summary=summary, **context)]
            if self.prediction is not None:
                checks = self.page.verdict(summary, self.prediction, self.backend)
                lines = list(zip(checks, reason_lines(checks), strict=True))
                verdict = {"rows": lines, "tally": tally(checks)}
                shown.append(_html_event(self.request, "demos/_verdict.html", **verdict))
            return shown + [
                _html_event(self.request, "demos/_share.html", run_id=self.run_id),
                self._downloads(),
                _status(self.request, gettext("Finished.")),
            ]
        if kind == "error":
            shown = [
                _failure(self.request, str(event.get("message", gettext("the demo failed")))),
                _status(self.request, gettext("Failed.")),
            ]
            if self.rows:  # the rows measured before the failure are kept with the run
                shown.append(self._downloads())
            return shown
        return []

    def _downloads(self) -> ServerSentEvent:
        return _html_event(self.request, "demos/_downloads.html", run_id=self.run_id, oob=True)


def _card_links(request: Request, page: DemoPage) -> list[tuple[str, str]]:
    """(id, short title in the page's language) of the cards a demo page points to."""
    cards, lang = request.app.state.cards, request_language(request)
    found = [cards.shown_in(card_id, lang) for card_id in page.cards]
    return [(card.meta.id, card.meta.short_title) for card in found if card is not None]


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
        "card_links": _card_links(request, page),
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
    yield _status(request, gettext("Recorded run of %(when)s UTC.") % {"when": when})
    for event in run.events:
        for shown in view.render(event):
            yield shown
    if run.status == "failed" and not any(e.get("event") == "error" for e in run.events):
        yield _failure(request, run.message or gettext("the run failed"))
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


def add_demo_routes(page: DemoPage) -> None:

    def parse(request: Request) -> tuple[BaseModel | None, list[str]]:
        return parse_form(page.params, query_inputs(request), page.labels)

    def show_page(request: Request) -> HTMLResponse:
        params, _errors_ = parse(request)
        return templates.TemplateResponse(
            request,
            f"demos/{page.demo}.html",
            {
                "page": page,
                "params": params or page.params(),
                "errors": [],
                "card_links": _card_links(request, page),
            },
        )

    async def run_panel(request: Request) -> HTMLResponse:
        """Checks the form and the line, asks the worker its size, returns the run panel."""
        params, errors = parse(request)
        if params is None:
            return _errors(request, errors, 422)
        try:
            _queue(request).check(_owner(request), estimated_cost_s(page.demo, params))
        except QueueBusy as exc:
            return _unavailable(request, str(exc))
        await ensure_worker(request)
        try:
            status = await _client(request).status(timeout_s=30.0)
        except WorkerUnavailable as exc:
            return _unavailable(request, str(exc))
        # A worker's device bounds some specs (a model size only a GPU steps in time) and, with
        # gloo on CUDA, which demos it runs: refuse here, before the stream, with the reason.
        device = str(status.get("device", "cpu"))
        collectives = DEMO_COLLECTIVES[page.demo]
        problem = job_problem(page.demo, collectives, params, str(status["backend"]), device)
        if problem is not None:
            return _errors(request, [say(problem)], 422)
        world_size = int(status["world_size"])
        stream_url = f"{page.path}/stream?" + urlencode(params.model_dump())
        context = {
            "page": page,
            "params": params,
            "prediction": page.predict(params, world_size),
            "world_size": world_size,
            "status": status,
            "stream_url": stream_url,
        }
        return templates.TemplateResponse(request, f"demos/_{page.demo}_run.html", context)

    async def checked_params(request: Request) -> BaseModel:
        """The stream's parameters, checked before any byte of the stream is sent. Async, so
        the line is read on the event loop that changes it (app/live/queue.py)."""
        query = {k: v for k, v in query_inputs(request).items() if v != ""}
        try:
            params = page.params.model_validate(query)
        except ValidationError as exc:
            errors = [{**error, "loc": ("query", *error["loc"])} for error in exc.errors()]
            raise RequestValidationError(errors) from exc
        try:
            _queue(request).check(_owner(request), estimated_cost_s(page.demo, params))
        except QueueBusy as exc:
            raise HTTPException(503, str(exc), headers=RETRY_AFTER) from exc
        count_demo_launch(request)  # only a launch that will run counts
        return params

    async def stream(
        request: Request,
        params: BaseModel = Depends(checked_params),  # noqa: B008 - built per page
    ) -> AsyncIterable[ServerSentEvent]:
        """Runs the demo on the worker and streams what each rank measured.

        Unnamed events carry HTML (table rows, status, the summary) for htmx to swap in;
        `measurement` events carry the chart's points as JSON; the stream always ends with a
        `done` event. Closing the stream cancels the job on the worker.
        """
        async for event in relay(request, params):
            yield event

    async def relay(request: Request, params: BaseModel) -> AsyncIterable[ServerSentEvent]:
        queue = _queue(request)
        cost_s = estimated_cost_s(page.demo, params)
        try:
            async with queue.place(_owner(request), page.demo, cost_s) as entry:
                async for ahead in queue.turns(entry):
                    queued = gettext("Queued: %(ahead)s run(s) ahead of this one…")
                    yield _status(request, queued % {"ahead": ahead})
                async for event in run_and_record(request, params, entry):
                    yield event
        except QueueBusy as exc:
            yield _failure(request, str(exc))
            yield _status(request, gettext("Not started."))
        except QueueCancelled:
            yield _failure(request, gettext(CANCELLED_BY_ADMIN))
            yield _status(request, gettext("Not started."))
        yield ServerSentEvent(event="done", data="done")

    async def run_and_record(
        request: Request, params: BaseModel, entry: QueueEntry
    ) -> AsyncIterable[ServerSentEvent]:
        engine = request.app.state.engine
        user_id = request.session.get("user_id")
        run_id = await asyncio.to_thread(start_run, engine, page.demo, params.model_dump(), user_id)
        view = RunView(request, page, params, run_id)
        recorded: list[dict[str, Any]] = []
        outcome, message, backend = "cancelled", None, None
        await ensure_worker(request)
        events = _client(request).run(page.demo, params.model_dump())
        watched = until_cancelled(entry, events)
        try:
            async for event in watched:
                kind = event.get("event")
                if kind == "accepted":
                    backend = str(event["backend"])
                    view.accepted(int(event["world_size"]), backend)
                    running = gettext("Running on %(ranks)s ranks (%(backend)s)…")
                    yield _status(request, running % {"ranks": view.world_size, "backend": backend})
                    continue
                recorded.append(event)
                if kind == "error":
                    outcome, message = "failed", str(event.get("message", "the demo failed"))
                    log.warning("%s demo failed: %s", page.demo, message)
                elif kind == "done":
                    outcome = "done"
                for shown in view.render(event):
                    yield shown
            if outcome == "cancelled" and entry.cancelled.is_set():
                message = CANCELLED_BY_ADMIN
                log.info("%s demo cancelled by the admin", page.demo)
                yield _failure(request, gettext(CANCELLED_BY_ADMIN))
                yield _status(request, gettext("Cancelled."))
        except WorkerUnavailable as exc:
            outcome, message = "failed", str(exc)
            log.warning("%s demo lost the worker: %s", page.demo, message)
            restarting = gettext("%(message)s. The worker is being restarted.")
            yield _failure(request, restarting % {"message": message})
            yield _status(request, gettext("Failed."))
            await restart_worker(request, reason=message)
        finally:
            await watched.aclose()
            await events.aclose()
            await asyncio.to_thread(
                finish_run, engine, run_id, outcome, recorded, view.world_size, backend, message
            )

    # Out of the OpenAPI schema: they serve pages, and a schema fuzzer must not launch jobs.
    endpoints: list[tuple[str, Callable[..., Any], str]] = [
        ("", show_page, f"{page.demo}_page"),
        ("/run", run_panel, f"{page.demo}_run"),
        ("/stream", stream, f"{page.demo}_stream"),
    ]
    limits = {"/run": [DemoLaunchCheck]}
    for suffix, endpoint, name in endpoints:
        router.add_api_route(
            f"/{page.slug}{suffix}",
            endpoint,
            methods=["GET"],
            name=name,
            dependencies=limits.get(suffix),
            include_in_schema=False,
            response_class=EventSourceResponse if suffix == "/stream" else HTMLResponse,
        )


async def ensure_worker(request: Request) -> None:
    """The local worker exits when a job breaks its process group; start a fresh one.

    The status call that follows waits for it to come up.
    """
    worker = request.app.state.worker
    if worker is not None and not worker.running:
        log.warning("local demo worker is not running; starting it again")
        worker.start()


async def restart_worker(request: Request, reason: str) -> None:
    """A worker that stopped answering mid-job cannot be trusted: replace the local one."""
    worker = request.app.state.worker
    if worker is not None:
        log.warning("restarting the local demo worker: %s", reason)
        await asyncio.to_thread(worker.restart)


for _page in DEMO_PAGES.values():
    add_demo_routes(_page)
