"""ShardLab's pages beside a bare FastAPI page, under the same load on the same uvicorn.

Starts two servers with the same uvicorn command and settings (one process each, loopback,
free ports): the real app (a temporary SQLite file, no demo worker) and bench/bare_page.py's
20 KB page. Then loads each URL in turn for a fixed time with `wrk` (its Python client where
wrk is missing) and prints req/s, p50, p99 and req/s as a fraction of the bare page's. The
bare page is measured first and last; the ratio is to the mean of the two, which the table
shows, so a machine busy with something else moves both sides.

Targets: the card page, a static CSS file, the home page signed out and a signed-in learner's
dashboard (a learner registered through the app, with a study goal and some answers), and
every calculator's page, live fragment and JSON API with a realistic query (the planner's
calibration, a POST of an uploaded runs file, is left out). A target asked again and again
with the same inputs measures a study group on one shared link: what a page keeps
(app/page_cache.py) serves it.

    .venv/bin/python bench/load.py [--seconds 5] [--connections 50] [--only calc]

Goals (issue #31): card page >= 0.6 of the bare page's req/s; home page and dashboard >= 0.5;
every calculator page p99 < 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import httpx

ROOT = Path(__file__).resolve().parent.parent
BARE = "bare page (20 KB)"
SIGNED_IN = "signed in"  # a target whose name ends so is requested with the learner's cookie
MAX_REQUESTS = 200_000  # the Python client's bound per target


def _q(path: str, **query: object) -> str:
    return f"{path}?{urlencode(query)}"


# Realistic inputs: the scenarios the calculators' tests and the cards' worked examples use.
TRAINING = {"preset": "llama3-70b", "dp": 4, "tp": 8, "pp": 2, "zero_stage": 1,
            "recompute": "selective", "seq_len": 8192}  # fmt: skip
COMMUNICATION = {"preset": "llama3-70b", "dp": 4, "tp": 8, "pp": 2, "zero_stage": 1,
                 "seq_len": 8192, "microbatches": 8}  # fmt: skip
COMPUTE = {"preset": "llama3-70b", "tokens": "15e12", "gpus": 16384, "utilization": 0.4}
FAILURES = {"units": 16384, "rate": 50000, "window_hours": 24, "checkpoint_minutes": 5,
            "restart_minutes": 10, "interval_minutes": 30}  # fmt: skip
INFERENCE = {"preset": "llama2-70b", "tp": 4, "context": 4096, "batch": 16, "gpu": "h100-80gb"}
PIPELINE = {"schedule": "interleaved", "pp": 4, "microbatches": 8, "virtual_stages": 2,
            "t_f": 1, "t_b": 1, "t_w": 1, "t_p2p": 0}  # fmt: skip
PLANNER = {"preset": "llama3-8b", "nodes": 1, "global_batch_tokens": 2**20, "seq_len": 8192}
ROOFLINE = {"op": "matmul", "b": 256, "d": 8192, "f": 8192, "gpu": "h100-sxm", "dtype": "bf16"}
MEMORY_PAGE = {"params_b": 70, "dp_degree": 8}

# Each calculator (app/calculators/): its page, its fragment (one input changed, as when typing)
# and its JSON API, each with the query above.
CALCULATORS: dict[str, tuple[str, dict[str, object], dict[str, object], str]] = {
    # name: (page path, page query, one input changed for the fragment, API URL)
    "memory": ("/calculators/memory", MEMORY_PAGE, {"dp_degree": 64},
               _q("/api/calc/memory", params=7.5e9, dp_degree=64)),
    "training-memory": ("/calculators/training-memory", TRAINING, {"dp": 8},
                        _q("/api/calc/training-memory", **TRAINING)),
    "compute": ("/calculators/compute", COMPUTE, {"gpus": 8192},
                _q("/api/calc/compute", **COMPUTE)),
    "communication": ("/calculators/communication", COMMUNICATION, {"tp": 4},
                      _q("/api/calc/communication", **COMMUNICATION)),
    "failures": ("/calculators/failures", FAILURES, {"units": 8192},
                 _q("/api/calc/failures", **FAILURES)),
    "inference": ("/calculators/inference-memory", INFERENCE, {"tp": 8},
                  _q("/api/calc/inference-memory", **INFERENCE)),
    "pipeline": ("/calculators/pipeline", PIPELINE, {"schedule": "zb-h1"},
                 _q("/api/calc/pipeline", **PIPELINE)),
    "planner": ("/calculators/planner", PLANNER, {"seq_len": 4096},
                _q("/api/calc/planner", **PLANNER)),
    "roofline": ("/calculators/roofline", ROOFLINE, {"b": 4096},
                 _q("/api/calc/roofline", **ROOFLINE)),
}  # fmt: skip


def targets() -> dict[str, str]:
    """Name to path; a learner's pages last: their load holds database connections, and what
    it leaves behind should not slow the pages measured after it."""
    found = {
        "card page": "/cards/zero-stages",
        "static CSS": "/static/css/app.css",
        "home page, signed out": "/",
        "calculators index": "/calculators",
    }
    for name, (page, query, change, api_url) in CALCULATORS.items():
        found[f"{name} page"] = _q(page, **query)
        found[f"{name} fragment"] = _q(f"{page}/result", **{**query, **change})
        found[f"{name} API"] = api_url
    found[f"card page, {SIGNED_IN}"] = "/cards/zero-stages"
    found[f"dashboard, {SIGNED_IN}"] = "/"
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def uvicorn_command(factory: str, port: int, app_dir: str = ".") -> list[str]:
    """The one uvicorn command both servers run with: one process, loopback, warnings only,
    and the event loop the app is served on (scripts/serve, the image)."""
    return [sys.executable, "-m", "uvicorn", "--factory", "--app-dir", app_dir, factory,
            "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
            "--loop", "asyncio"]  # fmt: skip


@contextmanager
def served(command: list[str], env: dict[str, str], log_path: Path) -> Iterator[str]:
    """The server on its port, its output in `log_path` (the app logs every request)."""
    port = command[command.index("--port") + 1]
    base = f"http://127.0.0.1:{port}"
    with log_path.open("w") as log:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(base + "/", timeout=2)
                break
            except httpx.TransportError:
                if server.poll() is not None or time.monotonic() > deadline:
                    why = log_path.read_text()[-2000:]
                    raise RuntimeError(f"did not start: {shlex.join(command)}\n{why}") from None
                time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:  # still answering a backlog the load left behind
            server.kill()
            server.wait()


def signed_in_cookie(base: str) -> str:
    """A learner registered through the app's own form, with a study goal and a dozen answers
    (so the dashboard has progress, a plan and weak topics to show): its Cookie header."""
    with httpx.Client(base_url=base, timeout=30) as client:

        def token() -> str:
            return re.search(r'name="csrf_token" value="([^"]+)"', client.get("/register").text)[1]

        login = {"username": "bench-learner", "password": "a long bench password"}
        response = client.post("/register", data={**login, "csrf_token": token()})
        if response.status_code not in (200, 303):
            raise RuntimeError(f"registering the bench's learner: HTTP {response.status_code}")
        csrf = token()
        goal = {"interview_date": time.strftime("%Y-%m-%d", time.gmtime(time.time() + 30 * 86400)),
                "minutes_per_day": "30", "csrf_token": csrf}  # fmt: skip
        client.post("/plan", data=goal)
        for _ in range(12):
            page = client.get("/quiz").text
            fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))
            if "item_id" not in fields:
                break
            # Whatever each kind takes (a first option, "Good", a number): right or wrong,
            # each answer is recorded and moves the learner's progress.
            answer = {"option": "0", "rating": "3", "answer": "1", "response": "ZeRO-1"}
            client.post("/quiz/answer", data={**fields, **answer, "csrf_token": csrf})
        return "; ".join(f"{k}={v}" for k, v in client.cookies.items())


@dataclass
class Figures:
    requests: int
    errors: int
    req_per_s: float
    p50_ms: float
    p99_ms: float


_UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def _wrk_ms(text: str, label: str) -> float:
    value, unit = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
    return float(value) * _UNIT_MS[unit]


def wrk_command(url: str, args: argparse.Namespace, cookie: str | None) -> list[str]:
    command = ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{args.seconds:g}s",
               "--latency", "--timeout", "10s"]  # fmt: skip
    if cookie:
        command += ["-H", f"Cookie: {cookie}"]
    return [*command, url]


def load_wrk(url: str, args: argparse.Namespace, cookie: str | None) -> Figures:
    out = subprocess.run(wrk_command(url, args, cookie), capture_output=True, text=True,
                         check=True, timeout=args.seconds + 60).stdout  # fmt: skip
    requests = int(re.search(r"^\s*(\d+) requests in", out, re.M)[1])
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    errors = (int(bad[1]) if bad else 0) + (sum(map(int, sockets.groups())) if sockets else 0)
    return Figures(requests, errors, float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1]),
                   _wrk_ms(out, "50%"), _wrk_ms(out, "99%"))  # fmt: skip


async def _load_python(url: str, args: argparse.Namespace, cookie: str | None) -> Figures:
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + args.seconds
    headers = {"Cookie": cookie} if cookie else {}

    async def one_client(client: httpx.AsyncClient) -> None:
        nonlocal errors
        while time.perf_counter() < deadline and len(latencies) < MAX_REQUESTS:
            start = time.perf_counter()
            response = await client.get(url, headers=headers)
            latencies.append(time.perf_counter() - start)
            errors += response.status_code != 200

    limits = httpx.Limits(max_connections=args.connections)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        began = time.perf_counter()
        await asyncio.gather(*(one_client(client) for _ in range(args.connections)))
        elapsed = time.perf_counter() - began
    if not latencies:
        return Figures(0, errors, 0.0, float("nan"), float("nan"))
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    return Figures(len(latencies), errors, len(latencies) / elapsed,
                   1000 * statistics.median(latencies), 1000 * p99)  # fmt: skip


def settle(base: str, limit_s: float = 120) -> bool:
    """Waits until the server answers a static file within a second again (requests the last
    load left queued are answered first); False if it has not within `limit_s`."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            httpx.get(base + "/static/css/app.css", timeout=1)
            return True
        except httpx.TimeoutException:
            continue
    return False


