"""The pipeline-schedule calculator: its page, its live fragment and its JSON API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel

from app.calc.pipeline import SCHEDULE_NAMES
from app.calc.pipeline_query import LABELS, PipelineQuery, pipeline_result
from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.pipeline_view import pipeline_view
from app.calculators.results import kept_answer
from app.forms import parse_form, query_inputs
from app.route_guards import GuardedRoute
from app.worked.pipeline import number, percent, plain

router = APIRouter(route_class=GuardedRoute)

PAGE = "/calculators/pipeline"


class TimelineBlock(BaseModel):
    kind: str  # F, B (input gradient), W (weight gradient), BW (whole backward)
    microbatch: int  # from 0
    chunk: int  # model chunk on the stage, from 0
    start: float
    end: float


class ClosedFormResult(BaseModel):
    bubble_time: float
    over_ideal: float
    fraction_of_total: float
    formula: str
    substituted: str
    source: str
    exact: bool


class ScheduleSummary(BaseModel):
    schedule: str
    name: str
    problem: str | None
    total_time: float | None = None
    bubble_fraction_of_total: float | None = None
    bubble_over_ideal: float | None = None
    closed_form_over_ideal: float | None = None
    imbalanced_step: float | None = None  # GPipe and 1F1B, no send/receive time
    peak_in_flight: float | None = None


class PipelineResult(BaseModel):
    schedule: str
    schedule_name: str
    pp: int
    microbatches: int
    virtual_stages: int
    t_f: float
    t_b: float
    t_w: float
    t_p2p: float
    stage_scale: list[float]  # each stage's time factor; all 1 when the stages are equal
    total_time: float
    ideal_time: float  # the slowest stage's work
    imbalanced_step: float | None  # sum s_i + (m - 1) max s_i, times F + B + W (GPipe, 1F1B)
    busy_time: float
    idle_time: float
    bubble_fraction_of_total: float
    bubble_over_ideal: float
    closed_form: ClosedFormResult
    peak_in_flight: list[float]
    timeline: list[list[TimelineBlock]]
    comparison: list[ScheduleSummary]


def shareable_url(query: PipelineQuery) -> str:
    """The page's address holding every input, in the schema's order."""
    return share_url(PAGE, query.model_dump())


def page_context(request: Request) -> tuple[dict[str, object], int]:
    """The page's (and its fragment's) context for the request's inputs, and its status; the
    cards' worked examples render the same fragment with it (app.cards.examples)."""
    raw = query_inputs(request)
    query, errors = parse_form(PipelineQuery, raw, LABELS)
    options = {
        "schedules": list(SCHEDULE_NAMES.items()),
        "number": number,
        "plain": plain,
        "percent": percent,
    }
    if query is None:
        return {"errors": errors, "query": None, "values": raw, **options}, 422
    return {
        "errors": [],
        "query": query,
        "values": query.model_dump(),
        "view": pipeline_view(query),
        "share_url": shareable_url(query),
        **options,
    }, 200


add_calculator_pages(router, PAGE, "pipeline", page_context)


@router.get("/api/calc/pipeline", response_model=PipelineResult, tags=["calculators"])
async def pipeline_api(query: Annotated[PipelineQuery, Query()]) -> Response:
    """Pipeline schedules simulated: GPipe, 1F1B, interleaved 1F1B and zero-bubble ZB-H1.

    Every stage runs its schedule's actions in order, each as soon as its stage is free and
    its input has arrived. Returns every block (stage, kind, micro-batch, chunk, start, end),
    the total time, the bubble both ways (idle / (p x total) and idle / busy = t_pb / t_id),
    the published closed form beside it, and the peak micro-batches in flight per stage.
    `stage_times` makes stages unequal (one factor per stage, e.g. 1,1,1,1.3 for an LM head on
    the last stage); GPipe and 1F1B then also return the step in closed form,
    (F + B + W)(sum s_i + (m - 1) max s_i).
    Sources: Narayanan et al., arXiv:2104.04473, Sections 2.2.1-2.2.2 (GPipe, 1F1B,
    interleaved); Qi et al., Zero Bubble Pipeline Parallelism, arXiv:2401.10241, Section 2.1
    (ZB-H1).
    """
    return await kept_answer("pipeline", query, PipelineResult, lambda: pipeline_result(query))
