"""Demo pages, and the server-sent-event stream that relays a running demo's measurements."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent

from app.forms import parse_form
from app.live.all_reduce_view import AllReducePrediction, wire_vs_prediction_percent
from app.live.worker_client import WorkerClient, WorkerUnavailable
from app.templating import templates
from demos.specs import AllReduceParams

log = logging.getLogger(__name__)

router = APIRouter(prefix="/demos", tags=["demos"])

ALL_REDUCE_LABELS = {"size_mib": "Buffer size (MiB)", "iterations": "Iterations"}


def _client(request: Request) -> WorkerClient:
    return request.app.state.worker_client


@router.get("", response_class=HTMLResponse, include_in_schema=False)
def demos_index(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "demos/index.html")


@router.get("/all-reduce", response_class=HTMLResponse, include_in_schema=False)
def all_reduce_page(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(
        request, "demos/all_reduce.html", {"params": AllReduceParams(), "errors": []}
    )


@router.get("/all-reduce/run", response_class=HTMLResponse, include_in_schema=False)
async def all_reduce_run(request: Request) -> HTMLResponse:
    """Checks the form, asks the worker its size, and returns the panel that opens the stream."""
    params, errors = parse_form(AllReduceParams, dict(request.query_params), ALL_REDUCE_LABELS)
    if params is None:
        return templates.TemplateResponse(
            request, "demos/_run_errors.html", {"errors": errors}, status_code=422
        )
    worker = request.app.state.worker
    if worker is not None and not worker.running:
        # The local worker exits when a job breaks its process group; start a fresh one
        # (the status call below waits for it to come up).
        log.warning("local demo worker is not running; starting it again")
        worker.start()
    try:
        status = await _client(request).status()
    except WorkerUnavailable as exc:
        return templates.TemplateResponse(
            request, "demos/_run_errors.html", {"errors": [str(exc)]}, status_code=503
        )
    prediction = AllReducePrediction(params, int(status["world_size"]))
    stream_url = "/demos/all-reduce/stream?" + urlencode(params.model_dump())
    return templates.TemplateResponse(
        request,
        "demos/_all_reduce_run.html",
        {"prediction": prediction, "status": status, "stream_url": stream_url},
    )


def _rows(request: Request, template: str, **context: Any) -> ServerSentEvent:
    html = templates.get_template(template).render(request=request, **context)
    return ServerSentEvent(raw_data=html)


def _failure(request: Request, message: str) -> ServerSentEvent:
    log.warning("all-reduce demo failed: %s", message)
    return _rows(request, "demos/_failure.html", message=message)


@router.get("/all-reduce/stream", response_class=EventSourceResponse)
async def all_reduce_stream(
    request: Request, params: Annotated[AllReduceParams, Query()]
) -> AsyncIterable[ServerSentEvent]:
    """Runs the all-reduce demo on the worker and streams what each rank measured.

    Unnamed events carry HTML table rows (htmx swaps them in); `measurement` events carry
    the same numbers as JSON for the chart; the stream always ends with a `done` event.
    Closing the stream cancels the job on the worker.
    """
    prediction: AllReducePrediction | None = None
    events = _client(request).run("all_reduce", params.model_dump())
    try:
        async for event in events:
            kind = event.get("event")
            if kind == "accepted":
                prediction = AllReducePrediction(params, int(event["world_size"]))
                yield _rows(
                    request,
                    "demos/_status.html",
                    text=(f"Running on {event['world_size']} ranks ({event['backend']})…"),
                )
            elif kind == "measurement" and prediction is not None:
                yield _rows(
                    request,
                    "demos/_all_reduce_rows.html",
                    event=event,
                    prediction=prediction,
                    percent=wire_vs_prediction_percent,
                )
                yield ServerSentEvent(
                    event="measurement",
                    data={
                        "iteration": event["iteration"],
                        "predicted_bytes": prediction.bytes_per_rank,
                        "ranks": [
                            {k: r[k] for k in ("rank", "time_s", "logical_bytes", "wire_bytes")}
                            for r in event["ranks"]
                        ],
                    },
                )
            elif kind == "done":
                yield _rows(
                    request,
                    "demos/_all_reduce_summary.html",
                    summary=event["summary"],
                    prediction=prediction,
                )
                yield _rows(request, "demos/_status.html", text="Finished.")
                break
            elif kind == "error":
                yield _failure(request, event.get("message", "the worker reported a failure"))
                yield _rows(request, "demos/_status.html", text="Failed.")
                break
    except WorkerUnavailable as exc:
        yield _failure(request, str(exc))
        yield _rows(request, "demos/_status.html", text="Failed.")
    finally:
        await events.aclose()
    yield ServerSentEvent(event="done", data="done")
