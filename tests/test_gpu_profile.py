"""bench/gpu_profile.py for real on this machine's CPU: the profile it writes loads back with
real, positive figures; its all-reduce sweep's ranks (gloo on CPU tensors, as NCCL's would on
GPUs) come back with nccl-tests' bus bandwidth; a CUDA run, where there is a GPU, too. And
bench/gpu_report.py's section for such a run, set beside the planner's default by hand."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from app.calc.links import LINKS
from app.calc.performance import PARAMETERS, PerformanceProfile, load_profile
from app.calc.profiles import default_profile
from bench.gpu_profile import (
    MEMORY_BOUND_SHAPE,
    MIB,
    AllReduce,
    all_reduce_sweep,
    bus_bandwidth,
    large_message_busbw,
    link_efficiency,
    main,
)

ROOT = Path(__file__).resolve().parents[1]


def test_a_quick_cpu_run_writes_a_profile_that_loads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, report = tmp_path / "cpu.json", tmp_path / "measurements.json"
    argv = ["--device", "cpu", "--quick", "--out", str(out), "--json", str(report)]

    assert main(argv) == 0

    profile = load_profile(out.read_text())
    assert isinstance(profile, PerformanceProfile)
    for figure in (profile.gemm_flops, profile.hbm_bytes_per_s):
        assert figure is not None and math.isfinite(figure) and figure > 0
    assert profile.name.startswith("measured on cpu")
    assert "not planning GPUs" in profile.source
    # NCCL is skipped on CPU, and says so; every parameter keeps the default profile's value
    # (the fitted in-step efficiencies), and its held-out errors are not this profile's.
    assert profile.values() == default_profile().values()
    assert profile.held_out_mean_error is None and profile.held_out_worst_error is None
    printed = capsys.readouterr().out
    assert "NCCL all-reduce: skipped on CPU" in printed
    assert "matmul ceiling:" in printed and "dst.copy_(src) of 64 MiB" in printed
    # The ceiling is the best shape's mean, as the table and the measurements file show it.
    measured = json.loads(report.read_text())
    assert [(g["m"], g["n"], g["k"]) for g in measured["gemms"]] == [
        (s, s, s) for s in (256, 512, 1024)
    ]
    assert profile.gemm_flops == max(g["flops_per_s"] for g in measured["gemms"])
    assert profile.hbm_bytes_per_s == 2 * 64 * MIB / measured["copy"]["seconds"]
    # The norm and the add move what app/calc/planner/work.py counts: 2 and 3 fp32 values.
    elements = MEMORY_BOUND_SHAPE["cpu"][0] * MEMORY_BOUND_SHAPE["cpu"][1]
    kernels = {row["kernel"]: row for row in measured["memory_bound"]}
    assert {name: row["bytes_moved"] for name, row in kernels.items()} == {
        "layer_norm": 2 * 4 * elements,
        "residual add": 3 * 4 * elements,
    }
    assert all(row["seconds"] > 0 and row["iterations"] >= 3 for row in kernels.values())


def test_the_planner_plans_with_a_measured_profile_file(tmp_path: Path) -> None:
    out = tmp_path / "cpu.json"
    assert main(["--device", "cpu", "--quick", "--out", str(out)]) == 0

    done = subprocess.run(
        [sys.executable, "-m", "app.calc", "plan", "--preset", "llama3-8b", "--nodes", "1",
         "--profile", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "performance profile: measured on cpu (" in done.stdout
    # A CPU's ceilings make a step take hours: its figures still stand apart in their columns.
    first = next(line for line in done.stdout.splitlines() if line.startswith("  1"))
    memory, step_s, mfu, days = (float(x) for x in first.split()[-4:])
    assert step_s > 100 and memory > 0 and 0 <= mfu < 1 and days > 0


def _report(tmp_path: Path, run: dict) -> str:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    done = subprocess.run(
        [sys.executable, "bench/gpu_report.py", "--profile", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_report_of_a_cpu_run_lists_it_with_no_planner_default(tmp_path: Path) -> None:
    run = tmp_path / "measurements.json"
    assert main(["--device", "cpu", "--quick", "--out", str(tmp_path / "p.json"),
                 "--json", str(run)]) == 0  # fmt: skip

    markdown = _report(tmp_path, json.loads(run.read_text()))

    assert "### GPU profile: cpu (" in markdown
    assert "| 512 | 512 | 512 |" in markdown and "fp32 GFLOP/s" in markdown
    assert "No accelerator preset for cpu (" in markdown  # a CPU has no planner default


def test_an_h200_run_is_set_beside_the_planner_default_as_derived_by_hand(tmp_path: Path) -> None:
    # Figures of the size an H200 reaches, made up here (not a measurement): the report's
    # arithmetic is checked here, the figures come from the GPU run.
    run = {
        "device": "cuda", "device_name": "NVIDIA H200", "gpus": 1, "dtype": "bf16",
        "versions": "torch 2.11.0+cu130, CUDA 13.0", "gemms_skipped": 0,
        "gemms": [{"m": 8192, "n": 8192, "k": 8192, "iterations": 50, "seconds": 2 * 8192**3
                   / 780e12, "flops_per_s": 780e12}],
        "copy": {"size_bytes": 2**30, "iterations": 50, "seconds": 2 * 2**30 / 4.3e12,
                 "bytes_per_s": 4.3e12},
        "memory_bound": [{"kernel": "layer_norm", "elements": 2**27, "values_moved": 2,
                          "value_bytes": 2, "iterations": 50, "seconds": 2**29 / 4.0e12,
                          "bytes_moved": 2**29, "bytes_per_s": 4.0e12}],
        "all_reduces": [], "nccl": "NCCL all-reduce: skipped (1 GPU: needs 2 or more)",
        "link": "nvlink4",
        "profile": json.loads(replace(default_profile(), gemm_flops=780e12,
                                      hbm_bytes_per_s=4.3e12).to_json()),
    }  # fmt: skip

    markdown = _report(tmp_path, run)

    fitted = default_profile()
    # The planner's default ceiling for an H200: its dense bf16 peak, 989.4 TFLOP/s (the
    # H100's Tensor Cores), x the 0.80 assumed where no MAMF is published: 791.5 TFLOP/s.
    ceiling = "| matmul ceiling (TFLOP/s) | 780.0 (0.788 of peak) | 791.5 (0.800 of peak) | 0.985 |"
    assert ceiling in markdown
    in_step = (791.52 * fitted.gemm_efficiency, 780 * fitted.gemm_efficiency)
    assert f"| {in_step[0]:.1f} | 0.985 | {in_step[1]:.1f} |" in markdown
    # HBM: 4.3 of the datasheet's 4.8 TB/s; memory-bound work at hbm_efficiency x each base.
    assert "| HBM copy (TB/s) | 4.3 (0.896 of the datasheet) |" in markdown
    default_bw, measured_bw = fitted.hbm_efficiency * 4.8e12, fitted.hbm_efficiency * 4.3e12
    assert f"| {default_bw / 1e12:.3g} | 0.896 | {measured_bw / 1e12:.3g} |" in markdown
    # The norm: 512 MiB moved at 4.0 TB/s, beside bytes / bandwidth + a kernel's fixed cost.
    predicted = 2**29 / default_bw + fitted.kernel_overhead_s
    assert (
        f"| layer_norm, 2 values x 134,217,728 (ms) | {2**29 / 4.0e12 * 1e3:.4f} (4 TB/s) | "
        f"{predicted * 1e3:.4f} | {2**29 / 4.0e12 / predicted:.3f} | "
        f"{(2**29 / measured_bw + fitted.kernel_overhead_s) * 1e3:.4f} |"
    ) in markdown


def test_help_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, "bench/gpu_profile.py", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "--max-seconds" in done.stdout and "--link" in done.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_asking_for_cuda_without_it_stops_with_a_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gpu.json"
    assert main(["--device", "cuda", "--quick", "--out", str(out)]) == 2
    assert "no CUDA device here" in capsys.readouterr().err
    assert not out.exists()


def test_bus_bandwidth_is_nccl_tests_definition() -> None:
    # nccl-tests doc/PERFORMANCE.md: all-reduce busBw = algBw * 2(n-1)/n
    assert bus_bandwidth(1e9, 1.0, 8) == pytest.approx(1e9 * 14 / 8)
    assert bus_bandwidth(1e9, 0.5, 2) == pytest.approx(2e9)
    # The best of the messages of 256 MiB or more, however fast a small one looks
    rows = [AllReduce(MIB, 8, 20, 1e-6), AllReduce(256 * MIB, 8, 20, 1e-3)]
    rows.append(AllReduce(1024 * MIB, 8, 20, 3e-3))
    assert large_message_busbw(rows) is rows[2]
    assert large_message_busbw(rows[:1]) is rows[0]  # none that large: the largest there is


def test_a_link_efficiency_out_of_bounds_is_clipped_and_said() -> None:
    nvlink4 = LINKS["nvlink4"]
    assert link_efficiency(360e9, nvlink4) == (pytest.approx(0.8), None)
    high, said = link_efficiency(500e9, nvlink4)
    assert high == PARAMETERS["intra_link_efficiency"].high and "clipped" in (said or "")
    low, said = link_efficiency(10e9, nvlink4)
    assert low == PARAMETERS["intra_link_efficiency"].low and "is --link right?" in (said or "")


@pytest.mark.demo
def test_the_all_reduce_sweep_runs_its_ranks_and_returns_their_times() -> None:
    # The sweep NCCL runs on GPUs, here with gloo on CPU tensors: spawned ranks, rank 0's file.
    rows = all_reduce_sweep(2, (MIB, 4 * MIB), backend="gloo", timeout_s=60, warmup=1,
                            iterations=2)  # fmt: skip
    assert [(r.size_bytes, r.ranks, r.iterations) for r in rows] == [(MIB, 2, 2), (4 * MIB, 2, 2)]
    assert all(r.seconds > 0 and r.busbw == r.algbw for r in rows)  # 2(n-1)/n = 1 for 2 ranks


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_quick_cuda_run_measures_the_gpu(tmp_path: Path) -> None:
    out = tmp_path / "gpu.json"
    assert main(["--device", "cuda", "--quick", "--max-seconds", "120", "--out", str(out)]) == 0
    profile = load_profile(out.read_text())
    assert profile.name == f"measured on {torch.cuda.get_device_name(0)}"
    assert profile.gemm_flops is not None and profile.gemm_flops > 1e12  # any GPU, bf16
    assert profile.hbm_bytes_per_s is not None and profile.hbm_bytes_per_s > 1e11
