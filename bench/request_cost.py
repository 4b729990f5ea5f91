"""The app's own cost of one request, with no server and no network: the ASGI app called
directly in this process (its lifespan started first), a path asked again and again, and the
mean time a request printed. --profile prints where that time goes (cProfile). --signed-in
registers an account through the app's own form first and asks with its session cookie.

What bench/load.py measures through uvicorn and wrk includes the server, the socket and the
load generator sharing the machine; this is the part the app's code decides.

    .venv/bin/python bench/request_cost.py /cards/zero-stages [--requests 3000] [--profile]
    .venv/bin/python bench/request_cost.py /dashboard --signed-in
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import re
import sys
import tempfile
import time
from pathlib import Path

import anyio.to_thread

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


async def _request(  # noqa: PLR0913
    app,  # noqa: ANN001
    path: str,
    state: dict,
    cookie: str = "",
    method: str = "GET",
    form: bytes = b"",
) -> tuple[int, dict[bytes, bytes], bytes]:
    """One request: its status, its headers (the last of each name) and its body."""
    route, _, query = path.partition("?")
    headers = [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"bench")]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    if form:
        headers += [(b"content-type", b"application/x-www-form-urlencoded"),
                    (b"content-length", str(len(form)).encode())]  # fmt: skip
    # The lifespan's state copied for each request, as uvicorn does: shared, what one request
    # notes there (the session check) would be found by the next.
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": route, "raw_path": route.encode(),
             "query_string": query.encode(), "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000),
             "state": dict(state)}  # fmt: skip
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": form, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], dict(sent[0]["headers"]), body


async def _inline(func, *args, **_):  # noqa: ANN001, ANN002, ANN003, ANN202
    return func(*args)


async def _sign_in(app, state: dict) -> str:  # noqa: ANN001
    """Registers a fresh account through the form, as a browser would: its session cookie."""
    status, headers, page = await _request(app, "/register", state)
    cookie = headers[b"set-cookie"].decode().split(";")[0]
    token = re.search(rb'name="csrf_token" value="([^"]+)"', page)
    assert status == 200 and token, status
    form = b"username=bench-" + os.urandom(4).hex().encode() + b"&password=bench-password-1"
    form += b"&csrf_token=" + token.group(1)
    status, headers, _ = await _request(app, "/register", state, cookie, "POST", form)
    assert status == 303, status  # noqa: PLR2004
    return headers[b"set-cookie"].decode().split(";")[0]


async def _main(args: argparse.Namespace) -> None:
    app, state = create_app(), {}
    inbox, lifespan = await _lifespan(app, state)
    cookie = await _sign_in(app, state) if args.signed_in else ""
    for _ in range(20):  # the first asks render and keep what later ones reuse
        status, _, _ = await _request(app, args.path, state, cookie)
    start = time.perf_counter()
    for _ in range(args.requests):
        await _request(app, args.path, state, cookie)
    took = time.perf_counter() - start
    print(f"{args.path}: status {status}, {took / args.requests * 1000:.3f} ms a request "
          f"({args.requests} requests)")  # fmt: skip
    if args.profile:
        # cProfile sees one thread: the work FastAPI sends to its thread pool runs inline here.
        anyio.to_thread.run_sync = _inline
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.requests):
            await _request(app, args.path, state, cookie)
        profile.disable()
        pstats.Stats(profile).sort_stats(args.sort).print_stats(30)
    await inbox.put({"type": "lifespan.shutdown"})
    await lifespan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="the path and query to ask, as a visitor")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 30")
    parser.add_argument("--sort", default="tottime", help="cProfile's order (tottime, cumtime)")
    parser.add_argument("--signed-in", action="store_true", help="ask as a registered learner")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
