"""A pool of two real workers (gloo ranks on CPU, two ports, one token): which answer, which
gets the next run, and a worker lost mid-run, failed like a crashed rank, with the next run on
the other."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.live.queue import SharedQueue
from app.live.worker_client import WorkerUnavailable
from app.live.worker_pool import WorkerPool, health_summary
from app.live.worker_process import LocalWorker
from app.main import create_app
from tests.live.test_queue_routes import LONG_RUN, SMALL_RUN, browser_at, start_stream, wait_until
from tests.utils import free_port, make_settings
from tests.worker_fixture import start_test_worker

pytestmark = pytest.mark.demo

Pool = tuple[dict[str, LocalWorker], str]


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    """Two ready workers, by address, and their shared token."""
    token = secrets.token_hex(16)
    workers: dict[str, LocalWorker] = {}
    try:
        for name in ("a", "b"):
            tmp = Path(tmp_path_factory.mktemp(f"worker-{name}"))
            worker, address, _ = start_test_worker(tmp, ranks=2, token=token)
            workers[address] = worker
        yield workers, token
    finally:
        for worker in workers.values():
            worker.stop()


def test_health_says_which_workers_answer(two_workers: Pool) -> None:
    workers, token = two_workers
    nowhere = f"127.0.0.1:{free_port()}"
    pool = WorkerPool([*workers, nowhere], token)
    health = asyncio.run(pool.health(timeout_s=1.0))
    assert [health[address] for address in workers] == ["ok: 2 ranks (gloo)"] * 2
    assert health[nowhere].startswith(f"unavailable: the demo worker at {nowhere} did not accept")
    assert health_summary(health) == "ok: 2 of 3 workers answer"
    # A worker running a demo answers nothing until its job ends: it is not asked.
    first = next(iter(workers))
    busy = asyncio.run(pool.health(timeout_s=1.0, busy={first}))
    assert busy[first] == "ok: running a demo"


def test_the_next_run_goes_to_a_free_worker_the_least_recently_used(two_workers: Pool) -> None:
    workers, token = two_workers
    a, b = workers

    async def choices() -> list[str | None]:
        pool = WorkerPool([a, b], token)
        return [
            await pool.choose(busy={a}),  # a runs a job: b is the least loaded
            await pool.choose(busy=set()),  # a was given a run longer ago than b
            await pool.choose(busy=set()),  # then b again, since a just got one
            await pool.choose(busy={a, b}),  # none free: wait
        ]

    assert asyncio.run(choices()) == [b, a, b, None]


def test_a_worker_that_does_not_answer_is_skipped_and_marked_down(two_workers: Pool) -> None:
    workers, token = two_workers
    nowhere = f"127.0.0.1:{free_port()}"
    a = next(iter(workers))

    async def scenario() -> tuple[str | None, float, str | None, float]:
        pool = WorkerPool([nowhere, a], token, probe_timeout_s=0.5)
        started = time.monotonic()
        first = await pool.choose(busy=set())  # nowhere is asked first, and fails
        first_s = time.monotonic() - started
        assert pool.is_down(nowhere)
        started = time.monotonic()
        second = await pool.choose(busy=set())  # now a is asked first
        return first, first_s, second, time.monotonic() - started

    first, first_s, second, second_s = asyncio.run(scenario())
    assert first == second == a
    # (it gives up on a refused connection one retry before its timeout)
    assert 0.3 <= first_s < 3 and second_s < 0.3


def test_with_no_worker_answering_and_none_busy_the_run_fails_with_the_reasons() -> None:
    nowhere = [f"127.0.0.1:{free_port()}" for _ in range(2)]
    pool = WorkerPool(nowhere, "token", connect_timeout_s=0.5, probe_timeout_s=0.2)
    both = f"at {nowhere[0]} did not accept a connection.*; .*at {nowhere[1]} did not accept"
    with pytest.raises(WorkerUnavailable, match=both):
        asyncio.run(pool.choose(busy=set()))
    # With a run going on one, the other's failure means waiting for it, not failing.
    assert asyncio.run(pool.choose(busy={nowhere[0]})) is None


@pytest.fixture
def pool_app(tmp_path: Path, two_workers: Pool) -> Iterator[TestClient]:
    """An app whose runs go to the two workers (SHARDLAB_WORKER_ADDRESSES)."""
    workers, token = two_workers
    settings = make_settings(
        tmp_path / "data", worker_addresses=",".join(workers), worker_token=token
    )
    with TestClient(create_app(settings)) as client:
        yield client


def test_a_second_run_goes_to_the_other_worker_instead_of_waiting(
    pool_app: TestClient, two_workers: Pool
) -> None:
    workers, _ = two_workers
    queue: SharedQueue = pool_app.app.state.demo_queue
    health = pool_app.get("/healthz").json()
    assert health["worker"] == "ok: 2 of 2 workers answer"
    assert set(health["workers"].values()) == {"ok: 2 ranks (gloo)"}
    long_run = start_stream(browser_at(pool_app, "192.0.2.61"), LONG_RUN)
    wait_until(lambda: [e.running for e in queue.store.line()] == [True])
    (running,) = queue.store.line()
    health = pool_app.get("/healthz").json()
    assert health["workers"][running.worker] == "ok: running a demo"
    short = browser_at(pool_app, "192.0.2.62").get("/demos/all-reduce/stream", params=SMALL_RUN)
    # It never queued behind the long run: it ran on the other worker meanwhile.
    assert "Queued" not in short.text and "Finished." in short.text
    assert queue.store.line()[0].id == running.id, "the long run ended first"
    assert "Finished." in long_run().text


def test_a_worker_lost_mid_run_fails_it_like_a_crashed_rank_and_the_next_goes_elsewhere(
    pool_app: TestClient, two_workers: Pool
) -> None:
    workers, _ = two_workers
    queue: SharedQueue = pool_app.app.state.demo_queue
    pool: WorkerPool = pool_app.app.state.worker_pool
    lost: list[str] = []
    lines: list[str] = []
    with pool_app.stream("GET", "/demos/all-reduce/stream", params=LONG_RUN) as response:
        for line in response.iter_lines():
            lines.append(line)
            if line == "event: measurement" and not lost:  # mid-run
                (running,) = queue.store.line()
                assert running.worker is not None
                lost.append(running.worker)
                os.killpg(workers[running.worker].pid, signal.SIGKILL)  # rank 0 too
    answer = "\n".join(lines)
    try:
        assert "The demo failed: the demo worker closed the connection" in answer
        assert "Failed." in answer and "Finished." not in answer
        assert pool.is_down(lost[0]) and not queue.store.line()
        started = time.monotonic()
        after = browser_at(pool_app, "192.0.2.72").get("/demos/all-reduce/stream", params=SMALL_RUN)
        assert "Finished." in after.text  # on the other worker: the lost one is dead
        assert time.monotonic() - started < 5  # not after a probe of the dead one
    finally:
        workers[lost[0]].restart()
        assert workers[lost[0]].wait_ready(90)


def test_the_pool_is_read_from_the_settings() -> None:
    assert Settings(worker_addresses=" 10.0.0.5:29581, gpu-2:29581 ").worker_pool == [
        "10.0.0.5:29581", "gpu-2:29581",
    ]  # fmt: skip
    assert Settings(worker_address="127.0.0.1:4000").worker_pool == ["127.0.0.1:4000"]
    for wrong, reason in (("a:1,b", "'b' must look like host:port"), ("a:1,a:1", "listed twice")):
        with pytest.raises(ValueError, match=reason):
            Settings(worker_addresses=wrong)
