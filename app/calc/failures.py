"""Failures of a large job and how often to checkpoint it.

Failures are a Poisson process (exponential times between failures), each unit (GPU or node)
independent with mean time between failures M_u:

    p      = 1 - exp(-w / M_u)          a unit fails at least once in a window w
    P(n)   = 1 - (1 - p)^n              at least one of n units fails in the window
    M_job  = M_u / n                    the job's MTBF: n independent exponentials, first one

Checkpointing every tau seconds of work, a checkpoint taking C (delta) seconds and a restart R:

    Young (1974):  tau = sqrt(2 C M)
        J. W. Young, "A first order approximation to the optimum checkpoint interval",
        Communications of the ACM 17(9):530-531.
    Daly (2006):   tau = sqrt(2 C M) [1 + (1/3) sqrt(C / 2M) + (1/9) (C / 2M)] - C  for C < 2M,
                   tau = M                                                           otherwise
        J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
        dumps", Future Generation Computer Systems 22(3):303-312, doi:10.1016/j.future.2004.11.016.
        Its Figures 3-5 give tau_opt = 117, 57 and 9.1 min for R = 10 min, C = 5 min and
        M = 24 h, 6 h and 15 min (pinned in the tests).

Goodput, the first-order model behind Young's result: a checkpoint costs C every tau of work,
and each failure (one per M on average) loses half an interval of work plus the restart:

    goodput(tau) = 1 - C / tau - (tau / 2 + R) / M       (floored at 0)

Its maximum is exactly Young's tau (d/dtau [C/tau + tau/2M] = 0). Daly's tau maximises his more
complete model instead; the two agree as C / M -> 0. The model is first order: it is accurate
while C, R and tau are small next to M, and it stops meaning much as they approach M.

Units of several kinds in series (GPUs, hosts, switches, ...), n_i units of kind i each with
MTBF M_i, all needed by the job: failure rates add, so

    M_job  = 1 / sum_i (n_i / M_i)

which is M_u / n again when there is one kind. An annual failure rate (AFR, failures per
unit-year as a percentage, as disk and server fleets report it) is the rate 1 / M per year:
M = 8760 h / (AFR / 100).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

HOUR = 3600.0
DAY = 24 * HOUR
MONTH = 30 * DAY  # a "month" of failure rates is 30 days here
YEAR = 365 * DAY  # an annual failure rate's year: 8760 hours


def window_probability(mtbf_s: float, window_s: float) -> float:
    """p = 1 - exp(-w / M): one unit fails at least once in the window (exponential model)."""
    if mtbf_s <= 0 or window_s < 0:
        raise ValueError("the MTBF must be positive and the window non-negative")
    return -math.expm1(-window_s / mtbf_s)


def mtbf_from_probability(probability: float, window_s: float) -> float:
    """M = -w / ln(1 - p): the MTBF that gives probability p of a failure in the window."""
    if not 0 < probability < 1 or window_s <= 0:
        raise ValueError("the probability must be strictly between 0 and 1, the window positive")
    return -window_s / math.log1p(-probability)


def mtbf_from_rate(failures: float, period_s: float) -> float:
    """M = period / failures: e.g. 0.01 failures per GPU per month -> 100 months."""
    if failures <= 0 or period_s <= 0:
        raise ValueError("the failure rate and its period must be positive")
    return period_s / failures


def job_probability(unit_probability: float, units: int) -> float:
    """P = 1 - (1 - p)^n: at least one of n independent units fails."""
    if not 0 <= unit_probability <= 1 or units < 1:
        raise ValueError("the probability must be in [0, 1] and the units at least 1")
    if unit_probability == 1:
        return 1.0
    return -math.expm1(units * math.log1p(-unit_probability))


def job_mtbf(unit_mtbf_s: float, units: int) -> float:
    """M_job = M_u / n: the first of n independent exponential failures."""
    if unit_mtbf_s <= 0 or units < 1:
        raise ValueError("the MTBF must be positive and the units at least 1")
    return unit_mtbf_s / units


def young_interval(checkpoint_s: float, mtbf_s: float) -> float:
    """Young (1974): tau = sqrt(2 C M)."""
    if checkpoint_s <= 0 or mtbf_s <= 0:
        raise ValueError("the checkpoint time and the MTBF must be positive")
    return math.sqrt(2 * checkpoint_s * mtbf_s)


def daly_ratio(checkpoint_s: float, mtbf_s: float) -> float:
    """x = C / (2M), the ratio Daly's (2006) higher-order interval is expanded in."""
    return checkpoint_s / (2 * mtbf_s)


