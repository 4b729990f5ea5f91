"""Requests per second and p50/p99 latency for a card page and the calculators (API and page).

Starts the real app (uvicorn, one process, a temporary SQLite file, no demo worker) on a
free loopback port, then sends concurrent requests for a fixed time to each URL and prints
the figures. Bounded in time and count; loopback only.

    .venv/bin/python bench/load.py [--concurrency 16] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {
    "card page": "/cards/zero-stages",
    "calculator API": "/api/calc/memory?params=7.5e9&dp_degree=64",
    "calculator fragment": "/calculators/memory/result?params_b=70&dp_degree=8",
    "training-memory API": "/api/calc/training-memory?preset=llama3-70b&dp=4&tp=8&pp=2",
    "training-memory page": "/calculators/training-memory/result?preset=llama3-70b&dp=4&tp=8&pp=2",
}
MAX_REQUESTS = 50_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _load(base: str, path: str, concurrency: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def one_client(client: httpx.AsyncClient) -> None:
        nonlocal errors
        while time.perf_counter() < deadline and len(latencies) < MAX_REQUESTS:
            start = time.perf_counter()
            response = await client.get(path)
            latencies.append(time.perf_counter() - start)
            errors += response.status_code != 200

    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
        began = time.perf_counter()
        await asyncio.gather(*(one_client(client) for _ in range(concurrency)))
        elapsed = time.perf_counter() - began
    latencies.sort()
    return {
        "requests": len(latencies),
        "errors": errors,
        "req_per_s": len(latencies) / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=16, help="clients at once (16)")
    parser.add_argument("--seconds", type=float, default=5.0, help="time per URL (5)")
    args = parser.parse_args()

    port = _free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        env = {**os.environ, "SHARDLAB_DATA_DIR": data_dir, "SHARDLAB_WORKER_SPAWN": "false"}
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "app.main:create_app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                try:
                    if httpx.get(base + "/healthz", timeout=1).status_code in (200, 503):
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
            print(
                f"{os.cpu_count()} CPUs, 1 uvicorn process, {args.concurrency} concurrent "
                f"clients, {args.seconds:g} s per URL"
            )
            print(
                f"{'target':<22}{'requests':>9}{'errors':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
            )
            for name, path in TARGETS.items():
                r = asyncio.run(_load(base, path, args.concurrency, args.seconds))
                print(
                    f"{name:<22}{r['requests']:>9.0f}{r['errors']:>8.0f}{r['req_per_s']:>9.1f}"
                    f"{r['p50_ms']:>9.1f}{r['p99_ms']:>9.1f}"
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
