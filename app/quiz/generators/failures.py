"""Generated questions on the failures-and-checkpoints calculator (app.calc.failures).

Every answer comes from `failures_result`, the calculator's full answer, so a question is graded
by exactly what the page at /calculators/failures shows for the same inputs. Inputs a question
does not draw take the calculator's defaults (app.calc.failures_query.FailuresQuery).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.calc.failures_query import RATE_KINDS, FailuresQuery, failures_result
from app.formatting import latex_number
from app.i18n import gettext
from app.quiz.generators.solution import Solution

# `rate_kind` is drawn as an index into this tuple (choices hold numbers only).
RATE_KIND_ORDER = tuple(RATE_KINDS)  # mtbf_hours, per_unit_per_month, per_unit_per_day
HOUR_MIN = 60.0


def tex(value: float) -> str:
    # Five digits, so that whole numbers below 10^5 (16384, 50000) print in full.
    return latex_number(value, digits=5)


def _number(value: float) -> str:
    """A number inside a prompt: 16,384 or 50,000 or 0.08."""
    return f"{value:,.6g}"


# Drawn as indices too: what a checkpoint saves.
WEIGHTS_DTYPE_ORDER = ("bf16", "fp32")
OPTIMIZER_ORDER = ("adam", "sgd", "none")
INTEGER_FIELDS = ("units", "ckpt_writers", "series_gpus", "series_hosts", "series_network")


def _query(inputs: Mapping[str, float]) -> FailuresQuery:
    fields: dict[str, Any] = {}
    for name in (
        "units",
        "rate",
        "window_hours",
        "run_days",
        "checkpoint_minutes",
        "restart_minutes",
        "ckpt_params",
        "ckpt_writers",
        "ckpt_write_gbps",
        "ckpt_host_gbps",
        "series_gpus",
        "series_gpu_rate",
        "series_hosts",
        "series_host_rate",
        "series_network",
        "series_network_rate",
    ):
        if name in inputs:
            fields[name] = inputs[name]
    for name in INTEGER_FIELDS:
        if name in fields:
            fields[name] = int(fields[name])
    fields["rate_kind"] = RATE_KIND_ORDER[int(inputs.get("rate_kind", 0))]
    if "ckpt_weights_dtype" in inputs:
        fields["ckpt_weights_dtype"] = WEIGHTS_DTYPE_ORDER[int(inputs["ckpt_weights_dtype"])]
    if "ckpt_master_weights" in inputs:
        fields["ckpt_master_weights"] = bool(inputs["ckpt_master_weights"])
    if "ckpt_optimizer" in inputs:
        fields["ckpt_optimizer"] = OPTIMIZER_ORDER[int(inputs["ckpt_optimizer"])]
    return FailuresQuery(**fields)


def _fields(query: FailuresQuery) -> dict[str, str]:
    rate = _number(query.rate)
    if query.rate_kind == "mtbf_hours":
        rate_text = gettext("an MTBF of {hours} hours per GPU").format(hours=rate)
    elif query.rate_kind == "per_unit_per_month":
        rate_text = gettext("{rate} failures per GPU per month (30 days)").format(rate=rate)
    else:
        rate_text = gettext("{rate} failures per GPU per day").format(rate=rate)
    saved = {
        "adam": gettext("Adam's two moments m and v"),
        "sgd": gettext("one SGD momentum buffer"),
        "none": gettext("no optimizer state"),
    }[query.ckpt_optimizer]
    master = (
        gettext("an fp32 master copy")
        if query.ckpt_master_weights
        else gettext("no separate master copy")
    )
    fields = {
        "units": _number(query.units),
        "rate": rate_text,
        "window_hours": _number(query.window_hours),
        "run_days": _number(query.run_days),
        "checkpoint_minutes": _number(query.checkpoint_minutes),
        "restart_minutes": _number(query.restart_minutes),
        "ckpt_weights_dtype": query.ckpt_weights_dtype,
        "ckpt_master": master,
        "ckpt_optimizer": saved,
        "ckpt_writers": _number(query.ckpt_writers),
        "ckpt_write_gbps": _number(query.ckpt_write_gbps),
        "ckpt_host_gbps": _number(query.ckpt_host_gbps),
    }
    if query.ckpt_params is not None:
        fields["ckpt_params"] = f"{query.ckpt_params / 1e9:,.6g}B"
    for name in ("series_gpus", "series_gpu_rate", "series_hosts", "series_host_rate",
                 "series_network", "series_network_rate"):  # fmt: skip
        value = getattr(query, name)
        if value is not None:
            fields[name] = _number(value)
    return fields


def _unit_mtbf_steps(query: FailuresQuery, r: dict[str, Any]) -> list[str]:
    """How the unit MTBF follows from the rate, when the rate is not already an MTBF."""
    if query.rate_kind == "mtbf_hours":
        return []
    period_h = 720 if query.rate_kind == "per_unit_per_month" else 24
    failures = gettext("failures")
    return [
        rf"M_u = \frac{{T_\text{{period}}}}{{\text{{{failures}}}}} = "
        rf"\frac{{{period_h}\ \text{{h}}}}{{{tex(query.rate)}}} = "
        rf"{tex(r['unit_mtbf_s'] / 3600)}\ \text{{h}}"
    ]


def _job_mtbf_step(query: FailuresQuery, r: dict[str, Any]) -> str:
    return (
        rf"M = \frac{{M_u}}{{n}} = \frac{{{tex(r['unit_mtbf_s'] / 3600)}\ \text{{h}}}}"
        rf"{{{query.units}}} = {tex(r['job_mtbf_s'] / 3600)}\ \text{{h}}"
    )


def job_mtbf_hours(inputs: Mapping[str, float]) -> Solution:
    """The job's MTBF in hours: M_u / n."""
    query = _query(inputs)
    r = failures_result(query)
    return Solution(
        answer=r["job_mtbf_s"] / 3600,
        prompt_fields=_fields(query),
        steps_latex=[r"M = \frac{M_u}{n}", *_unit_mtbf_steps(query, r), _job_mtbf_step(query, r)],
    )