def daly_interval(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly (2006): sqrt(2CM)[1 + (1/3)sqrt(C/2M) + (1/9)(C/2M)] - C for C < 2M, else M."""
    if checkpoint_s <= 0 or mtbf_s <= 0:
        raise ValueError("the checkpoint time and the MTBF must be positive")
    if checkpoint_s >= 2 * mtbf_s:
        return mtbf_s
    x = daly_ratio(checkpoint_s, mtbf_s)
    return math.sqrt(2 * checkpoint_s * mtbf_s) * (1 + math.sqrt(x) / 3 + x / 9) - checkpoint_s


def lost_per_failure(interval_s: float, restart_s: float) -> float:
    """Expected time lost per failure: half an interval of work redone, plus the restart."""
    return interval_s / 2 + restart_s


def goodput(interval_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float) -> float:
    """1 - C/tau - (tau/2 + R)/M, floored at 0 (module docstring)."""
    if interval_s <= 0 or checkpoint_s < 0 or restart_s < 0 or mtbf_s <= 0:
        raise ValueError("interval and MTBF must be positive, checkpoint and restart non-negative")
    waste = checkpoint_s / interval_s + lost_per_failure(interval_s, restart_s) / mtbf_s
    return max(0.0, 1 - waste)


def mtbf_from_annual_rate(afr_percent: float) -> float:
    """M = 1 year / (AFR / 100): an AFR of 10 % is one failure per 10 unit-years."""
    if afr_percent <= 0:
        raise ValueError("the annual failure rate must be positive")
    return YEAR / (afr_percent / 100)


def annual_rate(mtbf_s: float) -> float:
    """AFR in percent: 100 x (one year / M)."""
    if mtbf_s <= 0:
        raise ValueError("the MTBF must be positive")
    return 100 * YEAR / mtbf_s


@dataclass(frozen=True)
class UnitKind:
    """n units of one kind, each failing on its own with mean time between failures M."""

    name: str
    count: int
    mtbf_s: float

    @property
    def rate_per_s(self) -> float:
        """n / M: this kind's share of the job's failure rate."""
        return self.count / self.mtbf_s


def series_mtbf(kinds: list[UnitKind] | tuple[UnitKind, ...]) -> float:
    """M_job = 1 / sum(n_i / M_i): every unit of every kind is needed (module docstring)."""
    if not kinds:
        raise ValueError("give at least one kind of unit")
    for kind in kinds:
        if kind.count < 1 or kind.mtbf_s <= 0:
            raise ValueError(f"{kind.name}: the count must be at least 1 and the MTBF positive")
    return 1 / sum(kind.rate_per_s for kind in kinds)


def kind_mtbf_from_record(failures: int, units: int, days: float) -> float:
    """A kind's MTBF from a record: units x days / failures (every unit ran throughout)."""
    if failures < 1 or units < 1 or days <= 0:
        raise ValueError("failures and units must be at least 1 and the period positive")
    return units * days * DAY / failures


@dataclass(frozen=True)
class PublishedRecord:
    """Failures reported for one run, and the rates they imply if every unit ran throughout."""

    interruptions: int
    days: float
    units: int
    source: str

    @property
    def job_mtbf_s(self) -> float:
        return self.days * DAY / self.interruptions

    @property
    def unit_mtbf_s(self) -> float:
        return self.job_mtbf_s * self.units

    @property
    def per_unit_per_month(self) -> float:
        return MONTH / self.unit_mtbf_s


# Grattafiori et al. 2024, "The Llama 3 Herd of Models", arXiv:2407.21783, Section 3.3.4:
# "During a 54-day snapshot period of pre-training, we experienced a total of 466 job
# interruptions. Of these, 47 were planned ... The remaining 419 were unexpected
# interruptions" (Table 5 classifies them). Llama 3 405B trained "on up to 16K H100 GPUs";
# the largest configuration in Table 4 uses 16,384. The implied per-GPU rate assumes all
# 16,384 GPUs ran the whole snapshot and charges every interruption (host, network and
# software ones included) to a GPU: a per-GPU-equivalent rate, not a GPU failure rate.
LLAMA3_405B = PublishedRecord(
    interruptions=419,
    days=54,
    units=16_384,
    source=(
        "Llama 3 Herd of Models, arXiv:2407.21783, §3.3.4 and Table 5: 419 unexpected "
        "interruptions (466 in all, 47 planned) in a 54-day snapshot of 405B pre-training "
        "on up to 16K H100s (16,384 in Table 4)"
    ),
)


# The same paper's Table 5, row by row: (component, category, interruptions, printed %). The
# counts add up to the 419 above. Every printed percentage is count / 419 rounded to 0.1,
# except the first row: 148 / 419 = 35.3 %, yet the table prints 30.1 % (and the text's
# "58.7 %" for GPU issues is the sum of the printed GPU percentages; the GPU counts give
# 268 / 419 = 64.0 %). Both printed figures are kept as published; nothing here uses the
# percentages. Read from copies of the table's text, not from the arXiv PDF itself.
LLAMA3_405B_TABLE5: tuple[tuple[str, str, int, float], ...] = (
    ("Faulty GPU", "GPU", 148, 30.1),
    ("GPU HBM3 Memory", "GPU", 72, 17.2),
    ("Software Bug", "Dependency", 54, 12.9),
    ("Network Switch/Cable", "Network", 35, 8.4),
    ("Host Maintenance", "Unplanned Maintenance", 32, 7.6),
    ("GPU SRAM Memory", "GPU", 19, 4.5),
    ("GPU System Processor", "GPU", 17, 4.1),
    ("NIC", "Host", 7, 1.7),
    ("NCCL Watchdog Timeouts", "Unknown", 7, 1.7),
    ("Silent Data Corruption", "GPU", 6, 1.4),
    ("GPU Thermal Interface + Sensor", "GPU", 6, 1.4),
    ("SSD", "Host", 3, 0.7),
    ("Power Supply", "Host", 3, 0.7),
    ("Server Chassis", "Host", 2, 0.5),
    ("IO Expansion Board", "Host", 2, 0.5),
    ("Dependency", "Dependency", 2, 0.5),
    ("CPU", "Host", 2, 0.5),
    ("System Memory", "Host", 2, 0.5),
)


# Table 5 grouped into kinds of unit, each charged to the units that can cause it, so that the
# series sum reproduces the 419 (checked in the tests). GPU rows go to the 16,384 GPUs; host
# rows and unplanned host maintenance ("unplanned individual host maintenance events",
# §3.3.4) to the 2,048 servers (§3.3.1: "Each server is equipped with eight GPUs"); network
# switch/cable rows to the 1,024 racks (§3.3.1: "each rack hosts 16 GPUs split between two
# servers and connected by a single Minipack2 top-of-the-rack (ToR) switch"), a stand-in, since
# the paper does not count switches and cables; software, dependency and unknown rows (NCCL
# watchdog timeouts) to the job as a whole (one unit).
LLAMA3_405B_KINDS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("GPU", ("GPU",), 16_384),
    ("host", ("Host", "Unplanned Maintenance"), 2_048),
    ("network (per rack)", ("Network",), 1_024),
    ("software and unknown (per job)", ("Dependency", "Unknown"), 1),
)


def llama3_kinds() -> tuple[UnitKind, ...]:
    """LLAMA3_405B_KINDS with each kind's MTBF from its Table 5 count over the 54 days."""
    kinds = []
    for name, categories, units in LLAMA3_405B_KINDS:
        failures = sum(n for _, cat, n, _ in LLAMA3_405B_TABLE5 if cat in categories)
        kinds.append(
            UnitKind(name, units, kind_mtbf_from_record(failures, units, LLAMA3_405B.days))
        )
    return tuple(kinds)
