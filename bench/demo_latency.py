"""Click-to-first-measurement latency of the all-reduce demo: warm worker vs cold starts.

What a learner waits for after pressing Run: connect, send the job, receive the first
`measurement` event. Three set-ups are timed through the app's own WorkerClient:

- warm: one `python -m demos.worker` started beforehand, then --jobs jobs in a row;
- cold launcher: start `python -m demos.worker` at the click, then the same job;
- cold torchrun: start `torchrun --standalone --nproc-per-node N -m demos.worker` at the click.

Run from the repository root:  .venv/bin/python bench/demo_latency.py [--jobs 10] [--cold-runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from app.live.worker_client import WorkerClient
from app.live.worker_process import PROJECT_ROOT, TOKEN_ENV, LocalWorker

COLD_CONNECT_TIMEOUT_S = 120.0


def free_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


async def time_job(
    client: WorkerClient, params: dict[str, Any], start: float
) -> tuple[float, float]:
    """Seconds from `start` (perf_counter) to the first measurement and to `done`."""
    first = None
    async for event in client.run("all_reduce", params):
        if event["event"] == "measurement" and first is None:
            first = time.perf_counter() - start
        elif event["event"] == "error":
            raise RuntimeError(event["message"])
    assert first is not None
    return first, time.perf_counter() - start


def describe(label: str, seconds: list[float]) -> str:
    ms = sorted(1000 * s for s in seconds)
    p90 = statistics.quantiles(ms, n=10, method="inclusive")[-1] if len(ms) > 1 else ms[0]
    return (
        f"{label:<34} n={len(ms):<3} median {statistics.median(ms):8.1f} ms   "
        f"p90 {p90:8.1f} ms   min {ms[0]:8.1f} ms   max {ms[-1]:8.1f} ms"
    )


def warm(args: argparse.Namespace, params: dict[str, Any], log_dir: Path) -> list[str]:
    address, token = free_address(), secrets.token_hex(8)
    worker = LocalWorker(address, token, log_dir / "warm.log", args.ranks, args.backend)
    worker.start()
    try:
        if not worker.wait_ready(COLD_CONNECT_TIMEOUT_S):
            raise RuntimeError(f"the worker did not start; see {worker.log_path}")
        client = WorkerClient(address, token)
        firsts, dones = [], []
        for _ in range(args.jobs):
            first, done = asyncio.run(time_job(client, params, time.perf_counter()))
            firsts.append(first)
            dones.append(done)
    finally:
        worker.stop()
    return [
        describe("warm: first job after ready", firsts[:1]),
        describe("warm: click -> first measurement", firsts),
        describe("warm: click -> done", dones),
    ]


def cold_launcher(args: argparse.Namespace, params: dict[str, Any], log_dir: Path) -> list[float]:
    firsts = []
    for run in range(args.cold_runs):
        address, token = free_address(), secrets.token_hex(8)
        worker = LocalWorker(address, token, log_dir / f"cold{run}.log", args.ranks, args.backend)
        start = time.perf_counter()
        worker.start()
        try:
            client = WorkerClient(address, token, COLD_CONNECT_TIMEOUT_S)
            firsts.append(asyncio.run(time_job(client, params, start))[0])
        finally:
            worker.stop()
    return firsts


def cold_torchrun(args: argparse.Namespace, params: dict[str, Any], log_dir: Path) -> list[float]:
    firsts = []
    for run in range(args.cold_runs):
        address, token = free_address(), secrets.token_hex(8)
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        command += ["--nproc-per-node", str(args.ranks), "-m", "demos.worker"]
        command += ["--listen", address, "--backend", args.backend]
        start = time.perf_counter()
        with (log_dir / f"torchrun{run}.log").open("wb") as log:
            proc = subprocess.Popen(
                command,
                cwd=PROJECT_ROOT,
                env={**os.environ, TOKEN_ENV: token},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                client = WorkerClient(address, token, COLD_CONNECT_TIMEOUT_S)
                firsts.append(asyncio.run(time_job(client, params, start))[0])
            finally:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
    return firsts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=10, help="warm jobs (default 10)")
    parser.add_argument("--cold-runs", type=int, default=3, help="runs per cold set-up (3)")
    parser.add_argument("--ranks", type=int, default=2, help="world size (default 2)")
    parser.add_argument("--backend", default="gloo", choices=("auto", "gloo", "nccl"))
    parser.add_argument("--size-mib", type=float, default=4.0, help="buffer per rank (4)")
    parser.add_argument("--iterations", type=int, default=1, help="all-reduces per job (1)")
    args = parser.parse_args()
    params = {"size_mib": args.size_mib, "iterations": args.iterations}

    print(f"all_reduce {params}, {args.ranks} ranks, {args.backend}, {os.cpu_count()} CPU(s)")
    with tempfile.TemporaryDirectory(prefix="shardlab-bench-") as tmp:
        log_dir = Path(tmp)
        for line in warm(args, params, log_dir):
            print(line)
        print(describe("cold python -m demos.worker", cold_launcher(args, params, log_dir)))
        print(describe("cold torchrun --standalone", cold_torchrun(args, params, log_dir)))


if __name__ == "__main__":
    main()
