"""Fitting a performance profile to measured runs (app.calc.calibration): the fit recovers the
parameters that made synthetic runs, runs files round-trip, and bad ones say what is wrong."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest

from app.calc.calibration import PRIOR_WEIGHT, fit, predict
from app.calc.calibration_runs import MeasuredRun, load_runs, run_to_row
from app.calc.performance import PerformanceProfile
from app.calc.planner import Layout, cluster, plan_request

# What synthetic runs are made with: a slower framework than the defaults on every axis.
TRUE = PerformanceProfile(
    gemm_efficiency=0.72, hbm_efficiency=0.6, kernel_overhead_s=12e-6,
    inter_link_efficiency=0.55, logit_bytes=10.0, allocator_fraction=0.15,
)  # fmt: skip
FREE = ("gemm_efficiency", "hbm_efficiency", "kernel_overhead_s", "inter_link_efficiency")


def _layouts() -> list[tuple[str, int, int, Layout]]:
    """(model, nodes, sequences per step, layout): small and large models, one node and
    several, layouts that lean on each parameter differently."""
    return [
        ("llama3-8b", 1, 64, Layout(dp=8, zero_stage=1, micro_batch=2)),
        ("llama3-8b", 1, 64, Layout(dp=2, tp=4, micro_batch=8)),
        ("llama3-8b", 2, 64, Layout(dp=16, zero_stage=3, micro_batch=1)),
        ("llama3-8b", 4, 128, Layout(dp=32, zero_stage=2, micro_batch=4)),
        ("llama3-8b", 4, 128, Layout(dp=8, tp=4, micro_batch=1)),
        ("llama3-70b", 4, 64, Layout(dp=2, tp=8, pp=2, distributed_optimizer=True)),
        ("llama3-70b", 8, 128, Layout(dp=4, tp=8, pp=2, zero_stage=1, micro_batch=2)),
        (
            "llama3-70b",
            8,
            128,
            Layout(dp=8, tp=8, distributed_optimizer=True, recompute="full"),
        ),  # fmt: skip
        ("mistral-7b", 2, 32, Layout(dp=16, micro_batch=2, zero_stage=1)),
        ("mistral-7b", 1, 32, Layout(dp=4, tp=2, micro_batch=1)),
    ]


def synthetic_runs(truth: PerformanceProfile = TRUE) -> list[MeasuredRun]:
    runs = []
    for i, (model, nodes, sequences, layout) in enumerate(_layouts()):
        request = plan_request(model, cluster(nodes=nodes), sequences * 4096, 4096, 1e12)
        shell = MeasuredRun(request, layout, 1.0, name=f"synthetic {i}")
        cost = predict(shell, truth)
        runs.append(replace(shell, step_s=cost.step_time_s, peak_memory_bytes=cost.memory_bytes))
    return runs


@pytest.mark.parametrize(("prior_weight", "tolerance"), [(0.0, 0.01), (PRIOR_WEIGHT, 0.08)])
def test_the_fit_recovers_the_parameters_that_made_the_runs(
    prior_weight: float, tolerance: float
) -> None:
    # Without the prior the fit finds them exactly; with it, a weakly measured parameter
    # (the memory-bound kernels' share of these steps is small) stays a little nearer its
    # default, which is the prior's purpose.
    runs = synthetic_runs()
    found = fit(runs, free=FREE, memory_free=("logit_bytes", "allocator_fraction"),
                cross_validate=False, prior_weight=prior_weight).profile  # fmt: skip
    for name in FREE + ("logit_bytes", "allocator_fraction"):
        assert getattr(found, name) == pytest.approx(getattr(TRUE, name), rel=tolerance), name
    # Parameters it was not asked to move keep the start's values.
    assert found.overlap_slowdown == PerformanceProfile().overlap_slowdown


def test_memory_runs_fit_the_memory_terms_and_leave_the_time_alone() -> None:
    # Runs whose step times cannot be trusted (here: 3x off) still measure memory: given as
    # memory_runs they move the memory terms to the truth and no time parameter.
    runs = synthetic_runs()
    timed = [replace(run, peak_memory_bytes=None) for run in runs[:5]]
    untimed = [replace(run, step_s=run.step_s * 3) for run in runs[5:]]
    found = fit(timed, free=FREE, memory_free=("logit_bytes", "allocator_fraction"),
                cross_validate=False, prior_weight=0.0, memory_runs=untimed)  # fmt: skip
    assert found.profile.allocator_fraction == pytest.approx(TRUE.allocator_fraction, rel=0.01)
    assert found.profile.gemm_efficiency == pytest.approx(TRUE.gemm_efficiency, rel=0.01)
    assert [r.name for r in found.report.residuals] == [run.name for run in timed]
    # Without them nothing measures memory: the memory terms keep their defaults.
    alone = fit(timed, free=FREE, cross_validate=False, prior_weight=0.0).profile
    assert alone.allocator_fraction == PerformanceProfile().allocator_fraction


def test_the_report_gives_each_run_and_its_held_out_prediction() -> None:
    # Made by a profile that differs from the defaults only where the fit may move.
    runs = synthetic_runs(PerformanceProfile(gemm_efficiency=0.7, hbm_efficiency=0.6))[:5]
    calibration = fit(runs, free=FREE[:2], memory_free=())
    report = calibration.report
    assert [r.name for r in report.residuals] == [run.name for run in runs]
    for residual in report.residuals:
        assert residual.held_out_step_s is not None
        assert residual.ratio == pytest.approx(1, abs=0.02)
        assert residual.held_out_ratio == pytest.approx(1, abs=0.05)
    assert report.mean_error < 0.02
    assert report.held_out_mean_error is not None and report.held_out_mean_error < 0.05
    assert calibration.profile.name == "fitted"


def test_a_run_slower_than_any_profile_shows_in_its_residual() -> None:
    runs = synthetic_runs()[:4]
    runs[0] = replace(runs[0], step_s=runs[0].step_s * 3)  # a straggler
    report = fit(runs, free=FREE[:1], memory_free=(), cross_validate=False).report
    worst = max(report.residuals, key=lambda r: abs(r.ratio - 1))
    assert worst.name == runs[0].name and worst.ratio < 0.7


def test_json_and_csv_runs_files_round_trip() -> None:
    runs = synthetic_runs()[:4]
    rows = [run_to_row(run) for run in runs]
    assert load_runs(json.dumps({"runs": rows})) == runs
    assert load_runs(json.dumps(rows)) == runs
    out = io.StringIO()
    columns = sorted({key for row in rows for key in row})
    writer = csv.DictWriter(out, columns)
    writer.writeheader()
    writer.writerows(rows)
    assert load_runs(out.getvalue(), "csv") == runs


def test_a_custom_shape_and_throughput_instead_of_step_time() -> None:
    text = (
        "name,layers,hidden,heads,kv_heads,ffn_hidden,vocab,nodes,seq_len,"
        "global_batch_sequences,dp,tp,micro_batch,tokens_per_s_per_gpu,peak_memory_gb\n"
        "1B on one node,16,2048,32,8,8192,128256,1,4096,64,4,2,4,20000,41.5\n"
    )
    (run,) = load_runs(text)
    assert run.request.model.hidden == 2048 and run.request.model.vocab == 128256
    assert run.layout == Layout(dp=4, tp=2, micro_batch=4)
    assert run.step_s == pytest.approx(64 * 4096 / (20000 * 8))
    assert run.peak_memory_bytes == 41.5e9


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("{not json", "not valid JSON"),
        ('{"runs": [1, 2]}', "each an object"),
        ("[]", "holds no run"),
        ("name,model\n", "holds no run"),
        ("model,seq_len,global_batch_sequences,step_s,speed\nllama3-8b,4096,8,1,3\n",
         "run 1: unknown fields speed"),
        ("model,global_batch_sequences,step_s\nllama3-8b,8,1\n", "seq_len is missing"),
        ("model,seq_len,step_s\nllama3-8b,4096,1\n", "global_batch_tokens or"),
        ("model,seq_len,global_batch_sequences\nllama3-8b,4096,8\n", "step_s or tokens"),
        ("model,seq_len,global_batch_sequences,step_s\nllama-9\u00b5,4096,8,1\n",
         "unknown model"),
        ("model,seq_len,global_batch_sequences,step_s,tp\nllama3-8b,4096,8,1,3\n",
         "the layout is not valid.*tp=3"),
        ("model,seq_len,global_batch_sequences,step_s\nllama3-8b,4096,8,-2\n",
         "step time must be a positive"),
        ("model,seq_len,global_batch_sequences,step_s\nllama3-8b,4096.5,8,1\n",
         "seq_len must be a whole number"),
        ("model,seq_len,global_batch_sequences,step_s\nllama3-8b,4096,8,fast\n",
         "step_s must be a number"),
        ("model,seq_len,global_batch_sequences,step_s,gpu\nllama3-8b,4096,8,1,tpu\n",
         "unknown gpu 'tpu'"),
        ("layers,hidden,seq_len,global_batch_sequences,step_s\n2,64,128,8,1\n",
         "missing heads, kv_heads, ffn_hidden, vocab"),
    ],
)  # fmt: skip
def test_bad_runs_files_say_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        load_runs(text)


def test_fit_refuses_no_runs_and_unknown_parameters() -> None:
    with pytest.raises(ValueError, match="no runs"):
        fit([])
    with pytest.raises(ValueError, match="unknown profile parameters: speed"):
        fit(synthetic_runs()[:1], free=("speed",))
