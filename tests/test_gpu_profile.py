"""bench/gpu_profile.py for real on this machine's CPU: the profile it writes loads back with
real, positive figures; its all-reduce sweep's ranks (gloo on CPU tensors, as NCCL's would on
GPUs) come back with nccl-tests' bus bandwidth; a CUDA run, where there is a GPU, too."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from app.calc.links import LINKS
from app.calc.performance import PARAMETERS, PerformanceProfile, load_profile
from app.calc.profiles import default_profile
from bench.gpu_profile import (
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
