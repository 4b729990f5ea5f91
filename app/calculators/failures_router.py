"""The failures-and-checkpoints calculator: its page, the live fragment, and the JSON API."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.calc.failures import HOUR, daly_ratio, llama3_kinds
from app.calc.failures_query import (
    DTYPES,
    LABELS,
    OPTIMIZERS,
    RATE_KINDS,
    SERIES_COUNT,
    SERIES_KINDS,
    SERIES_RATE_KINDS,
    FailuresQuery,
    failures_result,
)
from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.results import kept_answer
from app.formatting import latex_number
from app.forms import parse_form, query_inputs
from app.i18n import gettext
from app.route_guards import GuardedRoute

router = APIRouter(route_class=GuardedRoute)

PAGE = "/calculators/failures"


class FailuresChart(BaseModel):
    interval_s: list[float]
    goodput: list[float]


class PublishedFailures(BaseModel):
    interruptions: int
    days: float
    units: int
    job_mtbf_s: float
    unit_mtbf_s: float = Field(description="Per-GPU-equivalent MTBF if all units ran throughout.")
    per_unit_per_month: float
    source: str


class CheckpointSize(BaseModel):
    params: float
    weights_bytes: float
    master_bytes: float = Field(description="fp32 master copy, 4 B/param when kept.")
    optimizer_bytes: float = Field(description="states x state bytes per parameter.")
    optimizer_states: int = Field(description="Adam 2 (m, v), SGD with momentum 1, none 0.")
    total_bytes: float
    bytes_per_param: float
    writers: int
    bytes_per_writer: float = Field(description="total / N: each writer's shard.")
    write_s: float = Field(description="total / aggregate write bandwidth.")
    async_blocking_s: float = Field(description="shard / device-to-host bandwidth.")


class SeriesKind(BaseModel):
    name: str
    count: int
    mtbf_s: float
    afr_percent: float = Field(description="100 x one year / MTBF.")
    rate_per_s: float = Field(description="count / MTBF.")
    share: float = Field(description="This kind's share of the job's failures.")


class SeriesResult(BaseModel):
    kinds: list[SeriesKind]
    job_mtbf_s: float = Field(description="1 / sum(n_i / M_i).")
    job_window_probability: float
    expected_failures_in_run: float


class FailuresResult(BaseModel):
    units: int
    unit_mtbf_s: float
    unit_failures_per_month: float = Field(description="Per unit, 30-day months.")
    window_s: float
    unit_window_probability: float = Field(description="1 - exp(-w / M_u).")
    job_window_probability: float = Field(description="1 - (1 - p)^n.")
    job_mtbf_s: float = Field(description="M_u / n.")
    expected_failures_in_run: float
    checkpoint_s: float
    restart_s: float
    young_interval_s: float = Field(description="sqrt(2 C M_job), Young 1974.")
    daly_interval_s: float = Field(description="Daly 2006's higher-order estimate.")
    lost_per_failure_s: float = Field(description="tau/2 + R at Young's interval.")
    goodput_young: float
    goodput_daly: float
    interval_s: float | None
    goodput_interval: float | None
    chart: FailuresChart
    published: PublishedFailures
    checkpoint: CheckpointSize | None = Field(description="Set when ckpt_params is given.")
    series: SeriesResult | None = Field(description="Set when a kind has a count and a rate.")


def minutes(seconds: float) -> str:
    """A duration for the page: minutes below three hours, hours below two days, then days."""
    if seconds < 3 * 3600:
        return f"{seconds / 60:,.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:,.3g} h"
    return gettext("%(n)s days") % {"n": f"{seconds / 86400:,.4g}"}


def shareable_url(query: FailuresQuery) -> str:
    """The page's address holding every input, in the schema's order."""
    return share_url(PAGE, query.model_dump())


def page_context(request: Request) -> tuple[dict[str, Any], int]:
    """The page's (and its fragment's) context for the request's inputs, and its status; the
    cards' worked examples render the same fragment with it (app.cards.examples)."""
    raw = query_inputs(request)
    query, errors = parse_form(FailuresQuery, raw, LABELS)
    options = {
        "rate_kinds": list(RATE_KINDS.items()),
        "series_rate_kinds": list(SERIES_RATE_KINDS.items()),
        "optimizers": list(OPTIMIZERS.items()),
        "dtypes": list(DTYPES.items()),
    }
    if query is None:
        return {"errors": errors, "query": None, "values": raw, **options}, 422
    r = failures_result(query)
    chart = {
        "minutes": [x / 60 for x in r["chart"]["interval_s"]],
        "goodput": r["chart"]["goodput"],
        "young_min": r["young_interval_s"] / 60,
        "daly_min": r["daly_interval_s"] / 60,
        "chosen_min": r["interval_s"] / 60 if r["interval_s"] is not None else None,
    }
    return {
        "errors": [],
        "query": query,
        "values": query.model_dump(),
        "r": r,
        # The figures the step-by-step formulas show, from the calculator, not the template.
        "period_h": None if (period := query.rate_period_s()) is None else period / HOUR,
        "daly_x": daly_ratio(query.checkpoint_minutes * 60, r["job_mtbf_s"]),
        "duration": minutes,
        "tex": latex_number,
        "chart_json": json.dumps(chart),
        "share_url": shareable_url(query),
        "llama_url": shareable_url(
            query.model_copy(
                update={
                    "units": r["published"]["units"],
                    "rate_kind": "mtbf_hours",
                    "rate": round(r["published"]["unit_mtbf_s"] / 3600),
                    "run_days": r["published"]["days"],
                }
            )
        ),  # fmt: skip
        "llama_series_url": llama_series_url(query),
        **options,
    }, 200


def llama_series_url(query: FailuresQuery) -> str:
    """The page with Llama 3's Table 5 grouped into kinds of unit (app.calc.failures), in the
    page's four kinds: GPU, host, network (per rack) and other (software and unknown, per job)."""
    update: dict[str, object] = {"series_rate_kind": "mtbf_hours", "run_days": 54}
    for (prefix, _), kind in zip(SERIES_KINDS, llama3_kinds(), strict=True):
        update[SERIES_COUNT[prefix]] = kind.count
        update[f"{prefix}_rate"] = round(kind.mtbf_s / HOUR, 2)
    return shareable_url(query.model_copy(update=update))


add_calculator_pages(router, PAGE, "failures", page_context)


@router.get("/api/calc/failures", response_model=FailuresResult, tags=["calculators"])
async def failures_api(query: Annotated[FailuresQuery, Query()]) -> Response:
    """Failure odds of an n-unit job and its optimal checkpoint interval.

    Exponential failures: p = 1 − exp(−w/M) per unit, P = 1 − (1 − p)ⁿ for the job, job MTBF
    M/n. Checkpoint interval √(2CM) (Young 1974, CACM 17(9)) and Daly's higher-order estimate
    (Daly 2006, Future Generation Computer Systems 22(3)); goodput 1 − C/τ − (τ/2 + R)/M, the
    first-order model. Durations in seconds. Published anchor: Llama 3 (arXiv:2407.21783,
    §3.3.4), 419 unexpected interruptions in 54 days on up to 16,384 H100s.

    With `ckpt_params`: the checkpoint's bytes (weights + fp32 master + optimizer states; no
    gradients), each of N writers' shard, the write time at the aggregate bandwidth and the
    blocking device-to-host copy of an asynchronous save. With `series_*` counts and rates:
    several kinds of unit in series, job MTBF 1 / Σ nᵢ/Mᵢ.
    """
    return await kept_answer("failures", query, FailuresResult, lambda: failures_result(query))
