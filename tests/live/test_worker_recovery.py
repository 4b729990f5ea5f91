"""A rank that dies or hangs mid-demo: the page hears of it within seconds, and the pool heals."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.utils import free_port, make_settings
from tests.worker_fixture import group_processes

pytestmark = pytest.mark.demo

PG_TIMEOUT_S = 3.0
READY_S = 90.0
# Enough work that the job is still running when a rank is stopped.
LONG_RUN = {"size_mib": 16, "iterations": 20}


@pytest.fixture(scope="module")
def app_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = make_settings(
        Path(tmp_path_factory.mktemp("recovery")) / "data",
        worker_spawn=True,
        worker_address=f"127.0.0.1:{free_port()}",
        worker_pg_timeout_s=PG_TIMEOUT_S,
    )
    with TestClient(create_app(settings)) as client:
        assert client.app.state.worker.wait_ready(READY_S)
        yield client


def _rank_pid(launcher_pid: int, rank: int) -> int:
    for pid in group_processes(launcher_pid):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"RANK={rank}".encode() in environ and pid != launcher_pid:
            return pid
    raise AssertionError(f"no rank {rank} in process group {launcher_pid}")


def _stream_until_a_rank_is_hit(client: TestClient, hit: object) -> tuple[str, float]:
    """Streams a long run; at its first measurement calls `hit`; returns (body, seconds after)."""
    body: list[str] = []
    hit_at: list[float] = []
    with client.stream("GET", "/demos/all-reduce/stream", params=LONG_RUN) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            body.append(line)
            if line == "event: measurement" and not hit_at:
                hit()  # type: ignore[operator]
                hit_at.append(time.monotonic())
    assert hit_at, "the run ended before any measurement"
    return "\n".join(body), time.monotonic() - hit_at[0]


def _heals(client: TestClient) -> None:
    worker = client.app.state.worker
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if worker.running and worker.wait_ready(1.0):
            break
        time.sleep(0.2)
    assert worker.running, "the pool did not restart by itself"
    after = client.get("/demos/all-reduce/stream", params={"size_mib": 1, "iterations": 1})
    assert "Finished." in after.text, after.text[-2000:]


def test_a_killed_rank_fails_the_run_within_seconds_and_the_pool_heals(
    app_client: TestClient,
) -> None:
    worker = app_client.app.state.worker
    restarts = worker.restarts
    victim = _rank_pid(worker.pid, 1)
    body, seconds = _stream_until_a_rank_is_hit(app_client, lambda: os.kill(victim, signal.SIGKILL))
    assert "The demo failed" in body and "Failed." in body
    assert seconds < 5.0
    _heals(app_client)
    assert worker.restarts > restarts
    # Pages that need no worker kept serving throughout.
    assert app_client.get("/cards").status_code == 200


def test_a_hung_rank_fails_the_run_after_the_group_timeout_and_the_pool_heals(
    app_client: TestClient,
) -> None:
    worker = app_client.app.state.worker
    victim = _rank_pid(worker.pid, 1)
    stopped = threading.Event()

    def hang() -> None:
        os.kill(victim, signal.SIGSTOP)
        stopped.set()

    try:
        body, seconds = _stream_until_a_rank_is_hit(app_client, hang)
    finally:
        if stopped.is_set():
            try:
                os.kill(victim, signal.SIGCONT)
            except ProcessLookupError:
                pass
    assert "The demo failed" in body
    assert seconds < PG_TIMEOUT_S + 5.0
    _heals(app_client)