def load(url: str, args: argparse.Namespace, cookie: str | None) -> tuple[int, Figures]:
    """The response's size, then the figures under load."""
    # Asked once first: a first render (templates compiled, a plan searched) is not the load.
    first = httpx.get(url, headers={"Cookie": cookie} if cookie else {}, timeout=60)
    if first.status_code != 200:
        raise RuntimeError(f"{url}: HTTP {first.status_code}")
    if args.client == "wrk":
        return len(first.content), load_wrk(url, args, cookie)
    return len(first.content), asyncio.run(_load_python(url, args, cookie))


def _row(name: str, size: str, r: Figures, ratio: str) -> str:
    latency = f"{r.p50_ms:.1f} | {r.p99_ms:.1f}" if r.requests else "none answered | –"
    return (
        f"| {name} | {size} | {r.requests} | {r.errors} | {r.req_per_s:.0f} | {latency} | {ratio} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="time per URL (5)")
    parser.add_argument("--connections", type=int, default=50, help="open at once (50)")
    parser.add_argument("--threads", type=int, default=2, help="wrk's threads (2)")
    parser.add_argument("--only", default="", help="only the targets whose name has this")
    parser.add_argument("--client", choices=("wrk", "python"),
                        default="wrk" if shutil.which("wrk") else "python",
                        help="wrk where it is installed, else an httpx client")  # fmt: skip
    args = parser.parse_args()

    chosen = {n: p for n, p in targets().items() if args.only in n}
    with tempfile.TemporaryDirectory() as data_dir:
        env = {**os.environ, "SHARDLAB_DATA_DIR": data_dir, "SHARDLAB_WORKER_SPAWN": "false",
               # Nothing listens there: /healthz and the demos say the worker is unavailable.
               "SHARDLAB_WORKER_ADDRESS": f"127.0.0.1:{_free_port()}"}  # fmt: skip
        app_cmd = uvicorn_command("app.main:create_app", _free_port())
        bare_cmd = uvicorn_command("bare_page:create_app", _free_port(), app_dir="bench")
        logs = Path(data_dir)
        with (
            served(app_cmd, env, logs / "app.log") as app,
            served(bare_cmd, env, logs / "bare.log") as bare,
        ):
            cookie = signed_in_cookie(app) if any(SIGNED_IN in n for n in chosen) else None
            print(f"$ {shlex.join([Path(sys.executable).name, *sys.argv])}")
            print(f"$ {shlex.join(app_cmd)}\n$ {shlex.join(bare_cmd)}")
            if args.client == "wrk":
                print(f"$ {shlex.join(wrk_command('URL', args, None))}")
            else:
                print(f"httpx client, {args.connections} connections, {args.seconds:g} s")
            print(f"{os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M')}\n")
            print("| target | KB | requests | errors | req/s | p50 ms | p99 ms | / bare |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            rows = [(f"{BARE}, first", *load(bare + "/", args, None))]
            for name, path in chosen.items():
                print(f"loading {name}", file=sys.stderr, flush=True)
                if not settle(app):
                    print(f"| {name} `{path}` | the server did not recover from the last load |")
                    continue
                cookie_for = cookie if name.endswith(SIGNED_IN) else None
                rows.append((f"{name} `{path}`", *load(app + path, args, cookie_for)))
            rows.append((f"{BARE}, last", *load(bare + "/", args, None)))
            rows.append(("bare page from `async def`", *load(bare + "/async", args, None)))
            floor = (rows[0][2].req_per_s + rows[-2][2].req_per_s) / 2
            for name, size, r in rows:
                print(_row(name, f"{size / 1000:.1f}", r, f"{r.req_per_s / floor:.2f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
