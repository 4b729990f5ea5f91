"""One line for every web process: two queues over one database, each with its own engine (as
two processes have), see the same line, cannot both take its last place, and cancel each
other's runs; a process that dies leaves nothing that wedges the line."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator

import anyio.to_thread
import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select
from starlette.concurrency import run_in_threadpool

from app.config import ROOT_DIR
from app.db import engine_beside, make_engine
from app.live.models import DemoQueueEntry
from app.live.queue import SharedQueue
from app.live.queue_rules import Limits, Owner, QueueBusy, QueueEntry
from app.live.queue_store import QueueStore
from tests.live.line import TEST_POLL_S, FreeWorkers, wait_for


def owner(account: str, address: str = "192.0.2.1") -> Owner:
    return Owner(f"user:{account}", address)


def url_of(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


@pytest.fixture
def other_engine(line_engine: Engine) -> Iterator[Engine]:
    """A second process's engine on the same database: connections of its own."""
    engine = make_engine(url_of(line_engine))
    yield engine
    engine.dispose()


def line(engine: Engine, **options: float | Engine) -> SharedQueue:
    return SharedQueue(engine, FreeWorkers(), 5, poll_s=TEST_POLL_S, **options)


async def hold(queue: SharedQueue, who: Owner, release: asyncio.Event) -> str | None:
    """Takes a place, waits for the turn, keeps the worker until `release`; the worker."""
    async with queue.place(who, "all_reduce", 1) as entry:
        async for _ahead in queue.turns(entry):
            pass
        await release.wait()
        return entry.worker


def test_two_processes_share_one_line(line_engine: Engine, other_engine: Engine) -> None:
    async def scenario() -> None:
        first, second = line(line_engine), line(other_engine)
        release = asyncio.Event()
        running = asyncio.create_task(hold(first, owner("ada"), release))
        await wait_for(second, 1, running=1, alongside=running)  # the other process sees it
        with pytest.raises(QueueBusy, match="already have a demo running"):
            await second.check(owner("ada", "198.51.100.9"), 1)
        aheads: list[int] = []

        async def wait_in_second() -> str | None:
            async with second.place(owner("bob", "198.51.100.2"), "x", 1) as entry:
                aheads.extend([ahead async for ahead in second.turns(entry)])
                return entry.worker

        waiter = asyncio.create_task(wait_in_second())
        await wait_for(first, 2, running=1)
        await asyncio.sleep(10 * TEST_POLL_S)  # the worker is busy: bob waits
        assert not waiter.done()
        release.set()  # ada's process frees the worker; bob's process takes it
        assert await running == "w1:1"
        assert await asyncio.wait_for(waiter, 5) == "w1:1" and aheads == [1]
        assert await first.entries() == [] == await second.entries()

    asyncio.run(scenario())


