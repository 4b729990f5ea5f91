"""SIGKILL the server while answers stream in; after a restart, is every acknowledged answer kept?

    .venv/bin/python bench/quiz_durability.py --answers 1000

Starts uvicorn as a subprocess on a free port with a temporary data dir (no demo worker),
registers a user, submits numeric answers one after another from a thread (each with its
own text, so each can be found again), kills the server with SIGKILL half-way, restarts it
on the same data dir and reads the answers back through the export. Prints the figures.
tests/quiz/test_durability.py runs the same code with 100 answers.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_CONTENT = ROOT / "tests" / "quiz" / "content"
ITEM = "fx-numeric"  # a published figure, 16 bytes per parameter, ±0.5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    data_dir: Path, port: int, env_overrides: Mapping[str, str] | None = None
) -> subprocess.Popen:
    """The app in its own process, as `scripts/serve` runs it, once it answers a page;
    `env_overrides` are SHARDLAB_* settings beyond these (a worker to use, say)."""
    env = {
        **os.environ,
        "SHARDLAB_DATA_DIR": str(data_dir),
        "SHARDLAB_CONTENT_DIR": str(FIXTURE_CONTENT),
        "SHARDLAB_WORKER_SPAWN": "false",
        "SHARDLAB_WORKER_ADDRESS": f"127.0.0.1:{free_port()}",
        "SHARDLAB_SECRET_KEY": "durability-secret",
        "SHARDLAB_WORKER_TOKEN": "durability-token",
        **(env_overrides or {}),
    }
    command = [sys.executable, "-m", "uvicorn", "--factory", "app.main:create_app",
               "--host", "127.0.0.1", "--port", str(port), "--loop", "asyncio",
               "--log-level", "warning"]  # fmt: skip
    server = subprocess.Popen(command, cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/login", timeout=5).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("the server did not start within 60 s")


def _token(client: httpx.Client, path: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text)
    return match.group(1) if match else ""


def signed_in_client(base_url: str, username: str, register: bool) -> httpx.Client:
    client = httpx.Client(base_url=base_url, timeout=10)
    path = "/register" if register else "/login"
    data = {"username": username, "password": "a long password", "csrf_token": _token(client, path)}
    response = client.post(path, data=data)
    assert response.status_code in (200, 303), response.text
    client.headers["X-CSRF-Token"] = _token(client, "/login")
    return client


def answer_text(n: int) -> str:
    return f"{16 + n / 1e6:.6f}"  # within the item's ±0.5 for n < 500,000


@dataclass
class Stream:
    acknowledged: list[str] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    error: str = ""


def submit(client: httpx.Client, count: int, stream: Stream) -> None:
    """Answers one after another; an answer counts as acknowledged once the page says
    'Recorded.'. Stops at the first transport error (the server was killed)."""
    for n in range(count):
        started = time.perf_counter()
        try:
            response = client.post(
                "/quiz/answer",
                data={"item_id": ITEM, "answer": answer_text(n)},
                headers={"HX-Request": "true"},
            )
        except httpx.TransportError as exc:
            stream.error = type(exc).__name__
            return
        if response.status_code == 200 and "Recorded." in response.text:
            stream.acknowledged.append(answer_text(n))
            stream.latencies_s.append(time.perf_counter() - started)
        else:
            stream.error = f"HTTP {response.status_code}"
            return


def kept_answers(base_url: str, username: str) -> list[str]:
    client = signed_in_client(base_url, username, register=False)
    try:
        exported = client.get("/progress/export").json()
    finally:
        client.close()
    return [a["answer_text"] for a in exported["attempts"] if a["item_id"] == ITEM]


@dataclass(frozen=True)
class Result:
    submitted: int
    acknowledged: int
    kept: int
    lost: list[str]
    median_latency_ms: float


def run(answers: int, data_dir: Path, kill_after: int | None = None) -> Result:
    """Streams `answers` answers, SIGKILLs the server after `kill_after` acknowledgements
    (default: half), restarts it and compares."""
    kill_after = answers // 2 if kill_after is None else kill_after
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    server = start_server(data_dir, port)
    try:
        client = signed_in_client(base_url, "durable", register=True)
        stream = Stream()
        thread = threading.Thread(target=submit, args=(client, answers, stream), daemon=True)
        thread.start()
        while len(stream.acknowledged) < kill_after and thread.is_alive():
            time.sleep(0.001)
        server.send_signal(signal.SIGKILL)  # mid-stream: a request is usually in flight
        server.wait(timeout=10)
        thread.join(timeout=15)
        client.close()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    port = free_port()
    server = start_server(data_dir, port)
    try:
        kept = kept_answers(f"http://127.0.0.1:{port}", "durable")
    finally:
        server.terminate()
        server.wait(timeout=15)
    lost = sorted(set(stream.acknowledged) - set(kept))
    latencies = sorted(stream.latencies_s) or [0.0]
    return Result(
        submitted=answers,
        acknowledged=len(stream.acknowledged),
        kept=len(kept),
        lost=lost,
        median_latency_ms=1000 * latencies[len(latencies) // 2],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = run(args.answers, Path(tmp) / "data")
        elapsed = time.perf_counter() - started
    print(f"answers to submit          {result.submitted}")  # noqa: T201
    print(f"acknowledged before SIGKILL {result.acknowledged}")  # noqa: T201
    print(f"kept after restart          {result.kept}")  # noqa: T201
    print(f"acknowledged but lost       {len(result.lost)}")  # noqa: T201
    print(f"median answer latency       {result.median_latency_ms:.1f} ms")  # noqa: T201
    print(f"wall time                   {elapsed:.1f} s")  # noqa: T201
    sys.exit(1 if result.lost else 0)


if __name__ == "__main__":
    main()
