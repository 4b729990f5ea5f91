"""The failures-and-checkpoints calculator's inputs (one flat model for the page, the shareable
URL, the JSON API and the command line) and its full answer as plain data."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from app.calc.checkpoint_size import (
    DTYPE_BYTES,
    OPTIMIZER_STATES,
    async_blocking_s,
    bytes_per_writer,
    checkpoint_bytes,
    write_time_s,
)
from app.calc.failures import (
    DAY,
    HOUR,
    LLAMA3_405B,
    MONTH,
    UnitKind,
    annual_rate,
    daly_interval,
    goodput,
    job_mtbf,
    job_probability,
    lost_per_failure,
    mtbf_from_annual_rate,
    mtbf_from_rate,
    series_mtbf,
    window_probability,
    young_interval,
)
from app.calc.messages import N_, Message, words_of
from app.calc.query_config import QUERY_CONFIG

MINUTE = 60.0
GB = 1e9  # bandwidths in GB/s, decimal as storage and links quote them

LABELS = {
    "units": "GPUs (or nodes) n",
    "rate_kind": "Failure rate given as",
    "rate": "Failure rate",
    "window_hours": "Window w (hours)",
    "run_days": "Run length (days)",
    "checkpoint_minutes": "Checkpoint time C (minutes)",
    "restart_minutes": "Restart time R (minutes)",
    "interval_minutes": "Your checkpoint interval (minutes)",
    "ckpt_params": "Parameters",
    "ckpt_weights_dtype": "Weights saved as",
    "ckpt_master_weights": "fp32 master weights",
    "ckpt_optimizer": "Optimizer",
    "ckpt_optimizer_dtype": "Optimizer state dtype",
    "ckpt_writers": "Writers N",
    "ckpt_write_gbps": "Aggregate write bandwidth (GB/s)",
    "ckpt_host_gbps": "Device-to-host bandwidth per writer (GB/s)",
    "series_rate_kind": "Rates of the kinds given as",
    "series_gpus": "GPUs",
    "series_gpu_rate": "GPU rate",
    "series_hosts": "Hosts",
    "series_host_rate": "Host rate",
    "series_network": "Network units",
    "series_network_rate": "Network unit rate",
    "series_other": "Other units",
    "series_other_rate": "Other unit rate",
}

RATE_KINDS = {
    "mtbf_hours": "MTBF per unit, hours",
    "per_unit_per_month": "failures per unit per month (30 days)",
    "per_unit_per_day": "failures per unit per day",
}

OPTIMIZERS = {
    "adam": "Adam (m and v)",
    "sgd": "SGD with momentum",
    "none": "none (weights only)",
}
DTYPES = {name: name for name in DTYPE_BYTES}
SERIES_RATE_KINDS = {
    "mtbf_hours": "MTBF per unit, hours",
    "afr_percent": "annual failure rate per unit, in percent",
}
# The kinds of unit the page takes: (field prefix, name).
SERIES_KINDS = (
    ("series_gpu", "GPU"),
    ("series_host", "host"),
    ("series_network", "network"),
    ("series_other", "other"),
)

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
    # Checkpoint size and write time (shown when ckpt_params is set).
    ckpt_params: Annotated[
        float | None, Field(ge=1, le=1e15, description="empty: no checkpoint sizing")
    ] = None
    ckpt_weights_dtype: Literal["bf16", "fp16", "fp32", "fp8"] = "bf16"
    ckpt_master_weights: bool = True
    ckpt_optimizer: Literal["adam", "sgd", "none"] = "adam"
    ckpt_optimizer_dtype: Literal["fp32", "bf16", "fp16", "fp8"] = "fp32"
    ckpt_writers: Annotated[int, Field(ge=1, le=10_000_000)] = 16_384
    # 1 MB/s at least: slower than any disk, and a floor that keeps every time finite.
    ckpt_write_gbps: Annotated[float, Field(ge=0.001, le=1e9, description="aggregate, GB/s")] = (
        2000.0
    )
    ckpt_host_gbps: Annotated[float, Field(ge=0.001, le=1e6, description="per writer, GB/s")] = 25.0
    # Several kinds of unit in series (shown when at least one kind has a count and a rate).
    series_rate_kind: Literal["mtbf_hours", "afr_percent"] = "mtbf_hours"
    series_gpus: Annotated[int | None, Field(ge=1, le=10_000_000)] = None
    series_gpu_rate: Annotated[float | None, Field(ge=1e-9, le=1e12)] = None
    series_hosts: Annotated[int | None, Field(ge=1, le=10_000_000)] = None
    series_host_rate: Annotated[float | None, Field(ge=1e-9, le=1e12)] = None
    series_network: Annotated[int | None, Field(ge=1, le=10_000_000)] = None
    series_network_rate: Annotated[float | None, Field(ge=1e-9, le=1e12)] = None
    series_other: Annotated[int | None, Field(ge=1, le=10_000_000)] = None
    series_other_rate: Annotated[float | None, Field(ge=1e-9, le=1e12)] = None

    @model_validator(mode="after")
    def _consistent(self) -> FailuresQuery:
        for prefix, _ in SERIES_KINDS:
            count = getattr(self, SERIES_COUNT[prefix])
            rate = getattr(self, f"{prefix}_rate")
            if (count is None) != (rate is None):
                template = N_("Give both a count and a rate for a kind of unit, or neither")
                raise ValueError(Message(template))
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

    def series_kinds(self) -> list[UnitKind]:
        """The kinds of unit given (count and rate), each with its MTBF in seconds."""
        kinds = []
        for prefix, name in SERIES_KINDS:
            count = getattr(self, SERIES_COUNT[prefix])
            rate = getattr(self, f"{prefix}_rate")
            if count is None or rate is None:
                continue
            if self.series_rate_kind == "mtbf_hours":
                mtbf = rate * HOUR
            else:
                mtbf = mtbf_from_annual_rate(rate)
            kinds.append(UnitKind(name, count, mtbf))
        return kinds


# The count field of each kind (the rate field is the prefix + "_rate").
SERIES_COUNT = {
    "series_gpu": "series_gpus",
    "series_host": "series_hosts",
    "series_network": "series_network",
    "series_other": "series_other",
}


def chart_intervals(optimum_s: float, extra: list[float]) -> list[float]:
    """Log-spaced intervals around the optimum, with the marked intervals included exactly."""
    lo = optimum_s / CHART_SPAN
    step = math.log(CHART_SPAN**2) / (CHART_POINTS - 1)
    grid = [lo * math.exp(i * step) for i in range(CHART_POINTS)]
    return sorted({*grid, *extra})


def checkpoint_result(query: FailuresQuery) -> dict[str, Any] | None:
    """Checkpoint size, per-writer shard, write time and async blocking time; None if unasked."""
    if query.ckpt_params is None:
        return None
    size = checkpoint_bytes(
        query.ckpt_params,
        query.ckpt_weights_dtype,
        query.ckpt_master_weights,
        query.ckpt_optimizer,
        query.ckpt_optimizer_dtype,
    )
    shard = bytes_per_writer(size.total, query.ckpt_writers)
    return {
        "params": size.params,
        "weights_bytes": size.weights,
        "master_bytes": size.master,
        "optimizer_bytes": size.optimizer,
        "optimizer_states": OPTIMIZER_STATES[query.ckpt_optimizer],
        "total_bytes": size.total,
        "bytes_per_param": size.per_param,
        "writers": query.ckpt_writers,
        "bytes_per_writer": shard,
        "write_s": write_time_s(size.total, query.ckpt_write_gbps * GB),
        "async_blocking_s": async_blocking_s(shard, query.ckpt_host_gbps * GB),
    }


def series_result(query: FailuresQuery) -> dict[str, Any] | None:
    """The job MTBF of several kinds of unit in series, and what it implies; None if unasked."""
    kinds = query.series_kinds()
    if not kinds:
        return None
    m_job = series_mtbf(kinds)
    total_rate = 1 / m_job
    window = query.window_hours * HOUR
    return {
        "kinds": [
            {
                "name": kind.name,
                "count": kind.count,
                "mtbf_s": kind.mtbf_s,
                "afr_percent": annual_rate(kind.mtbf_s),
                "rate_per_s": kind.rate_per_s,
                "share": kind.rate_per_s / total_rate,
            }
            for kind in kinds
        ],
        "job_mtbf_s": m_job,
        "job_window_probability": window_probability(m_job, window),
        "expected_failures_in_run": query.run_days * DAY / m_job,
    }


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
        "checkpoint": checkpoint_result(query),
        "series": series_result(query),
    }
