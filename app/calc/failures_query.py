"""The failures-and-checkpoints calculator's inputs (one flat model for the page, the shareable
URL, the JSON API and the command line) and its full answer as plain data."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from app.calc.failures import (
    DAY,
    HOUR,
    LLAMA3_405B,
    MONTH,
    daly_interval,
    goodput,
    job_mtbf,
    job_probability,
    lost_per_failure,
    mtbf_from_rate,
    window_probability,
    young_interval,
)
from app.calc.messages import N_, Message, words_of
from app.calc.query_config import QUERY_CONFIG

MINUTE = 60.0

LABELS = {
    "units": "GPUs (or nodes) n",
    "rate_kind": "Failure rate given as",
    "rate": "Failure rate",
    "window_hours": "Window w (hours)",
    "run_days": "Run length (days)",
    "checkpoint_minutes": "Checkpoint time C (minutes)",
    "restart_minutes": "Restart time R (minutes)",
    "interval_minutes": "Your checkpoint interval (minutes)",
}

RATE_KINDS = {
    "mtbf_hours": "MTBF per unit, hours",
    "per_unit_per_month": "failures per unit per month (30 days)",
    "per_unit_per_day": "failures per unit per day",
}

# Points on the goodput chart, log-spaced over [optimum / SPAN, optimum * SPAN].
CHART_POINTS = 121
CHART_SPAN = 20.0


class FailuresQuery(BaseModel):
    """Everything the failures-and-checkpoints calculator takes."""

    model_config = QUERY_CONFIG

    units: Annotated[int, Field(ge=1, le=10_000_000, description="GPUs or nodes in the job")] = (
        16_384
    )
    rate_kind: Literal["mtbf_hours", "per_unit_per_month", "per_unit_per_day"] = "mtbf_hours"
    rate: Annotated[
        float, Field(ge=1e-9, le=1e9, description="the unit's MTBF, or its failures per period")
    ] = 50_000.0
    window_hours: Annotated[float, Field(gt=0, le=1e6)] = 24.0
    run_days: Annotated[float, Field(gt=0, le=100_000)] = 54.0
    checkpoint_minutes: Annotated[float, Field(ge=1e-6, le=1e6, description="delta")] = 5.0
    restart_minutes: Annotated[float, Field(ge=0, le=1e6)] = 10.0
    interval_minutes: Annotated[
        float | None, Field(gt=0, le=1e7, description="empty: show the optimum only")
    ] = None

    @model_validator(mode="after")
    def _consistent(self) -> FailuresQuery:
        try:
            failures_result(self)
        except (ValueError, OverflowError) as exc:
            template = N_("These inputs cannot be computed: %(reason)s")
            raise ValueError(Message(template, reason=words_of(exc))) from None
        return self

    def rate_period_s(self) -> float | None:
        """The period a failure count is given over; None when the rate is an MTBF."""
        if self.rate_kind == "mtbf_hours":
            return None
        return MONTH if self.rate_kind == "per_unit_per_month" else DAY

    def unit_mtbf_s(self) -> float:
        period = self.rate_period_s()
        if period is None:
            return self.rate * HOUR
        return mtbf_from_rate(self.rate, period)


def chart_intervals(optimum_s: float, extra: list[float]) -> list[float]:
    """Log-spaced intervals around the optimum, with the marked intervals included exactly."""
    lo = optimum_s / CHART_SPAN
    step = math.log(CHART_SPAN**2) / (CHART_POINTS - 1)
    grid = [lo * math.exp(i * step) for i in range(CHART_POINTS)]
    return sorted({*grid, *extra})


def failures_result(query: FailuresQuery) -> dict[str, Any]:
    """The calculator's full answer as plain data (seconds, probabilities, fractions)."""
    n = query.units
    unit_mtbf = query.unit_mtbf_s()
    window = query.window_hours * HOUR
    c = query.checkpoint_minutes * MINUTE
    r = query.restart_minutes * MINUTE
    p_unit = window_probability(unit_mtbf, window)
    m_job = job_mtbf(unit_mtbf, n)
    young = young_interval(c, m_job)
    daly = daly_interval(c, m_job)
    chosen = query.interval_minutes * MINUTE if query.interval_minutes is not None else None
    marks = [young, daly] + ([chosen] if chosen is not None else [])
    xs = chart_intervals(young, marks)
    return {
        "units": n,
        "unit_mtbf_s": unit_mtbf,
        "unit_failures_per_month": MONTH / unit_mtbf,
        "window_s": window,
        "unit_window_probability": p_unit,
        "job_window_probability": job_probability(p_unit, n),
        "job_mtbf_s": m_job,
        "expected_failures_in_run": query.run_days * DAY / m_job,
        "checkpoint_s": c,
        "restart_s": r,
        "young_interval_s": young,
        "daly_interval_s": daly,
        "lost_per_failure_s": lost_per_failure(young, r),
        "goodput_young": goodput(young, c, r, m_job),
        "goodput_daly": goodput(daly, c, r, m_job),
        "interval_s": chosen,
        "goodput_interval": goodput(chosen, c, r, m_job) if chosen is not None else None,
        "chart": {"interval_s": xs, "goodput": [goodput(x, c, r, m_job) for x in xs]},
        "published": {
            "interruptions": LLAMA3_405B.interruptions,
            "days": LLAMA3_405B.days,
            "units": LLAMA3_405B.units,
            "job_mtbf_s": LLAMA3_405B.job_mtbf_s,
            "unit_mtbf_s": LLAMA3_405B.unit_mtbf_s,
            "per_unit_per_month": LLAMA3_405B.per_unit_per_month,
            "source": LLAMA3_405B.source,
        },
    }
