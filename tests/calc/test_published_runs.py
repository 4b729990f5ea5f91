"""The built-in performance profiles and the published runs they are fitted to
(app.calc.published_runs, app/calc/profiles/): every dense run within 10% of its measured step
time, the stored profiles exactly what the fit gives, and the ZeRO-style profile's runs each
within 10% when held out of its fit. bench/planner_accuracy.py prints the held-out errors of the
larger profile (a minute of fitting), which docs/benchmarks.md records."""

from __future__ import annotations

import pytest

from app.calc.calibration import fit, predict
from app.calc.flops import megatron_flops_per_iteration
from app.calc.performance import PARAMETERS
from app.calc.profiles import DEFAULT, built_in, default_profile
from app.calc.published_runs import (
    PROFILE_TITLES,
    deepseek_v3,
    dense_runs,
    memory_runs_of,
    row_of,
    rows,
    runs_of,
)
from bench.planner_accuracy import fit_built_in

FITTED = [(row.profile, row.name) for row in rows() if row.profile and row.time_fitted]
MEASURED_MEMORY = [row.name for row in rows() if row.peak_memory_bytes]


@pytest.mark.parametrize(("profile", "name"), FITTED, ids=[name for _, name in FITTED])
def test_each_dense_run_is_within_ten_percent_under_its_profile(profile: str, name: str) -> None:
    run = next(run for run in dense_runs() if run.name == name)
    cost = predict(run, built_in()[profile])
    assert cost.step_time_s / run.step_s == pytest.approx(1, abs=0.10)


@pytest.mark.parametrize("name", MEASURED_MEMORY)
def test_each_measured_memory_is_within_ten_percent_under_its_profile(name: str) -> None:
    # BigScience's nvidia-smi readings on BLOOM's layouts: what the memory terms are fitted to
    run = next(run for run in dense_runs() if run.name == name)
    cost = predict(run, built_in()[row_of(name).profile or DEFAULT])
    assert run.peak_memory_bytes is not None
    assert cost.memory_bytes / run.peak_memory_bytes == pytest.approx(1, abs=0.10)


def test_runs_whose_time_is_not_fitted_say_why_and_fit_memory_only() -> None:
    untimed = [row for row in rows() if not row.time_fitted]
    assert untimed and all(row.unfitted and row.peak_memory_bytes for row in untimed)
    # Their memory makes the ZeRO-style profile's allocator reserve what nvidia-smi showed,
    # well over the 8% default
    assert built_in()["zero-a100"].allocator_fraction > 0.15
    assert {run.name for run in memory_runs_of("zero-a100")} == {row.name for row in untimed}


@pytest.mark.parametrize("name", list(PROFILE_TITLES))
def test_the_stored_profiles_are_what_the_fit_gives(name: str) -> None:
    fresh = fit_built_in(name, cross_validate=False).profile
    stored = built_in()[name]
    assert stored.name == name and stored.source == fresh.source
    for key in PARAMETERS:
        assert getattr(stored, key) == pytest.approx(getattr(fresh, key), rel=1e-6, abs=1e-12)


def test_the_zero_style_runs_held_out_in_turn_are_each_within_ten_percent() -> None:
    report = fit(runs_of("zero-a100"), cross_validate=True, memory_free=()).report
    for residual in report.residuals:
        assert residual.held_out_ratio == pytest.approx(1, abs=0.10), residual.name
    assert report.held_out_mean_error is not None and report.held_out_mean_error <= 0.05


def test_the_default_profile_is_the_published_one() -> None:
    assert DEFAULT == "published" and default_profile() == built_in()["published"]
    assert {row.profile for row in rows()} == set(PROFILE_TITLES) | {None}


def test_step_times_derived_from_throughput_use_the_papers_own_count() -> None:
    # Narayanan et al. Table 1, 1T: 163 TFLOP/s per GPU on 3,072 GPUs, counted with eq. (3)
    # (recompute included): 102.6 s per step of 3,072 sequences.
    run = next(run for run in dense_runs() if run.name == "megatron-t1-1008.0b")
    flops = megatron_flops_per_iteration(3072, 2048, 128, 25600, 51200, True)
    assert run.step_s == pytest.approx(flops / (3072 * 163e12))
    assert run.step_s == pytest.approx(102.6, abs=0.1)
    # Measured times are taken as printed.
    assert next(r for r in dense_runs() if r.name == "bloom-176b").step_s == 104.70
    assert next(r for r in dense_runs() if r.name == "korthikanti-1t-selective").step_s == 71.49


def test_every_run_names_its_source_and_what_it_assumes() -> None:
    for row in rows():
        assert row.source, row.name
        assert row.profile or row.unfitted, row.name
    assert "Assumed" in row_of("mt-nlg-530b-2240").source
    assert "neither" in row_of("llama3-405b-16k-cp16").unfitted


def test_deepseek_v3_is_reported_not_fitted() -> None:
    run = deepseek_v3()
    assert run.name == "deepseek-v3"
    assert all(r.name != run.name for r in dense_runs())
    # 1,543 tokens/s per GPU on 2,048 GPUs: 15,360 x 4,096 tokens per step.
    assert run.step_s == pytest.approx(15360 * 4096 / (1543 * 2048))
