r"""Fit a performance profile (app.calc.performance) to measured training runs, and say how well
it explains them.

`fit(runs)` is a least-squares fit of the profile's named parameters on log step time,
r_i = ln(predicted_i / measured_i), each parameter kept inside the bounds that keep it physical
(scipy.optimize.least_squares, trust-region reflective). Parameters that the runs cannot tell
apart stay near their physical defaults: each adds a weak prior residual
PRIOR_WEIGHT (x - x_0) / (high - low), so that with few runs the fit moves only what they
measure. Runs that report their peak memory fit the memory parameters the same way, on log
peak bytes.

The report gives each run's prediction, measurement and residual, and a leave-one-out
cross-validation: each run predicted by a profile fitted to the others, the honest estimate of
how far off the model is on a run it has not seen.

The runs, and the runs files (JSON or CSV) they are read from, are app.calc.calibration_runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from app.calc.calibration_runs import MAX_RUNS, MeasuredRun

# app/calculators imports load_runs from here, beside fit.
from app.calc.calibration_runs import load_runs as load_runs
from app.calc.messages import N_, Message
from app.calc.performance import (
    MEMORY_PARAMETERS,
    PARAMETERS,
    PerformanceProfile,
)
from app.calc.planner.costs import Costs
from app.calc.planner.results import LayoutCost

# What a fit moves by default: what published and benchmark runs can tell apart. The others
# keep their physical defaults unless asked for.
TIME_FREE = (
    "gemm_efficiency", "hbm_efficiency", "kernel_overhead_s", "inter_link_efficiency",
    "intra_link_efficiency", "overlap_slowdown", "dp_overlap", "microbatch_overhead_s",
)  # fmt: skip
MEMORY_FREE = ("logit_bytes", "context_bytes", "allocator_fraction")
PRIOR_WEIGHT = 0.05


@dataclass(frozen=True)
class Residual:
    """One run under a profile: predicted and measured, and their log ratio."""

    name: str
    measured_step_s: float
    predicted_step_s: float
    held_out_step_s: float | None  # predicted by the profile fitted without this run
    measured_memory_bytes: float | None
    predicted_memory_bytes: float

    @property
    def ratio(self) -> float:
        return self.predicted_step_s / self.measured_step_s

    @property
    def held_out_ratio(self) -> float | None:
        if self.held_out_step_s is None:
            return None
        return self.held_out_step_s / self.measured_step_s

    @property
    def memory_ratio(self) -> float | None:
        if self.measured_memory_bytes is None:
            return None
        return self.predicted_memory_bytes / self.measured_memory_bytes


@dataclass(frozen=True)
class Report:
    residuals: tuple[Residual, ...]
    free: tuple[str, ...]  # the parameters the fit moved

    def _errors(self, ratios: Iterable[float | None]) -> list[float]:
        return [abs(r - 1) for r in ratios if r is not None]

    @property
    def mean_error(self) -> float:
        """Mean |predicted / measured - 1| over the runs, with the fitted profile."""
        return float(np.mean(self._errors(r.ratio for r in self.residuals)))

    @property
    def worst_error(self) -> float:
        return max(self._errors(r.ratio for r in self.residuals))

    @property
    def held_out_mean_error(self) -> float | None:
        """The same, each run predicted by the profile fitted to the others (None: fewer than
        three runs, or no cross-validation asked for)."""
        errors = self._errors(r.held_out_ratio for r in self.residuals)
        return float(np.mean(errors)) if errors else None

    @property
    def held_out_worst_error(self) -> float | None:
        errors = self._errors(r.held_out_ratio for r in self.residuals)
        return max(errors) if errors else None

    @property
    def memory_mean_error(self) -> float | None:
        errors = self._errors(r.memory_ratio for r in self.residuals)
        return float(np.mean(errors)) if errors else None


@dataclass(frozen=True)
class Calibration:
    profile: PerformanceProfile
    report: Report
    runs: tuple[MeasuredRun, ...] = field(repr=False, default=())


def predict(run: MeasuredRun, profile: PerformanceProfile) -> LayoutCost:
    """The planner's cost of the run's layout under `profile`."""
    return Costs(replace(run.request, profile=profile)).cost(run.layout)


def _fit_parameters(
    runs: Sequence[MeasuredRun],
    start: PerformanceProfile,
    free: Sequence[str],
    measured: Any,
    prior_weight: float,
) -> PerformanceProfile:
    """Least squares of ln(predicted / measured) over `runs`, moving `free` inside bounds;
    `measured` picks (value, predicted value of a cost) per run."""
    if not free or not runs:
        return start
    low = np.array([PARAMETERS[n].low for n in free])
    high = np.array([PARAMETERS[n].high for n in free])
    x0 = np.clip([getattr(start, n) for n in free], low, high)
    span = high - low

    def profile_at(x: np.ndarray) -> PerformanceProfile:
        return start.with_values(**{n: float(v) for n, v in zip(free, x, strict=True)})

    def residuals(x: np.ndarray) -> np.ndarray:
        profile = profile_at(np.clip(x, low, high))
        fitted = [math.log(pred(predict(run, profile)) / value) for run, (value, pred) in
                  zip(runs, measured, strict=True)]  # fmt: skip
        prior = prior_weight * (x - x0) / span
        return np.concatenate([fitted, prior])

    result = least_squares(
        residuals, x0, bounds=(low, high), x_scale=span, diff_step=1e-3, xtol=1e-6,
        ftol=1e-8, max_nfev=200,
    )  # fmt: skip
    return profile_at(np.clip(result.x, low, high))


def _time_targets(runs: Sequence[MeasuredRun]) -> list[tuple[float, Any]]:
    return [(run.step_s, lambda cost: cost.step_time_s) for run in runs]


def _memory_targets(runs: Sequence[MeasuredRun]) -> list[tuple[float, Any]]:
    return [(float(run.peak_memory_bytes), lambda cost: cost.memory_bytes)  # type: ignore[arg-type]
            for run in runs]  # fmt: skip


def fit_profile(
    runs: Sequence[MeasuredRun],
    start: PerformanceProfile | None = None,
    free: Sequence[str] = TIME_FREE,
    memory_free: Sequence[str] = MEMORY_FREE,
    name: str = "fitted",
    source: str = "",
    prior_weight: float = PRIOR_WEIGHT,
    memory_runs: Sequence[MeasuredRun] = (),
) -> PerformanceProfile:
    """The profile that best explains `runs` (module docstring), without the report.
    `memory_runs` fit the memory terms only: runs whose step time is not to be trusted."""
    start = start or PerformanceProfile()
    _check_names(free, memory_free)
    profile = _fit_parameters(runs, start, free, _time_targets(runs), prior_weight)
    with_memory = [run for run in (*runs, *memory_runs) if run.peak_memory_bytes is not None]
    profile = _fit_parameters(
        with_memory, profile, memory_free, _memory_targets(with_memory), prior_weight
    )
    names = ", ".join(run.name for run in runs if run.name)
    return replace(profile, name=name, source=source or f"fitted to {len(runs)} runs: {names}")


def fit(
    runs: Sequence[MeasuredRun],
    start: PerformanceProfile | None = None,
    free: Sequence[str] = TIME_FREE,
    memory_free: Sequence[str] = MEMORY_FREE,
    cross_validate: bool = True,
    name: str = "fitted",
    source: str = "",
    prior_weight: float = PRIOR_WEIGHT,
    memory_runs: Sequence[MeasuredRun] = (),
) -> Calibration:
    """Fit a profile to `runs` and report each run's residual, with leave-one-out
    cross-validation when there are at least three runs. `memory_runs` (with their peak
    memory) join the fit of the memory terms only, and are not in the report."""
    runs = tuple(runs)
    if not runs:
        raise ValueError(Message(N_("no runs to fit: give at least one measured run")))
    if len(runs) > MAX_RUNS:
        template = N_("at most %(most)s runs can be fitted at once, got %(count)s")
        raise ValueError(Message(template, most=MAX_RUNS, count=len(runs)))
    profile = fit_profile(runs, start, free, memory_free, name, source, prior_weight, memory_runs)
    held_out: list[float | None] = [None] * len(runs)
    if cross_validate and len(runs) >= 3:
        for i, run in enumerate(runs):
            others = runs[:i] + runs[i + 1 :]
            without = fit_profile(others, start, free, memory_free=(), prior_weight=prior_weight)
            held_out[i] = predict(run, without).step_time_s
    residuals = []
    for run, out in zip(runs, held_out, strict=True):
        cost = predict(run, profile)
        residuals.append(
            Residual(
                run.name,
                run.step_s,
                cost.step_time_s,
                out,
                run.peak_memory_bytes,
                cost.memory_bytes,
            )  # fmt: skip
        )
    return Calibration(profile, Report(tuple(residuals), tuple(free)), runs)


def _check_names(*groups: Sequence[str]) -> None:
    for group in groups:
        unknown = [n for n in group if n not in PARAMETERS]
        if unknown:
            raise ValueError(f"unknown profile parameters: {', '.join(unknown)}")
    if set(groups[1]) - set(MEMORY_PARAMETERS):
        raise ValueError(f"memory fits move only {', '.join(MEMORY_PARAMETERS)}")
