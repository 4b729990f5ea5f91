"""The demo worker under contention: many launches at once, and page readers beside live demos.

Starts the real app (uvicorn, one process, a temporary SQLite file, its own local worker) and
measures two things the self-hosting issue asks for:

1. --launches clients (default 20) press Run on the all-reduce demo at the same moment, each
   from its own loopback address (127.0.0.2, 127.0.0.3, ...) so each counts as one person.
   For each: the HTTP status of its stream (200, or 503 when the line is full), whether it
   was told it was queued, and how it ended. Memory (RSS) of the app and the worker's
   processes is read before and after, to show the line keeps it bounded.
2. --readers clients (default 50) read a card page and a calculator fragment for --seconds
   while demo runs stream one after another; their p50/p99 latency and errors are reported.

Run from the repository root:  .venv/bin/python bench/demo_concurrency.py [--ranks 2]
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
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
RUN = {"size_mib": 4, "iterations": 5}
READ_TARGETS = ("/cards/zero-stages", "/calculators/memory/result?params=7e9&dp_degree=8")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _rss_mib(root_pids: list[int]) -> float:
    """Resident memory of these processes and all their descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, list(root_pids)
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total / 2**20


async def _launch(base: str, n: int) -> tuple[int, bool, str]:
    """One person pressing Run: (status, told it was queued, how it ended)."""
    transport = httpx.AsyncHTTPTransport(local_address=f"127.0.0.{n + 2}")
    async with httpx.AsyncClient(transport=transport, timeout=300) as client:
        async with client.stream("GET", base + "/demos/all-reduce/stream", params=RUN) as r:
            if r.status_code != 200:
                return r.status_code, False, "refused"
            body = "".join([chunk async for chunk in r.aiter_text()])
    if "Finished." in body:
        ended = "finished"
    elif "the demo worker is busy" in body:
        ended = "told busy"  # passed the first check, then found the line full
    else:
        ended = "failed" if "Failed." in body else "other"
    return 200, "Queued:" in body, ended


async def _launches(base: str, count: int) -> list[tuple[int, bool, str]]:
    return await asyncio.gather(*(_launch(base, n) for n in range(count)))


async def _readers(base: str, count: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds

    async def reader(client: httpx.AsyncClient, n: int) -> None:
        nonlocal errors
        while time.monotonic() < stop:
            path = READ_TARGETS[n % len(READ_TARGETS)]
            started = time.perf_counter()
            try:
                response = await client.get(base + path)
                if response.status_code != 200:
                    errors += 1
            except httpx.HTTPError:
                errors += 1
            latencies.append(time.perf_counter() - started)

    async def demos() -> int:
        runs = 0
        async with httpx.AsyncClient(timeout=300) as client:
            while time.monotonic() < stop:
                response = await client.get(base + "/demos/all-reduce/stream", params=RUN)
                runs += "Finished." in response.text
        return runs

    async with httpx.AsyncClient(timeout=30) as client:
        results = await asyncio.gather(demos(), *(reader(client, n) for n in range(count)))
    ms = sorted(1000 * s for s in latencies)
    return {
        "requests": len(ms),
        "errors": errors,
        "p50_ms": statistics.median(ms),
        "p99_ms": ms[int(0.99 * (len(ms) - 1))],
        "demo_runs": results[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ranks", type=int, default=2, help="ranks of the local worker (2)")
    parser.add_argument("--launches", type=int, default=20, help="simultaneous Runs (20)")
    parser.add_argument("--queue", type=int, default=8, help="SHARDLAB_DEMO_QUEUE_MAX (8)")
    parser.add_argument("--readers", type=int, default=50, help="concurrent page readers (50)")
    parser.add_argument("--seconds", type=float, default=10.0, help="reading time (10)")
    args = parser.parse_args()

    port = _free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        env = {
            **os.environ,
            "SHARDLAB_DATA_DIR": data_dir,
            "SHARDLAB_WORKER_RANKS": str(args.ranks),
            "SHARDLAB_WORKER_ADDRESS": f"127.0.0.1:{_free_port()}",
            "SHARDLAB_DEMO_QUEUE_MAX": str(args.queue),
        }
        command = [sys.executable, "-m", "uvicorn", "--factory", "app.main:create_app"]
        command += ["--host", "127.0.0.1", "--port", str(port), "--loop", "asyncio"]
        command += ["--log-level", "warning"]
        server = subprocess.Popen(command, cwd=ROOT, env=env)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if httpx.get(base + "/healthz", timeout=2).json()["worker"].startswith("ok"):
                        break
                except (httpx.HTTPError, ValueError):
                    pass
                time.sleep(0.2)
            else:
                raise SystemExit("the app's worker did not become ready in 120 s")

            before = _rss_mib([server.pid])
            started = time.perf_counter()
            outcomes = asyncio.run(_launches(base, args.launches))
            took = time.perf_counter() - started
            after = _rss_mib([server.pid])
            tally = Counter((status, ended) for status, _, ended in outcomes)
            queued = sum(1 for _, was_queued, _ in outcomes if was_queued)
            print(
                f"{os.cpu_count()} CPUs, worker of {args.ranks} gloo ranks, line of "
                f"{args.queue}; {args.launches} simultaneous Runs of all-reduce {RUN}"
            )
            for (status, ended), count in sorted(tally.items()):
                print(f"  HTTP {status}, {ended}: {count}")
            print(f"  told they were queued: {queued}; all done in {took:.1f} s")
            print(f"  RSS of app + worker: {before:.0f} MiB before, {after:.0f} MiB after")

            reading = asyncio.run(_readers(base, args.readers, args.seconds))
            print(
                f"{args.readers} readers for {args.seconds:g} s beside back-to-back demo runs: "
                f"{reading['requests']} requests, {reading['errors']} errors, "
                f"p50 {reading['p50_ms']:.1f} ms, p99 {reading['p99_ms']:.1f} ms, "
                f"{reading['demo_runs']} demo runs finished meanwhile"
            )
        finally:
            server.terminate()
            server.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
