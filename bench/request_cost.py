"""The app's own cost of one request, with no server and no network: the ASGI app called
directly in this process (its lifespan started first), a path asked again and again, and the
mean time a request printed. --profile prints where that time goes (cProfile).

What bench/load.py measures through uvicorn and wrk includes the server, the socket and the
load generator sharing the machine; this is the part the app's code decides.

    .venv/bin/python bench/request_cost.py /cards/zero-stages [--requests 3000] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("SHARDLAB_LOG_LEVEL", "WARNING")
os.environ.setdefault("SHARDLAB_DATA_DIR", tempfile.mkdtemp())
os.environ["SHARDLAB_WORKER_SPAWN"] = "false"
os.environ["SHARDLAB_WORKER_ADDRESS"] = "127.0.0.1:1"  # nothing listens: no demo worker

from app.main import create_app  # noqa: E402


async def _lifespan(app, state: dict) -> tuple[asyncio.Queue, asyncio.Task]:  # noqa: ANN001
    inbox: asyncio.Queue = asyncio.Queue()
    outbox: asyncio.Queue = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": state}
    task = asyncio.create_task(app(scope, inbox.get, outbox.put))
    started = await outbox.get()
    assert started["type"] == "lifespan.startup.complete", started
    return inbox, task


async def _request(app, path: str, state: dict) -> int:  # noqa: ANN001
    route, _, query = path.partition("?")
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": route, "raw_path": route.encode(),
             "query_string": query.encode(), "root_path": "",
             "headers": [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"bench")],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000),
             "state": state}  # fmt: skip
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"]


async def _main(args: argparse.Namespace) -> None:
    app, state = create_app(), {}
    inbox, lifespan = await _lifespan(app, state)
    for _ in range(20):  # the first asks render and keep what later ones reuse
        status = await _request(app, args.path, state)
    start = time.perf_counter()
    for _ in range(args.requests):
        await _request(app, args.path, state)
    took = time.perf_counter() - start
    print(f"{args.path}: status {status}, {took / args.requests * 1000:.3f} ms a request "
          f"({args.requests} requests)")  # fmt: skip
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.requests):
            await _request(app, args.path, state)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
    await inbox.put({"type": "lifespan.shutdown"})
    await lifespan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="the path and query to ask, as a visitor")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 30")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
