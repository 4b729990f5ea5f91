"""bench/gpu_check.py end to end on CPU: a real 2-rank gloo worker, every demo, its exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from demos.specs import DEMO_PARAMS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.demo
def test_every_demo_runs_and_agrees_on_two_gloo_ranks(tmp_path: Path) -> None:
    report_path = tmp_path / "gpu.json"
    command = [sys.executable, "bench/gpu_check.py", "--backend", "gloo", "--ranks", "2"]
    done = subprocess.run(
        [*command, "--json", str(report_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert (report["device"], report["device_name"], report["backend"], report["ranks"]) == (
        "cpu",
        "cpu",
        "gloo",
        2,
    )
    assert [r["demo"] for r in report["results"]] == list(DEMO_PARAMS)
    assert {r["status"] for r in report["results"]} == {"ok"}
    # Each page's verdict: at least one figure equal to its prediction, none unexpected.
    for result in report["results"]:
        statuses = {check["status"] for check in result["checks"]}
        assert "equal" in statuses and "unexpected" not in statuses, result["demo"]
    assert "== zero_stages: ok" in done.stdout
    # A difference the page explains is printed with its reason (gloo's headers on the wire).
    assert "↳ gloo's message headers, a few hundred bytes per collective" in done.stdout
    all_reduce = next(r for r in report["results"] if r["demo"] == "all_reduce")
    assert [f["quantity"] for f in all_reduce["figures"]] == [
        "median time (s)",
        "bus bandwidth (GB/s)",
    ]
    assert "pipeline_schedules         refused (needs send, recv)" in done.stdout

    # The report for docs/benchmarks.md, from this very JSON: a row per demo, the checks that
    # differ with their reasons, the figures no page judges.
    markdown = subprocess.run(
        [sys.executable, "bench/gpu_report.py", str(report_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "### cpu (cpu), gloo, 2 rank(s)" in markdown
    for demo in DEMO_PARAMS:
        assert f"| {demo} | ok | " in markdown
    assert "| all_reduce | Wire bytes written per rank (mean) |" in markdown  # gloo's headers
    assert "| all_reduce | wall clock: median time (s) |" in markdown  # a figure not judged


@pytest.mark.demo
def test_one_rank_skips_the_demos_that_need_two(tmp_path: Path) -> None:
    report_path = tmp_path / "gpu.json"
    command = [sys.executable, "bench/gpu_check.py", "--backend", "gloo", "--ranks", "1"]
    done = subprocess.run(
        [*command, "--json", str(report_path)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status = {r["demo"]: r["status"] for r in json.loads(report_path.read_text())["results"]}
    skipped = {"all_reduce", "collectives", "pipeline_schedules", "tensor_parallel"}
    assert {demo for demo, s in status.items() if s == "skipped"} == skipped
    assert {s for demo, s in status.items() if demo not in skipped} == {"ok"}
    assert "needs at least 2 ranks; this worker has 1" in done.stdout


@pytest.mark.demo
@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU here lets the NCCL worker start")
def test_a_worker_that_cannot_start_is_reported_at_once_with_its_reason() -> None:
    # Without a GPU, NCCL's rank exits at start: the check says why within seconds instead
    # of waiting out its ready timeout (180 s) and printing nothing, as it did before.
    command = [sys.executable, "bench/gpu_check.py", "--backend", "nccl", "--ranks", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)

    assert done.returncode == 2
    assert "the worker did not start:" in done.stderr
    assert "--backend nccl needs 1 visible GPU(s) and an NCCL build" in done.stderr