def test_two_processes_cannot_both_take_the_last_place(
    line_engine: Engine, other_engine: Engine
) -> None:
    """Both check and insert at the same moment, again and again; the line's lock makes one
    of them see the other's place (app/live/queue_store.py)."""
    stores = [
        QueueStore(engine, Limits(max_waiting=2), f"process-{n}")
        for n, engine in enumerate((line_engine, other_engine))
    ]
    ran = stores[0].join(owner("runs", "203.0.113.1"), "x", 1)
    assert stores[0].start(ran.id, "w1:1", ["w1:1"])
    stores[0].join(owner("waits", "203.0.113.2"), "x", 1)  # one place is left
    for attempt in range(25):
        barrier = threading.Barrier(2)
        outcomes: list[QueueEntry | Exception | None] = [None, None]

        def take(
            n: int, attempt: int = attempt, outcomes: list = outcomes, barrier=barrier
        ) -> None:
            who = owner(f"p{n}-{attempt}", f"198.51.100.{n}")
            barrier.wait()
            try:
                outcomes[n] = stores[n].join(who, "x", 1)
            except Exception as exc:  # noqa: BLE001 - the assertion below names it
                outcomes[n] = exc

        threads = [threading.Thread(target=take, args=(n,)) for n in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        joined = [outcome for outcome in outcomes if isinstance(outcome, QueueEntry)]
        refused = [outcome for outcome in outcomes if isinstance(outcome, QueueBusy)]
        assert len(joined) == 1 and len(refused) == 1, outcomes
        assert "2 run(s) are already waiting" in str(refused[0])
        stores[0].leave(joined[0].id)
    assert len(stores[1].line()) == 2


def test_the_admin_of_one_process_stops_a_run_another_process_holds(
    line_engine: Engine, other_engine: Engine
) -> None:
    async def scenario() -> None:
        holder, admin = line(line_engine), line(other_engine)
        received: list[str] = []

        async def stuck_job() -> AsyncIterator[str]:
            yield "accepted"
            await asyncio.sleep(3600)  # a rank hung between two measurements
            yield "never"

        async def run() -> bool:
            async with holder.place(owner("ada"), "x", 1) as entry:
                async for _ahead in holder.turns(entry):
                    pass
                events = stuck_job()
                async for event in holder.until_cancelled(entry, events):
                    received.append(event)
                await events.aclose()
                return entry.cancelled

        task = asyncio.create_task(run())
        await wait_for(admin, 1, running=1, alongside=task)
        while not received:
            if task.done():  # failed, or ended without an event: say so rather than wait on
                raise AssertionError(f"the run ended before its first event: {task.result()!r}")
            await asyncio.sleep(0.01)
        (entry,) = await admin.entries()
        assert (await admin.cancel(entry.id)).cancelled
        assert await asyncio.wait_for(task, 2) is True
        assert await admin.entries() == []

    asyncio.run(scenario())


# Runs in a process of its own, which then dies holding the worker: it never leaves the line.
DOOMED_PROCESS = """
import os, sys
from app.db import engine_beside, make_engine
from app.live.queue_rules import Limits, Owner
from app.live.queue_store import QueueStore
store = QueueStore(make_engine(sys.argv[1]), Limits(max_waiting=5), "doomed")
entry = store.join(Owner("user:doomed", "203.0.113.66"), "all_reduce", 1)
assert store.start(entry.id, "w1:1", ["w1:1"])
os._exit(0)
"""


def test_a_dead_process_s_run_is_dropped_and_its_worker_freed(line_engine: Engine) -> None:
    stale_after_s = 2.0
    subprocess.run(
        [sys.executable, "-c", DOOMED_PROCESS, url_of(line_engine)], cwd=ROOT_DIR, check=True
    )
    died = time.monotonic()

    async def scenario() -> tuple[list[int], float, str | None, int]:
        # Renewing well within the stale bound, as the app does (2 s against 20 s): at the
        # default 2 s, bob's own place went stale too whenever a renewal came a moment late.
        queue = line(line_engine, stale_after_s=stale_after_s, heartbeat_s=0.2)
        assert [(e.owner.account, e.worker) for e in await queue.entries()] == [
            ("user:doomed", "w1:1")
        ]
        async with queue.place(owner("bob"), "x", 1) as entry:
            aheads = [ahead async for ahead in queue.turns(entry)]
            started = time.monotonic() - died
            with Session(line_engine) as session:
                doomed = select(DemoQueueEntry).where(DemoQueueEntry.process == "doomed")
                return aheads, started, entry.worker, len(session.exec(doomed).all())

    aheads, started_s, worker, doomed_rows = asyncio.run(scenario())
    # It waited behind the dead run until its heartbeat was stale, then took its worker, and
    # the row was deleted, not only passed over.
    assert aheads == [1] and worker == "w1:1" and doomed_rows == 0
    assert stale_after_s - 0.5 < started_s < stale_after_s + 5


def test_renewals_go_on_while_every_request_thread_is_taken(
    line_engine: Engine, other_engine: Engine
) -> None:
    """A server so loaded that requests wait seconds for a thread still renews its runs: the
    renewals have a thread and connections of their own (app/db.py engine_beside). Found by
    bench/cohort.py: 500 learners on two cores, and the line dropped runs whose renewals had
    waited in the thread pool with every request."""
    beside = engine_beside(line_engine)

    async def scenario() -> list[str]:
        holder = line(line_engine, heartbeat_s=0.1, stale_after_s=0.5, heartbeat_engine=beside)
        other = line(other_engine, stale_after_s=0.5)
        release = asyncio.Event()
        running = asyncio.create_task(hold(holder, owner("ada"), release))
        await wait_for(other, 1, running=1, alongside=running)
        # The thread pool down to one thread, taken for three times the stale bound; the
        # other process reads the line at the end of that time, still in that thread.
        anyio.to_thread.current_default_thread_limiter().total_tokens = 1

        def busy_then_look() -> list[QueueEntry]:
            time.sleep(1.5)
            return other.store.line()

        seen = [e.owner.account for e in await run_in_threadpool(busy_then_look)]
        release.set()
        await running
        holder.close()
        return seen

    try:
        assert asyncio.run(scenario()) == ["user:ada"]
    finally:
        beside.dispose()


def test_heartbeats_keep_a_long_run_in_the_line(line_engine: Engine, other_engine: Engine) -> None:
    """A live process renews its runs: the other process waits out the whole run, several
    times the stale bound, instead of taking its worker."""

    async def scenario() -> float:
        holder = line(line_engine, heartbeat_s=0.1, stale_after_s=0.5)
        other = line(other_engine, heartbeat_s=0.1, stale_after_s=0.5)
        release = asyncio.Event()
        running = asyncio.create_task(hold(holder, owner("ada"), release))
        await wait_for(other, 1, running=1)
        started = time.monotonic()
        waiter = asyncio.create_task(hold(other, owner("bob", "198.51.100.2"), asyncio.Event()))
        await asyncio.sleep(1.5)
        assert not waiter.done()
        assert [e.owner.account for e in await other.entries()] == ["user:ada", "user:bob"]
        release.set()
        await running
        await wait_for(other, 1, running=1)
        waiter.cancel()
        return time.monotonic() - started

    assert asyncio.run(scenario()) >= 1.5