def job_failure_probability(inputs: Mapping[str, float]) -> Solution:
    """The chance, in percent, that at least one of n units fails within the window."""
    query = _query(inputs)
    r = failures_result(query)
    m_u_h = r["unit_mtbf_s"] / 3600
    p = r["unit_window_probability"]
    return Solution(
        answer=100 * r["job_window_probability"],
        prompt_fields=_fields(query),
        steps_latex=[
            r"p = 1 - e^{-w/M_u},\qquad P = 1 - (1 - p)^n",
            *_unit_mtbf_steps(query, r),
            rf"p = 1 - e^{{-{tex(query.window_hours)}/{tex(m_u_h)}}} = {tex(p)}",
            rf"P = 1 - (1 - {tex(p)})^{{{query.units}}} = {tex(r['job_window_probability'])}",
        ],
    )


def expected_failures(inputs: Mapping[str, float]) -> Solution:
    """Failures expected over the whole run: T_run / M."""
    query = _query(inputs)
    r = failures_result(query)
    return Solution(
        answer=r["expected_failures_in_run"],
        prompt_fields=_fields(query),
        steps_latex=[
            r"\frac{T_\text{run}}{M} = \frac{T_\text{run}\, n}{M_u}",
            *_unit_mtbf_steps(query, r),
            _job_mtbf_step(query, r),
            rf"\frac{{{tex(query.run_days * 24)}\ \text{{h}}}}{{{tex(r['job_mtbf_s'] / 3600)}"
            rf"\ \text{{h}}}} = {tex(r['expected_failures_in_run'])}",
        ],
    )


def young_interval_minutes(inputs: Mapping[str, float]) -> Solution:
    """Young's checkpoint interval sqrt(2 C M), in minutes."""
    query = _query(inputs)
    r = failures_result(query)
    c_min, m_min = query.checkpoint_minutes, r["job_mtbf_s"] / 60
    young_min = r["young_interval_s"] / 60
    minutes = gettext("min")  # the unit
    return Solution(
        answer=young_min,
        prompt_fields=_fields(query),
        steps_latex=[
            r"\tau = \sqrt{2\,C\,M},\qquad M = \frac{M_u}{n}",
            *_unit_mtbf_steps(query, r),
            _job_mtbf_step(query, r),
            rf"\tau = \sqrt{{2\times{tex(c_min)}\times{tex(m_min)}}}\ \text{{{minutes}}} = "
            rf"{tex(young_min)}\ \text{{{minutes}}}",
        ],
    )


def goodput_percent(inputs: Mapping[str, float]) -> Solution:
    """Goodput at Young's interval, in percent: 1 - C/tau - (tau/2 + R)/M."""
    query = _query(inputs)
    r = failures_result(query)
    c_min, r_min, m_min = query.checkpoint_minutes, query.restart_minutes, r["job_mtbf_s"] / 60
    young_min = r["young_interval_s"] / 60
    minutes = gettext("min")  # the unit
    goodput = gettext("goodput")
    return Solution(
        answer=100 * r["goodput_young"],
        prompt_fields=_fields(query),
        steps_latex=[
            rf"\text{{{goodput}}} = 1 - \frac{{C}}{{\tau}} - \frac{{\tau/2 + R}}{{M}},\qquad "
            r"\tau = \sqrt{2CM},\quad M = \frac{M_u}{n}",
            *_unit_mtbf_steps(query, r),
            _job_mtbf_step(query, r),
            rf"\tau = \sqrt{{2\times{tex(c_min)}\times{tex(m_min)}}} = {tex(young_min)}\ "
            rf"\text{{{minutes}}}",
            rf"1 - \frac{{{tex(c_min)}}}{{{tex(young_min)}}} - \frac{{{tex(young_min)}/2 + "
            rf"{tex(r_min)}}}{{{tex(m_min)}}} = {tex(r['goodput_young'])}",
        ],
    )


