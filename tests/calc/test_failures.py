"""Failures and checkpoints: hand derivations, Daly's published figures, Llama 3's record."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.failures import (
    DAY,
    HOUR,
    LLAMA3_405B,
    LLAMA3_405B_TABLE5,
    MONTH,
    YEAR,
    UnitKind,
    annual_rate,
    daly_interval,
    daly_ratio,
    goodput,
    job_mtbf,
    job_probability,
    llama3_kinds,
    lost_per_failure,
    mtbf_from_annual_rate,
    mtbf_from_probability,
    mtbf_from_rate,
    series_mtbf,
    window_probability,
    young_interval,
)
from app.calc.failures_query import FailuresQuery

MIN = 60.0


def test_window_probability_by_hand() -> None:
    # M = 50,000 h, w = 24 h: p = 1 - e^(-24/50000) = 1 - e^(-0.00048) = 4.79885e-4.
    p = window_probability(50_000 * HOUR, 24 * HOUR)
    assert p == pytest.approx(1 - math.exp(-0.00048), rel=1e-12)
    assert p == pytest.approx(4.798848e-4, rel=1e-6)
    # One MTBF: 1 - 1/e.
    assert window_probability(10.0, 10.0) == pytest.approx(1 - 1 / math.e)


def test_job_probability_by_hand() -> None:
    assert job_probability(0.5, 2) == pytest.approx(0.75)  # 1 - 0.5^2
    # 1 - 0.99^100 = 0.633968
    assert job_probability(0.01, 100) == pytest.approx(0.6339676587, rel=1e-9)
    assert job_probability(1.0, 3) == 1.0 and job_probability(0.0, 10**6) == 0.0


def test_rate_conversions_round_trip() -> None:
    # 0.01 failures per GPU per 30-day month = an MTBF of 100 months = 72,000 h.
    m = mtbf_from_rate(0.01, MONTH)
    assert m == 72_000 * HOUR
    p = window_probability(m, DAY)
    assert mtbf_from_probability(p, DAY) == pytest.approx(m, rel=1e-9)
    # The job of n units fails in the window as often as a unit of MTBF M/n does.
    assert job_probability(p, 1000) == pytest.approx(window_probability(job_mtbf(m, 1000), DAY))


def test_young_by_hand() -> None:
    # C = 5 min, M = 24 h = 1440 min: sqrt(2 x 5 x 1440) = sqrt(14400) = 120 min.
    assert young_interval(5 * MIN, 1440 * MIN) == pytest.approx(120 * MIN)


def test_daly_by_hand() -> None:
    # C = 5, M = 1440 min: x = C/2M = 5/2880 = 0.00173611; sqrt(x) = 0.0416667.
    # tau = 120 x (1 + 0.0416667/3 + 0.00173611/9) - 5 = 120 x 1.0140818 - 5 = 116.6898 min.
    x = 5 / 2880
    expected = 120 * (1 + math.sqrt(x) / 3 + x / 9) - 5
    assert expected == pytest.approx(116.6898, abs=1e-4)
    assert daly_interval(5 * MIN, 1440 * MIN) / MIN == pytest.approx(expected)


@pytest.mark.parametrize(("mtbf_min", "published"), [(1440, 117), (360, 57), (15, 9.1)])
def test_daly_published_figures(mtbf_min: float, published: float) -> None:
    # Daly 2006, FGCS 22(3), Figures 3-5 (R = 10 min, delta = 5 min): "The new model predicts
    # tau_opt = 117 min" (M = 24 h), "57 min" (M = 6 h), "9.1 min" (M = 15 min).
    tau = daly_interval(5 * MIN, mtbf_min * MIN) / MIN
    digits = 1 if published < 10 else 0
    assert round(tau, digits) == published


def test_daly_beyond_two_mtbf_is_the_mtbf() -> None:
    assert daly_interval(3 * MIN, 1 * MIN) == 1 * MIN
    assert daly_interval(2 * MIN, 1 * MIN) == 1 * MIN


def test_goodput_by_hand() -> None:
    # tau = 120, C = 5, R = 10, M = 1440 min: 1 - 5/120 - (60 + 10)/1440 = 0.9097222.
    assert lost_per_failure(120 * MIN, 10 * MIN) == 70 * MIN
    g = goodput(120 * MIN, 5 * MIN, 10 * MIN, 1440 * MIN)
    assert g == pytest.approx(1 - 5 / 120 - 70 / 1440) == pytest.approx(0.9097222, abs=1e-7)
    assert goodput(1.0, 100.0, 0.0, 10.0) == 0.0  # floored: checkpoints take all the time


def test_llama3_implied_rates() -> None:
    # arXiv:2407.21783, §3.3.4: 419 unexpected interruptions in a 54-day snapshot, on up to
    # 16,384 H100s. Job MTBF = 54 x 24 / 419 = 1296 / 419 = 3.0931 h; per GPU-equivalent
    # 1296 x 16,384 / 419 = 50,677.0 h (5.8 years); 419 / 16,384 / 54 x 30 = 0.01421 per GPU-month.
    assert LLAMA3_405B.job_mtbf_s / HOUR == pytest.approx(1296 / 419)
    assert LLAMA3_405B.job_mtbf_s / HOUR == pytest.approx(3.0931, abs=1e-4)
    assert (
        LLAMA3_405B.unit_mtbf_s / HOUR
        == pytest.approx(1296 * 16_384 / 419)
        == pytest.approx(50_677.0, abs=0.01)
    )
    assert LLAMA3_405B.per_unit_per_month == pytest.approx(419 / 16_384 / 54 * 30)
    assert LLAMA3_405B.per_unit_per_month == pytest.approx(0.014208, abs=1e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda: window_probability(0, 1),
        lambda: mtbf_from_probability(1.0, 1),
        lambda: mtbf_from_rate(0, 1),
        lambda: job_probability(0.5, 0),
        lambda: young_interval(0, 1),
        lambda: daly_interval(1, 0),
        lambda: goodput(0, 1, 1, 1),
    ],
)
def test_impossible_inputs_raise(call) -> None:
    with pytest.raises(ValueError):
        call()


probabilities = st.floats(0, 1)
units = st.integers(1, 10**7)
positive = st.floats(1e-3, 1e9)


@given(p=probabilities, n=units, more=st.integers(0, 10**6))
def test_job_probability_in_unit_interval_and_grows_with_n(p: float, n: int, more: int) -> None:
    small, large = job_probability(p, n), job_probability(p, n + more)
    assert 0 <= small <= large <= 1
    assert small >= p - 1e-15  # never less likely than one unit failing


@given(m=positive, w=st.floats(0, 1e9), longer=st.floats(0, 1e9), n=units)
def test_probability_grows_with_the_window(m: float, w: float, longer: float, n: int) -> None:
    p, q = window_probability(m, w), window_probability(m, w + longer)
    assert 0 <= p <= q <= 1
    assert 0 <= job_probability(p, n) <= job_probability(q, n) <= 1


@given(m=positive, x=st.floats(1e-12, 1e-4))
def test_daly_tends_to_young_as_c_over_m_vanishes(m: float, x: float) -> None:
    c = 2 * m * x  # x = C / 2M
    ratio = daly_interval(c, m) / young_interval(c, m)
    # tau_D / tau_Y = 1 - 2x/3 / sqrt(x) ... = 1 - (2/3) sqrt(x) + x/9: within 1 sqrt(x) of 1.
    assert abs(ratio - 1) <= math.sqrt(x)


@given(c=st.floats(1, 1e4), r=st.floats(0, 1e4), m=st.floats(1e3, 1e9))
def test_goodput_peaks_at_youngs_interval(c: float, r: float, m: float) -> None:
    tau = young_interval(c, m)
    best = goodput(tau, c, r, m)
    assert best >= goodput(tau / 2, c, r, m)
    assert best >= goodput(2 * tau, c, r, m)
    assert 0 <= best <= 1


def test_daly_ratio_is_c_over_2m_and_the_rate_period_follows_the_rate_kind() -> None:
    assert daly_ratio(6 * 60, 3 * HOUR) == pytest.approx(1 / 60)  # 6 min / (2 x 180 min)
    query = FailuresQuery(rate_kind="per_unit_per_month", rate=0.5)
    assert query.rate_period_s() == MONTH == 720 * HOUR
    assert FailuresQuery(rate_kind="mtbf_hours", rate=1000).rate_period_s() is None


def test_llama3_table5_counts_add_up_to_the_record_and_only_row_one_disagrees() -> None:
    # arXiv:2407.21783, Table 5: 18 rows whose counts sum to the 419 unexpected interruptions.
    rows = LLAMA3_405B_TABLE5
    assert len(rows) == 18
    assert sum(count for _, _, count, _ in rows) == LLAMA3_405B.interruptions == 419
    mismatched = [name for name, _, count, pct in rows if round(100 * count / 419, 1) != pct]
    assert mismatched == ["Faulty GPU"]  # 148 / 419 = 35.3 %, printed 30.1 %
    assert round(100 * 148 / 419, 1) == 35.3
    # The paper's "GPU issues ... 58.7%" sums the printed GPU percentages; counts give 64.0 %.
    gpu = [(count, pct) for _, cat, count, pct in rows if cat == "GPU"]
    assert round(sum(pct for _, pct in gpu), 1) == 58.7
    assert round(100 * sum(count for count, _ in gpu) / 419, 1) == 64.0
    assert round(sum(pct for _, _, _, pct in rows), 1) == 94.9


def test_annual_failure_rate_round_trip() -> None:
    # AFR 10 %: one failure per 10 unit-years, MTBF 87,600 h.
    assert mtbf_from_annual_rate(10) == 87_600 * HOUR == 10 * YEAR
    assert annual_rate(87_600 * HOUR) == pytest.approx(10)


def test_series_of_kinds_by_hand() -> None:
    # 1,000 GPUs of MTBF 50,000 h and 125 hosts of 25,000 h: rates 0.02 + 0.005 per hour,
    # job MTBF 1 / 0.025 = 40 h. One kind alone is M_u / n again.
    kinds = [UnitKind("GPU", 1000, 50_000 * HOUR), UnitKind("host", 125, 25_000 * HOUR)]
    assert series_mtbf(kinds) == pytest.approx(40 * HOUR)
    assert series_mtbf(kinds[:1]) == pytest.approx(job_mtbf(50_000 * HOUR, 1000))
    with pytest.raises(ValueError):
        series_mtbf([])
    with pytest.raises(ValueError):
        series_mtbf([UnitKind("GPU", 0, HOUR)])


def test_llama3_table5_split_into_kinds_reproduces_the_total() -> None:
    # arXiv:2407.21783, Table 5 grouped: GPU rows 148+72+19+17+6+6 = 268 on 16,384 GPUs;
    # host rows 7+3+3+2+2+2+2 = 21 plus 32 unplanned host maintenance = 53 on 2,048 servers
    # (eight GPUs each, §3.3.1); network switch/cable 35 on 1,024 racks (16 GPUs per ToR
    # switch, §3.3.1); software bug 54 + dependency 2 + NCCL watchdog timeouts 7 = 63 per job.
    kinds = {kind.name: kind for kind in llama3_kinds()}
    days_h = 54 * 24
    gpu = kinds["GPU"]
    assert gpu.count == 16_384
    assert gpu.mtbf_s / HOUR == pytest.approx(days_h * 16_384 / 268)  # 79,230.1 h
    assert annual_rate(gpu.mtbf_s) == pytest.approx(11.06, abs=0.01)  # % per GPU-year
    assert kinds["host"].mtbf_s / HOUR == pytest.approx(days_h * 2048 / 53)  # 50,079.4 h
    assert kinds["network (per rack)"].mtbf_s / HOUR == pytest.approx(days_h * 1024 / 35)
    assert kinds["software and unknown (per job)"].mtbf_s / HOUR == pytest.approx(days_h / 63)
    # The series sum gives back the paper's total: 419 in 54 days, one every 3.093 h.
    job = series_mtbf(tuple(kinds.values()))
    assert job == pytest.approx(LLAMA3_405B.job_mtbf_s)
    assert job / HOUR == pytest.approx(3.0931, abs=1e-4)
    shares = {name: kind.rate_per_s * job for name, kind in kinds.items()}
    assert round(100 * shares["GPU"], 1) == 64.0  # the counts' share, not the printed 58.7 %
