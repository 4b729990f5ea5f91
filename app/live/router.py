"""Demo pages, the server-sent-event stream that relays a running demo, and recorded runs.

Every page in app/live/pages/ gets the same four routes (see app/live/demo_page.py):
  GET /demos/<slug>          the page (query parameters pre-fill the form)
  GET /demos/<slug>/run      checks the form and returns the panel that opens the stream
  GET /demos/<slug>/stream   runs the demo on the worker and streams it (SSE)
  GET /demos/runs/<id>       a finished run, replayed through the same templates (shareable)
and a finished run's raw rows, one per rank per step (app/live/raw_rows.py):
  GET /demos/runs/<id>/rows.csv, /demos/runs/<id>/rows.json

Here: each page's routes and the relay of a live run. The recorded runs' routes are
app/live/recorded_runs.py (mounted here); how a run's events show, app/live/run_view.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterable, Callable
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel, ValidationError

from app.errors import BUSY_MESSAGE, database_busy, is_htmx
from app.forms import parse_form, query_inputs
from app.i18n import N_, gettext, say
from app.live.demo_page import DemoPage
from app.live.job_cost import estimated_cost_s
from app.live.pages import DEMO_PAGES
from app.live.queue import QueueCancelled, SharedQueue
from app.live.queue_rules import Owner, QueueBusy, QueueEntry
from app.live.recorded_runs import router as recorded_runs_router
from app.live.run_view import RunView, card_links, failure_event, status_event
from app.live.runs import finish_run, start_run
from app.live.worker_client import WorkerUnavailable
from app.live.worker_pool import WorkerPool
from app.live.worker_process import LocalWorker
from app.ratelimit import DemoLaunchCheck, client_address, count_demo_launch
from app.route_guards import GuardedRoute
from app.security import SESSION_CSRF_KEY, SESSION_USER_KEY
from app.templating import templates
from demos.specs import DEMO_COLLECTIVES
from demos.specs.devices import job_problem

log = logging.getLogger(__name__)

router = APIRouter(route_class=GuardedRoute, prefix="/demos", tags=["demos"])


def _pool(request: Request) -> WorkerPool:
    return request.app.state.worker_pool


def _queue(request: Request) -> SharedQueue:
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


# Under this router's /demos, so that app/main.py still mounts one router for the demos.
router.include_router(recorded_runs_router)


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
                "card_links": card_links(request, page),
            },
        )

    async def run_panel(request: Request) -> HTMLResponse:
        """Checks the form and the line, asks a worker its size, returns the run panel."""
        params, errors = parse(request)
        if params is None:
            return _errors(request, errors, 422)
        try:
            await _queue(request).check(_owner(request), estimated_cost_s(page.demo, params))
        except QueueBusy as exc:
            return _unavailable(request, str(exc))
        await ensure_worker(request)
        try:
            status = await _pool(request).any_status(timeout_s=30.0)
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
        """The stream's parameters, checked before any byte of the stream is sent (the line
        is read in the thread pool)."""
        query = {k: v for k, v in query_inputs(request).items() if v != ""}
        try:
            params = page.params.model_validate(query)
        except ValidationError as exc:
            errors = [{**error, "loc": ("query", *error["loc"])} for error in exc.errors()]
            raise RequestValidationError(errors) from exc
        try:
            await _queue(request).check(_owner(request), estimated_cost_s(page.demo, params))
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
        await ensure_worker(request)
        started = False
        try:
            async with queue.place(_owner(request), page.demo, cost_s) as entry:
                async for ahead in queue.turns(entry):
                    queued = gettext("Queued: %(ahead)s run(s) ahead of this one…")
                    yield status_event(request, queued % {"ahead": ahead})
                started = True
                async for event in run_and_record(request, params, entry):
                    yield event
        except QueueBusy as exc:
            yield failure_event(request, str(exc))
            yield status_event(request, gettext("Not started."))
        except QueueCancelled:
            yield failure_event(request, gettext(CANCELLED_BY_ADMIN))
            yield status_event(request, gettext("Not started."))
        except WorkerUnavailable as exc:  # its turn came, and no worker answered
            log.warning("%s demo found no worker: %s", page.demo, exc)
            yield failure_event(request, lost_worker_message(request, None, str(exc)))
            yield status_event(request, gettext("Not started."))
            await restart_lost_worker(request, None, str(exc))
        except Exception as exc:
            # The stream has begun, so the 503 a busy database gets elsewhere cannot be sent:
            # the page says so, and the stream ends as every stream does.
            if not database_busy(exc):
                raise
            log.warning("%s demo: the database was too busy: %s", page.demo, exc)
            yield failure_event(request, gettext(BUSY_MESSAGE))
            yield status_event(request, gettext("Failed.") if started else gettext("Not started."))
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
        assert entry.worker is not None  # set when its turn came
        events = _pool(request).client(entry.worker).run(page.demo, params.model_dump())
        watched = _queue(request).until_cancelled(entry, events)
        try:
            async for event in watched:
                kind = event.get("event")
                if kind == "accepted":
                    backend = str(event["backend"])
                    view.accepted(int(event["world_size"]), backend)
                    running = gettext("Running on %(ranks)s ranks (%(backend)s)…")
                    yield status_event(
                        request, running % {"ranks": view.world_size, "backend": backend}
                    )
                    continue
                recorded.append(event)
                if kind == "error":
                    outcome, message = "failed", str(event.get("message", "the demo failed"))
                    log.warning("%s demo failed on %s: %s", page.demo, entry.worker, message)
                    if event.get("worker_lost"):
                        _pool(request).mark_down(entry.worker, message)
                elif kind == "done":
                    outcome = "done"
                for shown in view.render(event):
                    yield shown
            if outcome == "cancelled" and entry.cancelled:
                message = CANCELLED_BY_ADMIN
                log.info("%s demo cancelled by the admin", page.demo)
                yield failure_event(request, gettext(CANCELLED_BY_ADMIN))
                yield status_event(request, gettext("Cancelled."))
        except WorkerUnavailable as exc:  # lost mid-run: it is failed like a crashed rank
            outcome, message = "failed", str(exc)
            log.warning("%s demo lost the worker at %s: %s", page.demo, entry.worker, message)
            _pool(request).mark_down(entry.worker, message)
            yield failure_event(request, lost_worker_message(request, entry.worker, message))
            yield status_event(request, gettext("Failed."))
            await restart_lost_worker(request, entry.worker, message)
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


def _local_worker_among(request: Request, addresses: list[str]) -> LocalWorker | None:
    worker = request.app.state.worker
    return worker if worker is not None and worker.address in addresses else None


def lost_worker_message(request: Request, address: str | None, message: str) -> str:
    """What the page says of a worker that stopped answering (`address`; None: no worker of
    the pool answered): a local one is restarted (`restart_lost_worker`), and the page says
    so; the next runs go to the others (WorkerPool.mark_down)."""
    lost = _pool(request).addresses if address is None else [address]
    if _local_worker_among(request, lost) is None:
        return message
    return gettext("%(message)s. The worker is being restarted.") % {"message": message}


async def restart_lost_worker(request: Request, address: str | None, reason: str) -> None:
    """A worker that stopped answering mid-job cannot be trusted: replace the local one."""
    lost = _pool(request).addresses if address is None else [address]
    worker = _local_worker_among(request, lost)
    if worker is not None:
        log.warning("restarting the local demo worker: %s", reason)
        await asyncio.to_thread(worker.restart)


for _page in DEMO_PAGES.values():
    add_demo_routes(_page)
