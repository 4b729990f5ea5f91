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


def _query(inputs: Mapping[str, float]) -> FailuresQuery:
    fields: dict[str, Any] = {}
    for name in (
        "units",
        "rate",
        "window_hours",
        "run_days",
        "checkpoint_minutes",
        "restart_minutes",
    ):
        if name in inputs:
            fields[name] = inputs[name]
    if "units" in fields:
        fields["units"] = int(fields["units"])
    fields["rate_kind"] = RATE_KIND_ORDER[int(inputs.get("rate_kind", 0))]
    return FailuresQuery(**fields)


def _fields(query: FailuresQuery) -> dict[str, str]:
    rate = _number(query.rate)
    if query.rate_kind == "mtbf_hours":
        rate_text = gettext("an MTBF of {hours} hours per GPU").format(hours=rate)
    elif query.rate_kind == "per_unit_per_month":
        rate_text = gettext("{rate} failures per GPU per month (30 days)").format(rate=rate)
    else:
        rate_text = gettext("{rate} failures per GPU per day").format(rate=rate)
    return {
        "units": _number(query.units),
        "rate": rate_text,
        "window_hours": _number(query.window_hours),
        "run_days": _number(query.run_days),
        "checkpoint_minutes": _number(query.checkpoint_minutes),
        "restart_minutes": _number(query.restart_minutes),
    }


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


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "failures.job_mtbf_hours": job_mtbf_hours,
    "failures.job_failure_probability": job_failure_probability,
    "failures.expected_failures": expected_failures,
    "failures.young_interval_minutes": young_interval_minutes,
    "failures.goodput_percent": goodput_percent,
}