def _checkpoint_terms(r: dict[str, Any]) -> str:
    """bytes per parameter as weights + master + states x state bytes."""
    ck = r["checkpoint"]
    n = ck["params"]
    states = ck["optimizer_states"]
    state_bytes = ck["optimizer_bytes"] / n / states if states else 0
    return (
        rf"{tex(ck['weights_bytes'] / n)} + {tex(ck['master_bytes'] / n)} + "
        rf"{states}\times {tex(state_bytes)} = {tex(ck['bytes_per_param'])}\ \text{{B}}"
    )


def checkpoint_total_gb(inputs: Mapping[str, float]) -> Solution:
    """A checkpoint's size in GB: parameters x (weights + master + optimizer states)."""
    query = _query(inputs)
    r = failures_result(query)
    ck = r["checkpoint"]
    return Solution(
        answer=ck["total_bytes"] / 1e9,
        prompt_fields=_fields(query),
        steps_latex=[
            r"S = N\,(b_w + b_\text{master} + s\, b_s)",
            _checkpoint_terms(r),
            rf"{tex(ck['params'])}\times {tex(ck['bytes_per_param'])}\ \text{{B}} = "
            rf"{tex(ck['total_bytes'] / 1e9)}\ \text{{GB}}",
        ],
    )


def checkpoint_write_seconds(inputs: Mapping[str, float]) -> Solution:
    """The time to write a checkpoint at an aggregate bandwidth, in seconds."""
    query = _query(inputs)
    r = failures_result(query)
    ck = r["checkpoint"]
    return Solution(
        answer=ck["write_s"],
        prompt_fields=_fields(query),
        steps_latex=[
            r"t = \frac{S}{B}",
            _checkpoint_terms(r),
            rf"\frac{{{tex(ck['total_bytes'] / 1e9)}\ \text{{GB}}}}"
            rf"{{{tex(query.ckpt_write_gbps)}\ \text{{GB/s}}}} = {tex(ck['write_s'])}\ \text{{s}}",
        ],
    )


def checkpoint_blocking_seconds(inputs: Mapping[str, float]) -> Solution:
    """An async save's blocking time: each writer's shard over the device-to-host bandwidth."""
    query = _query(inputs)
    r = failures_result(query)
    ck = r["checkpoint"]
    return Solution(
        answer=ck["async_blocking_s"],
        prompt_fields=_fields(query),
        steps_latex=[
            r"t_\text{block} = \frac{S / N_w}{B_\text{D2H}}",
            _checkpoint_terms(r),
            rf"\frac{{{tex(ck['bytes_per_writer'] / 1e9)}\ \text{{GB}}}}"
            rf"{{{tex(query.ckpt_host_gbps)}\ \text{{GB/s}}}} = "
            rf"{tex(ck['async_blocking_s'])}\ \text{{s}}",
        ],
    )


def series_job_mtbf_hours(inputs: Mapping[str, float]) -> Solution:
    """The MTBF of a job built from several kinds of unit: 1 / sum(n_i / M_i), in hours."""
    query = _query(inputs)
    r = failures_result(query)
    se = r["series"]
    terms = " + ".join(
        rf"\frac{{{kind['count']}}}{{{tex(kind['mtbf_s'] / 3600)}}}" for kind in se["kinds"]
    )
    rate = sum(kind["rate_per_s"] for kind in se["kinds"]) * 3600
    return Solution(
        answer=se["job_mtbf_s"] / 3600,
        prompt_fields=_fields(query),
        steps_latex=[
            r"M_\text{job} = \frac{1}{\sum_i n_i / M_i}",
            rf"\sum_i \frac{{n_i}}{{M_i}} = {terms} = {tex(rate)}\ \text{{h}}^{{-1}}",
            rf"M_\text{{job}} = \frac{{1}}{{{tex(rate)}}} = "
            rf"{tex(se['job_mtbf_s'] / 3600)}\ \text{{h}}",
        ],
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "failures.job_mtbf_hours": job_mtbf_hours,
    "failures.job_failure_probability": job_failure_probability,
    "failures.expected_failures": expected_failures,
    "failures.young_interval_minutes": young_interval_minutes,
    "failures.goodput_percent": goodput_percent,
    "failures.checkpoint_total_gb": checkpoint_total_gb,
    "failures.checkpoint_write_seconds": checkpoint_write_seconds,
    "failures.checkpoint_blocking_seconds": checkpoint_blocking_seconds,
    "failures.series_job_mtbf_hours": series_job_mtbf_hours,
}
