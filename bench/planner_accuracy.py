"""How close the planner's step time comes to published runs, each held out of the fit in turn.

For every built-in profile (app/calc/profiles/, app.calc.published_runs.PROFILE_TITLES) it fits
the profile to its runs (app.calc.calibration.fit) and prints, per run, the measured step
time, the prediction of the profile fitted to all the runs, and the prediction of the profile
fitted without that run (leave-one-out), then the mean and worst error of each. The runs that
are reported but not fitted (app.calc.published_runs: a figure whose derivation the paper
leaves open, and DeepSeek-V3) follow, under the default profile. Last, each published run
the planner page offers (app.calc.planner.published): its own layout's step time over that of
the planner's best layout under the same constraints (published teams chose well, so a large
ratio says which term is mis-modelled).

    .venv/bin/python -m bench.planner_accuracy            # print (about a minute per profile)
    .venv/bin/python -m bench.planner_accuracy --write    # and store the fitted profiles

--write is how app/calc/profiles/*.json are made; tests/calc/test_profiles.py checks that the
stored files are what the fit gives.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from app.calc.calibration import Calibration, fit, predict
from app.calc.planner import plan
from app.calc.planner.published import RUNS, evaluate_run, request_for
from app.calc.profiles import FOLDER, default_profile
from app.calc.published_runs import (
    PROFILE_TITLES,
    deepseek_v3,
    dense_runs,
    memory_runs_of,
    row_of,
    rows,
    runs_of,
)


def fit_built_in(name: str, cross_validate: bool = True) -> Calibration:
    """The built-in profile `name` fitted to its runs, as --write stores it."""
    runs, memory_runs = runs_of(name), memory_runs_of(name)
    source = f"{PROFILE_TITLES[name]}: fitted by app.calc.calibration to " + ", ".join(
        run.name for run in runs
    )
    if memory_runs:
        source += "; memory terms also to " + ", ".join(run.name for run in memory_runs)
    return fit(runs, cross_validate=cross_validate, name=name, source=source,
               memory_runs=memory_runs)  # fmt: skip


def _print_memory_runs(name: str, calibration: Calibration) -> None:
    """The runs that fit only the memory terms: their memory, and their step time beside."""
    memory_runs = memory_runs_of(name)
    if not memory_runs:
        return
    print(f"memory fitted, time not ({row_of(memory_runs[0].name).unfitted}):")
    print(f"{'run':<36}{'measured s':>11}{'ratio':>7}{'measured GB':>13}{'ratio':>7}")
    for run in memory_runs:
        cost = predict(run, calibration.profile)
        memory = run.peak_memory_bytes or 0.0
        print(f"{run.name:<36}{run.step_s:>11.2f}{cost.step_time_s / run.step_s:>7.3f}"
              f"{memory / 1e9:>13.1f}{cost.memory_bytes / memory:>7.3f}")  # fmt: skip


def _print(calibration: Calibration) -> None:
    print(f"{'run':<28}{'measured s':>12}{'fitted':>9}{'held out':>10}{'memory':>8}")
    for r in calibration.report.residuals:
        out = f"{r.held_out_ratio:>10.3f}" if r.held_out_ratio is not None else f"{'-':>10}"
        memory = f"{r.memory_ratio:>8.3f}" if r.memory_ratio is not None else ""
        print(f"{r.name:<28}{r.measured_step_s:>12.3f}{r.ratio:>9.3f}{out}{memory}")
    report = calibration.report
    print(
        f"fitted: mean error {report.mean_error:.1%}, worst {report.worst_error:.1%}; "
        f"held out: mean {report.held_out_mean_error:.1%}, worst {report.held_out_worst_error:.1%}"
    )
    print("profile:")
    for key, value in calibration.profile.values().items():
        print(f"  {key:<24}{value:.4g}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="store the fitted profiles")
    args = parser.parse_args(argv)
    for name, title in PROFILE_TITLES.items():
        started = time.perf_counter()
        calibration = fit_built_in(name)
        print(f"\n== {name}: {title} ({time.perf_counter() - started:.0f} s)")
        _print(calibration)
        _print_memory_runs(name, calibration)
        if args.write:
            report = calibration.report
            stored = replace(calibration.profile, held_out_mean_error=report.held_out_mean_error,
                             held_out_worst_error=report.held_out_worst_error)  # fmt: skip
            (FOLDER / f"{name}.json").write_text(stored.to_json())
            print(f"written to {FOLDER / f'{name}.json'}")
    print("\n== reported, not fitted (default profile; planner / published step time)")
    profile = default_profile()
    unfitted = [run for run, row in zip(dense_runs(), rows(), strict=True) if not row.profile]
    for run in [*unfitted, deepseek_v3()]:
        cost = predict(run, profile)
        why = (
            row_of(run.name).unfitted
            if run.name != "deepseek-v3"
            else ("MoE: FP8 matmuls and DualPipe's hidden all-to-all are not modelled")
        )
        print(f"{run.name:<28}{run.step_s:>12.3f}{cost.step_time_s / run.step_s:>9.3f}  {why}")
    print("\n== published layout against the planner's best (same request, same constraints)")
    print(f"{'run':<16}{'published s':>12}{'best s':>9}{'ratio':>7}  best layout")
    for slug, published in RUNS.items():
        own = evaluate_run(published)
        best = plan(request_for(published, top=1)).ranked
        if isinstance(own, str) or not best:
            print(f"{slug:<16}  {own if isinstance(own, str) else 'nothing fits'}")
            continue
        mine, top = own.cost.step_time_s, best[0].step_time_s
        print(f"{slug:<16}{mine:>12.3f}{top:>9.3f}{mine / top:>7.2f}  {best[0].layout.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
